#include "stages/retrieval/search_stage.h"

#include <fmt/format.h>

#include <chrono>
#include <map>

#include "stages/ast/anchor_stage.h"
#include "stages/context/project_index.h"
#include "stages/context/unit_extract.h"
#include "stages/facets/task_file.h"
#include "stages/retrieval/usage.h"

namespace vsynth::stages::retrieval {

namespace {

class RetrievalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

const nlohmann::json* lookup(const nlohmann::json& data, const nlohmann::json::json_pointer& p) {
  return data.contains(p) ? &data[p] : nullptr;
}

// The task's files, path -> text: files_field (chunks of one path joined,
// facets::task_files), then the cursor's file (its text wins).
std::map<std::string, std::string_view> task_files(graph::Item& item,
                                                   const nlohmann::json::json_pointer& field,
                                                   const ast::ParsedFile& cursor_file) {
  std::map<std::string, std::string_view> out;
  try {
    for (facets::TaskFileText& f : facets::task_files(item, field)) {
      out[std::move(f.path)] = f.source;
    }
  } catch (const std::invalid_argument& e) {
    throw RetrievalError(e.what());
  }
  out[cursor_file.path()] = cursor_file.source();
  return out;
}

}  // namespace

SearchQuery anchor_query(const ast::AnchorFacet& a, std::string instruction,
                         std::shared_ptr<const context::FileUnits> units) {
  const ast::ParsedFile& file = a.file();
  const ast::Anchor& anchor = a.anchor();
  SearchQuery q;
  q.cursor_path = file.path();
  // The outermost function around the cursor (a lambda's or a nested function's too): its text
  // is the query's, and no chunk of it is a hit.
  const ast::NodeInfo* function = nullptr;
  for (const ast::Scope& scope : anchor.scopes) {
    if (scope.kind == ast::ScopeKind::Function) function = &scope.info;
  }
  if (!function && anchor.function) function = &*anchor.function;
  if (function) {
    const ast::Span& s = function->span;
    q.focus_text = std::string(file.source().substr(s.start_byte, s.end_byte - s.start_byte));
    q.focus_first_line = s.start.row + 1;
    q.focus_last_line = s.end.row + 1;
  } else {
    // Between functions: the cursor's row and the rows around it say what is being written.
    const uint32_t row = anchor.point.row;
    const uint32_t first = row > 10 ? row - 10 : 0;
    const uint32_t last = std::min(row + 3, file.row_count() - 1);
    q.focus_text = std::string(context::rows_text(file, first, last));
  }
  q.calls = called_names(q.focus_text, file.language().name(),
                         function ? std::string_view(function->name) : std::string_view());
  for (const ast::Reference& r : anchor.identifiers) q.identifiers.emplace_back(r.name);
  for (const ast::NodeInfo& imp : anchor.imports) {
    q.imports.emplace_back(
        file.source().substr(imp.span.start_byte, imp.span.end_byte - imp.span.start_byte));
  }
  q.instruction = std::move(instruction);
  if (!units) units = context::extract_file_units(a.share_file());
  for (const context::Unit& u : units->units) {
    if (context::is_definition(u.kind) && !u.name.empty()) {
      q.in_file_names.emplace(simple_name(u.name));
    }
  }
  // The function's own name (a recursive call) says nothing about what the file supplies.
  if (function) q.in_file_names.erase(std::string(function->name));
  return q;
}

SearchStage::SearchStage(const graph::StageContext& ctx)
    : index_(ctx.resources.share<IndexResource>(ctx.params.string("index"))),
      files_(ctx.params.pointer("files_field")),
      instruction_(ctx.params.pointer("instruction_field")),
      ok_(ctx.port("ok")) {
  const graph::Params& p = ctx.params;
  options_.top_k = static_cast<uint32_t>(p.integer("top_k"));
  options_.per_file_cap = static_cast<uint32_t>(p.integer("per_file_cap"));
  options_.candidates = static_cast<uint32_t>(p.integer("candidates"));
  options_.min_score = p.number("min_score");
  options_.adaptive_raise = p.number("adaptive_raise");
  options_.weight_lexical = p.number("weight_lexical");
  options_.weight_dense = p.number("weight_dense");
  options_.weight_structural = p.number("weight_structural");
  options_.weight_usage = p.number("weight_usage");
  options_.weight_local = p.number("weight_local");
  options_.rrf_k = p.number("rrf_k");
}

graph::Port SearchStage::process(graph::Item& item) {
  if (facets::anonymous_buffer(item)) return ok_;  // no language to query with
  const auto t0 = std::chrono::steady_clock::now();
  const ast::AnchorFacet& anchor = item.get<ast::AnchorFacet>();
  const std::map<std::string, std::string_view> files = task_files(item, files_, anchor.file());

  // --- the query, from the cursor file's units (extracted once, also chunked below) ---
  std::string instruction;
  if (const nlohmann::json* text = lookup(item.task().data, instruction_);
      text && text->is_string()) {
    instruction = text->get<std::string>();
  }
  const std::shared_ptr<const context::FileUnits> units =
      context::extract_file_units(anchor.share_file());
  SearchQuery query = anchor_query(anchor, std::move(instruction), units);

  // --- this task's overlay: its files the shared index does not hold as they are ---
  std::unordered_set<std::string> exclude;
  std::vector<OverlayFile> overlay_files;
  for (const auto& [path, text] : files) {
    query.task_paths.insert(path);
    const std::string* shared = index_->text(path);
    if (shared && *shared == text) continue;
    exclude.insert(path);
    const bool cursor = text.data() == anchor.file().source().data();
    overlay_files.push_back({path, text, cursor ? units : nullptr});
  }
  const OverlayCache::Result overlay =
      index_->overlays().get(std::move(overlay_files), item.stop_flag());

  // --- the search ---
  facets::RetrievedFacet result =
      search(index_->index(), *overlay.index, exclude, query, options_, index_->embedder().get(),
             [&](const std::string& path) -> std::string_view {
               if (auto it = files.find(path); it != files.end()) return it->second;
               const std::string* repo = index_->text(path);
               return repo ? std::string_view(*repo) : std::string_view();
             });
  result.degraded_reason = index_->degraded_reason();
  result.ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  item.emplace<facets::RetrievedFacet>(std::move(result));
  return ok_;
}

graph::Contract search_contract() {
  graph::Contract c;
  c.kind = "retrieval.search";
  c.summary =
      "Finds the project's functions most relevant to the cursor (BM25 + embedding + call "
      "co-occurrence + file structure, reciprocal-rank fusion) for context.deps to add to the "
      "candidates";
  c.concurrency = graph::Concurrency::unlimited();  // an overlay per task; the index locks
  c.requires_facets = {"anchor"};
  c.provides_facets = {"retrieved"};
  c.ports = {{"ok", "hits found (possibly none)", false}};
  c.params = {
      graph::P::resource("index", "index", "the retrieval.index resource to search"),
      graph::P::integer("top_k", 8, 1, 1000, "hits kept, best first"),
      graph::P::integer("per_file_cap", 3, 1, 1000,
                        "hits kept from any one file but the cursor's own (whose units prune "
                        "has anyway: a hit there only says which of them matter)"),
      graph::P::integer(
          "candidates", 50, 1, 10000,
          "chunks each list (BM25, dense, usage, local, structural) ranks before fusion"),
      graph::P::number("min_score", 0.05, 0, 1,
                       "base threshold on the fused score (reciprocal-rank fusion divided by its "
                       "best possible value, so in (0, 1])"),
      graph::P::number(
          "adaptive_raise", 0.3, 0, 1,
          "the threshold is min_score + adaptive_raise x coverage, coverage being the share of "
          "the names the cursor's function uses (those naming a definition in its file or among "
          "the candidates) that its own file defines: a file that already supplies what the "
          "function uses only gets hits several lists agree on"),
      graph::P::number("weight_lexical", 1, 0, 100, "weight of the BM25 list in the fusion"),
      graph::P::number("weight_dense", 1, 0, 100,
                       "weight of the embedding (cosine) list in the fusion"),
      graph::P::number("weight_structural", 1, 0, 100,
                       "weight of the structural list (same file, then files the cursor's file "
                       "imports)"),
      graph::P::number(
          "weight_usage", 2, 0, 100,
          "weight of the usage list (call co-occurrence) in the fusion: the other functions of "
          "the project, in the cursor file's language family, that call what the cursor's "
          "function calls vote for the names they call that it does not name yet, weighted by "
          "their overlap (IDF-weighted Jaccard of called names) times the name's IDF; those "
          "names' definitions (at most 3 units of a name) ranked by vote. 2 by default: BM25 "
          "and dense both score the query's text, this list is the one signal independent of "
          "it. 0: not computed"),
      graph::P::number(
          "weight_local", 1, 0, 100,
          "weight of the local list in the fusion: each name the rest of the cursor's file "
          "calls (its other functions; names the cursor's function already names left out) "
          "gets a vote per function calling it, and those names' definitions (at most 3 units "
          "of a name, in the file's language family) are ranked by votes: the helper the "
          "file's other code keeps calling, which a function that calls nothing yet misses in "
          "the usage list. 0: not computed"),
      graph::P::number("rrf_k", 60, 1, 10000, "reciprocal-rank fusion constant k: 1 / (k + rank)"),
      graph::P::pointer("files_field", "/files",
                        "JSON pointer to the task's other files [{path, source}] (as "
                        "context.deps reads them); those differing from the shared index are "
                        "searched for this task alone, in its place"),
      graph::P::pointer("instruction_field", "/instruction",
                        "JSON pointer to the task's instruction text, part of the query "
                        "(optional)"),
  };
  return c;
}

}  // namespace vsynth::stages::retrieval
