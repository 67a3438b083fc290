# The include half of the layering rule (docs/architecture.md, "Layers and folders"): a file of
# a layer includes headers of its own folder and of the layers below it, nothing above or
# beside it:
#   base/                     base/ only (it depends on nothing of ours)
#   graph/ kernels/ solvers/  base/ and their own folder (the three never include each other)
#   stages/                   base/, graph/, kernels/, solvers/, stages/ (between capabilities:
#                             CheckCapabilityIncludes.cmake)
# The link half is checked when configuring (cmake/VsynthLayers.cmake).
#
#   cmake -DSOURCE_DIR=<repo> -P CheckLayerIncludes.cmake
#
# Fails listing every include that breaks it, as file:line.
cmake_minimum_required(VERSION 3.25)

if(NOT SOURCE_DIR)
  message(FATAL_ERROR "CheckLayerIncludes.cmake: pass -DSOURCE_DIR=<repository root>")
endif()

set(ours base graph kernels solvers stages tools python tests)
set(may_base base)
set(may_graph base graph)
set(may_kernels base kernels)
set(may_solvers base solvers)
set(may_stages base graph kernels solvers stages)

set(problems "")
set(checked 0)
foreach(layer base graph kernels solvers stages)
  list(JOIN may_${layer} ", " allowed_text)
  file(GLOB_RECURSE files ${SOURCE_DIR}/${layer}/*.h ${SOURCE_DIR}/${layer}/*.cpp
       ${SOURCE_DIR}/${layer}/*.inc ${SOURCE_DIR}/${layer}/*.cu ${SOURCE_DIR}/${layer}/*.cuh)
  foreach(f ${files})
    file(READ ${f} text)
    string(REGEX MATCHALL "#[ \t]*include[ \t]*\"[a-z_]+/[^\"]*\"" includes "${text}")
    foreach(inc ${includes})
      string(REGEX MATCH "\"([a-z_]+)/" unused "${inc}")
      set(other ${CMAKE_MATCH_1})
      if(NOT other IN_LIST ours)
        continue()  # a third-party path such as "tree_sitter/api.h"
      endif()
      math(EXPR checked "${checked} + 1")
      if(other IN_LIST may_${layer})
        continue()
      endif()
      string(FIND "${text}" "${inc}" at)
      string(SUBSTRING "${text}" 0 ${at} before)
      string(REGEX MATCHALL "\n" newlines "${before}")
      list(LENGTH newlines n)
      math(EXPR line "${n} + 1")
      file(RELATIVE_PATH rel ${SOURCE_DIR} ${f})
      string(APPEND problems "\n  ${rel}:${line}: ${inc}: ${layer}/ may include ${allowed_text}")
    endforeach()
  endforeach()
endforeach()

if(problems)
  message(FATAL_ERROR "an include breaks the layering rule (docs/architecture.md):${problems}")
endif()
message(STATUS "layer includes: ${checked} includes of our headers checked, all allowed")
