#include "kernels/sampler/generator.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace vsynth::kernels {

const char* to_string(FinishReason r) {
  switch (r) {
    case FinishReason::Length:
      return "length";
    case FinishReason::Eog:
      return "eog";
    case FinishReason::Stop:
      return "stop";
    case FinishReason::Context:
      return "context";
    case FinishReason::Hook:
      return "hook";
    case FinishReason::HookLimit:
      return "hook_limit";
    case FinishReason::Masked:
      return "masked";
  }
  return "?";
}

namespace {

// The loop's state, so the steps below read as the algorithm.
class Loop {
 public:
  Loop(Sequence& seq, const Tokenizer& tok, std::span<const float> logits,
       const GenerateOptions& opt, std::span<MaskHook* const> hooks)
      : seq_(seq),
        tok_(tok),
        logits_(logits),
        opt_(opt),
        hooks_(hooks),
        sampler_(opt.sampler),
        stops_(opt.stop),
        prompt_(seq.tokens().begin(), seq.tokens().end()),
        history_(prompt_) {
    if (prompt_.empty()) {
      throw EngineError("generate: the sequence holds no prompt (prefill it first)");
    }
    if (logits_.empty()) throw EngineError("generate: no logits for the prompt's last token");
  }

  Generation run() {
    const auto t0 = std::chrono::steady_clock::now();
    if (opt_.max_new_tokens <= 0) {
      g_.finish = FinishReason::Length;
    } else if (at_context_limit()) {
      g_.finish = FinishReason::Context;
    } else {
      while (step()) {
      }
    }
    if (opt_.on_text && streamed_ < g_.text.size()) {
      opt_.on_text(std::string_view(g_.text).substr(streamed_));
    }
    g_.decode_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return std::move(g_);
  }

 private:
  DecodeView view() const { return {prompt_, g_.tokens, g_.text, g_.token_ends, &tok_}; }

  bool at_context_limit() const {
    return opt_.context_limit > 0 &&
           static_cast<int64_t>(prompt_.size() + g_.tokens.size()) >= opt_.context_limit;
  }

  bool end(FinishReason r, std::string detail = {}) {
    g_.finish = r;
    g_.finish_detail = std::move(detail);
    return false;
  }

  // One sampling step; false when the generation is over.
  bool step() {
    const std::size_t pos = g_.tokens.size();
    mask_.clear();
    for (MaskHook* h : hooks_) h->before_sample(view(), mask_);
    if (pos < bans_.size()) {
      mask_.banned.insert(mask_.banned.end(), bans_[pos].begin(), bans_[pos].end());
    }
    Sample s = sampler_.sample(logits_, history_, mask_);
    ++g_.steps;
    if (s.token == kNoToken) return end(FinishReason::Masked, "no token left to sample");

    const bool eog = opt_.stop_at_eog && tok_.is_eog(s.token);
    const std::string piece = eog ? std::string() : tok_.piece(s.token);
    HookVerdict v;
    for (MaskHook* h : hooks_) {
      v = h->after_sample(view(), s.token, piece);
      if (v.kind != HookVerdict::Kind::Accept) break;
    }
    switch (v.kind) {
      case HookVerdict::Kind::Accept:
        break;
      case HookVerdict::Kind::Stop:
        return end(FinishReason::Hook, v.reason);
      case HookVerdict::Kind::Reject:
        ++g_.rejections;
        if (++retries_ > opt_.max_hook_retries) return end(FinishReason::HookLimit, v.reason);
        ban_at(pos, s.token);
        return true;
      case HookVerdict::Kind::Rollback:
        ++g_.rollbacks;
        if (++retries_ > opt_.max_hook_retries) return end(FinishReason::HookLimit, v.reason);
        rollback(v.position, v.ban, pos);
        return true;
    }
    if (eog) return end(FinishReason::Eog);

    // Commit the token.
    const std::size_t old_size = g_.text.size();
    g_.tokens.push_back(s.token);
    history_.push_back(s.token);
    g_.text += piece;
    g_.token_ends.push_back(g_.text.size());
    g_.logprobs.push_back(s.logprob);
    g_.logprob_sum += s.logprob;
    if (opt_.sampler.n_logprobs > 0) g_.top.push_back(std::move(s.top));
    if (bans_.size() > pos + 1) bans_.resize(pos + 1);

    if (const StopStrings::Match m = stops_.find(g_.text, old_size); m.found()) {
      g_.text.resize(m.pos);
      for (std::size_t& e : g_.token_ends) e = std::min(e, m.pos);
      return end(FinishReason::Stop, stops_.strings()[m.which]);
    }
    stream();
    if (static_cast<int64_t>(g_.tokens.size()) >= opt_.max_new_tokens) {
      return end(FinishReason::Length);
    }
    if (at_context_limit()) return end(FinishReason::Context);
    logits_ = seq_.decode(s.token);
    return true;
  }

