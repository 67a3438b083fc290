#include "stages/io/register.h"

#include <stdexcept>

#include "stages/io/jsonl_sink.h"
#include "stages/io/jsonl_source.h"

namespace vsynth::stages::io {

void register_stages(graph::Registry& registry) {
  registry.add_stage(jsonl_source_contract(), [](const graph::StageContext& ctx) {
    SourceOptions o;
    o.path = ctx.params.string("path");
    o.limits.task_bytes = static_cast<uint64_t>(ctx.params.integer("max_task_bytes"));
    o.limits.file_bytes = static_cast<uint64_t>(ctx.params.integer("max_file_bytes"));
    o.limits.files = static_cast<uint64_t>(ctx.params.integer("max_files"));
    o.files_field = ctx.params.string("files_field");
    o.source_field = ctx.params.string("source_field");
    std::string error;
    const auto shard = parse_shard(ctx.params.string("shard"), error);
    if (!shard) throw std::runtime_error("io.jsonl_source: " + error);
    o.shard = *shard;
    o.shard.key = *parse_shard_key(ctx.params.string("shard_by"));  // an Enum: checked
    return std::make_unique<JsonlSource>(std::move(o));
  });
  registry.add_stage(jsonl_sink_contract(), [](const graph::StageContext& ctx) {
    return std::make_unique<JsonlSink>(
        SinkOptions{ctx.params.string("path"), ctx.params.boolean("fsync"),
                    ctx.params.boolean("resume"), ctx.params.boolean("overwrite")});
  });
}

}  // namespace vsynth::stages::io
