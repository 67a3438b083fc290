#include "stages/io/register.h"

#include "stages/io/jsonl_sink.h"
#include "stages/io/jsonl_source.h"

namespace vsynth::stages::io {

void register_stages(graph::Registry& registry) {
  registry.add_stage(jsonl_source_contract(), [](const graph::StageContext& ctx) {
    return std::make_unique<JsonlSource>(ctx.params.string("path"));
  });
  registry.add_stage(jsonl_sink_contract(), [](const graph::StageContext& ctx) {
    return std::make_unique<JsonlSink>(
        SinkOptions{ctx.params.string("path"), ctx.params.boolean("fsync"),
                    ctx.params.boolean("resume"), ctx.params.boolean("overwrite")});
  });
}

}  // namespace vsynth::stages::io
