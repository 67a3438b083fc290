// A plugin that names its ABI but exports no registration function.
#include "graph/plugin.h"

extern "C" __attribute__((visibility("default"))) const char* vsynth_plugin_abi() {
  return VSYNTH_PLUGIN_ABI;
}
