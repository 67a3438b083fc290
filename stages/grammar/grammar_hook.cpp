#include "stages/grammar/grammar_hook.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "base/stats.h"

namespace vsynth::stages::grammar {

using Clock = std::chrono::steady_clock;

namespace {

double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

bool word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         (static_cast<unsigned char>(c) & 0x80) != 0;
}

std::string language_list(const std::vector<Language>& ls) {
  std::string s;
  for (Language l : ls) s += (s.empty() ? "" : ", ") + std::string(to_string(l));
  return s;
}

}  // namespace

nlohmann::json GrammarStats::to_json() const {
  nlohmann::json j;
  j["candidate"] = candidate;
  j["attempt"] = attempt;
  j["language"] = language;
  j["tokens"] = token_us.size();
  j["p50_token_us"] = base::round1(base::percentile(token_us, 50));
  j["p99_token_us"] = base::round1(base::percentile(token_us, 99));
  j["rejections"] = rejections;
  j["eog_rejections"] = eog_rejections;
  j["full_masks"] = full_masks;
  j["full_mask_us"] = base::round1(full_mask_us);
  j["full_mask_banned"] = full_mask_banned;
  j["walk_steps"] = walk_steps;
  if (table_ms > 0) j["table_ms"] = base::round1(table_ms);
  if (trimmed_tokens > 0) j["trimmed_tokens"] = trimmed_tokens;
  if (!stood_aside.empty()) j["stood_aside"] = stood_aside;
  return j;
}

nlohmann::json GrammarStatsFacet::to_json() const {
  nlohmann::json j;
  std::vector<float> all;
  int rejections = 0, full = 0;
  j["candidates"] = nlohmann::json::array();
  for (const GrammarStats& s : candidates) {
    all.insert(all.end(), s.token_us.begin(), s.token_us.end());
    rejections += s.rejections + s.eog_rejections;
    full += s.full_masks;
    j["candidates"].push_back(s.to_json());
  }
  j["tokens"] = all.size();
  j["p50_token_us"] = base::round1(base::percentile(all, 50));
  j["p99_token_us"] = base::round1(base::percentile(all, 99));
  j["rejections"] = rejections;
  j["full_masks"] = full;
  return j;
}

GrammarMask::GrammarMask(std::shared_ptr<const VocabTable> table, Program::Shape shape,
                         GrammarStats stats, std::function<void(GrammarStats&&)> on_done,
                         bool trim_incomplete)
    : table_(std::move(table)),
      program_(std::move(shape)),
      stats_(std::move(stats)),
      on_done_(std::move(on_done)),
      trim_incomplete_(trim_incomplete) {
  if (program_.start_dead()) {
    active_ = false;
    stats_.stood_aside = "the code before the cursor does not parse as " +
                         std::string(to_string(program_.shape().language));
  }
  states_.push_back(program_.start());
}

GrammarMask::~GrammarMask() {
  if (on_done_) on_done_(std::move(stats_));
}

// states_ follows the loop's accepted tokens: commits the pending state when the loop kept
// the token after_sample judged, recomputes from the text otherwise (a later hook's verdict),
// drops states past a rollback.
void GrammarMask::sync(const kernels::DecodeView& view) {
  const std::size_t n = view.generated.size();
  if (states_.size() > n + 1) states_.resize(n + 1);
  while (states_.size() <= n) {
    const std::size_t i = states_.size() - 1;
    if (pending_pos_ == i && pending_token_ == view.generated[i]) {
      states_.push_back(pending_);
    } else {
      ProgramState s = states_.back();
      const std::size_t from = i == 0 ? 0 : view.token_ends[i - 1];
      const std::string_view piece = view.text.substr(from, view.token_ends[i] - from);
      if (!program_.feed(s, piece)) {
        active_ = false;  // cannot happen for text this hook accepted; stand aside if it does
        stats_.stood_aside = "the text left no valid program at token " + std::to_string(i);
      }
      states_.push_back(s);
    }
    pending_pos_ = SIZE_MAX;
  }
}

