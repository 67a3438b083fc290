# Every dependency comes from Debian packages (scripts/setup.sh installs them).
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(TBB REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(fmt REQUIRED)
pkg_check_modules(Z3 REQUIRED IMPORTED_TARGET z3)
pkg_check_modules(TREE_SITTER REQUIRED IMPORTED_TARGET tree-sitter)
# Boost.Beast and Asio (Debian libboost1.81-dev), header-only: `vsynth serve`'s HTTP layer
# (Boost.System is header-only since 1.69, so nothing is linked).
find_package(Boost 1.81 REQUIRED COMPONENTS headers)

# hnswlib is header-only (Debian libhnswlib-dev 0.6.2): the dense index of stages/retrieval.
find_path(HNSWLIB_INCLUDE_DIR hnswlib/hnswlib.h)
if(NOT HNSWLIB_INCLUDE_DIR)
  message(FATAL_ERROR "hnswlib/hnswlib.h not found: install the Debian package libhnswlib-dev "
                      "(scripts/setup.sh does), or pass -DHNSWLIB_INCLUDE_DIR=<dir holding hnswlib/>")
endif()
add_library(vsynth_hnswlib INTERFACE)
target_include_directories(vsynth_hnswlib SYSTEM INTERFACE ${HNSWLIB_INCLUDE_DIR})

if(VSYNTH_TESTS)
  find_package(Catch2 2 REQUIRED)
  include(Catch)
endif()
if(VSYNTH_BENCH)
  find_package(benchmark QUIET)
endif()
