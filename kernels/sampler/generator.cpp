#include "kernels/sampler/generator.h"

#include <algorithm>
#include <chrono>
#include <optional>
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
    case FinishReason::Cancelled:
      return "cancelled";
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
    const SpeculationOptions& spec = opt_.speculation;
    if (spec.enabled() && spec.max_draft < 1) {
      throw SamplerError("generate: speculation.max_draft = " + std::to_string(spec.max_draft) +
                         " is invalid (>= 1)");
    }
    owned_drafter_ = spec.custom ? nullptr : make_drafter(spec.drafter, spec.draft);
    drafter_ = spec.custom ? spec.custom : owned_drafter_.get();
    if (drafter_) drafter_->rewind(0);
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
    if (g_.finish == FinishReason::Length || g_.finish == FinishReason::Context) trim();
    // Leave the sequence as plain decoding would: the prompt and the accepted tokens, the last
    // one unevaluated when the loop ended right after committing it; no drafted tail.
    const auto keep = static_cast<int32_t>(history_.size()) - (last_unevaluated_ ? 1 : 0);
    if (seq_.position() > keep) seq_.rollback(keep);
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
    if (opt_.cancel && opt_.cancel->load(std::memory_order_relaxed)) {
      return end(FinishReason::Cancelled);
    }
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
    last_unevaluated_ = true;

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
    advance(s.token);
    return true;
  }

  // Makes logits_ the target's logits for the position after `t`, the token just committed:
  // the verified draft's next row when `t` is the drafted token there (no forward pass), else
  // one forward pass of `t`, together with a new draft when the drafter has one.
  void advance(TokenId t) {
    last_unevaluated_ = false;
    if (next_ < draft_.size()) {
      if (draft_[next_] == t) {
        ++next_;
        ++g_.accepted;
        logits_ = row(next_);
        if (next_ == draft_.size()) end_draft();  // the rows stay valid until the next pass
        return;
      }
      // The target chose otherwise: drop the draft's tail from the KV cache (every position
      // from `t`'s on; `t` itself was never evaluated).
      end_draft();
      seq_.rollback(static_cast<int32_t>(history_.size()) - 1);
    }
    const std::span<const TokenId> draft = propose();
    if (draft.empty()) {
      logits_ = seq_.decode(t);
      ++g_.decode_steps;
      return;
    }
    verify_.assign(1, t);
    verify_.insert(verify_.end(), draft.begin(), draft.end());
    draft_.assign(draft.begin(), draft.end());
    rows_ = seq_.prefill_all(verify_);  // (1 + draft) x vocab
    next_ = 0;
    ++g_.verify_steps;
    g_.drafted += static_cast<int32_t>(draft_.size());
    logits_ = row(0);
  }

  // The drafter's guess after history_, capped so that no drafted token could land past
  // max_new_tokens or context_limit (the last token committed is never evaluated). A drafter
  // that throws or proposes ids outside the vocabulary is dropped for the rest of this
  // generation (plain decoding), and the Generation says why.
  std::span<const TokenId> propose() {
    if (!drafter_) return {};
    const auto n = static_cast<int64_t>(g_.tokens.size());
    const SpeculationOptions& spec = opt_.speculation;
    int64_t wanted = spec.max_draft;
    if (spec.draft_limit) {
      wanted = std::clamp<int64_t>(spec.draft_limit(spec.max_draft), 0, spec.max_draft);
      if (wanted == 0) {
        ++g_.undrafted_steps;
        return {};
      }
    }
    int64_t budget = std::min<int64_t>(wanted, opt_.max_new_tokens - n - 1);
    if (opt_.context_limit > 0) {
      budget =
          std::min<int64_t>(budget, opt_.context_limit - static_cast<int64_t>(history_.size()) - 1);
    }
    if (budget <= 0) return {};
    try {
      const std::span<const TokenId> d = drafter_->propose(history_, static_cast<int32_t>(budget));
      for (TokenId id : d) {
        if (id < 0 || static_cast<std::size_t>(id) >= vocab_) {
          throw std::out_of_range("drafted token id " + std::to_string(id) +
                                  " is outside the vocabulary [0, " + std::to_string(vocab_) + ")");
        }
      }
      return d.size() > static_cast<std::size_t>(budget) ? d.first(static_cast<std::size_t>(budget))
                                                         : d;
    } catch (const std::exception& e) {
      g_.speculation_fallback = std::string("drafter failed, plain decoding from token ") +
                                std::to_string(n) + ": " + e.what();
      drafter_ = nullptr;
      return {};
    }
  }

  // Tells the drafter how much of its draft was kept and forgets the draft.
  void end_draft() {
    if (drafter_ && !draft_.empty()) {
      drafter_->observe(static_cast<int32_t>(draft_.size()), static_cast<int32_t>(next_));
    }
    draft_.clear();
    next_ = 0;
  }

  std::span<const float> row(std::size_t j) const { return rows_.subspan(j * vocab_, vocab_); }

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
      end_draft();
      if (drafter_) drafter_->rewind(prompt_.size() + kept);
      seq_.rollback(last_pos);
      logits_ = seq_.decode(last);
      ++g_.decode_steps;
      truncate(kept);
    }
    if (bans_.size() > kept + 1) bans_.resize(kept + 1);
    if (ban != kNoToken) ban_at(kept, ban);
    for (MaskHook* h : hooks_) h->on_rollback(kept);
  }

  // Drops every generated token from `kept` on from the output (not the KV cache), retracting
  // what was streamed of them.
  void truncate(std::size_t kept) {
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

  // The budget ended the text: keep the shortest prefix a hook calls complete (generator.h).
  void trim() {
    const std::size_t n = g_.tokens.size();
    std::optional<PrefixKeep> cut;
    for (MaskHook* h : hooks_) {
      std::optional<PrefixKeep> k = h->complete_prefix(view());
      if (k && k->keep < n && (!cut || k->keep < cut->keep)) cut = std::move(k);
    }
    if (!cut) return;
    // The kept tokens were all evaluated (token `keep` was sampled after the last of them).
    const auto keep_pos = static_cast<int32_t>(prompt_.size() + cut->keep);
    if (keep_pos < seq_.min_rollback_position()) {
      g_.finish_detail = "not trimmed to " + std::to_string(cut->keep) + " tokens (" + cut->by +
                         "): the KV cache can only roll back to position " +
                         std::to_string(seq_.min_rollback_position());
      return;
    }
    end_draft();
    if (seq_.position() > keep_pos) seq_.rollback(keep_pos);
    last_unevaluated_ = false;
    truncate(cut->keep);
    for (MaskHook* h : hooks_) h->on_rollback(cut->keep);
    g_.trimmed = static_cast<int32_t>(n - cut->keep);
    g_.trimmed_by = cut->by;
    g_.finish_detail = "trimmed " + std::to_string(g_.trimmed) +
                       " tokens to the last complete point (" + cut->by + ")";
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
  // Speculation state: the draft verified in the KV cache after the newest evaluated token,
  // how many of it the loop has accepted, and the verification pass's logit rows.
  const std::size_t vocab_ = logits_.size();
  std::unique_ptr<Drafter> owned_drafter_;
  Drafter* drafter_ = nullptr;
  std::vector<TokenId> draft_;
  std::size_t next_ = 0;
  std::vector<TokenId> verify_;  // [newest, draft...], the pass's input
  std::span<const float> rows_;
  bool last_unevaluated_ = false;  // the newest accepted token has not been evaluated
};

}  // namespace

Generation generate(Sequence& seq, const Tokenizer& tokenizer, std::span<const float> logits,
                    const GenerateOptions& options, std::span<MaskHook* const> hooks) {
  return Loop(seq, tokenizer, logits, options, hooks).run();
}

}  // namespace vsynth::kernels
