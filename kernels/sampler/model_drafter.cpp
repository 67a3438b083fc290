// ModelDrafter and DraftModel (kernels/sampler/model_drafter.h).
#include "kernels/sampler/model_drafter.h"

#include <algorithm>
#include <cstring>

#include "base/hash.h"

namespace vsynth::kernels {

namespace {

std::string describe(const Model& m, const std::string& name) {
  return name + " (" + m.config().arch_name + ", vocabulary of " +
         std::to_string(m.tokenizer().size()) + " tokens)";
}

}  // namespace

uint64_t vocab_hash(const Tokenizer& tok) {
  uint64_t h = base::kFnv1a64Offset;
  for (TokenId t = 0; t < static_cast<TokenId>(tok.size()); ++t) {
    const std::string_view s = tok.text(t);
    const auto len = static_cast<uint64_t>(s.size());
    const auto type = static_cast<int32_t>(tok.type(t));
    h = base::fnv1a64_bytes(&len, sizeof len, h);  // the length keeps "ab"+"c" apart from "a"+"bc"
    h = base::fnv1a64(s, h);
    h = base::fnv1a64_bytes(&type, sizeof type, h);
  }
  return h;
}

std::shared_ptr<const DraftModel> DraftModel::separate(const Model& target, std::string target_name,
                                                       std::shared_ptr<Model> draft,
                                                       std::string draft_name) {
  const Tokenizer& a = target.tokenizer();
  const Tokenizer& b = draft->tokenizer();
  std::string why;
  if (target.config().arch_name != draft->config().arch_name) {
    why = "another architecture";
  } else if (a.size() != b.size() || target.config().vocab_size != draft->config().vocab_size) {
    why = "another vocabulary size";
  } else if (a.bos() != b.bos() || a.eos() != b.eos()) {
    why = "other BOS / EOS tokens";
  } else if (vocab_hash(a) != vocab_hash(b)) {
    why = "other token texts or types";
  }
  if (!why.empty()) {
    throw EngineError("draft model " + describe(*draft, draft_name) + " has " + why +
                      " than the target " + describe(target, target_name) +
                      "; a draft model must share the target's architecture and vocabulary");
  }
  auto d = std::make_shared<DraftModel>();
  d->cost = static_cast<double>(draft->weight_bytes()) /
            static_cast<double>(std::max<std::size_t>(1, target.weight_bytes()));
  d->model = std::move(draft);
  d->name = std::move(draft_name);
  return d;
}

std::shared_ptr<const DraftModel> DraftModel::self(const std::shared_ptr<Model>& target,
                                                   const SelfDraftOptions& options) {
  SelfDraft s = make_self_draft(target, options);
  auto d = std::make_shared<DraftModel>();
  d->cost = static_cast<double>(s.model->weight_bytes()) /
            static_cast<double>(std::max<std::size_t>(1, target->weight_bytes()));
  d->model = std::move(s.model);
  if (static_cast<int64_t>(s.tokens.size()) < target->config().vocab_size) {
    d->logit_tokens = std::move(s.tokens);
  }
  d->name = "self-draft (" + std::to_string(d->model->config().n_layers) + " layers, " +
            std::to_string(options.vocab) + " tokens)";
  return d;
}

ModelDrafter::ModelDrafter(std::shared_ptr<const DraftModel> draft, double prior_rate)
    : draft_(std::move(draft)), prior_rate_(prior_rate) {
  if (!draft_ || !draft_->model) throw EngineError("ModelDrafter: no draft model");
  rewind(0);
}

int ModelDrafter::best_length(double rate, double cost, int max_tokens, double* gain) {
  int best = 1;
  double best_gain = 0.0, expected = 1.0, term = 1.0;  // expected = sum_{i<=d} rate^i
  for (int d = 1; d <= max_tokens; ++d) {
    term *= rate;
    expected += term;
    const double g = expected / (NgramDrafter::verify_cost(d + 1) + cost * d);
    if (g > best_gain) {
      best_gain = g;
      best = d;
    }
  }
  *gain = best_gain;
  return best;
}

std::span<const float> ModelDrafter::sync(std::span<const TokenId> context) {
  const std::span<const TokenId> held = seq_ ? seq_->tokens() : std::span<const TokenId>{};
  const std::size_t common = static_cast<std::size_t>(
      std::mismatch(held.begin(), held.end(), context.begin(), context.end()).first - held.begin());
  auto keep = static_cast<int32_t>(std::min(common, context.size() - 1));
  if (seq_ && keep < seq_->position()) {
    if (keep >= seq_->min_rollback_position()) {
      seq_->rollback(keep);
    } else {
      seq_.reset();  // the sliding layers already freed keys we would need again
    }
  }
  if (!seq_) {
    seq_ = draft_->model->new_sequence();
    ++fresh_;
    keep = 0;
  }
  return seq_->prefill(context.subspan(static_cast<std::size_t>(keep)));
}

TokenId ModelDrafter::token_of(std::span<const float> logits) const {
  const auto i = static_cast<std::size_t>(std::max_element(logits.begin(), logits.end()) -
                                          logits.begin());  // first maximum: deterministic
  return draft_->logit_tokens.empty() ? static_cast<TokenId>(i) : draft_->logit_tokens[i];
}

std::span<const TokenId> ModelDrafter::propose(std::span<const TokenId> context,
                                               int32_t max_tokens) {
  out_.clear();
  pending_ = false;
  if (context.empty() || max_tokens <= 0) return {};
  // Phase 1: the draft length from the keep rate and the cost model (before any work: a
  // proposal not made costs nothing; the draft sequence catches up on the next one).
  const int32_t room = draft_->model->options().context_length -
                       static_cast<int32_t>(context.size()) + 1;  // drafted tokens that fit
  max_tokens = std::min(max_tokens, room);
  if (max_tokens <= 0) return {};
  double gain = 0.0;
  int32_t len = best_length(rate(), draft_->cost, max_tokens, &gain);
  if (gain < 1.0) {
    if (++skipped_ % kProbeEvery != 0) return {};
    len = 1;
  }

  // Phase 2: catch up with the context, then decode greedily; an end-of-generation token ends
  // the draft (nothing the target keeps can follow it).
  std::span<const float> logits = sync(context);
  const Tokenizer& tok = draft_->model->tokenizer();
  for (int32_t i = 0; i < len; ++i) {
    const TokenId t = token_of(logits);
    out_.push_back(t);
    if (i + 1 == len || tok.is_eog(t)) break;
    logits = seq_->decode(t);
  }
  pending_ = true;
  return out_;
}

void ModelDrafter::observe(int32_t drafted, int32_t accepted) {
  if (!pending_ || drafted <= 0) return;
  pending_ = false;
  hits_ = kDecay * hits_ + accepted;
  trials_ = kDecay * trials_ + accepted + (accepted < drafted ? 1 : 0);
}

void ModelDrafter::rewind(std::size_t length) {
  // The draft sequence stays: the next sync keeps whatever prefix it still shares.
  out_.clear();
  pending_ = false;
  if (length == 0) {
    hits_ = 2.0 * prior_rate_;
    trials_ = 2.0;
    skipped_ = 0;
  }
}

}  // namespace vsynth::kernels
