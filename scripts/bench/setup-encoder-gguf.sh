#!/usr/bin/env bash
# llama.cpp's side of tests/bench/bench_encoder.cpp: all-MiniLM-L6-v2 (models/, from
# scripts/setup-embedder.sh) converted to GGUF by the converter that ships in llama-cpp-python's
# sdist, as F32 (the same weights as our F32 encoder) and Q8_0, into .cache/encoder-gguf/ (never
# committed). Benchmark-only: not run by scripts/setup.sh.
#
#   scripts/bench/setup-encoder-gguf.sh       (idempotent: existing GGUFs are kept)
#
# Steps: .venv-bench gets llama-cpp-python 0.3.36 when it lacks it (as scripts/golden/regen.sh
# does: builds llama.cpp, ~25 min on 2 cores) and the converter's imports pinned in
# requirements-convert.txt (torch, transformers: ~4 GB, see there why); the sdist is fetched
# with `pip download --no-binary :all:` into .cache/llama-sdist/ and its convert_hf_to_gguf.py,
# conversion/ package and gguf-py/ extracted (the converter puts its own gguf-py first on
# sys.path); then one conversion per type. Prints each GGUF's sha256.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=../lib/pinned-venv.sh
source "$root/scripts/lib/pinned-venv.sh"

venv="$root/.venv-bench"
model="$root/models/all-MiniLM-L6-v2"
sdist_dir="$root/.cache/llama-sdist"
out_dir="$root/.cache/encoder-gguf"
src="$sdist_dir/llama_cpp_python-$llama_cpp_version/vendor/llama.cpp"

if [ ! -f "$model/model.safetensors" ]; then
  echo "setup-encoder-gguf: $model/model.safetensors is missing (run scripts/setup-embedder.sh)" >&2
  exit 1
fi
# shellcheck source=../lib/llama-cpp.sh
source "$root/scripts/lib/llama-cpp.sh"
install_llama_cpp setup-encoder-gguf "$venv"
"$venv/bin/pip" install --quiet -r "$root/scripts/golden/requirements-models.txt"
pinned_venv setup-encoder-gguf "$venv" "$here/requirements-convert.txt" python3

if [ ! -f "$src/convert_hf_to_gguf.py" ]; then
  mkdir -p "$sdist_dir"
  "$venv/bin/pip" download --quiet --no-deps --no-binary :all: -d "$sdist_dir" \
    "llama-cpp-python==$llama_cpp_version"
  tar -xzf "$sdist_dir/llama_cpp_python-$llama_cpp_version.tar.gz" -C "$sdist_dir" --wildcards \
    "llama_cpp_python-$llama_cpp_version/vendor/llama.cpp/convert_hf_to_gguf.py" \
    "llama_cpp_python-$llama_cpp_version/vendor/llama.cpp/conversion/*" \
    "llama_cpp_python-$llama_cpp_version/vendor/llama.cpp/gguf-py/*"
fi

mkdir -p "$out_dir"
for type in f32 q8_0; do
  out="$out_dir/all-MiniLM-L6-v2-$type.gguf"
  if [ ! -s "$out" ]; then
    echo "setup-encoder-gguf: converting to $type"
    (cd "$src" && "$venv/bin/python" convert_hf_to_gguf.py "$model" --outtype "$type" \
      --outfile "$out.part" >"$out_dir/convert-$type.log" 2>&1) || {
      echo "setup-encoder-gguf: the conversion failed; see $out_dir/convert-$type.log" >&2
      exit 1
    }
    mv "$out.part" "$out"
  fi
  sha256sum "$out"
done
