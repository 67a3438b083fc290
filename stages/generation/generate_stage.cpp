#include "stages/generation/generate_stage.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "base/hash.h"
#include "base/mix.h"
#include "kernels/sampler/model_drafter.h"
#include "stages/facets/candidates.h"
#include "stages/facets/decode_fields.h"
#include "stages/generation/answer_program.h"
#include "stages/generation/task_decode.h"

namespace vsynth::stages::generation {

uint64_t candidate_seed(uint64_t seed, std::string_view task_id, int attempt, int candidate) {
  const uint64_t h = base::fnv1a64(task_id);
  return base::splitmix64(
      base::splitmix64(base::splitmix64(seed ^ h) + static_cast<uint64_t>(attempt)) +
      static_cast<uint64_t>(candidate));
}

GenerateStage::GenerateStage(std::shared_ptr<ModelResource> model,
                             std::vector<std::shared_ptr<DecodingHook>> hooks,
                             GenerateSettings settings, int workers, graph::Port ok)
    : model_(std::move(model)),
      hooks_(std::move(hooks)),
      settings_(std::move(settings)),
      ok_(ok),
      workers_([this](graph::Item& item) {
        generate(item);
        return ok_;
      }) {
  settings_.decode.sampler.validate();
  settings_.prompt.chat_model = model_->chat_tuned();
  const std::optional<FimFormat> fim = fim_format(model_->model().tokenizer(), settings_.gguf_fim);
  settings_.prompt.pack_files = fim && fim->sep != kernels::kNoToken;
  const int32_t ctx = model_->model().options().context_length;
  if (ctx > 0 && settings_.decode.max_new_tokens >= ctx) {
    throw std::invalid_argument(
        "max_new_tokens " + std::to_string(settings_.decode.max_new_tokens) +
        " leaves no room for a prompt in the model's context_length " + std::to_string(ctx));
  }
  workers_.start(workers);
}

void GenerateStage::submit(graph::ItemPtr item, graph::Completion done) {
  workers_.submit(std::move(item), std::move(done));
}

std::vector<float> GenerateStage::prefill(const std::vector<kernels::TokenId>& prompt,
                                          std::unique_ptr<kernels::Sequence>& seq,
                                          CandidatesFacet& facet) {
  kernels::Model& model = model_->model();
  facet.kv_pool = model.options().prefix_cache_bytes > 0;
  if (facet.kv_pool) {
    // Health: any engine error on the cached path (a prompt over the budget, a pool that ran
    // out) falls back to one plain prefill, and the record says why.
    try {
      kernels::PrefixUse use;
      seq = model_->new_sequence_with_prefix(prompt, &use);
      const auto rest = std::span(prompt).subspan(static_cast<size_t>(seq->position()));
      const std::span<const float> last = seq->prefill(rest);
      facet.cached_tokens = use.cached_tokens;
      return {last.begin(), last.end()};
    } catch (const kernels::EngineError& e) {
      facet.kv_pool_fallback = e.what();
      facet.cached_tokens = 0;
      seq.reset();
    }
  }
  seq = model_->new_sequence();
  const std::span<const float> last = seq->prefill(prompt);
  return {last.begin(), last.end()};
}

double GenerateStage::temperature_for(int attempt) const {
  return temperature_for(attempt, settings_.decode.sampler.temperature);
}

double GenerateStage::temperature_for(int attempt, double base) const {
  const double t = base + std::max(0, attempt - 1) * settings_.retry_temperature_step;
  return attempt > 1 ? std::min(t, std::max(settings_.max_temperature, base)) : t;
}

void GenerateStage::generate(graph::Item& item) {
  using clock = std::chrono::steady_clock;
  kernels::Model& model = model_->model();
  const kernels::Tokenizer& tok = model.tokenizer();
  const PromptParts parts = gather_prompt_parts(item, settings_.prompt);
  const TaskDecode task = task_decode(item, settings_.decode, settings_.lines);
  const int32_t ctx_len = model.options().context_length;
  if (ctx_len > 0 && task.decode.max_new_tokens >= ctx_len) {
    throw std::invalid_argument(fmt::format(
        "task `{}`: /decode/max_new_tokens {} leaves no room for a prompt in the model's "
        "context_length {}",
        item.id(), task.decode.max_new_tokens, ctx_len));
  }
  const std::size_t budget = ctx_len > 0
                                 ? static_cast<std::size_t>(ctx_len - task.decode.max_new_tokens)
                                 : static_cast<std::size_t>(1) << 30;
  const Prompt prompt =
      render_prompt(parts, tok, budget, model_->chat_template(), settings_.gguf_fim);

  auto& facet = item.emplace<CandidatesFacet>();
  facet.prompt = item.arena().store(prompt.text);
  facet.mode = to_string(prompt.mode);
  facet.format = prompt.format;
  facet.suffix = prompt.suffix;
  facet.packed_files = prompt.packed_files;
  facet.prompt_tokens = static_cast<int32_t>(prompt.tokens.size());
  facet.attempt = item.attempt();
  facet.record_prompt = settings_.record_prompt;

  const auto t0 = clock::now();
  std::unique_ptr<kernels::Sequence> base;
  const std::vector<float> logits = prefill(prompt.tokens, base, facet);  // shared by candidates
  facet.prefill_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  if (!facet.kv_pool_fallback.empty()) model_->add({.kv_pool_fallbacks = 1});
  if (settings_.warmup || task.warmup) {
    facet.warmup = true;
    return;
  }

  kernels::GenerateOptions opt = task.decode;
  opt.context_limit = ctx_len;
  // Under continuous batching a verify pass's rows compete with other items' decode rows: the
  // scheduler says how long a draft pays now (none once steps hold several sequences).
  if (kernels::Scheduler* sched = model_->scheduler(); sched && opt.speculation.enabled()) {
    opt.speculation.draft_limit = [sched](int32_t max) { return sched->suggested_max_draft(max); };
  }
  // Someone waiting on the task (graph/observer.h) sees candidate 0's text as it comes; they,
  // or a run that is stopping (SIGTERM), stop every candidate within one step.
  graph::Observer* const observer = item.task().observer.get();
  opt.cancel = item.stop_flag();
  if (prompt.mode == PromptMode::Complete) {
    opt.stop.insert(opt.stop.end(), settings_.completion_stop.begin(),
                    settings_.completion_stop.end());
  }
  opt.sampler.temperature =
      static_cast<float>(temperature_for(item.attempt(), task.decode.sampler.temperature));
  LineStops lines = task.lines;
  if (settings_.block_stop && prompt.mode == PromptMode::Complete && !task.task_n_indent &&
      lines.n_indent == 0) {
    lines.n_indent = cursor_line_indent(parts.prefix);
  }
  facet.n_indent = lines.n_indent;
  const int n = std::max(1, settings_.n_candidates);
  for (int c = 0; c < n; ++c) {
    if (observer && c == 0) {
      opt.on_text = [observer](std::string_view t) { observer->on_text(t); };
      opt.on_retract = [observer](std::size_t bytes) { observer->on_retract(bytes); };
    } else {
      opt.on_text = nullptr;
      opt.on_retract = nullptr;
    }
    // Every candidate but the last decodes on a fork; the last one takes the base itself.
    std::unique_ptr<kernels::Sequence> fork = c + 1 < n ? base->fork() : nullptr;
    kernels::Sequence& seq = fork ? *fork : *base;

    const HookContext hctx{.tokenizer = tok,
                           .prompt = facet.prompt,
                           .language = parts.language,
                           .mode = facet.mode,
                           .candidate = c,
                           .attempt = item.attempt(),
                           .prefix = parts.prefix,
                           .suffix = parts.suffix,
                           .given_code = parts.code,
                           .entry_point = parts.entry_point,
                           .extract_code = &extract_code};
    std::vector<std::unique_ptr<kernels::MaskHook>> owned;
    std::vector<kernels::MaskHook*> hooks;
    for (const auto& h : hooks_) {
      if (auto m = h->make(item, hctx)) {
        hooks.push_back(m.get());
        owned.push_back(std::move(m));
      }
    }
    // The line stops judge last, what the stage's hooks accepted; their clock starts now,
    // after the prefill.
    std::unique_ptr<LineStopHook> line_stop;
    if (lines.any()) {
      line_stop = std::make_unique<LineStopHook>(lines, LineStopHook::Clock::now());
      hooks.push_back(line_stop.get());
    }
    opt.sampler.seed =
        task.seed ? candidate_seed(*task.seed, "", item.attempt(), c)
                  : candidate_seed(settings_.decode.sampler.seed, item.id(), item.attempt(), c);
    kernels::Generation g = kernels::generate(seq, tok, logits, opt, hooks);
    std::string finish = kernels::to_string(g.finish);
    std::string finish_detail = g.finish_detail;
    // The line stop ended it (a hook stop), or it fired inside the last piece and the budget,
    // EOG or a stop string ended the loop first: a cut before the text's end is the line stop's.
    const bool line_ended =
        line_stop && line_stop->fired() != LineStopHook::Fired::None &&
        (g.finish == kernels::FinishReason::Hook || line_stop->cut(g.text) < g.text.size());
    if (line_ended) {
      const std::size_t keep = line_stop->cut(g.text);
      if (keep < g.text.size()) {
        if (opt.on_retract) opt.on_retract(g.text.size() - keep);  // all of it was streamed
        g.text.resize(keep);
      }
      finish = LineStopHook::finish(line_stop->fired());
      finish_detail = line_stop->detail();
    }

    Candidate cand;
    cand.text = item.arena().store(g.text);
    cand.completion =
        prompt.mode == PromptMode::Complete ? cand.text : extract_code(cand.text, parts.language);
    cand.code = item.arena().store(assemble_program(parts, cand.completion));
    cand.tokens = static_cast<int32_t>(g.tokens.size());
    cand.finish = finish;
    cand.finish_detail = finish_detail;
    cand.logprob_sum = g.logprob_sum;
    cand.decode_ms = g.decode_ms;
    cand.tokens_per_s = g.decode_ms > 0 ? 1000.0 * g.steps / g.decode_ms : 0.0;
    cand.seed = opt.sampler.seed;
    cand.temperature = opt.sampler.temperature;
    cand.rejections = g.rejections;
    cand.rollbacks = g.rollbacks;
    cand.trimmed = g.trimmed;
    cand.trimmed_by = g.trimmed_by;
    if (opt.speculation.enabled()) {
      cand.drafter = kernels::to_string(opt.speculation.drafter);
      cand.drafted = g.drafted;
      cand.accepted = g.accepted;
      cand.verify_steps = g.verify_steps;
      cand.speculation_fallback = g.speculation_fallback;
    }
    model_->add({.generations = 1,
                 .drafted = g.drafted,
                 .accepted = g.accepted,
                 .verify_steps = g.verify_steps,
                 .speculation_fallbacks = g.speculation_fallback.empty() ? 0 : 1});
    facet.candidates.push_back(cand);
    if (g.finish == kernels::FinishReason::Cancelled) break;  // nobody waits for the others
  }
}

namespace {

// The draft model of `drafter: model | self`, built once for every generation of the stage.
std::shared_ptr<const kernels::DraftModel> make_draft(const graph::StageContext& ctx,
                                                      const ModelResource& target,
                                                      kernels::DrafterKind kind) {
  const graph::Params& p = ctx.params;
  const std::string draft_name = p.string("speculative.draft_model");
  if (kind != kernels::DrafterKind::Model && !draft_name.empty()) {
    throw std::invalid_argument("speculative.draft_model `" + draft_name +
                                "` is set but speculative.drafter is " + kernels::to_string(kind) +
                                ", not model");
  }
  if (kind == kernels::DrafterKind::Self) {
    return kernels::DraftModel::self(
        target.share(), {.layers = static_cast<int32_t>(p.integer("speculative.self_layers")),
                         .vocab = static_cast<int32_t>(p.integer("speculative.self_vocab"))});
  }
  if (kind != kernels::DrafterKind::Model) return nullptr;
  if (draft_name.empty()) {
    throw std::invalid_argument(
        "speculative.drafter: model needs speculative.draft_model, the name of a model.gguf "
        "resource with the target's vocabulary");
  }
  auto draft = ctx.resources.share<ModelResource>(draft_name);
  return kernels::DraftModel::separate(target.model(), target.path().string(), draft->share(),
                                       draft->path().string());
}

}  // namespace

std::unique_ptr<GenerateStage> make_generate_stage(const graph::StageContext& ctx) {
  const graph::Params& p = ctx.params;
  auto model = ctx.resources.share<ModelResource>(p.string("model"));
  std::vector<std::shared_ptr<DecodingHook>> hooks;
  for (const std::string& h : p.strings("hooks")) {
    hooks.push_back(ctx.resources.share<DecodingHook>(h));
  }
  GenerateSettings s;
  kernels::SamplerParams& sp = s.decode.sampler;
  sp.temperature = static_cast<float>(p.number("temperature"));
  sp.top_k = static_cast<int32_t>(p.integer("top_k"));
  sp.top_p = static_cast<float>(p.number("top_p"));
  sp.min_p = static_cast<float>(p.number("min_p"));
  sp.repeat_penalty = static_cast<float>(p.number("repeat_penalty"));
  sp.repeat_last_n = static_cast<int32_t>(p.integer("repeat_last_n"));
  sp.presence_penalty = static_cast<float>(p.number("presence_penalty"));
  sp.frequency_penalty = static_cast<float>(p.number("frequency_penalty"));
  sp.seed = static_cast<uint64_t>(p.integer("seed"));
  s.decode.max_new_tokens = static_cast<int32_t>(p.integer("max_new_tokens"));
  s.decode.stop = p.strings("stop");
  s.completion_stop = p.strings("completion_stop");
  s.decode.max_hook_retries = static_cast<int32_t>(p.integer("max_hook_retries"));
  s.prompt.mode = p.string("mode");
  s.prompt.language = p.string("language");
  s.prompt.suffix_without_fim = p.string("suffix_without_fim");
  s.prompt.fim_order = p.string("fim_order");
  s.prompt.feedback_max_bytes = static_cast<std::size_t>(p.integer("feedback_max_bytes"));
  s.n_candidates = static_cast<int>(p.integer("n_candidates"));
  s.retry_temperature_step = p.number("retry_temperature_step");
  s.max_temperature = p.number("max_temperature");
  s.record_prompt = p.boolean("record_prompt");
  s.warmup = p.boolean("warmup");
  s.lines.n_indent = static_cast<int32_t>(p.integer("n_indent"));
  s.lines.single_line = p.boolean("single_line");
  s.lines.max_predict_ms = p.integer("max_predict_ms");
  s.block_stop = p.boolean("block_stop");
  // The model file's own FIM ids (metadata only; the weights are already mapped).
  s.gguf_fim =
      read_gguf_fim(kernels::GgufFile::open(model->path()), model->model().tokenizer().size());
  // The contract's choices are exactly the kinds parse_drafter_kind knows.
  s.decode.speculation.drafter = *kernels::parse_drafter_kind(p.string("speculative.drafter"));
  s.decode.speculation.max_draft = static_cast<int32_t>(p.integer("speculative.max_draft"));
  s.decode.speculation.draft = make_draft(ctx, *model, s.decode.speculation.drafter);
  try {
    s.decode.sampler.validate();
  } catch (const kernels::SamplerError& e) {
    throw std::invalid_argument(e.what());
  }
  // workers 0: one item at a time, or with the model's batching on as many items as one batched
  // step takes rows (each item's thread waits on its rows while the scheduler steps).
  int workers = static_cast<int>(p.integer("workers"));
  if (workers == 0) workers = model->scheduler() ? model->scheduler()->options().max_rows : 1;
  return std::make_unique<GenerateStage>(std::move(model), std::move(hooks), std::move(s), workers,
                                         ctx.port("ok"));
}

graph::Contract generate_contract() {
  namespace P = graph::P;
  // Parameters a task's /decode can override take their limits from the one table.
  const auto lo = [](std::string_view n) { return facets::decode_field(n).min; };
  const auto hi = [](std::string_view n) { return facets::decode_field(n).max; };
  const auto ilo = [&](std::string_view n) { return static_cast<int64_t>(lo(n)); };
  const auto ihi = [&](std::string_view n) { return static_cast<int64_t>(hi(n)); };
  graph::Contract c;
  c.kind = "generate.llm";
  c.summary =
      "Prompts a model with the task (completion or chat), samples n candidates through the "
      "engine with decoding hooks, records them with timings; a task's /decode object "
      "(max_new_tokens, temperature, top_p, stop, seed, warmup, n_indent, single_line, "
      "max_predict_ms) overrides these per task";
  c.execution = graph::Execution::Async;
  c.concurrency = graph::Concurrency::unlimited();  // items queue for the stage's workers
  c.provides_facets = {std::string(CandidatesFacet::kName)};
  c.ports = {{"ok", "candidates were generated", false}};
  c.params = {
      P::resource("model", "model", "the model.gguf resource to generate with"),
      P::resources("hooks", "hook", "decoding hooks run inside the sampling loop, in order"),
      P::integer("max_new_tokens", 256, ilo("max_new_tokens"), ihi("max_new_tokens"),
                 "tokens generated per candidate at most"),
      P::number("temperature", 0.2, lo("temperature"), hi("temperature"),
                "sampling temperature; 0: greedy"),
      P::integer("top_k", 40, 0, 1 << 20, "keep the k most likely tokens; 0: off"),
      P::number("top_p", 0.95, lo("top_p"), hi("top_p"),
                "nucleus: smallest set with this mass; 1: off"),
      P::number("min_p", 0.05, 0.0, 1.0, "drop tokens under min_p x the best one's p; 0: off"),
      P::number("repeat_penalty", 1.0, 0.01, 10.0,
                "divides positive / multiplies negative logits of recent tokens; 1: off"),
      P::integer("repeat_last_n", 64, -1, 1 << 20,
                 "recent tokens the penalties look at; 0: none, -1: all"),
      P::number("presence_penalty", 0.0, -10.0, 10.0, "subtracted once from a recent token"),
      P::number("frequency_penalty", 0.0, -10.0, 10.0,
                "subtracted per occurrence of a recent token"),
      P::integer("seed", 0, 0, std::nullopt,
                 "base seed; each candidate's seed mixes it with task id, attempt, index"),
      P::integer("n_candidates", 1, 1, 64, "candidates per attempt (share one prefill)"),
      P::strings("stop", std::vector<std::string>{},
                 "stop strings: a candidate's text ends before the first match"),
      P::strings("completion_stop", std::vector<std::string>{},
                 "more stop strings used only in complete mode (e.g. \"\\ndef \" ends a "
                 "continued function where the next top-level one starts)"),
      P::choice("mode", "auto", {"auto", "complete", "instruct"},
                "complete: continue the code before the cursor; instruct: the chat template; "
                "auto: complete when the task has a cursor or /prefix or the model has no chat "
                "template (a base model), else instruct"),
      P::choice("suffix_without_fim", "above", {"above", "drop"},
                "complete mode, a model without fill-in-the-middle tokens: above shows the rest "
                "of the unit after the cursor as comments above the unit; drop leaves it out "
                "(the record's candidates say suffix: fim, above, dropped or none)"),
      P::choice("fim_order", "auto", {"auto", "psm", "spm"},
                "fill-in-the-middle order: psm ([pre] prefix [suf] suffix [mid]), spm ([suf] "
                "suffix [pre] prefix [mid]); auto: the vocabulary family's (psm for every "
                "known one)"),
      P::string("language", "",
                "code language; empty: the task's /language, the anchor's, else python"),
      P::number("retry_temperature_step", 0.3, 0.0, 5.0,
                "temperature added per retry (attempt 2 gets one step)"),
      P::number("max_temperature", 1.2, 0.0, 5.0, "cap for the retry temperature schedule"),
      P::integer("feedback_max_bytes", 2000, 0, 1 << 20,
                 "bytes kept of each feedback message in a retry prompt (the tail)"),
      P::integer("max_hook_retries", 64, 0, 1 << 20,
                 "hook rejections + rollbacks allowed per candidate"),
      P::integer("workers", 0, 0, 64,
                 "items decoded at once, each on its own thread; 0: one, or as many as a batched "
                 "step takes rows (16) when the model's batching is on, so that concurrent items "
                 "(e.g. `vsynth serve` requests) share forward passes"),
      P::integer("n_indent", 0, ilo("n_indent"), ihi("n_indent"),
                 std::string(facets::decode_field("n_indent").help)),
      P::boolean("single_line", false, std::string(facets::decode_field("single_line").help)),
      P::integer("max_predict_ms", 0, ilo("max_predict_ms"), ihi("max_predict_ms"),
                 std::string(facets::decode_field("max_predict_ms").help)),
      P::boolean("block_stop", false,
                 "complete mode, when neither the task nor n_indent sets one: n_indent = the "
                 "indentation of the cursor's line, so a suggestion ends with the block the "
                 "cursor is in (the record's candidates say n_indent)"),
      P::boolean("record_prompt", false, "write the prompt text into the results record"),
      P::boolean("warmup", false,
                 "prefill the prompt and generate nothing (no candidates; the record says "
                 "warmed_tokens): with the model's kv_pool_mb on, a later request on the same "
                 "file reuses its blocks, the way an editor warms a file when it is opened"),
      P::choice("speculative.drafter", "none", {"none", "ngram", "model", "self"},
                "speculative decoding (`speculative: { drafter: ngram, max_draft: 4 }`): a "
                "drafter guesses the next tokens and one forward pass verifies them; the output "
                "is unchanged (greedy: token for token; sampled: the same distribution and, for "
                "a seed, the same text). ngram drafts what followed the earlier occurrence of "
                "the last 3, 2 or 1 tokens in the prompt and the output whose match reaches "
                "furthest back (prompt lookup; no match, or matches that rarely predicted the "
                "next token so far: no draft); model greedily decodes with "
                "speculative.draft_model; self with the model's own first "
                "speculative.self_layers layers over its speculative.self_vocab most frequent "
                "tokens. none: plain decoding. With the model's batching on, drafts shrink as the "
                "scheduler's steps fill (half from 2 rows per step, none from 4: a verify pass's "
                "rows then cost as much as other items' tokens). Which wins where is measured in "
                "docs/performance.md (Speculative decoding). The record's `speculation` counts "
                "drafted, accepted and verify_steps, and says `fallback` when the drafter failed "
                "and the candidate went on with plain decoding"),
      P::integer("speculative.max_draft", 4, 1, 16,
                 "tokens drafted per verification at most (the drafter adapts below it)"),
      P::resource("speculative.draft_model", "model",
                  "drafter: model: the model.gguf resource that drafts; it must have the target's "
                  "architecture and vocabulary (refused at load otherwise, both named)",
                  false),
      P::integer("speculative.self_layers", 0, 0, 1024,
                 "drafter: self: the model's first layers the draft runs (at most its layers); "
                 "0: all of them (fewer agree too rarely on Gemma 3 270M: docs/performance.md)"),
      P::integer("speculative.self_vocab", 32768, 1, 1 << 24,
                 "drafter: self: the most frequent tokens (by the GGUF's tokenizer scores) the "
                 "draft scores; end-of-generation tokens are always among them"),
  };
  return c;
}

}  // namespace vsynth::stages::generation
