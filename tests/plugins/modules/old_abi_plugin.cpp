// A plugin as vsynth 0.0.1 would have built it: the entry points VSYNTH_PLUGIN writes, with
// that version's ABI string. The loader must refuse it before calling its registration.
#include <cstdlib>

#include "graph/plugin.h"

extern "C" __attribute__((visibility("default"))) const char* vsynth_plugin_abi() {
  return "vsynth 0.0.1 (" VSYNTH_PLUGIN_STDLIB ")";
}

extern "C" __attribute__((visibility("default"))) void vsynth_plugin_register(
    vsynth::graph::Registry&) {
  std::abort();  // never reached: the ABI check comes first
}
