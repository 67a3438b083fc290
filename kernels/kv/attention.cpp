#include "kernels/kv/attention.h"

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/cpu_path_internal.h"
#include "kernels/model/vec_math.h"

namespace vsynth::kernels {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr int kTileRows = 32;  // query rows (queries x heads of a group) per task

// Running softmax state of R rows over one task's keys.
struct Partial {
  std::vector<float> mx;   // [R] running max score
  std::vector<float> sum;  // [R] running sum of exp(score - mx)
  std::vector<float> acc;  // [R][dv] running sum of exp(score - mx) * v
};

struct TaskSpec {
  int32_t g;       // kv head
  int32_t i0, i1;  // queries [i0, i1)
  int32_t b0, b1;  // key blocks [b0, b1)
};

class Runner {
 public:
  Runner(const KvLayerView& kv, const AttentionShape& s, const float* q, int32_t p0)
      : kv_(kv), s_(s), q_(q), p0_(p0), vk_(vec::vec_kernels()), kt_(detail::active_kernels()) {
    G_ = s.n_heads / s.n_kv_heads;
    bt_ = kv.pool->geometry().block_tokens;
    int8_ = kv.pool->geometry().type == KvType::Int8;
  }

  // Keys visible to queries [i0, i1): [lo, hi).
  std::pair<int32_t, int32_t> key_range(int32_t i0, int32_t i1) const {
    const int32_t q_first = p0_ + i0, q_last = p0_ + i1 - 1;
    int32_t lo = 0;
    if (s_.window > 0) lo = std::max(0, q_first - s_.window + 1);
    return {lo, q_last + 1};
  }

  void run(const TaskSpec& t, Partial& P) const {
    const int32_t nq = t.i1 - t.i0;
    const int R = nq * G_;
    const int dk = s_.head_dim_k, dv = s_.head_dim_v;
    P.mx.assign(static_cast<size_t>(R), kNegInf);
    P.sum.assign(static_cast<size_t>(R), 0.0f);
    P.acc.assign(static_cast<size_t>(R) * dv, 0.0f);

    // Gather this tile's query rows contiguously: row r = query i * G + head j of the group.
    std::vector<float> Q(static_cast<size_t>(R) * dk);
    for (int32_t i = 0; i < nq; ++i) {
      for (int32_t j = 0; j < G_; ++j) {
        const float* src = q_ + (static_cast<size_t>(t.i0 + i) * s_.n_heads + t.g * G_ + j) * dk;
        std::copy(src, src + dk, Q.begin() + (static_cast<ptrdiff_t>(i) * G_ + j) * dk);
      }
    }
    std::vector<float> kbuf(static_cast<size_t>(bt_) * dk), vbuf(static_cast<size_t>(bt_) * dv);
    std::vector<float> S(static_cast<size_t>(R) * bt_), E(static_cast<size_t>(bt_));
    const auto [lo, hi] = key_range(t.i0, t.i1);

    for (int32_t b = t.b0; b < t.b1; ++b) {
      const int32_t t0 = std::max(lo, b * bt_), t1 = std::min(hi, (b + 1) * bt_);
      if (t0 >= t1) continue;
      const int32_t s0 = t0 - b * bt_, nT = t1 - t0;
      const int32_t id = kv_.blocks[b];
      // Keys of this block as fp32 rows [nT][dk].
      const float* K = nullptr;
      const bool open = int8_ && kv_.n_keys % bt_ != 0 && b == kv_.n_keys / bt_;
      if (open) {
        K = kv_.k_open + (static_cast<size_t>(t.g) * bt_ + s0) * dk;
      } else if (int8_) {
        const int8_t* src = kv_.pool->k_i8(id, t.g) + static_cast<size_t>(s0) * dk;
        const float* sc = kv_.pool->k_scale(id, t.g);
        for (int32_t j = 0; j < nT; ++j) {
          vk_.i8_to_f32(src + static_cast<size_t>(j) * dk, sc, 0.0f,
                        kbuf.data() + static_cast<size_t>(j) * dk, dk);
        }
        K = kbuf.data();
      } else {
        kt_.f16_to_f32(kv_.pool->k_f16(id, t.g) + static_cast<size_t>(s0) * dk, kbuf.data(),
                       static_cast<int64_t>(nT) * dk);
        K = kbuf.data();
      }
      vk_.scores(Q.data(), R, static_cast<size_t>(dk), K, nT, static_cast<size_t>(dk), dk, S.data(),
                 static_cast<size_t>(bt_));

      // Mask, then update each row's running max / sum and rescale its accumulator.
      bool any = false;
      for (int r = 0; r < R; ++r) {
        const int32_t qpos = p0_ + t.i0 + r / G_;
        float* srow = S.data() + static_cast<size_t>(r) * bt_;
        // Visible keys of this row are a contiguous range [ja, jb) of the block.
        const int32_t ja = s_.window > 0 ? std::clamp(qpos - s_.window + 1 - t0, 0, nT) : 0;
        const int32_t jb = std::clamp(qpos + 1 - t0, 0, nT);
        for (int32_t j = 0; j < ja; ++j) srow[j] = kNegInf;
        for (int32_t j = jb; j < nT; ++j) srow[j] = kNegInf;
        if (ja >= jb) {
          std::fill(srow, srow + nT, 0.0f);  // probabilities: nothing visible here
          continue;
        }
        any = true;
        float bmax = kNegInf;
        for (int32_t j = ja; j < jb; ++j) bmax = std::max(bmax, srow[j]);
        const float mnew = std::max(P.mx[static_cast<size_t>(r)], bmax);
        const float corr = std::exp(P.mx[static_cast<size_t>(r)] - mnew);  // 0 when first
        const float bsum = vk_.exp_sum(srow, mnew, E.data(), nT);
        std::copy(E.begin(), E.begin() + nT, srow);
        P.sum[static_cast<size_t>(r)] = P.sum[static_cast<size_t>(r)] * corr + bsum;
        P.mx[static_cast<size_t>(r)] = mnew;
        if (corr != 1.0f) {
          float* a = P.acc.data() + static_cast<size_t>(r) * dv;
          for (int c = 0; c < dv; ++c) a[c] *= corr;
        }
      }
      if (!any) continue;

      // Values as fp32 rows [nT][dv].
      if (int8_) {
        const int8_t* src = kv_.pool->v_i8(id, t.g) + static_cast<size_t>(s0) * dv;
        const float* sc = kv_.pool->v_scale(id, t.g) + s0;
        for (int32_t j = 0; j < nT; ++j) {
          vk_.i8_to_f32(src + static_cast<size_t>(j) * dv, nullptr, sc[j],
                        vbuf.data() + static_cast<size_t>(j) * dv, dv);
        }
      } else {
        kt_.f16_to_f32(kv_.pool->v_f16(id, t.g) + static_cast<size_t>(s0) * dv, vbuf.data(),
                       static_cast<int64_t>(nT) * dv);
      }
      vk_.accumulate(P.acc.data(), R, static_cast<size_t>(dv), S.data(), static_cast<size_t>(bt_),
                     vbuf.data(), nT, static_cast<size_t>(dv), dv);
    }
  }

