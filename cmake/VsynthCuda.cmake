# CUDA is a language of the build when nvcc is found (AUTO), required (ON) or skipped (OFF).
set(VSYNTH_HAVE_CUDA OFF)
if(NOT VSYNTH_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    # CUDA code is C++17. Said before enable_language: without it every target (the compiler
    # check's try_compile, and libvsynth.so, which links CUDA objects) inherits CXX_STANDARD 20
    # as "CUDA20", which CMake < 3.25.2 (Debian 12 has 3.25.1) cannot enable for nvcc, so the
    # default Makefile generator failed to configure ("requires the language dialect CUDA20").
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(VSYNTH_HAVE_CUDA ON)
  elseif(VSYNTH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "VSYNTH_CUDA=ON but no CUDA compiler (nvcc) was found; "
                        "install the CUDA toolkit or configure with -DVSYNTH_CUDA=OFF|AUTO")
  endif()
endif()
message(STATUS "vsynth: CUDA backend ${VSYNTH_HAVE_CUDA} (VSYNTH_CUDA=${VSYNTH_CUDA})")