void GrammarMask::before_sample(const kernels::DecodeView& view, kernels::TokenMask& mask) {
  const auto t0 = Clock::now();
  sync(view);
  const std::size_t pos = view.generated.size();
  if (!active_ || mask_at_ != pos || !program_.constraining(states_.back())) return;
  // The full mask: every token tried from this state.
  dead_.clear();
  stats_.walk_steps += table_->walk(program_, states_.back(), scratch_, dead_);
  if (!program_.can_end(states_.back())) {
    dead_.insert(dead_.end(), table_->eog().begin(), table_->eog().end());
  }
  // The shorter list: the banned tokens, or (when most of the vocabulary is out) the allowed
  // ones; an earlier hook's allowed list is narrowed, never replaced.
  if (!mask.allowed && dead_.size() <= table_->vocab_size() / 2) {
    mask.banned.insert(mask.banned.end(), dead_.begin(), dead_.end());
  } else {
    out_.assign(table_->vocab_size(), 0);
    for (kernels::TokenId t : dead_) out_[static_cast<std::size_t>(t)] = 1;
    std::vector<kernels::TokenId> allowed;
    if (mask.allowed) {
      for (kernels::TokenId t : *mask.allowed) {
        if (t >= 0 && static_cast<std::size_t>(t) < out_.size() &&
            !out_[static_cast<std::size_t>(t)]) {
          allowed.push_back(t);
        }
      }
    } else {
      for (std::size_t t = 0; t < out_.size(); ++t) {
        if (!out_[t]) allowed.push_back(static_cast<kernels::TokenId>(t));
      }
    }
    mask.allow_only(std::move(allowed));
  }
  ++stats_.full_masks;
  stats_.full_mask_banned += dead_.size();
  const double us = us_since(t0);
  stats_.full_mask_us += us;
  position_us_ += us;
}

kernels::HookVerdict GrammarMask::after_sample(const kernels::DecodeView& view,
                                               kernels::TokenId token, std::string_view piece) {
  const auto t0 = Clock::now();
  sync(view);
  const std::size_t pos = view.generated.size();
  if (!active_) return kernels::HookVerdict::accept();
  auto done = [&](kernels::HookVerdict v) {
    position_us_ += us_since(t0);
    if (v.kind == kernels::HookVerdict::Kind::Accept) {
      stats_.token_us.push_back(static_cast<float>(position_us_));
      position_us_ = 0;
    }
    return v;
  };
  const bool eog = view.tokenizer && view.tokenizer->is_eog(token);
  if (eog) {
    if (program_.can_end(states_.back())) return done(kernels::HookVerdict::accept());
    ++stats_.eog_rejections;
    mask_at_ = pos;
    return done(kernels::HookVerdict::reject("grammar: the program is not complete"));
  }
  ProgramState s = states_.back();
  if (program_.feed(s, piece)) {
    pending_pos_ = pos;
    pending_token_ = token;
    pending_ = s;
    return done(kernels::HookVerdict::accept());
  }
  ++stats_.rejections;
  mask_at_ = pos;
  return done(kernels::HookVerdict::reject("grammar: no valid program continues with this token"));
}

void GrammarMask::on_rollback(std::size_t kept) {
  if (states_.size() > kept + 1) states_.resize(kept + 1);
  pending_pos_ = SIZE_MAX;
  mask_at_ = SIZE_MAX;
  position_us_ = 0;
}

// The budget cut the candidate: the last position whose state may end, searched back from the
// end within the code (generator.h's trim). One state check per dropped token, once per
// candidate.
std::optional<kernels::PrefixKeep> GrammarMask::complete_prefix(const kernels::DecodeView& view) {
  if (!trim_incomplete_ || !active_) return std::nullopt;
  sync(view);
  const std::size_t n = view.generated.size();
  if (!active_ || program_.can_end(states_[n])) return std::nullopt;  // complete as it is
  auto end_of = [&](std::size_t i) { return i == 0 ? std::size_t{0} : view.token_ends[i - 1]; };
  // Where the code starts: the text's start, or (instruct) the first token inside the block.
  std::size_t first = n;
  while (first > 0 && program_.constraining(states_[first - 1])) --first;
  for (std::size_t i = n; i-- > first + 1;) {
    if (!program_.can_end(states_[i])) continue;
    const std::string_view kept = view.text.substr(end_of(first), end_of(i) - end_of(first));
    if (kept.find_first_not_of(" \t\r\n") == std::string_view::npos) break;  // blank code
    if (word_char(view.text[end_of(i) - 1]) && end_of(i) < view.text.size() &&
        word_char(view.text[end_of(i)])) {
      continue;  // a name or number the cut would split
    }
    stats_.trimmed_tokens = static_cast<int>(n - i);
    return kernels::PrefixKeep{i, "grammar"};
  }
  return std::nullopt;
}

