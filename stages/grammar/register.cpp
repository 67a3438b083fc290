#include "stages/grammar/register.h"

#include "stages/grammar/grammar_hook.h"

namespace vsynth::stages::grammar {

void register_stages(graph::Registry& registry) {
  registry.add_resource(grammar_hook_contract(), make_grammar_hook_resource);
}

}  // namespace vsynth::stages::grammar
