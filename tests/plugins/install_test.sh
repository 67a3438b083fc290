#!/usr/bin/env bash
# The installed package end to end (tests/plugins/CMakeLists.txt registers the three steps):
#   install_test.sh install BUILD_DIR            cmake --install BUILD_DIR into $PREFIX
#   install_test.sh headers                      each header on its own; exactly the closure; .pc
#   install_test.sh example WRITE_MODEL OLD_ABI  examples/plugin built and run from $PREFIX
# Environment (from ctest): CMAKE, PREFIX, WORK (scratch, kept between runs so ccache and the
# out-of-tree builds hit), SOURCE (the checkout), CXX (this build's compiler).
set -euo pipefail
step=$1
shift
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
# prints TEXT CMD...: CMD succeeds and its output holds TEXT. Not `CMD | grep -q`: under pipefail
# a grep that quits at the first match can SIGPIPE CMD (tests/scripts/pipefail_lint.sh).
prints() {
  local text=$1 out
  shift
  out=$("$@") || return 1
  grep -qF -- "$text" <<<"$out"
}
# Configures and builds an out-of-tree project against $PREFIX, through ccache when there is one.
build_against_prefix() {
  local src=$1 dir=$2
  local args=(-S "$src" -B "$dir" -DCMAKE_PREFIX_PATH="$PREFIX" -DCMAKE_CXX_COMPILER="$CXX"
              -DCMAKE_BUILD_TYPE=RelWithDebInfo)
  command -v ninja >/dev/null && args+=(-G Ninja)
  if command -v ccache >/dev/null; then
    args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    # Paths under the prefix's folder are hashed relative to the build (and the build folder is
    # not hashed), so this build folder, an ASan one and other checkouts share cache entries.
    export CCACHE_BASEDIR=$(dirname "$PREFIX") CCACHE_NOHASHDIR=1
  fi
  "$CMAKE" "${args[@]}" >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; fail "configure $src"; }
  "$CMAKE" --build "$dir" -j2 || fail "build $src"
}
version() { sed -n 's/^#define VSYNTH_VERSION_STRING "\(.*\)"$/\1/p' "$PREFIX/include/vsynth/graph/version.h"; }

case $step in
install)
  rm -rf "$PREFIX"
  "$CMAKE" --install "$1" --prefix "$PREFIX" >/dev/null
  [ -x "$PREFIX/bin/vsynth" ] || fail "no bin/vsynth"
  ls "$PREFIX"/lib*/libvsynth.so >/dev/null || fail "no libvsynth.so"
  ls "$PREFIX"/lib*/cmake/vsynth/vsynthConfig.cmake >/dev/null || fail "no CMake package"
  # The installed binary runs from the prefix, on the prefix's library.
  got=$("$PREFIX/bin/vsynth" --version)
  [ "$got" = "vsynth $(version)" ] || fail "--version said '$got', version.h $(version)"
  lib=$(ldd "$PREFIX/bin/vsynth" | awk '/libvsynth/ { print $3 }')
  [ "$(dirname "$(readlink -f "$lib")")" = "$(dirname "$(readlink -f "$PREFIX"/lib*/libvsynth.so)")" ] ||
    fail "bin/vsynth loads '$lib', not the prefix's libvsynth.so"
  echo "installed vsynth $(version) into $PREFIX"
  ;;
headers)
  python3 "$SOURCE/tests/plugins/check_header_closure.py" "$PREFIX/include/vsynth" || fail "header set"
  mkdir -p "$WORK"
  build_against_prefix "$SOURCE/tests/plugins/header_check" "$WORK/header_check"
  pc_dir=$(dirname "$(ls "$PREFIX"/lib*/pkgconfig/vsynth.pc)")
  export PKG_CONFIG_PATH=$pc_dir
  [ "$(pkg-config --modversion vsynth)" = "$(version)" ] || fail "vsynth.pc version"
  prints "-lvsynth" pkg-config --libs vsynth || fail "vsynth.pc libs"
  # shellcheck disable=SC2046
  echo '#include "graph/plugin.h"' | "$CXX" -std=c++20 $(pkg-config --cflags vsynth) -fsyntax-only -x c++ - ||
    fail "graph/plugin.h with pkg-config's flags"
  echo "headers ok"
  ;;
example)
  write_model=$1 old_abi=$2
  vsynth=$PREFIX/bin/vsynth
  ex=$SOURCE/examples/plugin
  mkdir -p "$WORK"
  build_against_prefix "$ex" "$WORK/example"
  plugin=$WORK/example/libvsynth_no_network.so
  [ -f "$plugin" ] || fail "the example built no $plugin"
  "$write_model" "$WORK/tiny.gguf"
  export VSYNTH_MODEL=$WORK/tiny.gguf VSYNTH_EXAMPLE_PLUGIN=$plugin
  unset VSYNTH_PLUGIN_PATH

  # Phase 1: the example pipeline validated and run through its `plugins:` entry.
  prints ": ok (2 stages" "$vsynth" validate "$ex/pipeline.yaml" || fail "validate"
  "$vsynth" run "$ex/pipeline.yaml" -i "$ex/tasks.jsonl" -o "$WORK/out.jsonl" --overwrite -q ||
    fail "run"
  python3 - "$WORK/out.jsonl" <<'PY' || fail "the results"
