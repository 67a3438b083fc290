#include "kernels/kv/attention.h"

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/cpu_path_internal.h"
#include "kernels/cpu/vec_kernels.h"

namespace vsynth::kernels {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr int kTileRows = 32;     // query rows (queries x heads of a group) per task
constexpr int32_t kMinSplit = 4;  // blocks per key chunk when one tile's keys are split
// Blocks per partial sum of P V (see Runner::run's phase 3); the unit of thread splitting too.
constexpr int32_t kGroupBlocks = 4;

// One (kv head, query tile) unit: rows r = query i * G + head j of the group.
struct Unit {
  int32_t g;
  int32_t i0, i1;  // queries [i0, i1)
  int32_t lo, hi;  // keys [lo, hi) visible to some query of the tile
};

// Numerics follow llama.cpp's CPU attention (without flash attention), so that our logits can
// be compared with it closely: q is rounded to fp16 before q.k (ggml multiplies an f16 K cache
// with q converted to f16), the softmax runs over the whole row in fp32 with the sum in double,
// and the normalized probabilities are rounded to fp16 before they weight V.
class Runner {
 public:
  Runner(const KvLayerView& kv, const AttentionShape& s, const float* q, int32_t p0, int threads)
      : kv_(kv),
        s_(s),
        q_(q),
        p0_(p0),
        threads_(threads),
        vk_(vec::vec_kernels()),
        kt_(detail::active_kernels()) {
    G_ = s.n_heads / s.n_kv_heads;
    bt_ = kv.pool->geometry().block_tokens;
    int8_ = kv.pool->geometry().type == KvType::Int8;
  }

  int32_t group() const { return G_; }

  Unit unit(int32_t g, int32_t i0, int32_t i1) const {
    Unit u{g, i0, i1, 0, p0_ + i1};
    if (s_.window > 0) u.lo = std::max(0, p0_ + i0 - s_.window + 1);
    return u;
  }

