// On-device sampling: mask, greedy argmax, and temperature / top-k / top-p / min-p draws over a
// vocabulary in one block of 1024 threads (see ops.h).
//
// Top-k without sorting the vocabulary: a radix select over the logits' order-preserving 32-bit
// keys (four passes of an 8-bit histogram in shared memory) finds the k-th largest key, then
// every logit at or above it is gathered (at most k) and ranked in parallel. Cost: five passes
// over the logits (1 MiB for a 262144-token vocabulary) on one SM, independent of k.
#include <cstdint>
#include <string>

#include "kernels/cuda/check.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops.h"

namespace vsynth::kernels::cuda {

namespace {

constexpr int kThreads = 1024;

// Monotone map float -> uint32 (larger float, larger key); -inf and banned tokens map to 0.
__device__ __forceinline__ uint32_t key_of(float v) {
  const uint32_t u = __float_as_uint(v);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

__device__ __forceinline__ float logit_at(const float* logits, const uint32_t* banned, int64_t i) {
  if (banned != nullptr && ((banned[i >> 5] >> (i & 31)) & 1u)) return -INFINITY;
  return logits[i];
}

struct Best {
  float v;
  int64_t i;
};
__device__ __forceinline__ Best better(Best a, Best b) {
  if (b.v > a.v || (b.v == a.v && b.i < a.i)) return b;  // ties: the lowest id
  return a;
}

__global__ void __launch_bounds__(kThreads)
    sample_kernel(const float* __restrict__ logits, int64_t n, const uint32_t* __restrict__ banned,
                  DeviceSampling p, int32_t* __restrict__ token) {
  __shared__ float red_v[32];
  __shared__ int64_t red_i[32];
  __shared__ uint32_t hist[256];
  __shared__ uint32_t prefix, prefix_mask;
  __shared__ int remaining, n_cand;
  __shared__ float cand_v[kMaxTopK], sorted_v[kMaxTopK];
  __shared__ int64_t cand_i[kMaxTopK], sorted_i[kMaxTopK];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;

  // Pass 1: the masked argmax (the greedy answer, and the top candidate).
  Best b{-INFINITY, n};
  for (int64_t i = tid; i < n; i += kThreads) b = better(b, Best{logit_at(logits, banned, i), i});
  for (int o = 16; o > 0; o >>= 1) {
    const Best other{__shfl_xor_sync(0xffffffffu, b.v, o),
                     static_cast<int64_t>(__shfl_xor_sync(0xffffffffu, b.i, o))};
    b = better(b, other);
  }
  if (lane == 0) {
    red_v[warp] = b.v;
    red_i[warp] = b.i;
  }
  __syncthreads();
  if (tid == 0) {
    Best t{red_v[0], red_i[0]};
    for (int w = 1; w < kThreads / 32; ++w) t = better(t, Best{red_v[w], red_i[w]});
    red_v[0] = t.v;
    red_i[0] = t.i;
  }
  __syncthreads();
  if (red_v[0] == -INFINITY) {  // everything banned (or -inf)
    if (tid == 0) token[0] = -1;
    return;
  }
  if (p.temperature <= 0.0f) {
    if (tid == 0) token[0] = static_cast<int32_t>(red_i[0]);
    return;
  }

  // Radix select of the k-th largest key, 8 bits at a time from the top.
  int k = p.top_k > 0 ? min(p.top_k, kMaxTopK) : kMaxTopK;
  if (static_cast<int64_t>(k) > n) k = static_cast<int>(n);
  if (tid == 0) {
    prefix = 0;
    prefix_mask = 0;
    remaining = k;
  }
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int i = tid; i < 256; i += kThreads) hist[i] = 0;
    __syncthreads();
    for (int64_t i = tid; i < n; i += kThreads) {
      const uint32_t key = key_of(logit_at(logits, banned, i));
      if ((key & prefix_mask) == prefix) atomicAdd(&hist[(key >> shift) & 255u], 1u);
    }
    __syncthreads();
    if (tid == 0) {
      int need = remaining;
      int d = 255;
      for (; d > 0; --d) {
        if (static_cast<int>(hist[d]) >= need) break;
        need -= static_cast<int>(hist[d]);
      }
      prefix |= static_cast<uint32_t>(d) << shift;
      prefix_mask |= 255u << shift;
      remaining = need;  // how many keys equal to the threshold (so far) still to take
    }
    __syncthreads();
  }
  // Gather keys above the threshold, and `remaining` of those equal to it.
  const uint32_t thr = prefix;
  if (tid == 0) n_cand = 0;
  __syncthreads();
  for (int64_t i = tid; i < n; i += kThreads) {
    const float v = logit_at(logits, banned, i);
    const uint32_t key = key_of(v);
    if (key > thr && v != -INFINITY) {
      const int at = atomicAdd(&n_cand, 1);
      if (at < kMaxTopK) {
        cand_v[at] = v;
        cand_i[at] = i;
      }
    }
  }
  __syncthreads();
  for (int64_t i = tid; i < n; i += kThreads) {
    const float v = logit_at(logits, banned, i);
    if (key_of(v) == thr && v != -INFINITY && atomicSub(&remaining, 1) > 0) {
      const int at = atomicAdd(&n_cand, 1);
      if (at < kMaxTopK) {
        cand_v[at] = v;
        cand_i[at] = i;
      }
    }
  }
  __syncthreads();
  const int nc = min(n_cand, kMaxTopK);
  // Rank sort, descending (ties: lower id first).
  if (tid < nc) {
    int rank = 0;
    for (int j = 0; j < nc; ++j) {
      rank += (cand_v[j] > cand_v[tid] || (cand_v[j] == cand_v[tid] && cand_i[j] < cand_i[tid]));
    }
    sorted_v[rank] = cand_v[tid];
    sorted_i[rank] = cand_i[tid];
  }
  __syncthreads();
  if (tid != 0) return;
  // Serial tail over <= 256 sorted candidates: temperature, top-p, min-p, one draw.
  const float inv_t = 1.0f / p.temperature;
  float w[kMaxTopK];
  float total = 0.0f;
  for (int j = 0; j < nc; ++j) {
    w[j] = expf((sorted_v[j] - sorted_v[0]) * inv_t);
    total += w[j];
  }
  int keep = nc;
  if (p.top_p < 1.0f) {
    float cum = 0.0f;
    for (int j = 0; j < nc; ++j) {
      cum += w[j];
      if (cum >= p.top_p * total) {
        keep = j + 1;
        break;
      }
    }
  }
  if (p.min_p > 0.0f) {
    int j = 1;
    while (j < keep && w[j] >= p.min_p * w[0]) ++j;
    keep = j;
  }
  float kept = 0.0f;
  for (int j = 0; j < keep; ++j) kept += w[j];
  float target = p.uniform * kept;
  int pick = keep - 1;
  for (int j = 0; j < keep; ++j) {
    target -= w[j];
    if (target < 0.0f) {
      pick = j;
      break;
    }
  }
  token[0] = static_cast<int32_t>(sorted_i[pick]);
}

}  // namespace

void sample(const float* logits, int64_t n, const uint32_t* banned, const DeviceSampling& p,
            int32_t* token, cudaStream_t s) {
  if (n <= 0 || n > (int64_t{1} << 31) - 1) {
    throw CudaError("sample: vocabulary of " + std::to_string(n) + " tokens (valid 1..2^31-1)");
  }
  if (p.top_k < 0 || !(p.top_p > 0.0f && p.top_p <= 1.0f) ||
      !(p.min_p >= 0.0f && p.min_p <= 1.0f) || !(p.uniform >= 0.0f && p.uniform < 1.0f)) {
    throw CudaError("sample: top_k " + std::to_string(p.top_k) + ", top_p " +
                    std::to_string(p.top_p) + ", min_p " + std::to_string(p.min_p) + ", uniform " +
                    std::to_string(p.uniform) +
                    " (valid: top_k >= 0, top_p in (0, 1], min_p in [0, 1], uniform in [0, 1))");
  }
  sample_kernel<<<1, kThreads, 0, s>>>(logits, n, banned, p, token);
  VSYNTH_CUDA_CHECK_LAUNCH();
}

}  // namespace vsynth::kernels::cuda