import json, sys
records = {r["id"]: r for r in map(json.loads, open(sys.argv[1]))}
add, fetch = records["add"], records["fetch"]
assert add["passed"] is True and add["attempts"] == 1 and add["status"] == "no_network.clean", add
assert add["facets"]["network_check"] == {"found": [""]}, add["facets"]
assert fetch["passed"] is False and fetch["attempts"] == 3, fetch
assert fetch["facets"]["network_check"] == {"found": ["socket"]}, fetch["facets"]
assert fetch["status"] == "exhausted" and fetch["exit"] == "no_network.network", fetch
assert [f["from"] for f in fetch["feedback"]] == ["no_network.network"] * 3, fetch["feedback"]
assert "the code used socket" in fetch["feedback"][0]["message"], fetch["feedback"]
print("records ok:", add["status"], "/", fetch["status"])
PY

  # Phase 2: --plugin and VSYNTH_PLUGIN_PATH; `vsynth stages` names the plugin's file. A plugin
  # named by the pipeline and by the flag is loaded once.
  real=$(readlink -f "$plugin")
  prints "plugin: $real" "$vsynth" stages example.no_network --plugin "$plugin" ||
    fail "stages --plugin"
  VSYNTH_PLUGIN_PATH="/nonexistent-but-empty-entries-are-skipped::$WORK/example" \
    "$vsynth" stages example.no_network 2>/dev/null && fail "a missing VSYNTH_PLUGIN_PATH entry was ignored"
  VSYNTH_PLUGIN_PATH="::$WORK/example" prints "plugin: $real" "$vsynth" stages example.no_network ||
    fail "stages with VSYNTH_PLUGIN_PATH"
  "$vsynth" validate "$ex/pipeline.yaml" --plugin "$plugin" >/dev/null || fail "pipeline + --plugin"

  # Phase 3: failures name where the plugin came from, exit 2, no crash.
  set +e
  err=$("$vsynth" stages --plugin "$WORK/nope.so" 2>&1 >/dev/null); rc=$?
  [ $rc = 2 ] && grep -qF "error: --plugin $WORK/nope.so: plugin \`$WORK/nope.so\`: no such file" <<<"$err" ||
    fail "--plugin missing (rc $rc): $err"
  err=$(VSYNTH_PLUGIN_PATH=$WORK/nope "$vsynth" validate "$ex/pipeline.yaml" 2>&1 >/dev/null); rc=$?
  [ $rc = 2 ] && grep -qF "error: VSYNTH_PLUGIN_PATH: \`$WORK/nope\`: no such file or directory" <<<"$err" ||
    fail "VSYNTH_PLUGIN_PATH missing (rc $rc): $err"
  err=$("$vsynth" dot "$ex/pipeline.yaml" --plugin "$old_abi" 2>&1 >/dev/null); rc=$?
  [ $rc = 2 ] && grep -qF "was built against vsynth 0.0.1" <<<"$err" &&
    grep -qF "this is vsynth $(version) (" <<<"$err" || fail "ABI mismatch (rc $rc): $err"
  printf 'plugins:\n  - %s\n  - missing/libx.so\nstages:\n  s: { use: example.no_network }\nedges: [ s -> out ]\n' \
    "$plugin" >"$WORK/bad.yaml"
  err=$("$vsynth" validate "$WORK/bad.yaml" 2>&1 >/dev/null); rc=$?
  [ $rc = 2 ] && grep -qF "$WORK/bad.yaml:3:5: error: plugin \`$WORK/missing/libx.so\`: no such file" <<<"$err" ||
    fail "plugins: entry missing (rc $rc): $err"
  err=$("$vsynth" run "$WORK/bad.yaml" -i "$ex/tasks.jsonl" -o "$WORK/bad.jsonl" 2>&1 >/dev/null); rc=$?
  [ $rc = 2 ] && grep -qF "$WORK/bad.yaml:3:5: error: plugin" <<<"$err" || fail "run with a missing plugin (rc $rc): $err"
  err=$("$vsynth" serve "$ex/pipeline.yaml" --port 0 --plugin "$WORK/nope.so" 2>&1 >/dev/null); rc=$?
  [ $rc = 2 ] && grep -qF "error: --plugin $WORK/nope.so: " <<<"$err" || fail "serve --plugin missing (rc $rc): $err"
  err=$("$vsynth" serve "$WORK/bad.yaml" --port 0 2>&1 >/dev/null); rc=$?
  [ $rc = 2 ] && grep -qF "$WORK/bad.yaml:3:5: error: plugin" <<<"$err" || fail "serve with a missing plugin (rc $rc): $err"
  set -e
  echo "example ok"
  ;;
*)
  fail "unknown step $step"
  ;;
esac
