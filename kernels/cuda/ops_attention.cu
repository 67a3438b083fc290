// Paged KV writes and split-K ("flash-decoding") attention over the paged pool (see ops.h).
//
// attention: one block of 4 warps per (query row, head, key split). Each warp walks every 4th key
// of the split, one key at a time: its 32 lanes hold head_dim/32 consecutive elements of q and of
// the output accumulator, so a key row is one coalesced load, its score one warp reduction, and
// the softmax is the online (running max / running sum) form. The 4 warps' states merge in
// shared memory; with splits > 1 each split writes (max, sum, unnormalised output) and a second
// kernel merges the splits, so a long context spreads over many SMs even at batch 1.
#include <cuda_fp16.h>

#include <cmath>
#include <string>

#include "kernels/cuda/check.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops.h"

namespace vsynth::kernels::cuda {

namespace {

constexpr int kAttnWarps = 4;

__device__ __forceinline__ const int32_t* table_of(const KvRows& rows, int r) {
  const int t = rows.row_table != nullptr ? rows.row_table[r] : 0;
  return rows.tables + static_cast<size_t>(t) * rows.table_stride;
}

// Byte offset of (layer, kv head, slot) rows inside a block, for an element size `es`.
__device__ __forceinline__ size_t row_index(const KvLayout& L, int layer, int kvh, int slot) {
  return (static_cast<size_t>(layer) * L.n_kv_heads + kvh) * L.block_tokens + slot;
}

// One block per (row, kv head); thread t handles element t of the head (blockDim = head_dim).
template <bool kInt8>
__global__ void kv_write_kernel(KvLayout L, uint8_t* __restrict__ pool, int layer, KvRows rows,
                                const float* __restrict__ k, const float* __restrict__ v) {
  __shared__ float red[32];
  const int r = blockIdx.x, kvh = blockIdx.y, t = threadIdx.x, D = L.head_dim;
  const int pos = rows.pos[r];
  const int32_t blk = table_of(rows, r)[pos / L.block_tokens];
  uint8_t* base = pool + static_cast<size_t>(blk) * L.block_bytes;
  const size_t ri = row_index(L, layer, kvh, pos % L.block_tokens);
  const size_t src = (static_cast<size_t>(r) * L.n_kv_heads + kvh) * D + t;
  const float kx = k[src], vx = v[src];
  if constexpr (!kInt8) {
    reinterpret_cast<__half*>(base + L.k_off)[ri * D + t] = __float2half_rn(kx);
    reinterpret_cast<__half*>(base + L.v_off)[ri * D + t] = __float2half_rn(vx);
  } else {
    // Per-token scales: max|x| / 127 over the head's row (block_sum's reduction, on maxima).
    const int lane = t % 32, warp = t / 32;
    float km = dev::warp_max(fabsf(kx)), vm = dev::warp_max(fabsf(vx));
    if (lane == 0) red[warp] = km;
    __syncthreads();
    km = 0.0f;
    for (int w = 0; w < blockDim.x / 32; ++w) km = fmaxf(km, red[w]);
    __syncthreads();
    if (lane == 0) red[warp] = vm;
    __syncthreads();
    vm = 0.0f;
    for (int w = 0; w < blockDim.x / 32; ++w) vm = fmaxf(vm, red[w]);
    const float ks = km / 127.0f, vs = vm / 127.0f;
    const int kq = ks > 0.0f ? __float2int_rn(kx / ks) : 0;
    const int vq = vs > 0.0f ? __float2int_rn(vx / vs) : 0;
    reinterpret_cast<int8_t*>(base + L.k_off)[ri * D + t] = static_cast<int8_t>(kq);
    reinterpret_cast<int8_t*>(base + L.v_off)[ri * D + t] = static_cast<int8_t>(vq);
    if (t == 0) {
      reinterpret_cast<float*>(base + L.ks_off)[ri] = ks;
      reinterpret_cast<float*>(base + L.vs_off)[ri] = vs;
    }
  }
}

// EPL consecutive elements of a K or V row into floats (vector loads where they fit).
template <int EPL, bool kInt8>
__device__ __forceinline__ void load_row(const uint8_t* p, float* out) {
  if constexpr (kInt8) {
    const int8_t* s = reinterpret_cast<const int8_t*>(p);
    if constexpr (EPL % 4 == 0) {
#pragma unroll
      for (int i = 0; i < EPL; i += 4) {
        const char4 c = *reinterpret_cast<const char4*>(s + i);
        out[i] = c.x;
        out[i + 1] = c.y;
        out[i + 2] = c.z;
        out[i + 3] = c.w;
      }
    } else {
#pragma unroll
      for (int i = 0; i < EPL; ++i) out[i] = s[i];
    }
  } else {
    const __half* h = reinterpret_cast<const __half*>(p);
    if constexpr (EPL % 2 == 0) {
#pragma unroll
      for (int i = 0; i < EPL; i += 2) {
        const float2 f = __half22float2(*reinterpret_cast<const __half2*>(h + i));
        out[i] = f.x;
        out[i + 1] = f.y;
      }
    } else {
#pragma unroll
      for (int i = 0; i < EPL; ++i) out[i] = __half2float(h[i]);
    }
  }
}

template <int D, bool kInt8>
__global__ void __launch_bounds__(kAttnWarps * 32)
    attention_kernel(KvLayout L, const uint8_t* __restrict__ pool, int layer, KvRows rows,
                     const float* __restrict__ q, int n_heads, int window, int splits,
                     float* __restrict__ part_m, float* __restrict__ part_l,
                     float* __restrict__ part_o, float* __restrict__ out) {
  constexpr int EPL = D / 32;
  constexpr int kEs = kInt8 ? 1 : 2;
  __shared__ float sm_m[kAttnWarps], sm_l[kAttnWarps];
  __shared__ float sm_o[kAttnWarps][D];

  const int h = blockIdx.x, r = blockIdx.y, sp = blockIdx.z;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int kvh = h / (n_heads / L.n_kv_heads);
  const int pos = rows.pos[r];
  const int32_t* table = table_of(rows, r);
  const int lo = window > 0 ? max(0, pos - window + 1) : 0;
  const int n = pos + 1 - lo;
  const int per = (n + splits - 1) / splits;
  const int k0 = lo + sp * per, k1 = min(pos + 1, k0 + per);

  float qv[EPL], acc[EPL];
  const float* qr = q + (static_cast<size_t>(r) * n_heads + h) * D + lane * EPL;
#pragma unroll
  for (int e = 0; e < EPL; ++e) {
    qv[e] = qr[e];
    acc[e] = 0.0f;
  }
  float run_m = -INFINITY, run_l = 0.0f;
  for (int j = k0 + warp; j < k1; j += kAttnWarps) {
    const uint8_t* blk = pool + static_cast<size_t>(table[j / L.block_tokens]) * L.block_bytes;
    const size_t ri = row_index(L, layer, kvh, j % L.block_tokens);
    float kv[EPL];
    load_row<EPL, kInt8>(blk + L.k_off + (ri * D + lane * EPL) * kEs, kv);
    float s = 0.0f;
#pragma unroll
    for (int e = 0; e < EPL; ++e) s += qv[e] * kv[e];
    s = dev::warp_sum(s);
    float vscale = 1.0f;
    if constexpr (kInt8) {
      s *= reinterpret_cast<const float*>(blk + L.ks_off)[ri];
      vscale = reinterpret_cast<const float*>(blk + L.vs_off)[ri];
    }
    const float m_new = fmaxf(run_m, s);
    const float corr = expf(run_m - m_new);  // 0 for the first key (run_m = -inf)
    const float p = expf(s - m_new);
    run_l = run_l * corr + p;
    run_m = m_new;
    load_row<EPL, kInt8>(blk + L.v_off + (ri * D + lane * EPL) * kEs, kv);
#pragma unroll
    for (int e = 0; e < EPL; ++e) acc[e] = acc[e] * corr + p * vscale * kv[e];
  }
  if (lane == 0) {
    sm_m[warp] = run_m;
    sm_l[warp] = run_l;
  }
#pragma unroll
  for (int e = 0; e < EPL; ++e) sm_o[warp][lane * EPL + e] = acc[e];
  __syncthreads();

  float M = -INFINITY;
#pragma unroll
  for (int w = 0; w < kAttnWarps; ++w) M = fmaxf(M, sm_m[w]);
  float f[kAttnWarps];
  float Lsum = 0.0f;
#pragma unroll
  for (int w = 0; w < kAttnWarps; ++w) {
    f[w] = M == -INFINITY ? 0.0f : expf(sm_m[w] - M);  // an empty warp has m = -inf: weight 0
    Lsum += sm_l[w] * f[w];
  }
  const size_t rh = static_cast<size_t>(r) * n_heads + h;
  for (int t = threadIdx.x; t < D; t += blockDim.x) {
    float o = 0.0f;
#pragma unroll
    for (int w = 0; w < kAttnWarps; ++w) o += sm_o[w][t] * f[w];
    if (splits == 1) {
      out[rh * D + t] = o / Lsum;
    } else {
      part_o[(rh * splits + sp) * D + t] = o;
    }
  }
  if (splits > 1 && threadIdx.x == 0) {
    part_m[rh * splits + sp] = M;
    part_l[rh * splits + sp] = Lsum;
  }
}

// Merges the splits of one (row, head): out = sum_s o_s e^(m_s - M) / sum_s l_s e^(m_s - M).
__global__ void attention_merge_kernel(int n_heads, int D, int splits,
                                       const float* __restrict__ part_m,
                                       const float* __restrict__ part_l,
                                       const float* __restrict__ part_o, float* __restrict__ out) {
  const size_t rh = static_cast<size_t>(blockIdx.y) * n_heads + blockIdx.x;
  const float* pm = part_m + rh * splits;
  const float* pl = part_l + rh * splits;
  float M = -INFINITY;
  for (int s = 0; s < splits; ++s) M = fmaxf(M, pm[s]);
  float Lsum = 0.0f;
  for (int s = 0; s < splits; ++s) Lsum += pm[s] == -INFINITY ? 0.0f : pl[s] * expf(pm[s] - M);
  for (int t = threadIdx.x; t < D; t += blockDim.x) {
    float o = 0.0f;
    for (int s = 0; s < splits; ++s) {
      if (pm[s] != -INFINITY) o += part_o[(rh * splits + s) * D + t] * expf(pm[s] - M);
    }
    out[rh * D + t] = o / Lsum;
  }
}

template <int D>
void launch_attention(const KvLayout& L, const void* pool, int layer, const KvRows& rows,
                      const float* q, int m, int n_heads, int window, int splits, float* pm,
                      float* pl, float* po, float* out, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>(n_heads), static_cast<unsigned>(m),
                  static_cast<unsigned>(splits));
  const auto* p = static_cast<const uint8_t*>(pool);
  if (L.type == KvType::Int8) {
    attention_kernel<D, true><<<grid, kAttnWarps * 32, 0, s>>>(L, p, layer, rows, q, n_heads,
                                                               window, splits, pm, pl, po, out);
  } else {
    attention_kernel<D, false><<<grid, kAttnWarps * 32, 0, s>>>(L, p, layer, rows, q, n_heads,
                                                                window, splits, pm, pl, po, out);
  }
}

size_t round256(size_t n) {
  return (n + 255) / 256 * 256;
}

}  // namespace

