// The vsynth subcommands. Each returns the process exit code (see exit_codes.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/registry.h"

namespace CLI {
class App;
}  // namespace CLI

namespace vsynth::cli {

struct RunArgs {
  std::string pipeline;
  std::string input;
  std::string output;
  std::string trace;
  bool resume = false;
  bool overwrite = false;
  bool quiet = false;
  std::string metrics_json;  // per-stage metrics written here at the end, when set
  // The input's size limits (io.jsonl_source's max_task_bytes, ...); unset: the pipeline's.
  std::optional<int64_t> max_task_bytes, max_file_bytes, max_files;
  std::string shard;     // "I/N": run one shard into OUTPUT.rank-I (no MPI)
  std::string shard_by;  // "file" | "id"; empty: the source's
  int threads = 0;       // TBB threads of this process; 0: all cores (MPI: shared per machine)
};

struct MergeArgs {
  std::string output;
  std::vector<std::string> parts;  // empty: OUTPUT.rank-* on disk
  std::string input;               // the tasks: merge in their order, report missing ones
  bool overwrite = false;          // drop the existing OUTPUT's records instead of keeping them
  bool keep_parts = false;
};

// Plugins (graph/plugin.h): `--plugin PATH` (repeatable) on a command that loads pipelines,
// into `files`; load_plugins() loads VSYNTH_PLUGIN_PATH's, then those, and prints each
// failure naming the flag or the variable (false: one failed).
void add_plugin_option(CLI::App& command, std::vector<std::string>& files);
bool load_plugins(graph::Registry& registry, const std::vector<std::string>& files);

// The commands that load pipelines take the registry mutable: a pipeline's `plugins:` add
// kinds to it (graph/plugin_loader.h).
int cmd_run(graph::Registry& registry, const RunArgs& args);
int cmd_merge(const MergeArgs& args);
int cmd_validate(graph::Registry& registry, const std::vector<std::string>& files);
int cmd_stages(const graph::Registry& registry, const std::string& only);
int cmd_dot(graph::Registry& registry, const std::string& file);

}  // namespace vsynth::cli
