// The pipeline file as written: stages, resources, edges and run options, each with the
// position it came from. Loading checks only the YAML's shape (and guards against depth and
// alias bombs and against files of too many nodes); checking against the stage contracts is
// validate.h's job.
//
//   pipeline: verify-loop
//   plugins: [build/libmy_stages.so]   # shared libraries adding kinds (graph/plugin.h)
//   resources:
//     coder: { use: model.gguf, with: { path: ${VSYNTH_MODEL} } }
//   stages:
//     anchor:   { use: ast.anchor }
//     generate: { use: generate.llm, with: { model: coder }, concurrency: 2 }
//   edges:
//     - anchor -> generate -> out
//     - { from: check.refuted, to: generate, back_edge: true, max_attempts: 8 }
//   queues: { default: { capacity: 64, policy: block } }
#pragma once

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <vector>

#include "graph/diagnostics.h"

namespace vsynth::graph {

enum class QueuePolicy { Block, Reject };

// One `key: value` under `with:`, still as YAML: its type is checked against the contract.
struct RawParam {
  std::string name;
  Mark mark;
  YAML::Node value;
};

// A stage, resource, source or sink declaration: `name: { use: kind, with: {...}, ... }`.
struct NodeSpec {
  std::string name;
  Mark mark;
  std::string use;
  Mark use_mark;
  std::vector<RawParam> with;
  std::optional<YAML::Node> concurrency;  // stages only: serial | unlimited | N
  Mark concurrency_mark;
};

struct EdgeSpec {
  std::string from;       // stage name, or "in"
  std::string from_port;  // empty: the stage's default (first) port
  std::string to;         // stage name, or "out"
  Mark mark;
  bool back_edge = false;
  std::optional<int64_t> max_attempts;
  std::optional<int64_t> capacity;
  std::optional<QueuePolicy> policy;
};

// One entry of `plugins:`: a shared library that registers more kinds (graph/plugin.h).
struct PluginSpec {
  std::string path;      // as written, ${ENV} expanded
  std::string resolved;  // a relative path joined to the pipeline file's directory
  Mark mark;
};

struct PipelineSpec {
  std::string file;  // as given, for messages
  std::string name;
  std::string description;
  std::vector<PluginSpec> plugins;  // loaded (graph/plugin_loader.h) before validation
  std::vector<NodeSpec> resources;
  std::vector<NodeSpec> stages;
  std::vector<EdgeSpec> edges;
  std::optional<NodeSpec> source;
  std::optional<NodeSpec> sink;
  int64_t queue_capacity = 64;  // queues.default.capacity: per-edge bound and max in flight
  QueuePolicy queue_policy = QueuePolicy::Block;
  std::optional<int64_t> max_in_flight;  // defaults to queue_capacity
  bool ordered = false;                  // write results in input order
  bool fail_fast = false;                // a stage exception stops the run
};

// Limits that keep a hostile file from costing unbounded time or memory. The node counts are
// checked on the parser's events before any node is built, so a file is refused after reading
// at most `max_nodes` of them (a 4 MB file of 2M one-digit items: ~0.1 s, not seconds and a GB).
// Real pipeline files have a few hundred nodes.
struct LoadLimits {
  std::size_t max_bytes = 4u << 20;      // the file itself
  int max_depth = 64;                    // nesting, counted through aliases
  std::size_t max_nodes = 100000;        // nodes written in the file (scalars, lists, maps)
  std::size_t max_alias_nodes = 100000;  // nodes reached through aliases, all uses summed
};

// Loads a pipeline file. Shape problems go into `diags` (all of them); the returned spec
// holds whatever could be read. A file that is not YAML at all yields one diagnostic.
PipelineSpec load_spec_file(const std::string& path, Diagnostics& diags, LoadLimits limits = {});
PipelineSpec load_spec_string(const std::string& text, const std::string& file, Diagnostics& diags,
                              LoadLimits limits = {});

// Expands ${VAR} and ${VAR:-default} in a scalar; an unset VAR with no default is an error
// at `mark`. `$$` is a literal dollar.
std::optional<std::string> expand_env(const std::string& text, Mark mark, Diagnostics& diags);

inline Mark mark_of(const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  return m.line < 0 ? Mark{} : Mark{m.line + 1, m.column + 1};
}

}  // namespace vsynth::graph