  // out rows of task t from one or more partials (merged in order).
  void finish(const TaskSpec& t, const Partial* parts, int n_parts, float* out) const {
    const int32_t nq = t.i1 - t.i0;
    const int dv = s_.head_dim_v;
    for (int32_t i = 0; i < nq; ++i) {
      for (int32_t j = 0; j < G_; ++j) {
        const size_t r = static_cast<size_t>(i) * G_ + j;
        float m = kNegInf;
        for (int p = 0; p < n_parts; ++p) m = std::max(m, parts[p].mx[r]);
        float* o = out + (static_cast<size_t>(t.i0 + i) * s_.n_heads + t.g * G_ + j) * dv;
        std::fill(o, o + dv, 0.0f);
        if (m == kNegInf) continue;  // no visible key (cannot happen for causal attention)
        float l = 0.0f;
        for (int p = 0; p < n_parts; ++p) {
          if (parts[p].mx[r] == kNegInf) continue;
          const float w = std::exp(parts[p].mx[r] - m);
          l += parts[p].sum[r] * w;
          const float* a = parts[p].acc.data() + r * dv;
          for (int c = 0; c < dv; ++c) o[c] += w * a[c];
        }
        const float inv = 1.0f / l;
        for (int c = 0; c < dv; ++c) o[c] *= inv;
      }
    }
  }

  int32_t group() const { return G_; }
  int32_t block_tokens() const { return bt_; }

 private:
  const KvLayerView& kv_;
  const AttentionShape& s_;
  const float* q_;
  int32_t p0_;
  const vec::Kernels& vk_;
  const detail::KernelTable& kt_;
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
  Runner run(kv, s, q, p0);
  const int32_t G = run.group(), bt = run.block_tokens();
  const int32_t q_per_tile = std::max(1, kTileRows / G);
  const int32_t n_tiles = (m + q_per_tile - 1) / q_per_tile;
  const int threads = std::max(1, tbb::this_task_arena::max_concurrency());

  std::vector<TaskSpec> tasks;
  std::vector<int> first_part;  // per (g, tile): index of its first task
  std::vector<int> n_parts;
  for (int32_t g = 0; g < s.n_kv_heads; ++g) {
    for (int32_t tile = 0; tile < n_tiles; ++tile) {
      const int32_t i0 = tile * q_per_tile, i1 = std::min(m, i0 + q_per_tile);
      const auto [lo, hi] = run.key_range(i0, i1);
      const int32_t b0 = lo / bt, b1 = (hi + bt - 1) / bt;
      // Split keys when heads x tiles cannot keep every thread busy (decode), in chunks of at
      // least 4 blocks.
      int32_t chunks = 1;
      const int32_t units = s.n_kv_heads * n_tiles;
      if (units < 2 * threads) {
        chunks = std::clamp<int32_t>((2 * threads + units - 1) / units, 1,
                                     std::max<int32_t>(1, (b1 - b0) / 4));
      }
      first_part.push_back(static_cast<int>(tasks.size()));
      n_parts.push_back(chunks);
      const int32_t per = (b1 - b0 + chunks - 1) / chunks;
      for (int32_t c = 0; c < chunks; ++c) {
        tasks.push_back({g, i0, i1, b0 + c * per, std::min(b1, b0 + (c + 1) * per)});
      }
    }
  }
  std::vector<Partial> parts(tasks.size());
  const auto body = [&](size_t i) { run.run(tasks[i], parts[i]); };
  if (tasks.size() == 1 || threads == 1) {
    for (size_t i = 0; i < tasks.size(); ++i) body(i);
  } else {
    tbb::parallel_for(size_t{0}, tasks.size(), body);
  }
  for (size_t u = 0; u < first_part.size(); ++u) {
    const int f = first_part[u];
    run.finish(tasks[static_cast<size_t>(f)], &parts[static_cast<size_t>(f)], n_parts[u], out);
  }
}

}  // namespace vsynth::kernels
