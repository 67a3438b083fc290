# The installable package (docs/architecture.md, "Extending"):
#   vsynth_shared (alias vsynth::vsynth; libvsynth.so): the framework, facets, kernels, solvers
#     and every built-in capability in one shared library, made of the objects of the static
#     libraries vsynth_stages reaches (nothing is compiled twice). The vsynth binary, plugins
#     and the Python module link it, so they share one copy of the registry and of every type.
#   install rules: bin/vsynth, lib/libvsynth.so, include/vsynth/<public headers>, the CMake
#     package (find_package(vsynth) -> vsynth::vsynth) and lib/pkgconfig/vsynth.pc.
# Tests keep linking the static libraries (each capability alone, tests/capabilities).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Every project static library reachable from `target` through its link libraries (private ones
# too: a grammar vsynth_stage_ast links privately is code the shared library needs).
function(vsynth_static_closure target out_var)
  set(seen ${${out_var}})
  get_target_property(links ${target} LINK_LIBRARIES)
  foreach(lib ${links})
    if(TARGET ${lib} AND NOT lib IN_LIST seen)
      get_target_property(imported ${lib} IMPORTED)
      get_target_property(type ${lib} TYPE)
      if(NOT imported AND type STREQUAL "STATIC_LIBRARY")
        list(APPEND seen ${lib})
        vsynth_static_closure(${lib} seen)
      endif()
    endif()
  endforeach()
  set(${out_var} ${seen} PARENT_SCOPE)
endfunction()

set(VSYNTH_SHARED_PARTS vsynth_stages)
vsynth_static_closure(vsynth_stages VSYNTH_SHARED_PARTS)
set(objects "")
foreach(lib ${VSYNTH_SHARED_PARTS})
  list(APPEND objects $<TARGET_OBJECTS:${lib}>)
endforeach()
add_library(vsynth_shared SHARED ${objects})
add_library(vsynth::vsynth ALIAS vsynth_shared)
# The external libraries those objects need, from the static libraries' own link interfaces.
# The archives themselves come along on the link line but add nothing: every symbol they
# define is already defined by the objects above.
target_link_libraries(vsynth_shared PRIVATE vsynth_stages)
# A plugin compiles against the public headers, which include yaml-cpp (graph/spec.h) and
# nlohmann/json (facets' to_json) and need C++20.
target_link_libraries(vsynth_shared PUBLIC yaml-cpp nlohmann_json::nlohmann_json)
target_compile_features(vsynth_shared INTERFACE cxx_std_20)
target_include_directories(vsynth_shared INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}> $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/generated>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/vsynth>)
# Every symbol the library uses is resolved when it is linked, not first at a plugin's load.
# (Under the sanitizers and in the fuzz build the runtime comes from the executable: the
# check stays off there.)
if(NOT VSYNTH_SANITIZE AND NOT VSYNTH_FUZZ)
  target_link_options(vsynth_shared PRIVATE LINKER:--no-undefined)
endif()
# The plugin ABI check compares exact versions (graph/plugin.h), so the soname carries all of it.
set_target_properties(vsynth_shared PROPERTIES OUTPUT_NAME vsynth EXPORT_NAME vsynth
                                               VERSION ${PROJECT_VERSION}
                                               SOVERSION ${PROJECT_VERSION})

# The public headers: what a plugin needs and no more. The graph API (graph/, the generated
# version.h among them), the facet types capabilities exchange (stages/facets/, DecodingHook in
# hook.h), and what those include: the engine's Model/Sequence (kernels/engine.h), MaskHook
# (kernels/sampler/mask_hook.h) and the kernels, solvers and base headers they reach. Each installed
# header compiles on its own and the list is exactly that closure (tests/plugins checks both).
file(GLOB graph_headers RELATIVE ${PROJECT_SOURCE_DIR} CONFIGURE_DEPENDS
     ${PROJECT_SOURCE_DIR}/graph/*.h)
file(GLOB facet_headers RELATIVE ${PROJECT_SOURCE_DIR} CONFIGURE_DEPENDS
     ${PROJECT_SOURCE_DIR}/stages/facets/*.h)
set(VSYNTH_PUBLIC_HEADERS
  ${graph_headers} ${facet_headers}
  base/mix.h
  kernels/engine.h kernels/engine_error.h kernels/kv_type.h kernels/model/config.h
  kernels/sampler/mask_hook.h kernels/sampler/rng.h kernels/sampler/sampler.h
  kernels/sampler/sampler_math.h kernels/sched/scheduler.h
  kernels/tokenizer/tokenizer.h kernels/tokenizer/vocab.h
  solvers/function_contract.h solvers/error.h solvers/ir.h solvers/signature.h solvers/z3_backend.h)
set(include_dest ${CMAKE_INSTALL_INCLUDEDIR}/vsynth)
foreach(header ${VSYNTH_PUBLIC_HEADERS})
  get_filename_component(dir ${header} DIRECTORY)
  install(FILES ${header} DESTINATION ${include_dest}/${dir})
endforeach()
install(FILES ${PROJECT_BINARY_DIR}/generated/graph/version.h DESTINATION ${include_dest}/graph)

# The library, its CMake package and its pkg-config file.
install(TARGETS vsynth_shared EXPORT vsynthTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
set(config_dest ${CMAKE_INSTALL_LIBDIR}/cmake/vsynth)
install(EXPORT vsynthTargets NAMESPACE vsynth:: DESTINATION ${config_dest})
configure_package_config_file(cmake/vsynthConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/vsynthConfig.cmake
                              INSTALL_DESTINATION ${config_dest})
# A plugin must be built against this exact version (the loader refuses any other).
write_basic_package_version_file(${PROJECT_BINARY_DIR}/vsynthConfigVersion.cmake
                                 COMPATIBILITY ExactVersion)
install(FILES ${PROJECT_BINARY_DIR}/vsynthConfig.cmake
              ${PROJECT_BINARY_DIR}/vsynthConfigVersion.cmake DESTINATION ${config_dest})
# vsynth.pc finds the prefix from its own place (${pcfiledir}), so `cmake --install --prefix`
# anywhere gives a working file.
file(RELATIVE_PATH VSYNTH_PC_TO_PREFIX /root/${CMAKE_INSTALL_LIBDIR}/pkgconfig /root)
configure_file(cmake/vsynth.pc.in ${PROJECT_BINARY_DIR}/vsynth.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/vsynth.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
