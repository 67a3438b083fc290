// Checks a PipelineSpec against the registry's contracts and resolves it into a graph that can
// be built: every problem is collected (unknown kinds, parameters, types, ranges, resource
// references, ports, facets, cycles, reachability) and a half-valid pipeline is never returned.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graph/contract.h"
#include "graph/diagnostics.h"
#include "graph/params.h"
#include "graph/registry.h"
#include "graph/spec.h"

namespace vsynth::graph {

inline constexpr int kOut = -1;  // edge target: the pipeline's output

struct ResolvedResource {
  std::string name;
  const ResourceKind* kind = nullptr;
  Params params;
  Mark mark;  // its declaration, for messages
};

struct ResolvedStage {
  std::string name;
  const StageKind* kind = nullptr;
  Params params;
  Concurrency concurrency;
  std::vector<std::size_t> port_edges;  // per port of the contract: index into edges
  Mark mark;                            // its declaration, for messages
};

struct ResolvedEdge {
  int from = 0;  // stage index
  Port port = 0;
  int to = kOut;  // stage index or kOut
  bool back_edge = false;
  int max_attempts = 0;  // back edges: total attempts allowed, the first one included
  int64_t capacity = 0;  // queue bound in front of `to`
  QueuePolicy policy = QueuePolicy::Block;
  Mark mark;
};

struct ResolvedEndpoint {  // the source or the sink
  std::string name;
  const StageKind* kind = nullptr;
  Params params;
};

struct ValidatedPipeline {
  std::string file;
  std::string name;
  std::vector<ResolvedResource> resources;  // in declaration order (build order)
  std::vector<ResolvedStage> stages;
  std::vector<ResolvedEdge> edges;
  int entry = 0;  // the stage new items enter
  int64_t max_in_flight = 64;
  bool ordered = false;
  bool fail_fast = false;
  std::optional<ResolvedEndpoint> source, sink;  // when the YAML names them
};

// Validates and resolves; all problems go into `diags`. Returns nullopt when there is any.
// The plugins the spec names must already be in `registry` (graph/plugin_loader.h).
std::optional<ValidatedPipeline> validate(const PipelineSpec& spec, const Registry& registry,
                                          Diagnostics& diags);

// Loads and validates a file; throws SpecError with every diagnostic on failure. Its plugins
// must already be in `registry`: load_pipeline_with_plugins (graph/plugin_loader.h) loads them.
ValidatedPipeline load_pipeline(const std::string& path, const Registry& registry);

// Resolves a source or sink kind with parameters given as strings (command-line overrides
// such as --input), checked like YAML values. Throws SpecError on a bad kind or value.
ResolvedEndpoint resolve_endpoint(const Registry& registry, const std::string& kind,
                                  const std::vector<std::pair<std::string, std::string>>& params,
                                  Role role);

// Checks raw `with:` parameters against a contract's ParamSpecs (shared by stages, resources,
// sources and sinks). `owner` is e.g. "stage `prune` (context.prune)".
Params check_params(const std::vector<ParamSpec>& specs, const std::vector<RawParam>& raw,
                    const std::string& owner, Mark owner_mark,
                    const std::vector<ResolvedResource>& resources, const Registry& registry,
                    Diagnostics& diags);

}  // namespace vsynth::graph
