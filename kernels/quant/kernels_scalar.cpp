// Portable kernels: the reference for the AVX2 path and the fallback on CPUs without it.
//
// Each dot product works block by block in integers exactly like the AVX2 kernels (same
// activation quantization, same per-block integer sums), then scales each block's integer sum
// by the product of the weight and activation scales. Only the float summation order differs
// from kernels_avx2.cpp.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "kernels/quant/blocks.h"
#include "kernels/quant/fp16.h"
#include "kernels/quant/kernel_table.h"
#include "kernels/quant/kscales.h"

namespace vsynth::kernels::detail {

namespace {

// ---- Activation quantization (bit-identical to the AVX2 versions) ----

void quantize_a32(const float* x, int64_t k, void* out) {
  const int64_t nb = k / kQK32;
  auto* qs = static_cast<int8_t*>(out);
  auto* d = reinterpret_cast<float*>(qs + 32 * nb);
  auto* sums = reinterpret_cast<int32_t*>(qs + 36 * nb);
  for (int64_t b = 0; b < nb; ++b, x += kQK32) {
    float amax = 0.0f;
    for (int i = 0; i < kQK32; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
    int32_t sum = 0;
    for (int i = 0; i < kQK32; ++i) {
      const long q = std::clamp(std::lrint(x[i] * id), -127L, 127L);
      qs[32 * b + i] = static_cast<int8_t>(q);
      sum += static_cast<int32_t>(q);
    }
    d[b] = amax / 127.0f;
    sums[b] = sum;
  }
}

void quantize_a256(const float* x, int64_t k, void* out) {
  auto* y = static_cast<BlockQ8A256*>(out);
  for (int64_t b = 0; b < k / kQKK; ++b, x += kQKK) {
    float amax = 0.0f;
    for (int i = 0; i < kQKK; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
    for (int i = 0; i < kQKK; ++i) {
      y[b].qs[i] = static_cast<int8_t>(std::clamp(std::lrint(x[i] * id), -127L, 127L));
    }
    for (int s = 0; s < 16; ++s) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += y[b].qs[16 * s + i];
      y[b].bsums[s] = static_cast<int16_t>(sum);
    }
    y[b].d = amax / 127.0f;
  }
}

void f16_to_f32_row(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp16_to_fp32(x[i]);
}

void f32_to_f16_row(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
}

// ---- One weight row against one activation column ----

// Float weights: eight partial sums (the AVX2 kernel's lane count) to keep rounding error low.
template <typename Load>
float dot_float(int64_t k, const float* a, Load load) {
  float acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= k; i += 8) {
    for (int l = 0; l < 8; ++l) acc[l] += load(i + l) * a[i + l];
  }
  for (; i < k; ++i) acc[0] += load(i) * a[i];
  float s = 0.0f;
  for (float v : acc) s += v;
  return s;
}

float dot1_f32(int64_t k, const void* w, const void* a) {
  const auto* wf = static_cast<const float*>(w);
  return dot_float(k, static_cast<const float*>(a), [wf](int64_t i) { return wf[i]; });
}

float dot1_f16(int64_t k, const void* w, const void* a) {
  const auto* wh = static_cast<const uint16_t*>(w);
  return dot_float(k, static_cast<const float*>(a),
                   [wh](int64_t i) { return fp16_to_fp32(wh[i]); });
}

float dot1_bf16(int64_t k, const void* w, const void* a) {
  const auto* wh = static_cast<const uint16_t*>(w);
  return dot_float(k, static_cast<const float*>(a),
                   [wh](int64_t i) { return bf16_to_fp32(wh[i]); });
}

// A Q8A32 activation row (see blocks.h).
struct A32 {
  const int8_t* qs;
  const float* d;
  const int32_t* sum;
};
A32 a32_row(const void* a, int64_t nb) {
  const auto* p = static_cast<const unsigned char*>(a);
  return {reinterpret_cast<const int8_t*>(p), reinterpret_cast<const float*>(p + 32 * nb),
          reinterpret_cast<const int32_t*>(p + 36 * nb)};
}

float dot1_q8_0(int64_t k, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ8_0*>(w);
  const A32 y = a32_row(a, k / kQK32);
  float acc = 0.0f;
  for (int64_t b = 0; b < k / kQK32; ++b) {
    int32_t s = 0;
    for (int i = 0; i < kQK32; ++i) s += x[b].qs[i] * y.qs[32 * b + i];
    acc += fp16_to_fp32(x[b].d) * y.d[b] * static_cast<float>(s);
  }
  return acc;
}

// Q4_0 / Q5_0 with unsigned codes q: sum (q - L) a = sum q a - L sum a, exactly, in integers
// per block (the AVX2 kernels do the same), then one float multiply-add per block.
float dot1_q4_0(int64_t k, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_0*>(w);
  const A32 y = a32_row(a, k / kQK32);
  float acc = 0.0f;
  for (int64_t b = 0; b < k / kQK32; ++b) {
    const int8_t* q = y.qs + 32 * b;
    int32_t s = 0;
    for (int j = 0; j < 16; ++j) s += (x[b].qs[j] & 15) * q[j] + (x[b].qs[j] >> 4) * q[j + 16];
    s -= 8 * y.sum[b];
    acc += fp16_to_fp32(x[b].d) * y.d[b] * static_cast<float>(s);
  }
  return acc;
}

float dot1_q5_0(int64_t k, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ5_0*>(w);
  const A32 y = a32_row(a, k / kQK32);
  float acc = 0.0f;
  for (int64_t b = 0; b < k / kQK32; ++b) {
    uint32_t qh = 0;
    for (int i = 0; i < 4; ++i) qh |= static_cast<uint32_t>(x[b].qh[i]) << (8 * i);
    const int8_t* q = y.qs + 32 * b;
    int32_t s = 0;
    for (int j = 0; j < 16; ++j) {
      const int lo = (x[b].qs[j] & 15) | static_cast<int>(((qh >> j) & 1u) << 4);
      const int hi = (x[b].qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
      s += lo * q[j] + hi * q[j + 16];
    }
    s -= 16 * y.sum[b];
    acc += fp16_to_fp32(x[b].d) * y.d[b] * static_cast<float>(s);
  }
  return acc;
}

// Q4_K / Q5_K: sum over sub-blocks s of sc[s] * (sum q a) - m[s] * (sum a), in integers, then
// d * da and dmin * da once per super-block.
template <bool kFive>
float dot1_qk_affine(int64_t k, const void* w, const void* a) {
  using Block = std::conditional_t<kFive, BlockQ5_K, BlockQ4_K>;
  const auto* x = static_cast<const Block*>(w);
  const auto* y = static_cast<const BlockQ8A256*>(a);
  float acc = 0.0f;
  for (int64_t b = 0; b < k / kQKK; ++b) {
    uint8_t sc[8], m[8];
    unpack_k_scales(x[b].scales, sc, m);
    int32_t isum = 0;
    for (int c = 0; c < 4; ++c) {
      const uint8_t* q = x[b].qs + 32 * c;
      const int8_t* ya = y[b].qs + 64 * c;
      int32_t slo = 0, shi = 0;
      for (int l = 0; l < 32; ++l) {
        int lo = q[l] & 15, hi = q[l] >> 4;
        if constexpr (kFive) {
          lo |= ((x[b].qh[l] >> (2 * c)) & 1) << 4;
          hi |= ((x[b].qh[l] >> (2 * c + 1)) & 1) << 4;
        }
        slo += lo * ya[l];
        shi += hi * ya[l + 32];
      }
      isum += sc[2 * c] * slo + sc[2 * c + 1] * shi;
    }
    int32_t msum = 0;
    for (int s = 0; s < 8; ++s) msum += m[s] * (y[b].bsums[2 * s] + y[b].bsums[2 * s + 1]);
    acc += fp16_to_fp32(x[b].d) * y[b].d * static_cast<float>(isum);
    acc -= fp16_to_fp32(x[b].dmin) * y[b].d * static_cast<float>(msum);
  }
  return acc;
}

// Q6_K: sum over the 16 sub-blocks of sc[s] * (sum q a - 32 * sum a), q unsigned 0..63.
float dot1_q6_k(int64_t k, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ6_K*>(w);
  const auto* y = static_cast<const BlockQ8A256*>(a);
  float acc = 0.0f;
  for (int64_t b = 0; b < k / kQKK; ++b) {
    uint8_t q[256];
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = x[b].ql + 64 * h;
      const uint8_t* qh = x[b].qh + 32 * h;
      uint8_t* qq = q + 128 * h;
      for (int l = 0; l < 32; ++l) {
        qq[l] = static_cast<uint8_t>((ql[l] & 15) | ((qh[l] & 3) << 4));
        qq[l + 32] = static_cast<uint8_t>((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4));
        qq[l + 64] = static_cast<uint8_t>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
        qq[l + 96] = static_cast<uint8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
      }
    }
    int32_t isum = 0;
    for (int s = 0; s < 16; ++s) {
      int32_t sq = 0;
      for (int i = 0; i < 16; ++i) sq += q[16 * s + i] * y[b].qs[16 * s + i];
      isum += x[b].scales[s] * (sq - 32 * y[b].bsums[s]);
    }
    acc += fp16_to_fp32(x[b].d) * y[b].d * static_cast<float>(isum);
  }
  return acc;
}

// The table's DotFn for a one-column kernel: columns are independent here.
template <float (*F)(int64_t, const void*, const void*)>
void dot_cols(int64_t k, const void* w, const void* act, size_t act_stride, int ncols, float* y) {
  const auto* base = static_cast<const unsigned char*>(act);
  for (int c = 0; c < ncols; ++c) y[c] = F(k, w, base + static_cast<size_t>(c) * act_stride);
}

// A row with the one-column dot only: matmul uses it for every token count on this path.
constexpr TypeKernels dot_only(DType t, DotFn dot) {
  return {.type = t, .dot = dot, .dot_il = nullptr, .unpacked = {}, .grouped = {}};
}

constexpr KernelTable kScalar = {
    .name = "scalar",
    .forms = {.il = false, .grouped = false, .pairs = false, .unpacked = false},
    .quantize_a32 = quantize_a32,
    .quantize_a256 = quantize_a256,
    .f16_to_f32 = f16_to_f32_row,
    .f32_to_f16 = f32_to_f16_row,
    .quantize_a32il = nullptr,
    .quantize_a256il = nullptr,
    .types = {dot_only(DType::F32, dot_cols<dot1_f32>), dot_only(DType::F16, dot_cols<dot1_f16>),
              dot_only(DType::BF16, dot_cols<dot1_bf16>),
              dot_only(DType::Q4_0, dot_cols<dot1_q4_0>),
              dot_only(DType::Q5_0, dot_cols<dot1_q5_0>),
              dot_only(DType::Q8_0, dot_cols<dot1_q8_0>),
              dot_only(DType::Q4_K, dot_cols<dot1_qk_affine<false>>),
              dot_only(DType::Q5_K, dot_cols<dot1_qk_affine<true>>),
              dot_only(DType::Q6_K, dot_cols<dot1_q6_k>)},
};
static_assert(rows_in_order(kScalar));

}  // namespace

const KernelTable& scalar_kernels() {
  return kScalar;
}

}  // namespace vsynth::kernels::detail
