// ModelResource's run-summary counters (see model.h).
#include "stages/facets/model.h"

namespace vsynth::stages::facets {

void ModelResource::add(const DecodeTally& t) {
  constexpr auto relaxed = std::memory_order_relaxed;
  generations_.fetch_add(t.generations, relaxed);
  drafted_.fetch_add(t.drafted, relaxed);
  accepted_.fetch_add(t.accepted, relaxed);
  verify_steps_.fetch_add(t.verify_steps, relaxed);
  speculation_fallbacks_.fetch_add(t.speculation_fallbacks, relaxed);
  kv_pool_fallbacks_.fetch_add(t.kv_pool_fallbacks, relaxed);
}

std::vector<graph::ResourceCounter> ModelResource::counters() const {
  constexpr auto relaxed = std::memory_order_relaxed;
  std::vector<graph::ResourceCounter> out;
  const auto put = [&](const char* name, double v, bool ratio = false) {
    out.push_back({name, v, ratio});
  };
  // Phase 1: the prefix KV pool, when this model has one (kv_pool_mb > 0).
  const kernels::PrefixStats p = model_->kv_stats().prefix;
  if (p.budget_bytes > 0) {
    put("kv_pool_lookups", static_cast<double>(p.lookups));
    put("kv_pool_hit_rate", p.hit_rate(), true);
    put("kv_pool_cached_tokens", static_cast<double>(p.cached_tokens));
    put("kv_pool_token_share",
        p.lookup_tokens > 0 ? static_cast<double>(p.cached_tokens) / p.lookup_tokens : 0.0, true);
    put("kv_pool_evictions", static_cast<double>(p.evictions));
    put("kv_pool_mib", static_cast<double>(p.bytes) / (1024.0 * 1024.0));
    put("kv_pool_fallbacks", static_cast<double>(kv_pool_fallbacks_.load(relaxed)));
  }
  // Phase 2: speculation, when any generation drafted or verified.
  const int64_t verify = verify_steps_.load(relaxed);
  const int64_t drafted = drafted_.load(relaxed);
  if (verify > 0 || drafted > 0 || speculation_fallbacks_.load(relaxed) > 0) {
    const int64_t accepted = accepted_.load(relaxed);
    put("draft_tokens", static_cast<double>(drafted));
    put("draft_accepted", static_cast<double>(accepted));
    put("draft_acceptance", drafted > 0 ? static_cast<double>(accepted) / drafted : 0.0, true);
    put("verify_steps", static_cast<double>(verify));
    // Tokens a verification pass yields: the accepted drafts plus the target's own token.
    put("tokens_per_verify", verify > 0 ? static_cast<double>(accepted + verify) / verify : 0.0);
    put("speculation_fallbacks", static_cast<double>(speculation_fallbacks_.load(relaxed)));
  }
  // Phase 3: continuous batching, when this model has a scheduler.
  if (scheduler_) {
    const kernels::SchedulerStats b = scheduler_->stats();
    put("batch_steps", static_cast<double>(b.steps));
    put("batch_rows_per_step",
        b.steps > 0 ? static_cast<double>(b.rows) / static_cast<double>(b.steps) : 0.0);
    put("batch_tokens", static_cast<double>(b.tokens));
  }
  if (!out.empty()) put("generations", static_cast<double>(generations_.load(relaxed)));
  return out;
}

}  // namespace vsynth::stages::facets
