// Quantized linear algebra: activation quantization, GEMV with dequantization in registers,
// embedding rows and fp16 dequantization for the prefill GEMM (see ops.h, quant_unpack.cuh).
#include <cuda_bf16.h>

#include <limits>
#include <string>

#include "kernels/cuda/check.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/quant_unpack.cuh"

namespace vsynth::kernels::cuda {

namespace {

using dev::Part;
using dev::QT;

// BlockQ8A32 of kernels/quant/blocks.h (40 bytes; 4-byte aligned in device buffers).
struct BlockQ8 {
  float d;
  float s;
  int8_t qs[32];
};
static_assert(sizeof(BlockQ8) == 40);

constexpr int kGemvWarps = 4;  // weight rows per block of 128 threads

// One warp per 32-element group: lane i quantizes element i.
__global__ void quantize_q8_kernel(const float* __restrict__ x, int64_t n_groups,
                                   BlockQ8* __restrict__ out) {
  const int64_t g = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (g >= n_groups) return;
  const int lane = threadIdx.x % 32;
  const float v = x[g * 32 + lane];
  const float amax = dev::warp_max(fabsf(v));
  const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
  const int q = max(-127, min(127, __float2int_rn(v * id)));
  const float sum = dev::warp_sum(static_cast<float>(q));
  out[g].qs[lane] = static_cast<int8_t>(q);
  if (lane == 0) {
    out[g].d = amax / 127.0f;
    out[g].s = out[g].d * sum;
  }
}

// GEMV: one warp per weight row (kGemvWarps rows per block of 128 threads), NC input columns at
// once: y[c][row] = W[row] . x[c]. `Dot` is the weight type's inner loop: Dot::row<NC>(wr, width,
// x, lane, acc) adds this lane's share of the row `wr` times each column to acc[c]; `width` and
// the activation type Dot::X are the type's (32-groups and Q8 blocks, or columns and floats).
template <typename Dot, int NC>
__global__ void __launch_bounds__(kGemvWarps * 32)
    gemv_kernel(const uint8_t* __restrict__ W, size_t row_bytes, int64_t rows,
                typename Dot::Width width, const typename Dot::X* __restrict__ x,
                float* __restrict__ y) {
  const int lane = threadIdx.x % 32;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kGemvWarps + threadIdx.x / 32;
  if (row >= rows) return;
  float acc[NC];
#pragma unroll
  for (int c = 0; c < NC; ++c) acc[c] = 0.0f;
  Dot::template row<NC>(W + static_cast<size_t>(row) * row_bytes, width, x, lane, acc);
#pragma unroll
  for (int c = 0; c < NC; ++c) {
    const float t = dev::warp_sum(acc[c]);
    if (lane == 0) y[static_cast<size_t>(c) * rows + row] = t;
  }
}

// Quantized weights against Q8 activations, in integers (dp4a), one float FMA per part.
template <QT T>
struct QuantDot {
  using Width = int;  // 32-element groups per row
  using X = BlockQ8;
  template <int NC>
  static __device__ __forceinline__ void row(const uint8_t* wr, int n_groups, const BlockQ8* xq,
                                             int lane, float (&acc)[NC]) {
    // Four lanes share a group (one 8-element part each), so a warp reads 8 groups side by side.
    for (int it = lane; it < n_groups * 4; it += 32) {
      const int g = it >> 2;
      const Part r = dev::unpack<T>(wr, g, it & 3);
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        const BlockQ8* a = xq + static_cast<size_t>(c) * n_groups + g;
        const int a0 = *reinterpret_cast<const int*>(a->qs + r.o0);
        const int a1 = *reinterpret_cast<const int*>(a->qs + r.o1);
        float v = r.scale * static_cast<float>(__dp4a(r.q0, a0, __dp4a(r.q1, a1, 0)));
        if constexpr (T != QT::Q8_0) {
          const int asum = __dp4a(0x01010101, a0, __dp4a(0x01010101, a1, 0));
          v -= r.coef * static_cast<float>(asum);
        }
        acc[c] += a->d * v;
      }
    }
  }
};

// Float weights: 0 = F32, 1 = F16, 2 = BF16. As the CPU's linear(), the input is first rounded
// to the weight's type (ggml converts activations to f16 / bf16 before its dot products).
template <int WT>
__device__ __forceinline__ float round_like(float x) {
  if constexpr (WT == 1) return __half2float(__float2half_rn(x));
  if constexpr (WT == 2) return __bfloat162float(__float2bfloat16_rn(x));
  return x;
}

template <int WT>
__device__ __forceinline__ float2 load_w2(const uint8_t* wr, int64_t i) {
  if constexpr (WT == 0) return *reinterpret_cast<const float2*>(wr + 4 * i);
  const uint32_t u = *reinterpret_cast<const uint32_t*>(wr + 2 * i);
  if constexpr (WT == 1) {
    return make_float2(dev::half_bits_to_float(static_cast<uint16_t>(u & 0xFFFF)),
                       dev::half_bits_to_float(static_cast<uint16_t>(u >> 16)));
  }
  return make_float2(dev::bf16_bits_to_float(static_cast<uint16_t>(u & 0xFFFF)),
                     dev::bf16_bits_to_float(static_cast<uint16_t>(u >> 16)));
}

// Float weights against float activations, two columns per lane and step.
template <int WT>
struct FloatDot {
  using Width = int64_t;  // columns
  using X = float;
  template <int NC>
  static __device__ __forceinline__ void row(const uint8_t* wr, int64_t cols, const float* x,
                                             int lane, float (&acc)[NC]) {
    for (int64_t i = 2 * lane; i < cols; i += 64) {
      const float2 w = load_w2<WT>(wr, i);
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        const float* xc = x + static_cast<size_t>(c) * cols;
        acc[c] += w.x * round_like<WT>(xc[i]) + w.y * round_like<WT>(xc[i + 1]);
      }
    }
  }
};

