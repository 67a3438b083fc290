# Compiler flags shared by every vsynth target: warnings (as errors by default) and sanitizers.
add_library(vsynth_options INTERFACE)
target_compile_options(vsynth_options INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                            -Wold-style-cast -Wcast-align -Wunused -Woverloaded-virtual
                            -Wformat=2>)
if(VSYNTH_WERROR)
  target_compile_options(vsynth_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  # GCC 12 at -O3 (Release) reports false positives inside libstdc++ and z3++.h after inlining
  # (restrict on std::string concatenation, stringop-overflow / array-bounds on vector copies,
  # maybe-uninitialized through std::optional; e.g. GCC bug 105329). They stay
  # warnings there, not errors; every other warning, and these at -O2, stay errors.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12)
    target_compile_options(vsynth_options INTERFACE
      $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CONFIG:Release>>:-Wno-error=restrict
       -Wno-error=stringop-overflow -Wno-error=array-bounds -Wno-error=maybe-uninitialized>)
  endif()
endif()
if(VSYNTH_SANITIZE)
  target_compile_options(vsynth_options INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${VSYNTH_SANITIZE} -fno-omit-frame-pointer
                              -fno-sanitize-recover=all>)
  target_link_options(vsynth_options INTERFACE -fsanitize=${VSYNTH_SANITIZE})
  # oneTBB's flow graph downcasts task objects in memory it recycles
  # (detail/_flow_graph_impl.h), which UBSan's vptr check reports on every run; the check
  # stays off, every other UBSan check stays on.
  if(VSYNTH_SANITIZE MATCHES "undefined")
    target_compile_options(vsynth_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-fno-sanitize=vptr>)
  endif()
  # GCC's flow analysis reports false maybe-uninitialized warnings inside libstdc++ (<regex>,
  # <optional>) under the sanitizers' instrumentation; keep the rest of -Werror.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(vsynth_options INTERFACE
      $<$<COMPILE_LANGUAGE:CXX>:-Wno-maybe-uninitialized>)
  endif()
endif()
# The linker: lld when it is installed (setup installs it). The test executables carry debug
# information and link most of the project each; GNU ld spends most of an incremental build
# (and of CI's, whose objects come from ccache) linking them. VSYNTH_LINKER=default keeps the
# compiler's own linker.
set(VSYNTH_LINKER "AUTO" CACHE STRING "Linker: AUTO (lld when found), lld, gold or default")
set_property(CACHE VSYNTH_LINKER PROPERTY STRINGS AUTO lld gold default)
set(vsynth_linker "${VSYNTH_LINKER}")
if(vsynth_linker STREQUAL "AUTO")
  find_program(VSYNTH_LLD_PROGRAM NAMES ld.lld)
  set(vsynth_linker default)
  if(VSYNTH_LLD_PROGRAM)
    set(vsynth_linker lld)
  endif()
endif()
if(NOT vsynth_linker STREQUAL "default")
  add_link_options($<$<OR:$<LINK_LANGUAGE:CXX>,$<LINK_LANGUAGE:C>>:-fuse-ld=${vsynth_linker}>)
endif()
message(STATUS "vsynth: linker ${vsynth_linker}")

# graph/version.h, generated from graph/version.h.in: the project's VERSION for `vsynth
# --version` and the plugin ABI check (graph/plugin.h); installed with the public headers.
configure_file(${PROJECT_SOURCE_DIR}/graph/version.h.in
               ${PROJECT_BINARY_DIR}/generated/graph/version.h @ONLY)
target_include_directories(vsynth_options INTERFACE ${PROJECT_SOURCE_DIR}
                                                    ${PROJECT_BINARY_DIR}/generated)

# vsynth_library(name SOURCES ...): a static library with the project's flags.
function(vsynth_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_link_libraries(${name} PUBLIC vsynth_options)
endfunction()
