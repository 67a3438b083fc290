#include "stages/retrieval/register.h"

namespace vsynth::stages::retrieval {

// Nothing yet: the index library (index.h) comes first; the `retrieval.index` resource and the
// `retrieval.search` stage are registered here when they land (and listed in kinds_retrieval,
// tests/capabilities/CMakeLists.txt).
void register_stages(graph::Registry& /*registry*/) {}

}  // namespace vsynth::stages::retrieval