// One thread per (row, 32-group): decodes the group and hands each element to `store`.
template <QT T>
__global__ void get_rows_q_kernel(const uint8_t* __restrict__ W, size_t row_bytes, int64_t rows,
                                  int n_groups, const int32_t* __restrict__ ids, int m, float scale,
                                  float* __restrict__ out) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= static_cast<int64_t>(m) * n_groups) return;
  const int i = static_cast<int>(t / n_groups), g = static_cast<int>(t % n_groups);
  float* o = out + (static_cast<size_t>(i) * n_groups + g) * 32;
  const int32_t id = ids[i];
  if (id < 0 || id >= rows) {
    for (int j = 0; j < 32; ++j) o[j] = __int_as_float(0x7fc00000);  // NaN: see ops.h
    return;
  }
  dev::decode_group<T>(W + static_cast<size_t>(id) * row_bytes, g,
                       [&](int j, float v) { o[j] = v * scale; });
}

template <int WT>
__global__ void get_rows_f_kernel(const uint8_t* __restrict__ W, size_t row_bytes, int64_t rows,
                                  int64_t cols, const int32_t* __restrict__ ids, int m, float scale,
                                  float* __restrict__ out) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= m * cols) return;
  const int i = static_cast<int>(t / cols);
  const int64_t c = t % cols;
  const int32_t id = ids[i];
  if (id < 0 || id >= rows) {
    out[t] = __int_as_float(0x7fc00000);
    return;
  }
  const uint8_t* wr = W + static_cast<size_t>(id) * row_bytes;
  float v;
  if constexpr (WT == 0) {
    v = reinterpret_cast<const float*>(wr)[c];
  } else if constexpr (WT == 1) {
    v = dev::half_bits_to_float(reinterpret_cast<const uint16_t*>(wr)[c]);
  } else {
    v = dev::bf16_bits_to_float(reinterpret_cast<const uint16_t*>(wr)[c]);
  }
  out[t] = v * scale;
}

template <QT T>
__global__ void dequant_f16_q_kernel(const uint8_t* __restrict__ W, size_t row_bytes, int64_t n,
                                     int n_groups, __half* __restrict__ out) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= n * n_groups) return;
  const int64_t r = t / n_groups;
  const int g = static_cast<int>(t % n_groups);
  __half* o = out + (static_cast<size_t>(r) * n_groups + g) * 32;
  dev::decode_group<T>(W + static_cast<size_t>(r) * row_bytes, g,
                       [&](int j, float v) { o[j] = __float2half_rn(v); });
}