KvLayout make_kv_layout(KvType type, int n_layers, int n_kv_heads, int head_dim, int block_tokens) {
  if (n_layers <= 0 || n_kv_heads <= 0 || block_tokens <= 0 ||
      !(head_dim == 32 || head_dim == 64 || head_dim == 128 || head_dim == 256)) {
    throw CudaError("KV layout: head_dim " + std::to_string(head_dim) +
                    " is not supported by the CUDA attention kernels (32, 64, 128 or 256), or a "
                    "count is not positive (layers " +
                    std::to_string(n_layers) + ", kv heads " + std::to_string(n_kv_heads) +
                    ", block tokens " + std::to_string(block_tokens) + ")");
  }
  KvLayout L;
  L.type = type;
  L.n_layers = n_layers;
  L.n_kv_heads = n_kv_heads;
  L.head_dim = head_dim;
  L.block_tokens = block_tokens;
  const size_t rows = static_cast<size_t>(n_layers) * n_kv_heads * block_tokens;
  const size_t es = type == KvType::Int8 ? 1 : 2;
  L.k_off = 0;
  L.v_off = round256(rows * head_dim * es);
  if (type == KvType::Int8) {
    L.ks_off = L.v_off + round256(rows * head_dim * es);
    L.vs_off = L.ks_off + round256(rows * sizeof(float));
    L.block_bytes = L.vs_off + round256(rows * sizeof(float));
  } else {
    L.block_bytes = L.v_off + round256(rows * head_dim * es);
  }
  return L;
}

