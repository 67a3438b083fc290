# Sourced by every script that needs llama.cpp from PyPI (the golden references, the benchmark
# peers): one pin, one set of ISA flags.
#
#   install_llama_cpp LABEL VENV
#
# Installs llama-cpp-python (pinned below) into VENV from a wheel built once per pin and flag set.
# The build pins its instruction sets instead of llama.cpp's default -march=native, so the
# references do not depend on the host: a native build on an Intel host whose CPUID reports AMX
# loads a model, then dies with SIGSEGV in its first decode. The flags are the x86-64 subset every
# host of this machine kind has (AVX2, FMA, F16C; AVX-512 is absent on some AMD hosts; AMX off).
# The wheel lands in $XDG_CACHE_HOME/vsynth/wheels/<pin>-<flags hash>/ (pip's own cache keys
# wheels by name and version only, not by CMAKE_ARGS, so it could hand back a native build), and
# a later venv installs it in seconds instead of rebuilding llama.cpp (~25 min on 2 cores).
llama_cpp_version=0.3.36
llama_cpp_pin="llama-cpp-python==$llama_cpp_version"
# VSYNTH_LLAMA_CPP_ISA=avx512 builds a second wheel with AVX-512 (F, VNNI, VBMI, BF16; AMX still
# off) for benchmark peers on hosts that have it, so a comparison is with llama.cpp at its best
# there; the golden references keep the default, avx2.
case "${VSYNTH_LLAMA_CPP_ISA:-avx2}" in
  avx2) llama_cpp_avx512=OFF ;;
  avx512) llama_cpp_avx512=ON ;;
  *)
    echo "llama-cpp.sh: VSYNTH_LLAMA_CPP_ISA=${VSYNTH_LLAMA_CPP_ISA} is not avx2 or avx512" >&2
    return 2 2>/dev/null || exit 2
    ;;
esac
llama_cpp_cmake_args="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
-DGGML_AVX512=$llama_cpp_avx512 -DGGML_AVX512_VNNI=$llama_cpp_avx512 \
-DGGML_AVX512_VBMI=$llama_cpp_avx512 -DGGML_AVX512_BF16=$llama_cpp_avx512 \
-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"

llama_cpp_wheel_dir() {
  local tag
  tag=$(printf '%s %s' "$llama_cpp_pin" "$llama_cpp_cmake_args" | sha256sum | cut -c1-12)
  echo "${XDG_CACHE_HOME:-$HOME/.cache}/vsynth/wheels/llama-cpp-python-$llama_cpp_version-$tag"
}

# True when VENV's llama_cpp is the pinned version built by this file (a marker next to it).
llama_cpp_installed() {
  local venv=$1
  [ -f "$venv/.llama-cpp-build" ] && [ "$(cat "$venv/.llama-cpp-build")" = "$(llama_cpp_wheel_dir)" ] &&
    "$venv/bin/python" -c "import llama_cpp" 2>/dev/null
}

install_llama_cpp() {
  local label=$1 venv=$2 wheels
  wheels=$(llama_cpp_wheel_dir)
  llama_cpp_installed "$venv" && return 0
  [ -x "$venv/bin/python" ] || "${PYTHON:-python3}" -m venv "$venv"
  if ! ls "$wheels"/llama_cpp_python-*.whl >/dev/null 2>&1; then
    echo "$label: building $llama_cpp_pin with pinned ISA flags into $wheels (~25 min on 2 cores)"
    mkdir -p "$wheels.tmp"
    CMAKE_ARGS="$llama_cpp_cmake_args" "$venv/bin/pip" wheel --quiet --disable-pip-version-check \
      --no-cache-dir --no-deps --no-binary llama-cpp-python -w "$wheels.tmp" "$llama_cpp_pin" ||
      return 1
    rm -rf "$wheels" && mv "$wheels.tmp" "$wheels"
  fi
  echo "$label: installing $llama_cpp_pin from $wheels"
  # Out first: pip keeps an installed llama_cpp of the same version (a native build) otherwise.
  "$venv/bin/pip" uninstall --quiet --yes llama-cpp-python >/dev/null 2>&1 || true
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$wheels"/llama_cpp_python-*.whl ||
    return 1
  echo "$wheels" >"$venv/.llama-cpp-build"
}