template <int WT>
__global__ void dequant_f16_f_kernel(const uint8_t* __restrict__ W, size_t row_bytes, int64_t n,
                                     int64_t cols, __half* __restrict__ out) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= n * cols) return;
  const uint8_t* wr = W + static_cast<size_t>(t / cols) * row_bytes;
  const int64_t c = t % cols;
  if constexpr (WT == 0) {
    out[t] = __float2half_rn(reinterpret_cast<const float*>(wr)[c]);
  } else if constexpr (WT == 1) {
    out[t] = __ushort_as_half(reinterpret_cast<const uint16_t*>(wr)[c]);
  } else {
    out[t] = __float2half_rn(dev::bf16_bits_to_float(reinterpret_cast<const uint16_t*>(wr)[c]));
  }
}

unsigned grid_for(int64_t n, int per_block) {
  return static_cast<unsigned>((n + per_block - 1) / per_block);
}

// Calls fq(QT tag) or ff(int float-kind) for the weight type, other() for a type the backend
// does not support: the one switch over types.
template <typename FQ, typename FF, typename FO>
void visit_type(DType t, FQ fq, FF ff, FO other) {
  switch (t) {
    case DType::Q4_0:
      return fq(std::integral_constant<QT, QT::Q4_0>{});
    case DType::Q5_0:
      return fq(std::integral_constant<QT, QT::Q5_0>{});
    case DType::Q8_0:
      return fq(std::integral_constant<QT, QT::Q8_0>{});
    case DType::Q4_K:
      return fq(std::integral_constant<QT, QT::Q4_K>{});
    case DType::Q5_K:
      return fq(std::integral_constant<QT, QT::Q5_K>{});
    case DType::Q6_K:
      return fq(std::integral_constant<QT, QT::Q6_K>{});
    case DType::F32:
      return ff(std::integral_constant<int, 0>{});
    case DType::F16:
      return ff(std::integral_constant<int, 1>{});
    case DType::BF16:
      return ff(std::integral_constant<int, 2>{});
    default:
      return other();
  }
}

// visit_type() for an op: an unsupported type is a CudaError naming the op and the valid types.
template <typename FQ, typename FF>
void dispatch(DType t, const char* op, FQ fq, FF ff) {
  visit_type(t, fq, ff, [&] {
    throw CudaError(std::string(op) + ": weight type " + std::to_string(static_cast<int>(t)) +
                    " is not supported (f32, f16, bf16, q4_0, q5_0, q8_0, q4_K, q5_K, q6_K)");
  });
}

void check_cols(const DeviceWeight& w, const char* op) {
  const bool quant = w.type != DType::F32 && w.type != DType::F16 && w.type != DType::BF16;
  const int64_t unit = w.type == DType::Q4_K || w.type == DType::Q5_K || w.type == DType::Q6_K
                           ? 256
                           : (quant ? 32 : 2);
  if (w.cols <= 0 || w.cols % unit != 0 || w.cols / 32 > std::numeric_limits<int>::max()) {
    throw CudaError(std::string(op) + ": " + std::to_string(w.cols) +
                    " columns is not a positive multiple of " + std::to_string(unit) +
                    " (the weight type's block)");
  }
}

template <typename Dot, int NC>
void launch_gemv(const DeviceWeight& w, typename Dot::Width width, const typename Dot::X* x,
                 float* y, cudaStream_t s) {
  gemv_kernel<Dot, NC><<<grid_for(w.rows, kGemvWarps), kGemvWarps * 32, 0, s>>>(
      static_cast<const uint8_t*>(w.data), w.row_bytes, w.rows, width, x, y);
}

// m (1..8) as a template argument.
template <typename F>
void with_nc(int m, F f) {
  switch (m) {
    case 1:
      return f(std::integral_constant<int, 1>{});
    case 2:
      return f(std::integral_constant<int, 2>{});
    case 3:
      return f(std::integral_constant<int, 3>{});
    case 4:
      return f(std::integral_constant<int, 4>{});
    case 5:
      return f(std::integral_constant<int, 5>{});
    case 6:
      return f(std::integral_constant<int, 6>{});
    case 7:
      return f(std::integral_constant<int, 7>{});
    default:
      return f(std::integral_constant<int, 8>{});
  }
}

}  // namespace

