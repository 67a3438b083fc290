# The include half of the capability rule (stages/CMakeLists.txt, docs/architecture.md "Shared
# facet types"): a file under stages/<cap>/ includes headers of stages/<cap>/, stages/facets/
# and the capabilities <cap> may link, nothing else of stages/; stages/facets/ includes no
# capability. A use of another capability's header-only code (a facet read through an inline
# accessor, a template) links fine, so the link tests alone would not catch it.
#
#   cmake -DSOURCE_DIR=<repo> -DMAY_LINK_<cap>=<a,b> ... -P CheckCapabilityIncludes.cmake
#
# Fails listing every include that breaks it, as file:line.
cmake_minimum_required(VERSION 3.25)  # policies (IN_LIST) when run as a script (-P)

if(NOT SOURCE_DIR)
  message(FATAL_ERROR "CheckCapabilityIncludes.cmake: pass -DSOURCE_DIR=<repository root>")
endif()

set(problems "")
set(checked 0)
file(GLOB dirs LIST_DIRECTORIES true ${SOURCE_DIR}/stages/*)
foreach(dir ${dirs})
  if(NOT IS_DIRECTORY ${dir})
    continue()
  endif()
  get_filename_component(cap ${dir} NAME)
  string(REPLACE "," ";" may "${MAY_LINK_${cap}}")
  set(allowed ${cap} facets ${may})
  list(REMOVE_DUPLICATES allowed)
  list(TRANSFORM allowed PREPEND "stages/" OUTPUT_VARIABLE allowed_dirs)
  list(JOIN allowed_dirs ", " allowed_text)
  file(GLOB files ${dir}/*.h ${dir}/*.cpp ${dir}/*.inc)
  foreach(f ${files})
    file(READ ${f} text)
    string(REGEX MATCHALL "#[ \t]*include[ \t]*\"stages/[^/\"]+/[^\"]*\"" includes "${text}")
    foreach(inc ${includes})
      math(EXPR checked "${checked} + 1")
      string(REGEX MATCH "\"stages/([^/\"]+)/" unused "${inc}")
      set(other ${CMAKE_MATCH_1})
      if(other IN_LIST allowed)
        continue()
      endif()
      string(FIND "${text}" "${inc}" at)
      string(SUBSTRING "${text}" 0 ${at} before)
      string(REGEX MATCHALL "\n" newlines "${before}")
      list(LENGTH newlines n)
      math(EXPR line "${n} + 1")
      file(RELATIVE_PATH rel ${SOURCE_DIR} ${f})
      string(APPEND problems "\n  ${rel}:${line}: ${inc}: stages/${other} is another "
                             "capability (stages/${cap} may include ${allowed_text})")
    endforeach()
  endforeach()
endforeach()

if(problems)
  message(FATAL_ERROR "capabilities include each other's headers; share the type through "
                      "stages/facets instead:${problems}")
endif()
message(STATUS "capability includes: ${checked} includes of stages/ headers checked, all allowed")
