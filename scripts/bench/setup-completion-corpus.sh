#!/usr/bin/env bash
# The completion benchmarks' corpora: real projects in three languages, fetched pinned (sha256)
# from PyPI sdists and Debian packages into a git-ignored cache and unpacked there. Nothing
# fetched is committed; nothing here runs in CI. Two sets, kept apart on purpose:
#
#   scripts/bench/setup-completion-corpus.sh [speed]  -> .cache/completion-corpus/src/<name>/
#     what tests/bench/bench_completion measured complete.yaml's switches on (pool, speculation,
#     KV type, the suffix without FIM): tomlkit 0.13.2 (Python), python-dateutil 2.9.0.post0
#     (Python), lz4 4.3.3 (C: the LZ4 library and the binding's C), go-toml 1.9.4 (Go, Debian
#     golang-github-pelletier-go-toml-dev)
#   scripts/bench/setup-completion-corpus.sh quality  -> .cache/quality-corpus/src/<name>/
#     tests/bench/completion_quality.py's: projects no design choice was measured on, so its
#     verdict is not fitted to them: pyparsing 3.1.2 (Python), cmarkgfm 2024.11.20 (C: the
#     cmark-gfm sources), go-cmp 0.5.9 and pflag 1.0.6 (Go, Debian golang-github-google-go-cmp-dev
#     and golang-github-spf13-pflag-dev)
# Environment: PYTHON (default python3) for pip; VSYNTH_CACHE_DIR (default <repo>/.cache).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
python=${PYTHON:-python3}
set_name=${1:-speed}
case "$set_name" in
  speed) cache="${VSYNTH_CACHE_DIR:-$root/.cache}/completion-corpus" ;;
  quality) cache="${VSYNTH_CACHE_DIR:-$root/.cache}/quality-corpus" ;;
  *)
    echo "setup-completion-corpus: unknown set '$set_name' (speed or quality)" >&2
    exit 2
    ;;
esac
downloads="$cache/downloads"
src="$cache/src"

# name kind (pypi|deb) package version sha256 subdir-kept (deb: the sources' folder)
if [ "$set_name" = speed ]; then
  projects=(
    "tomlkit pypi tomlkit 0.13.2 fff5fe59a87295b278abd31bec92c15d9bc4a06885ab12bcea52c71119392e79 -"
    "dateutil pypi python-dateutil 2.9.0.post0 37dd54208da7e1cd875388217d5e00ebd4179249f90fb72437e91a35459a0ad3 -"
    "lz4 pypi lz4 4.3.3 01fe674ef2889dbb9899d8a67361e0c4a2c833af5aeb37dd505727cf5d2a131e -"
    "go-toml deb golang-github-pelletier-go-toml-dev 1.9.4-1 7aa25a19f2c90b2d504ef958844f557f8c26924d0d983783aa43775d67ea3446 usr/share/gocode/src/github.com/pelletier/go-toml"
  )
else
  projects=(
    "pyparsing pypi pyparsing 3.1.2 a1bac0ce561155ecc3ed78ca94d3c9378656ad4c94c1270de543f621420f94ad -"
    "cmarkgfm pypi cmarkgfm 2024.11.20 5dd01cf61975a8a57213cdef5ed870e936032f13fe93d60ddf659ffb9cf73c6a -"
    "go-cmp deb golang-github-google-go-cmp-dev 0.5.9-1 b68bd919daa7c1bdf02abfb68894e29e532f19b03b68c8615f50626c48f553b6 usr/share/gocode/src/github.com/google/go-cmp"
    "pflag deb golang-github-spf13-pflag-dev 1.0.6~git20210604-d5e0c0615ace-1 bd1c3c2a3e47512a64da02ebea900eb5a3f3c5d386e559d5718a3a935c0ea570 usr/share/gocode/src/github.com/spf13/pflag"
  )
fi

die() {
  echo "setup-completion-corpus: error: $*" >&2
  exit 1
}

fetch() {  # kind package version -> path of the downloaded file
  local kind=$1 package=$2 version=$3 file
  case "$kind" in
    pypi)
      file=$(ls "$downloads" 2>/dev/null | grep -i -E "^${package//-/[-_]}-${version}\.tar\.gz$" || true)
      if [ -z "$file" ]; then
        "$python" -m pip download --quiet --disable-pip-version-check --no-deps \
          --no-binary "$package" --dest "$downloads" "$package==$version" >&2 ||
          die "pip could not download $package==$version"
        file=$(ls "$downloads" | grep -i -E "^${package//-/[-_]}-${version}\.tar\.gz$")
      fi
      ;;
    deb)
      file="${package}_${version}_all.deb"
      if [ ! -f "$downloads/$file" ]; then
        (cd "$downloads" && apt-get download "$package=$version" >&2) ||
          die "apt-get could not download $package=$version (apt-get update first?)"
      fi
      ;;
  esac
  echo "$downloads/${file%%$'\n'*}"
}

mkdir -p "$downloads" "$src"
for entry in "${projects[@]}"; do
  read -r name kind package version sha keep <<<"$entry"
  [ -d "$src/$name" ] && continue
  file=$(fetch "$kind" "$package" "$version")
  got=$(sha256sum "$file" | cut -d' ' -f1)
  [ "$got" = "$sha" ] || die "$file has sha256 $got, expected $sha; delete it and run again"
  tmp=$(mktemp -d)
  case "$kind" in
    pypi) tar -xzf "$file" -C "$tmp" && mv "$tmp"/* "$src/$name.part" ;;
    deb) dpkg-deb -x "$file" "$tmp" && mv "$tmp/$keep" "$src/$name.part" ;;
  esac
  rm -rf "$tmp"
  mv "$src/$name.part" "$src/$name"
  echo "setup-completion-corpus: $name $version in $src/$name"
done
echo "setup-completion-corpus: $src ready"