bool weight_type_supported(DType t) {
  bool supported = true;
  visit_type(
      t, [](auto) {}, [](auto) {}, [&] { supported = false; });
  return supported;
}

size_t q8_bytes(int64_t cols, int m) {
  return static_cast<size_t>(cols / 32) * static_cast<size_t>(m) * sizeof(BlockQ8);
}

void quantize_q8(const float* x, int m, int64_t cols, void* q8, cudaStream_t s) {
  if (cols % 32 != 0) {
    throw CudaError("quantize_q8: " + std::to_string(cols) + " columns is not a multiple of 32");
  }
  const int64_t groups = cols / 32 * m;
  if (groups == 0) return;
  quantize_q8_kernel<<<grid_for(groups, 8), 256, 0, s>>>(x, groups, static_cast<BlockQ8*>(q8));
  VSYNTH_CUDA_CHECK_LAUNCH();
}

void gemv(const DeviceWeight& w, const float* x, const void* xq, int m, float* y, cudaStream_t s) {
  if (m < 1 || m > kGemvMaxRows) {
    throw CudaError("gemv: " + std::to_string(m) + " input rows; valid 1.." +
                    std::to_string(kGemvMaxRows) + " (use the GEMM path for more)");
  }
  check_cols(w, "gemv");
  if (w.rows == 0) return;
  dispatch(
      w.type, "gemv",
      [&](auto qt) {
        with_nc(m, [&](auto nc) {
          launch_gemv<QuantDot<decltype(qt)::value>, decltype(nc)::value>(
              w, static_cast<int>(w.cols / 32), static_cast<const BlockQ8*>(xq), y, s);
        });
      },
      [&](auto wt) {
        with_nc(m, [&](auto nc) {
          launch_gemv<FloatDot<decltype(wt)::value>, decltype(nc)::value>(w, w.cols, x, y, s);
        });
      });
  VSYNTH_CUDA_CHECK_LAUNCH();
}

void get_rows(const DeviceWeight& w, const int32_t* ids, int m, float scale, float* out,
              cudaStream_t s) {
  check_cols(w, "get_rows");
  if (m <= 0) return;
  const auto* W = static_cast<const uint8_t*>(w.data);
  dispatch(
      w.type, "get_rows",
      [&](auto qt) {
        const int64_t n = static_cast<int64_t>(m) * (w.cols / 32);
        get_rows_q_kernel<decltype(qt)::value><<<grid_for(n, 128), 128, 0, s>>>(
            W, w.row_bytes, w.rows, static_cast<int>(w.cols / 32), ids, m, scale, out);
      },
      [&](auto wt) {
        const int64_t n = static_cast<int64_t>(m) * w.cols;
        get_rows_f_kernel<decltype(wt)::value>
            <<<grid_for(n, 256), 256, 0, s>>>(W, w.row_bytes, w.rows, w.cols, ids, m, scale, out);
      });
  VSYNTH_CUDA_CHECK_LAUNCH();
}

void dequantize_f16(const DeviceWeight& w, int64_t row0, int64_t n, uint16_t* out, cudaStream_t s) {
  check_cols(w, "dequantize_f16");
  if (row0 < 0 || n < 0 || row0 + n > w.rows) {
    throw CudaError("dequantize_f16: rows [" + std::to_string(row0) + ", " +
                    std::to_string(row0 + n) + ") outside [0, " + std::to_string(w.rows) + ")");
  }
  if (n == 0) return;
  const auto* W = static_cast<const uint8_t*>(w.data) + static_cast<size_t>(row0) * w.row_bytes;
  auto* o = reinterpret_cast<__half*>(out);
  dispatch(
      w.type, "dequantize_f16",
      [&](auto qt) {
        const int64_t total = n * (w.cols / 32);
        dequant_f16_q_kernel<decltype(qt)::value><<<grid_for(total, 128), 128, 0, s>>>(
            W, w.row_bytes, n, static_cast<int>(w.cols / 32), o);
      },
      [&](auto wt) {
        const int64_t total = n * w.cols;
        dequant_f16_f_kernel<decltype(wt)::value>
            <<<grid_for(total, 256), 256, 0, s>>>(W, w.row_bytes, n, w.cols, o);
      });
  VSYNTH_CUDA_CHECK_LAUNCH();
}

}  // namespace vsynth::kernels::cuda