  // Every phase for one unit; key blocks are split over threads when `split`.
  void run(const Unit& u, bool split) const {
    const int32_t nq = u.i1 - u.i0;
    const int R = nq * G_;
    const int dk = s_.head_dim_k, dv = s_.head_dim_v;
    const int32_t nk = u.hi - u.lo;

    // Query rows, rounded to fp16 (see the class comment).
    std::vector<float> Q(static_cast<size_t>(R) * dk);
    std::vector<uint16_t> tmp(static_cast<size_t>(dk));
    for (int32_t i = 0; i < nq; ++i) {
      for (int32_t j = 0; j < G_; ++j) {
        const float* src = q_ + (static_cast<size_t>(u.i0 + i) * s_.n_heads + u.g * G_ + j) * dk;
        kt_.f32_to_f16(src, tmp.data(), dk);
        kt_.f16_to_f32(tmp.data(), Q.data() + (static_cast<size_t>(i) * G_ + j) * dk, dk);
      }
    }

    const int32_t b0 = u.lo / bt_, b1 = (u.hi + bt_ - 1) / bt_;
    const int32_t nb = b1 - b0;
    int32_t chunks = 1;
    if (split) chunks = std::clamp<int32_t>(nb / kMinSplit, 1, 2 * threads_);
    const int32_t per = (nb + chunks - 1) / chunks;
    chunks = (nb + per - 1) / per;

    // Phase 1: scores S[R][nk] (masked entries -inf).
    std::vector<float> S(static_cast<size_t>(R) * nk);
    for_chunks(chunks, [&](int32_t c) {
      std::vector<float> kbuf(static_cast<size_t>(bt_) * dk);
      std::vector<float> qs(int8_ ? static_cast<size_t>(R) * dk : 0);
      for (int32_t b = b0 + c * per; b < std::min(b1, b0 + (c + 1) * per); ++b) {
        const int32_t t0 = std::max(u.lo, b * bt_), t1 = std::min(u.hi, (b + 1) * bt_);
        const int32_t s0 = t0 - b * bt_;
        float* out = S.data() + (t0 - u.lo);
        const bool open = int8_ && kv_.n_keys % bt_ != 0 && b == kv_.n_keys / bt_;
        if (int8_ && !open) {
          // Sealed int8 block: per-channel scales folded into q, keys read as int8.
          const int32_t id = kv_.blocks[b];
          vk_.scores_i8(Q.data(), R, static_cast<size_t>(dk),
                        kv_.pool->k_i8(id, u.g) + static_cast<size_t>(s0) * dk, t1 - t0,
                        static_cast<size_t>(dk), kv_.pool->k_scale(id, u.g), dk, qs.data(), out,
                        static_cast<size_t>(nk));
          continue;
        }
        const float* K = keys(b, s0, t1 - t0, u.g, kbuf.data());
        vk_.scores(Q.data(), R, static_cast<size_t>(dk), K, t1 - t0, static_cast<size_t>(dk), dk,
                   out, static_cast<size_t>(nk));
      }
    });

    // Phase 2: masked softmax per row, probabilities rounded to fp16.
    for (int r = 0; r < R; ++r) {
      const int32_t qpos = p0_ + u.i0 + r / G_;
      float* row = S.data() + static_cast<size_t>(r) * nk;
      // Visible keys: [max(lo, qpos - window + 1), qpos].
      const int32_t va = (s_.window > 0 ? std::max(u.lo, qpos - s_.window + 1) : u.lo) - u.lo;
      const int32_t vb = qpos + 1 - u.lo;
      std::fill(row, row + va, 0.0f);
      std::fill(row + vb, row + nk, 0.0f);
      float mx = kNegInf;
      for (int32_t t = va; t < vb; ++t) mx = std::max(mx, row[t]);
      double sum = 0.0;
      vk_.exp_sum(row + va, mx, row + va, vb - va);
      for (int32_t t = va; t < vb; ++t) sum += row[t];
      const float inv = static_cast<float>(1.0 / sum);
      for (int32_t t = va; t < vb; ++t) row[t] *= inv;
      round_f16(row + va, vb - va);
    }

    // Phase 3: out = P V. Keys are summed in groups of kGroupBlocks blocks at absolute block
    // indices, the groups' partial sums added in group order: a row's sum then depends only on
    // its own keys, never on which queries share the pass or how many threads split it, so a
    // batched pass (prefill, speculative verification) gives each row the bits a decode step
    // gives that position (masked keys weigh exactly 0 and are skipped).
    const int32_t g0 = b0 / kGroupBlocks, g1 = (b1 + kGroupBlocks - 1) / kGroupBlocks;
    const int32_t ng = g1 - g0;
    const int32_t tasks = split ? std::clamp<int32_t>(ng, 1, 2 * threads_) : 1;
    const int32_t per_task = (ng + tasks - 1) / tasks;
    std::vector<float> acc(static_cast<size_t>(ng) * R * dv, 0.0f);
    for_chunks((ng + per_task - 1) / per_task, [&](int32_t c) {
      std::vector<float> vbuf(int8_ ? static_cast<size_t>(bt_) : static_cast<size_t>(bt_) * dv);
      for (int32_t gi = c * per_task; gi < std::min(ng, (c + 1) * per_task); ++gi) {
        float* A = acc.data() + static_cast<size_t>(gi) * R * dv;
        const int32_t gb0 = std::max(b0, (g0 + gi) * kGroupBlocks);
        const int32_t gb1 = std::min(b1, (g0 + gi + 1) * kGroupBlocks);
        for (int32_t b = gb0; b < gb1; ++b) {
          const int32_t t0 = std::max(u.lo, b * bt_), t1 = std::min(u.hi, (b + 1) * bt_);
          const int32_t s0 = t0 - b * bt_;
          const float* P = S.data() + (t0 - u.lo);
          const int32_t id = kv_.blocks[b];
          if (int8_) {
            // Per-token value scales folded into the probabilities, values read as int8.
            vk_.accumulate_i8(A, R, static_cast<size_t>(dv), P, static_cast<size_t>(nk),
                              kv_.pool->v_i8(id, u.g) + static_cast<size_t>(s0) * dv, t1 - t0,
                              static_cast<size_t>(dv), kv_.pool->v_scale(id, u.g) + s0, dv,
                              vbuf.data());
            continue;
          }
          kt_.f16_to_f32(kv_.pool->v_f16(id, u.g) + static_cast<size_t>(s0) * dv, vbuf.data(),
                         static_cast<int64_t>(t1 - t0) * dv);
          vk_.accumulate(A, R, static_cast<size_t>(dv), P, static_cast<size_t>(nk), vbuf.data(),
                         t1 - t0, static_cast<size_t>(dv), dv);
        }
      }
    });
    for (int32_t i = 0; i < nq; ++i) {
      for (int32_t j = 0; j < G_; ++j) {
        const size_t r = static_cast<size_t>(i) * G_ + j;
        float* o = out_ + (static_cast<size_t>(u.i0 + i) * s_.n_heads + u.g * G_ + j) * dv;
        std::copy(acc.begin() + static_cast<ptrdiff_t>(r * dv),
                  acc.begin() + static_cast<ptrdiff_t>((r + 1) * dv), o);
        for (int32_t gi = 1; gi < ng; ++gi) {
          vk_.add(o, acc.data() + (static_cast<size_t>(gi) * R + r) * dv, dv);
        }
      }
    }
  }

