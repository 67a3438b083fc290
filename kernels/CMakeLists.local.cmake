# Included by kernels/CMakeLists.txt. Owned by the quantized-kernel work (kernels/quant, kernels/cpu).
#
# The AVX2 kernels live in one translation unit compiled with AVX2/FMA/F16C enabled; every other
# file stays baseline x86-64, and kernels/cpu/cpu_path.cpp picks the path at run time (cpuid,
# VSYNTH_CPU). On other architectures the file compiles to a stub that reports "no AVX2".
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64|i.86)$")
  set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/quant/kernels_avx2.cpp
                              PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
endif()
