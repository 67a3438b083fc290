#include "stages/context/prune_stage.h"

#include <fmt/format.h>

#include "stages/context/context_units.h"
#include "stages/context/edits.h"
#include "stages/context/error.h"
#include "stages/context/stage_util.h"
#include "stages/facets/model.h"
#include "stages/facets/task_file.h"

namespace vsynth::stages::context {

namespace {

std::shared_ptr<const TokenCounter> make_counter(const graph::StageContext& ctx) {
  const std::string& how = ctx.params.string("tokenizer");
  const std::string& model = ctx.params.string("model");
  if (!model.empty() && how != "auto" && how != "model") {
    throw ContextError(fmt::format(
        "`model: {}` and `tokenizer: {}` disagree on how to count "
        "tokens; leave `tokenizer` out (auto) or set it to `model` to count with the model's "
        "tokenizer, or drop `model`",
        model, how));
  }
  if (how == "model" && model.empty()) {
    throw ContextError(fmt::format(
        "`tokenizer: model` needs `model`, the name of a "
        "model.gguf resource declared under resources: (or use `tokenizer: estimate`)"));
  }
  if (!model.empty()) {
    // The loaded model's own tokenizer, kept alive by the model (aliasing shared_ptr).
    const std::shared_ptr<facets::ModelResource> res =
        ctx.resources.share<facets::ModelResource>(model);
    std::shared_ptr<const kernels::Tokenizer> tok(res->share(), &res->model().tokenizer());
    return std::make_shared<const TokenizerCounter>(std::move(tok),
                                                    "model:" + res->path().string());
  }
  if (how == "auto" || how == "estimate") return estimate_counter();
  const std::string& path = ctx.params.string("gguf_path");
  if (path.empty()) {
    throw ContextError(
        fmt::format("`tokenizer: gguf` needs `gguf_path`, the model file whose "
                    "tokenizer counts tokens (or use `tokenizer: estimate`)"));
  }
  return TokenizerCounter::from_gguf(path);
}

}  // namespace

PruneStage::PruneStage(const graph::StageContext& ctx)
    : counter_(make_counter(ctx)),
      edits_field_(ctx.params.pointer("edits_field").to_string()),
      ok_(ctx.port("ok")) {
  options_.budget_tokens = static_cast<uint32_t>(ctx.params.integer("budget_tokens"));
  options_.split_focus = ctx.params.boolean("split_focus");
  options_.focus_share = ctx.params.number("focus_share");
  PruneWeights& w = options_.weights;
  w.cursor = ctx.params.number("weight_cursor");
  w.class_member = ctx.params.number("weight_class");
  w.reference = ctx.params.number("weight_reference");
  w.edit = ctx.params.number("weight_edit");
  w.dependency = ctx.params.number("weight_dependency");
  w.retrieval = ctx.params.number("weight_retrieval");
  w.import = ctx.params.number("weight_import");
  w.near = ctx.params.number("weight_near");
}

graph::Port PruneStage::process(graph::Item& item) {
  // No language, no units: generate.llm prompts with the task's own prefix and suffix.
  if (facets::anonymous_buffer(item)) return ok_;
  ContextUnitsFacet& c = ensure_candidates(item);
  mark_edits(c, read_edits(item, edits_field_));
  PruneResult r = prune(c, *counter_, options_, item.arena());

  ContextFacet& f = item.emplace<ContextFacet>();
  f.set_text(item.arena().store(r.text), r.cursor_offset);
  f.budget_tokens = options_.budget_tokens;
  f.used_tokens = r.used_tokens;
  f.tokenizer = counter_->describe();
  f.over_budget = r.over_budget;
  f.file_rows = c.files.empty() ? 0 : c.files[0].rows;
  f.markers = r.markers;
  for (const Shown& s : r.shown) {
    const Unit& u = c.units[s.unit];
    ContextFacet::Selected sel;
    sel.kind = u.kind;
    sel.name = std::string(u.name);
    sel.form = s.form;
    sel.tokens = s.tokens;
    sel.value = s.value;
    sel.reason = s.reason;
    sel.path = c.files[u.file].path;
    sel.first_line = u.first_row + 1;
    sel.last_line = (u.container ? u.last_row : u.end_row) + 1;
    if (u.file == 0 && s.form == Form::Full) f.shown_rows += u.last_row - u.first_row + 1;
    f.units.push_back(std::move(sel));
  }
  return ok_;
}

graph::Contract prune_contract() {
  graph::Contract c;
  c.kind = "context.prune";
  c.summary =
      "Chooses whole code blocks (full, signature or name form) that fit a token budget by "
      "priority (knapsack) and assembles the prompt context with elision markers";
  c.concurrency = graph::Concurrency::unlimited();  // the counter is immutable and shared
  c.requires_facets = {"anchor"};
  c.provides_facets = {"context"};
  c.ports = {{"ok", "context assembled", false}};
  c.params = {
      graph::P::integer("budget_tokens", 1024, 16, 1 << 20,
                        "tokens the context may take (markers and file headers included)"),
      graph::P::choice("tokenizer", "auto", {"auto", "estimate", "gguf", "model"},
                       "how tokens are counted: auto (the `model`'s tokenizer when one is "
                       "named, else the estimate), estimate (tokenizer-agnostic), gguf (the "
                       "tokenizer of the file at gguf_path), model (the `model`'s tokenizer)"),
      graph::P::resource("model", "model",
                         "model.gguf resource whose tokenizer counts tokens (the model "
                         "generate.llm uses, so the budget is in its tokens)",
                         /*required=*/false),
      graph::P::string("gguf_path", "", "model file whose tokenizer counts (tokenizer: gguf)"),
      graph::P::pointer("edits_field", "/edits",
                        "JSON pointer to the edit history [{path, start_line, end_line}], "
                        "oldest first (optional)"),
      graph::P::boolean("split_focus", true,
                        "when the enclosing function takes more than focus_share of the budget, "
                        "show its statements nearest the cursor (each whole) instead"),
      graph::P::number("focus_share", 0.75, 0.05, 1.0,
                       "share of the budget the enclosing function may take whole"),
      graph::P::number("weight_cursor", 150, 0, 1e6,
                       "value of the definition of the name at the cursor (the word typed)"),
      graph::P::number("weight_class", 100, 0, 1e6,
                       "value of the enclosing class's fields, constructor and type"),
      graph::P::number("weight_reference", 80, 0, 1e6,
                       "value of an in-file definition the function names (nearest use)"),
      graph::P::number("weight_edit", 60, 0, 1e6, "value of the most recently edited block"),
      graph::P::number("weight_dependency", 70, 0, 1e6,
                       "value of a definition one hop away in another file (two hops: 0.4x)"),
      graph::P::number("weight_retrieval", 50, 0, 1e6,
                       "value of the best definition retrieval.search found (the `retrieved` "
                       "facet, added by context.deps); halved by rank 8"),
      graph::P::number("weight_import", 20, 0, 1e6, "value of an import whose names are used"),
      graph::P::number("weight_near", 8, 0, 1e6,
                       "value of any other unit of the file, falling with distance"),
  };
  return c;
}

}  // namespace vsynth::stages::context
