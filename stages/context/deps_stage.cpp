#include "stages/context/deps_stage.h"

#include <fmt/format.h>

#include "stages/context/context_units.h"
#include "stages/context/error.h"
#include "stages/context/stage_util.h"
#include "stages/facets/task_file.h"

namespace vsynth::stages::context {

DepsStage::DepsStage(const graph::StageContext& ctx)
    : files_(ctx.params.pointer("files_field")),
      options_{static_cast<uint32_t>(ctx.params.integer("hops")),
               static_cast<uint32_t>(ctx.params.integer("max_per_hop")),
               static_cast<uint32_t>(ctx.params.integer("max_ambiguity"))},
      max_files_(static_cast<uint32_t>(ctx.params.integer("max_files"))),
      ok_(ctx.port("ok")),
      cache_(static_cast<std::size_t>(ctx.params.integer("cache_mb")) << 20) {}

void DepsStage::index_task_files(graph::Item& item, const ContextUnitsFacet& c,
                                 ProjectIndex& index) {
  // Chunks of one path come joined (facets::task_files): an editor's pieces of a file index
  // as that file.
  std::vector<facets::TaskFileText> files;
  try {
    files = facets::task_files(item, files_, max_files_);
  } catch (const std::invalid_argument& e) {
    throw ContextError(e.what());
  }
  for (const facets::TaskFileText& f : files) {
    // Parsing thousands of files takes seconds: a stopping run (SIGTERM) must not wait.
    if (item.stop_requested()) {
      throw graph::Cancelled(
          fmt::format("stopped while indexing the task's files ({} of them)", files.size()));
    }
    if (auto units = cache_.get(f.path, f.source)) index.update(f.path, std::move(units));
  }
  // The anchor's own tree and the candidates' own extraction of it: the
  // cursor's file is neither parsed nor extracted a second time, and its text
  // wins over a listed version.
  if (c.extracted) {
    index.update(c.files[0].path, c.extracted);
  } else {
    index.update(c.files[0].path, c.file);
  }
}

graph::Port DepsStage::process(graph::Item& item) {
  if (facets::anonymous_buffer(item)) return ok_;  // no language: nothing to index against
  ContextUnitsFacet& c = ensure_candidates(item);
  ProjectIndex index;  // this task's alone
  index_task_files(item, c, index);
  // What retrieval.search found, when it ran before: its hits join the candidates.
  if (const auto* retrieved = item.find<facets::RetrievedFacet>()) {
    RetrievedUnits hits = resolve_retrieved(*retrieved, index, cache_);
    expand_dependencies(c, index, options_, item.arena(), &hits);  // copies texts to the arena
  } else {
    expand_dependencies(c, index, options_, item.arena());
  }
  return ok_;
}

graph::Contract deps_contract() {
  graph::Contract c;
  c.kind = "context.deps";
  c.summary =
      "Indexes the task's files (imports, calls, type uses; a shared cache "
      "parses each text "
      "once) and adds definitions within two hops of the cursor's function, and the units "
      "retrieval.search found (the `retrieved` facet, when present)";
  c.concurrency = graph::Concurrency::unlimited();  // an index per task; the
                                                    // cache locks itself
  c.requires_facets = {"anchor"};
  c.provides_facets = {"context_units"};
  c.ports = {{"ok", "dependencies added", false}};
  c.params = {
      graph::P::pointer("files_field", "/files",
                        "JSON pointer to the project's other files [{path, source}] the task "
                        "can see (optional; each task sends every file it relies on)"),
      graph::P::integer("hops", 2, 1, 2, "dependency hops from the cursor's function"),
      graph::P::integer("max_per_hop", 24, 1, 1000, "definitions kept per hop, nearest first"),
      graph::P::integer("max_ambiguity", 3, 1, 100,
                        "follow a name not found in the file or its imports only when the "
                        "task's files define it at most this many times"),
      graph::P::integer("max_files", 20000, 1, 10000000, "files one task may send"),
      graph::P::integer("cache_mb", 256, 0, 1 << 20,
                        "MiB of parsed and extracted files kept between tasks, keyed by path "
                        "and content (a cache only: results never depend on it); 0: none"),
  };
  return c;
}

}  // namespace vsynth::stages::context
