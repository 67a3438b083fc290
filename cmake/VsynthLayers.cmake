# The link half of the layering rule (docs/architecture.md, "Layers and folders"): vsynth_base
# links no library of ours; vsynth_graph, vsynth_kernels and vsynth_solvers link vsynth_base
# and none of each other (nor anything above them). Configuring fails otherwise. The include
# half is the `layer_includes` test (cmake/CheckLayerIncludes.cmake); the rule between
# capabilities is in stages/CMakeLists.txt.
set(VSYNTH_LAYER_MAY_LINK_vsynth_base vsynth_options)
foreach(floor vsynth_graph vsynth_kernels vsynth_solvers)
  set(VSYNTH_LAYER_MAY_LINK_${floor} vsynth_options vsynth_base)
endforeach()
foreach(lib vsynth_base vsynth_graph vsynth_kernels vsynth_solvers)
  get_target_property(linked ${lib} LINK_LIBRARIES)
  foreach(other ${linked})
    if(other MATCHES "^vsynth_" AND NOT other IN_LIST VSYNTH_LAYER_MAY_LINK_${lib})
      message(FATAL_ERROR "${lib} links ${other}: the layering rule allows it only "
                          "[${VSYNTH_LAYER_MAY_LINK_${lib}}] (cmake/VsynthLayers.cmake, "
                          "docs/architecture.md \"Layers and folders\")")
    endif()
  endforeach()
endforeach()