  void ban_at(std::size_t pos, TokenId t) {
    if (bans_.size() <= pos) bans_.resize(pos + 1);
    bans_[pos].push_back(t);
  }

  // Keep `kept` generated tokens, ban `ban` at position `kept`, re-derive that position's
  // logits. `pos` is the current position (tokens generated so far).
  void rollback(std::size_t kept, TokenId ban, std::size_t pos) {
    if (kept > pos) {
      throw std::runtime_error("generate: a hook asked to roll back to position " +
                               std::to_string(kept) + " but only " + std::to_string(pos) +
                               " tokens were generated");
    }
    if (kept < pos) {
      // The logits for position `kept` come from evaluating the token just before it again.
      const auto last_pos = static_cast<int32_t>(prompt_.size() + kept) - 1;
      if (last_pos < seq_.min_rollback_position()) {
        throw std::runtime_error(
            "generate: a hook asked to roll back to generated position " + std::to_string(kept) +
            " (sequence position " + std::to_string(last_pos + 1) +
            ") but the KV cache can only roll back to " +
            std::to_string(seq_.min_rollback_position()) + "; raise the model's rollback_window");
      }
      const TokenId last = history_[static_cast<std::size_t>(last_pos)];
      seq_.rollback(last_pos);
      logits_ = seq_.decode(last);
      g_.tokens.resize(kept);
      history_.resize(prompt_.size() + kept);
      g_.text.resize(kept == 0 ? 0 : g_.token_ends[kept - 1]);
      g_.token_ends.resize(kept);
      g_.logprobs.resize(kept);
      if (g_.top.size() > kept) g_.top.resize(kept);
      g_.logprob_sum = 0.0;
      for (float lp : g_.logprobs) g_.logprob_sum += lp;
      if (streamed_ > g_.text.size()) {
        if (opt_.on_retract) opt_.on_retract(streamed_ - g_.text.size());
        streamed_ = g_.text.size();
      }
    }
    if (bans_.size() > kept + 1) bans_.resize(kept + 1);
    if (ban != kNoToken) ban_at(kept, ban);
    for (MaskHook* h : hooks_) h->on_rollback(kept);
  }

  void stream() {
    if (!opt_.on_text) return;
    const std::string_view text = g_.text;
    const std::size_t hold = std::max(incomplete_utf8_tail(text), stops_.partial_suffix(text));
    const std::size_t ready = text.size() - std::min(hold, text.size());
    if (ready > streamed_) {
      opt_.on_text(text.substr(streamed_, ready - streamed_));
      streamed_ = ready;
    }
  }

  Sequence& seq_;
  const Tokenizer& tok_;
  std::span<const float> logits_;
  const GenerateOptions& opt_;
  std::span<MaskHook* const> hooks_;
  Sampler sampler_;
  StopStrings stops_;
  std::vector<TokenId> prompt_;
  std::vector<TokenId> history_;            // prompt + accepted tokens (penalty window)
  std::vector<std::vector<TokenId>> bans_;  // per generated position
  TokenMask mask_;
  Generation g_;
  int32_t retries_ = 0;
  std::size_t streamed_ = 0;
};

}  // namespace

Generation generate(Sequence& seq, const Tokenizer& tokenizer, std::span<const float> logits,
                    const GenerateOptions& options, std::span<MaskHook* const> hooks) {
  return Loop(seq, tokenizer, logits, options, hooks).run();
}

}  // namespace vsynth::kernels