  void set_out(float* out) { out_ = out; }

 private:
  template <typename F>
  void for_chunks(int32_t chunks, const F& f) const {
    if (chunks == 1) {
      f(0);
    } else {
      tbb::parallel_for(int32_t{0}, chunks, f);
    }
  }

  void round_f16(float* x, int32_t n) const {
    uint16_t h[64];
    for (int32_t i = 0; i < n; i += 64) {
      const int32_t k = std::min<int32_t>(64, n - i);
      kt_.f32_to_f16(x + i, h, k);
      kt_.f16_to_f32(h, x + i, k);
    }
  }

  // Keys of block b, slots [s0, s0+n), kv head g, as fp32 rows [n][dk]: an f16 block decoded
  // into buf, or (int8) the open block's fp32 staging. Sealed int8 blocks never come here.
  const float* keys(int32_t b, int32_t s0, int32_t n, int32_t g, float* buf) const {
    const int dk = s_.head_dim_k;
    if (int8_) return kv_.k_open + (static_cast<size_t>(g) * bt_ + s0) * dk;
    kt_.f16_to_f32(kv_.pool->k_f16(kv_.blocks[b], g) + static_cast<size_t>(s0) * dk, buf,
                   static_cast<int64_t>(n) * dk);
    return buf;
  }

  const KvLayerView& kv_;
  const AttentionShape& s_;
  const float* q_;
  int32_t p0_;
  int threads_;
  const vec::Kernels& vk_;
  const detail::KernelTable& kt_;
  float* out_ = nullptr;
  int32_t G_ = 1, bt_ = 32;
  bool int8_ = false;
};

}  // namespace

void attention(const KvLayerView& kv, const AttentionShape& s, const float* q, int32_t m,
               int32_t p0, float* out) {
  if (m <= 0) return;
  if (s.n_kv_heads <= 0 || s.n_heads % s.n_kv_heads != 0 || kv.n_keys < p0 + m) {
    throw EngineError("attention: inconsistent shape (heads " + std::to_string(s.n_heads) +
                      ", kv heads " + std::to_string(s.n_kv_heads) + ", keys " +
                      std::to_string(kv.n_keys) + ", queries up to " + std::to_string(p0 + m) +
                      ")");
  }
  const int threads = std::max(1, tbb::this_task_arena::max_concurrency());
  Runner run(kv, s, q, p0, threads);
  run.set_out(out);
  const int32_t q_per_tile = std::max(1, kTileRows / run.group());
  std::vector<Unit> units;
  for (int32_t g = 0; g < s.n_kv_heads; ++g) {
    for (int32_t i0 = 0; i0 < m; i0 += q_per_tile) {
      units.push_back(run.unit(g, i0, std::min(m, i0 + q_per_tile)));
    }
  }
  // Too few units to keep every thread busy (decode): split each unit's keys instead.
  const bool split = static_cast<int>(units.size()) < 2 * threads;
  if (units.size() == 1 || threads == 1) {
    for (const Unit& u : units) run.run(u, split && threads > 1);
  } else {
    tbb::parallel_for(size_t{0}, units.size(), [&](size_t i) { run.run(units[i], split); });
  }
}

}  // namespace vsynth::kernels
