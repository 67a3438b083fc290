// A plugin whose registration throws, as one that checks its environment might.
#include <stdexcept>

#include "graph/plugin.h"

namespace {

void register_throwing(vsynth::graph::Registry&) {
  throw std::runtime_error("no licence server at 10.0.0.1");
}

}  // namespace

VSYNTH_PLUGIN(register_throwing);
