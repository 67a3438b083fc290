# Included by kernels/CMakeLists.txt. Owned by the quantized-kernel work (kernels/quant, kernels/cpu).
#
# The SIMD kernels (kernels/quant/kernels_x86.inc) are compiled twice: kernels_avx2.cpp with
# AVX2/FMA/F16C and kernels_avx512vnni.cpp with AVX512-F/BW/VL/VNNI on top (256-bit vectors).
# Every other file stays baseline x86-64, and kernels/cpu/cpu_path.cpp picks the path at run time
# (cpuid, VSYNTH_CPU). On other architectures (or compilers without the flags) the files compile
# to stubs that report "no table".
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64|i.86)$")
  set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/quant/kernels_avx2.cpp
                              PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
  include(CheckCXXCompilerFlag)
  check_cxx_compiler_flag("-mavx512vnni" VSYNTH_HAVE_AVX512VNNI_FLAG)
  if(VSYNTH_HAVE_AVX512VNNI_FLAG)
    set_source_files_properties(
      ${CMAKE_CURRENT_SOURCE_DIR}/quant/kernels_avx512vnni.cpp
      PROPERTIES COMPILE_OPTIONS
                 "-mavx2;-mfma;-mf16c;-mavx512f;-mavx512bw;-mavx512vl;-mavx512vnni;-mprefer-vector-width=256")
  endif()
endif()