void kv_write(const KvLayout& L, void* pool, int layer, const KvRows& rows, const float* k,
              const float* v, int m, cudaStream_t s) {
  if (m <= 0) return;
  const dim3 grid(static_cast<unsigned>(m), static_cast<unsigned>(L.n_kv_heads));
  auto* p = static_cast<uint8_t*>(pool);
  if (L.type == KvType::Int8) {
    kv_write_kernel<true><<<grid, L.head_dim, 0, s>>>(L, p, layer, rows, k, v);
  } else {
    kv_write_kernel<false><<<grid, L.head_dim, 0, s>>>(L, p, layer, rows, k, v);
  }
  VSYNTH_CUDA_CHECK_LAUNCH();
}

size_t attention_scratch_bytes(int m, int n_heads, int head_dim, int splits) {
  if (splits <= 1) return 0;
  const size_t parts = static_cast<size_t>(m) * n_heads * splits;
  return round256(parts * sizeof(float)) * 2 + round256(parts * head_dim * sizeof(float));
}

void attention(const KvLayout& L, const void* pool, int layer, const KvRows& rows, const float* q,
               int m, int n_heads, int window, int splits, void* scratch, float* out,
               cudaStream_t s) {
  if (m <= 0) return;
  if (n_heads <= 0 || n_heads % L.n_kv_heads != 0 || splits < 1 || splits > 65535) {
    throw CudaError("attention: " + std::to_string(n_heads) + " heads over " +
                    std::to_string(L.n_kv_heads) + " kv heads with " + std::to_string(splits) +
                    " splits (heads must be a multiple of kv heads; splits 1..65535)");
  }
  float *pm = nullptr, *pl = nullptr, *po = nullptr;
  if (splits > 1) {
    const size_t parts = static_cast<size_t>(m) * n_heads * splits;
    auto* base = static_cast<std::byte*>(scratch);
    pm = reinterpret_cast<float*>(base);
    pl = reinterpret_cast<float*>(base + round256(parts * sizeof(float)));
    po = reinterpret_cast<float*>(base + 2 * round256(parts * sizeof(float)));
  }
  switch (L.head_dim) {
    case 32:
      launch_attention<32>(L, pool, layer, rows, q, m, n_heads, window, splits, pm, pl, po, out, s);
      break;
    case 64:
      launch_attention<64>(L, pool, layer, rows, q, m, n_heads, window, splits, pm, pl, po, out, s);
      break;
    case 128:
      launch_attention<128>(L, pool, layer, rows, q, m, n_heads, window, splits, pm, pl, po, out,
                            s);
      break;
    default:
      launch_attention<256>(L, pool, layer, rows, q, m, n_heads, window, splits, pm, pl, po, out,
                            s);
      break;
  }
  VSYNTH_CUDA_CHECK_LAUNCH();
  if (splits > 1) {
    attention_merge_kernel<<<dim3(static_cast<unsigned>(n_heads), static_cast<unsigned>(m)), 128, 0,
                             s>>>(n_heads, L.head_dim, splits, pm, pl, po, out);
    VSYNTH_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace vsynth::kernels::cuda