std::shared_ptr<const VocabTable> GrammarHook::table(const kernels::Tokenizer& tok,
                                                     double* built_ms) {
  std::lock_guard lock(mu_);
  for (const auto& [t, table] : tables_) {
    if (t == &tok) return table;
  }
  auto table = std::make_shared<const VocabTable>(tok);
  if (built_ms) *built_ms = table->build_ms();
  tables_.emplace_back(&tok, table);
  return table;
}

std::unique_ptr<kernels::MaskHook> GrammarHook::make(graph::Item& item,
                                                     const facets::HookContext& ctx) {
  const std::optional<Language> lang = language_from_name(ctx.language);
  const bool listed = lang && std::find(settings_.languages.begin(), settings_.languages.end(),
                                        *lang) != settings_.languages.end();
  if (!listed) {
    if (!settings_.stop_other) return nullptr;
    return std::make_unique<kernels::StopHook>(
        "grammar: language `" + std::string(ctx.language) +
        "` is not supported (supported: " + language_list(settings_.languages) + ")");
  }
  GrammarStats stats;
  stats.candidate = ctx.candidate;
  stats.attempt = ctx.attempt;
  stats.language = to_string(*lang);
  auto t = table(ctx.tokenizer, &stats.table_ms);

  Program::Shape shape;
  shape.language = *lang;
  shape.instruct = ctx.mode == "instruct";
  shape.prefix = ctx.prefix;
  shape.suffix = ctx.suffix;
  // The answer continues the given code only where generate.llm would join them (Python, an
  // entry point to look for); otherwise only the empty-file reading applies.
  if (*lang == Language::Python && !ctx.entry_point.empty()) shape.given_code = ctx.given_code;

  auto* facet = item.find<GrammarStatsFacet>();
  if (!facet) facet = &item.emplace<GrammarStatsFacet>();  // kept across attempts
  return std::make_unique<GrammarMask>(
      std::move(t), std::move(shape), std::move(stats),
      [facet](GrammarStats&& s) { facet->candidates.push_back(std::move(s)); },
      settings_.trim_incomplete);
}

graph::ResourceContract grammar_hook_contract() {
  namespace P = graph::P;
  graph::ResourceContract c;
  c.kind = "hook.grammar";
  c.interface = "hook";
  c.summary =
      "syntax-constrained decoding: keeps generate.llm to text that can still become a valid "
      "program (Python, C): a sampled token no valid program continues with is refused and the "
      "position resampled under the full vocabulary mask; the end of generation waits for a "
      "complete program";
  c.params = {
      P::strings("languages", std::vector<std::string>{"python", "c"},
                 "languages this hook constrains (supported: python, c)", {"python", "c"}),
      P::choice("other_languages", "stop", {"stop", "pass"},
                "a task in another language: stop its candidate at once with a verdict naming "
                "the supported languages, or pass it through unconstrained"),
      P::boolean("trim_incomplete", true,
                 "when the token budget (max_new_tokens, the context) cuts a candidate whose "
                 "program is incomplete, keep the longest prefix where it was complete (instruct "
                 "mode: inside the code block; with non-blank code; not inside a word) and drop "
                 "the rest, as an IDE drops a half-written statement; the candidate record says "
                 "`trimmed: {by: grammar, tokens: N}` and a stream client gets a retract event "
                 "for bytes already streamed. No complete point: the text stays as it is"),
  };
  return c;
}

std::shared_ptr<graph::Resource> make_grammar_hook_resource(const graph::ResourceContext& ctx) {
  GrammarSettings s;
  s.languages.clear();
  for (const std::string& name : ctx.params.strings("languages")) {
    const std::optional<Language> l = language_from_name(name);
    if (!l) {
      throw std::invalid_argument("hook.grammar: language `" + name +
                                  "` is not supported (supported: " + supported_languages() + ")");
    }
    if (std::find(s.languages.begin(), s.languages.end(), *l) == s.languages.end()) {
      s.languages.push_back(*l);
    }
  }
  if (s.languages.empty()) {
    throw std::invalid_argument(std::string("hook.grammar: `languages` is empty (supported: ") +
                                supported_languages() + ")");
  }
  s.stop_other = ctx.params.string("other_languages") == "stop";
  s.trim_incomplete = ctx.params.boolean("trim_incomplete");
  return std::make_shared<GrammarHook>(std::move(s));
}

}  // namespace vsynth::stages::grammar
