#include "kernels/quant/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "kernels/quant/blocks.h"
#include "kernels/quant/fp16.h"
#include "kernels/quant/kscales.h"
#include "kernels/quant/quant_error.h"

namespace vsynth::kernels {

namespace {

std::string type_name(DType t) {
  const auto info = dtype_info(t);
  return info ? std::string(info->name) : "type id " + std::to_string(static_cast<uint32_t>(t));
}

// Round to nearest, ties to even (the default rounding mode). Finite arguments only.
int nearest_int(float v) {
  return static_cast<int>(std::lrint(v));
}

int clamp_int(int v, int lo, int hi) {
  return std::min(std::max(v, lo), hi);
}

// ---- 32-element types: ggml's conventions, codes computed against the stored fp16 scale ----

void quantize_q8_0(const float* x, int64_t nb, BlockQ8_0* y) {
  for (int64_t b = 0; b < nb; ++b, x += kQK32) {
    float amax = 0.0f;
    for (int i = 0; i < kQK32; ++i) amax = std::max(amax, std::fabs(x[i]));
    y[b].d = fp32_to_fp16(amax / 127.0f);
    const float d = fp16_to_fp32(y[b].d);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int i = 0; i < kQK32; ++i) {
      y[b].qs[i] = static_cast<int8_t>(clamp_int(nearest_int(x[i] * id), -127, 127));
    }
  }
}

// Q4_0 (levels = 8) and Q5_0 (levels = 16): d = v / -levels where v is the element of largest
// magnitude, so v decodes exactly to -levels * d and the range [-levels, levels - 1] is used.
// Returns the codes q + levels (0 .. 2 * levels - 1) in codes[32] and the fp16 scale.
uint16_t quantize_symmetric_32(const float* x, int levels, uint8_t codes[32]) {
  float amax = 0.0f, vmax = 0.0f;
  for (int i = 0; i < kQK32; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      vmax = x[i];
    }
  }
  const uint16_t dh = fp32_to_fp16(vmax / static_cast<float>(-levels));
  const float d = fp16_to_fp32(dh);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int i = 0; i < kQK32; ++i) {
    codes[i] = static_cast<uint8_t>(clamp_int(nearest_int(x[i] * id) + levels, 0, 2 * levels - 1));
  }
  return dh;
}

void quantize_q4_0(const float* x, int64_t nb, BlockQ4_0* y) {
  uint8_t q[32];
  for (int64_t b = 0; b < nb; ++b, x += kQK32) {
    y[b].d = quantize_symmetric_32(x, 8, q);
    for (int j = 0; j < 16; ++j) y[b].qs[j] = static_cast<uint8_t>(q[j] | (q[j + 16] << 4));
  }
}

void quantize_q5_0(const float* x, int64_t nb, BlockQ5_0* y) {
  uint8_t q[32];
  for (int64_t b = 0; b < nb; ++b, x += kQK32) {
    y[b].d = quantize_symmetric_32(x, 16, q);
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      y[b].qs[j] = static_cast<uint8_t>((q[j] & 15) | ((q[j + 16] & 15) << 4));
    }
    for (int i = 0; i < kQK32; ++i) qh |= static_cast<uint32_t>(q[i] >> 4) << i;
    for (int k = 0; k < 4; ++k) y[b].qh[k] = static_cast<uint8_t>(qh >> (8 * k));
  }
}

// ---- K-quants: per sub-block least-squares fits, then 6-/8-bit scales of those fits ----

// x ~= s * q - m with q in 0..nmax, s >= 0, m >= 0 (Q4_K/Q5_K sub-blocks: the format can only
// subtract a min). Sweeps the scale around range / nmax, refits (s, m) by least squares for each
// candidate's codes, and keeps the fit with the smallest squared error.
struct AffineFit {
  float s = 0.0f;
  float m = 0.0f;
};

float affine_error(const float* x, int n, int nmax, float s, float m) {
  float err = 0.0f;
  const float is = s > 0.0f ? 1.0f / s : 0.0f;
  for (int i = 0; i < n; ++i) {
    const int q = clamp_int(nearest_int((x[i] + m) * is), 0, nmax);
    const float e = s * static_cast<float>(q) - m - x[i];
    err += e * e;
  }
  return err;
}

AffineFit fit_affine(const float* x, int n, int nmax) {
  float lo = x[0], hi = x[0];
  for (int i = 1; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  lo = std::min(lo, 0.0f);  // the offset can only be subtracted
  AffineFit best{(hi - lo) / static_cast<float>(nmax), -lo};
  if (hi <= lo) return best;  // constant block (<= 0): x = -m exactly
  float best_err = affine_error(x, n, nmax, best.s, best.m);
  for (int step = 0; step <= 20; ++step) {
    const float iscale =
        (static_cast<float>(nmax) - 1.0f + 0.1f * static_cast<float>(step)) / (hi - lo);
    double sq = 0, sq2 = 0, sx = 0, sqx = 0;
    for (int i = 0; i < n; ++i) {
      const int q = clamp_int(nearest_int((x[i] - lo) * iscale), 0, nmax);
      sq += q;
      sq2 += static_cast<double>(q) * q;
      sx += x[i];
      sqx += static_cast<double>(q) * x[i];
    }
    // Least squares for x ~= s * q + b (b = -m): normal equations of the 2x2 system.
    const double det = n * sq2 - sq * sq;
    if (det <= 0) continue;
    double s = (n * sqx - sq * sx) / det;
    double b = (sq2 * sx - sq * sqx) / det;
    if (b > 0) {  // a positive offset is not representable: fit the scale alone
      b = 0;
      s = sq2 > 0 ? sqx / sq2 : 0;
    }
    if (s <= 0) continue;
    const AffineFit cand{static_cast<float>(s), static_cast<float>(-b)};
    const float err = affine_error(x, n, nmax, cand.s, cand.m);
    if (err < best_err) {
      best_err = err;
      best = cand;
    }
  }
  return best;
}

// Shared by Q4_K (nmax 15) and Q5_K (nmax 31): fits the 8 sub-blocks, quantizes their scales and
// mins to 6 bits under fp16 super-scales, and returns the final codes (0..nmax) in q[256].
void quantize_k_affine(const float* x, int nmax, uint16_t* dh, uint16_t* dminh, uint8_t scales[12],
                       uint8_t q[256]) {
  AffineFit fits[8];
  float max_s = 0.0f, max_m = 0.0f;
  for (int j = 0; j < 8; ++j) {
    fits[j] = fit_affine(x + 32 * j, 32, nmax);
    max_s = std::max(max_s, fits[j].s);
    max_m = std::max(max_m, fits[j].m);
  }
  *dh = fp32_to_fp16(max_s / 63.0f);
  *dminh = fp32_to_fp16(max_m / 63.0f);
  const float d = fp16_to_fp32(*dh), dmin = fp16_to_fp32(*dminh);
  // 6-bit sub-scales: try both neighbours of each ideal (sc, m) and keep the pair whose codes
  // reconstruct the sub-block best (a quiet sub-block next to a loud one has sc, m of only a few
  // units, where plain rounding can shift or shrink its grid by a large fraction).
  uint8_t sc[8], mn[8];
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + 32 * j;
    const int sc0 = d > 0 ? static_cast<int>(std::floor(fits[j].s / d)) : 0;
    const int m0 = dmin > 0 ? static_cast<int>(std::floor(fits[j].m / dmin)) : 0;
    float best_err = -1.0f;
    for (int ds = 0; ds <= 1; ++ds) {
      for (int dm = 0; dm <= 1; ++dm) {
        const int cs = clamp_int(sc0 + ds, 0, 63), cm = clamp_int(m0 + dm, 0, 63);
        const float err =
            affine_error(xs, 32, nmax, d * static_cast<float>(cs), dmin * static_cast<float>(cm));
        if (best_err < 0 || err < best_err) {
          best_err = err;
          sc[j] = static_cast<uint8_t>(cs);
          mn[j] = static_cast<uint8_t>(cm);
        }
      }
    }
  }
  detail::pack_k_scales(sc, mn, scales);
  for (int j = 0; j < 8; ++j) {
    const float s = d * sc[j], m = dmin * mn[j];
    const float is = s > 0.0f ? 1.0f / s : 0.0f;
    for (int i = 0; i < 32; ++i) {
      q[32 * j + i] =
          static_cast<uint8_t>(clamp_int(nearest_int((x[32 * j + i] + m) * is), 0, nmax));
    }
  }
}

void quantize_q4_k(const float* x, int64_t nb, BlockQ4_K* y) {
  uint8_t q[256];
  for (int64_t b = 0; b < nb; ++b, x += kQKK) {
    quantize_k_affine(x, 15, &y[b].d, &y[b].dmin, y[b].scales, q);
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        y[b].qs[32 * c + l] = static_cast<uint8_t>(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
      }
    }
  }
}

void quantize_q5_k(const float* x, int64_t nb, BlockQ5_K* y) {
  uint8_t q[256];
  for (int64_t b = 0; b < nb; ++b, x += kQKK) {
    quantize_k_affine(x, 31, &y[b].d, &y[b].dmin, y[b].scales, q);
    std::memset(y[b].qh, 0, sizeof(y[b].qh));
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        const uint8_t lo = q[64 * c + l], hi = q[64 * c + 32 + l];
        y[b].qs[32 * c + l] = static_cast<uint8_t>((lo & 15) | ((hi & 15) << 4));
        y[b].qh[l] =
            static_cast<uint8_t>(y[b].qh[l] | ((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
      }
    }
  }
}

// Q6_K sub-block of 16: x ~= s * q with q in -32..31. v is the element of largest magnitude;
// candidate scales put v near -32 (the wider side), each refit by least squares.
float symmetric_error(const float* x, int n, float s) {
  const float is = s != 0.0f ? 1.0f / s : 0.0f;
  float err = 0.0f;
  for (int i = 0; i < n; ++i) {
    const int q = clamp_int(nearest_int(x[i] * is), -32, 31);
    const float e = s * static_cast<float>(q) - x[i];
    err += e * e;
  }
  return err;
}

float fit_symmetric(const float* x, int n) {
  float amax = 0.0f, v = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      v = x[i];
    }
  }
  if (amax == 0.0f) return 0.0f;
  float best = v / -32.0f;
  float best_err = symmetric_error(x, n, best);
  for (int step = 0; step <= 20; ++step) {
    const float s0 = v / -(31.0f + 0.1f * static_cast<float>(step));
    double sqx = 0, sq2 = 0;
    for (int i = 0; i < n; ++i) {
      const int q = clamp_int(nearest_int(x[i] / s0), -32, 31);
      sqx += static_cast<double>(q) * x[i];
      sq2 += static_cast<double>(q) * q;
    }
    if (sq2 <= 0) continue;
    const float s = static_cast<float>(sqx / sq2);
    const float err = symmetric_error(x, n, s);
    if (err < best_err) {
      best_err = err;
      best = s;
    }
  }
  return best;
}

void quantize_q6_k(const float* x, int64_t nb, BlockQ6_K* y) {
  for (int64_t b = 0; b < nb; ++b, x += kQKK) {
    float s[16];
    float smax = 0.0f;  // the sub-scale of largest magnitude, signed
    for (int j = 0; j < 16; ++j) {
      s[j] = fit_symmetric(x + 16 * j, 16);
      if (std::fabs(s[j]) > std::fabs(smax)) smax = s[j];
    }
    y[b].d = fp32_to_fp16(smax / -128.0f);
    const float d = fp16_to_fp32(y[b].d);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int8_t q[256];
    for (int j = 0; j < 16; ++j) {
      // Both neighbours of the ideal 8-bit sub-scale; keep the one that reconstructs best.
      const int s0 = static_cast<int>(std::floor(s[j] * id));
      float best_err = -1.0f;
      for (int ds = 0; ds <= 1; ++ds) {
        const int cand = clamp_int(s0 + ds, -128, 127);
        const float err = symmetric_error(x + 16 * j, 16, d * static_cast<float>(cand));
        if (best_err < 0 || err < best_err) {
          best_err = err;
          y[b].scales[j] = static_cast<int8_t>(cand);
        }
      }
      const float se = d * y[b].scales[j];
      const float is = se != 0.0f ? 1.0f / se : 0.0f;
      for (int i = 0; i < 16; ++i) {
        q[16 * j + i] = static_cast<int8_t>(clamp_int(nearest_int(x[16 * j + i] * is), -32, 31));
      }
    }
    for (int h = 0; h < 2; ++h) {
      const int8_t* qq = q + 128 * h;
      uint8_t* ql = y[b].ql + 64 * h;
      uint8_t* qh = y[b].qh + 32 * h;
      for (int l = 0; l < 32; ++l) {
        const int q0 = qq[l] + 32, q1 = qq[l + 32] + 32, q2 = qq[l + 64] + 32, q3 = qq[l + 96] + 32;
        ql[l] = static_cast<uint8_t>((q0 & 15) | ((q2 & 15) << 4));
        ql[l + 32] = static_cast<uint8_t>((q1 & 15) | ((q3 & 15) << 4));
        qh[l] = static_cast<uint8_t>((q0 >> 4) | ((q1 >> 4) << 2) | ((q2 >> 4) << 4) |
                                     ((q3 >> 4) << 6));
      }
    }
  }
}

// ---- Reference decoders ----

void dequantize_q4_0(const BlockQ4_0* x, int64_t nb, float* y) {
  for (int64_t b = 0; b < nb; ++b, y += kQK32) {
    const float d = fp16_to_fp32(x[b].d);
    for (int j = 0; j < 16; ++j) {
      y[j] = d * static_cast<float>((x[b].qs[j] & 15) - 8);
      y[j + 16] = d * static_cast<float>((x[b].qs[j] >> 4) - 8);
    }
  }
}

void dequantize_q5_0(const BlockQ5_0* x, int64_t nb, float* y) {
  for (int64_t b = 0; b < nb; ++b, y += kQK32) {
    const float d = fp16_to_fp32(x[b].d);
    uint32_t qh = 0;
    for (int k = 0; k < 4; ++k) qh |= static_cast<uint32_t>(x[b].qh[k]) << (8 * k);
    for (int j = 0; j < 16; ++j) {
      const int lo = (x[b].qs[j] & 15) | static_cast<int>(((qh >> j) & 1u) << 4);
      const int hi = (x[b].qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
      y[j] = d * static_cast<float>(lo - 16);
      y[j + 16] = d * static_cast<float>(hi - 16);
    }
  }
}

void dequantize_q8_0(const BlockQ8_0* x, int64_t nb, float* y) {
  for (int64_t b = 0; b < nb; ++b, y += kQK32) {
    const float d = fp16_to_fp32(x[b].d);
    for (int i = 0; i < kQK32; ++i) y[i] = d * static_cast<float>(x[b].qs[i]);
  }
}

void dequantize_q4_k(const BlockQ4_K* x, int64_t nb, float* y) {
  for (int64_t b = 0; b < nb; ++b) {
    const float d = fp16_to_fp32(x[b].d), dmin = fp16_to_fp32(x[b].dmin);
    uint8_t sc[8], m[8];
    detail::unpack_k_scales(x[b].scales, sc, m);
    for (int c = 0; c < 4; ++c) {
      const uint8_t* q = x[b].qs + 32 * c;
      const float d1 = d * sc[2 * c], m1 = dmin * m[2 * c];
      const float d2 = d * sc[2 * c + 1], m2 = dmin * m[2 * c + 1];
      for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 15) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    }
  }
}

void dequantize_q5_k(const BlockQ5_K* x, int64_t nb, float* y) {
  for (int64_t b = 0; b < nb; ++b) {
    const float d = fp16_to_fp32(x[b].d), dmin = fp16_to_fp32(x[b].dmin);
    uint8_t sc[8], m[8];
    detail::unpack_k_scales(x[b].scales, sc, m);
    for (int c = 0; c < 4; ++c) {
      const uint8_t* q = x[b].qs + 32 * c;
      const uint8_t* qh = x[b].qh;
      const float d1 = d * sc[2 * c], m1 = dmin * m[2 * c];
      const float d2 = d * sc[2 * c + 1], m2 = dmin * m[2 * c + 1];
      for (int l = 0; l < 32; ++l) {
        const int v = (q[l] & 15) | (((qh[l] >> (2 * c)) & 1) << 4);
        *y++ = d1 * static_cast<float>(v) - m1;
      }
      for (int l = 0; l < 32; ++l) {
        const int v = (q[l] >> 4) | (((qh[l] >> (2 * c + 1)) & 1) << 4);
        *y++ = d2 * static_cast<float>(v) - m2;
      }
    }
  }
}

void dequantize_q6_k(const BlockQ6_K* x, int64_t nb, float* y) {
  for (int64_t b = 0; b < nb; ++b) {
    const float d = fp16_to_fp32(x[b].d);
    for (int h = 0; h < 2; ++h, y += 128) {
      const uint8_t* ql = x[b].ql + 64 * h;
      const uint8_t* qh = x[b].qh + 32 * h;
      const int8_t* sc = x[b].scales + 8 * h;
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q0 = ((ql[l] & 15) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q1 = ((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q2 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q3 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q0);
        y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q1);
        y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q2);
        y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q3);
      }
    }
  }
}

}  // namespace

bool quant_supported(DType t) {
  switch (t) {
    case DType::F32:
    case DType::F16:
    case DType::BF16:
    case DType::Q4_0:
    case DType::Q5_0:
    case DType::Q8_0:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
      return true;
    default:
      return false;
  }
}

int64_t quant_block_elems(DType t) {
  if (!quant_supported(t)) {
    throw QuantError("quantized kernels: unsupported element type " + type_name(t) +
                     " (supported: f32, f16, bf16, q4_0, q5_0, q8_0, q4_K, q5_K, q6_K)");
  }
  return dtype_info(t)->block_elems;
}

size_t row_size(DType t, int64_t n) {
  const int64_t be = quant_block_elems(t);
  if (n < 0 || n % be != 0) {
    throw QuantError("quantized kernels: a " + type_name(t) + " row of " + std::to_string(n) +
                     " elements is not a whole number of " + std::to_string(be) +
                     "-element blocks");
  }
  return static_cast<size_t>(n / be) * dtype_info(t)->block_bytes;
}

size_t quantize_row(DType t, const float* x, int64_t n, void* out) {
  const size_t bytes = row_size(t, n);
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) {
      throw QuantError("quantize_row(" + type_name(t) + "): element " + std::to_string(i) +
                       " is not finite; only finite values can be quantized");
    }
  }
  const int64_t nb = n / quant_block_elems(t);
  switch (t) {
    case DType::F32:
      if (n > 0) std::memcpy(out, x, bytes);
      break;
    case DType::F16: {
      auto* y = static_cast<uint16_t*>(out);
      for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
      break;
    }
    case DType::BF16: {
      auto* y = static_cast<uint16_t*>(out);
      for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_bf16(x[i]);
      break;
    }
    case DType::Q4_0:
      quantize_q4_0(x, nb, static_cast<BlockQ4_0*>(out));
      break;
    case DType::Q5_0:
      quantize_q5_0(x, nb, static_cast<BlockQ5_0*>(out));
      break;
    case DType::Q8_0:
      quantize_q8_0(x, nb, static_cast<BlockQ8_0*>(out));
      break;
    case DType::Q4_K:
      quantize_q4_k(x, nb, static_cast<BlockQ4_K*>(out));
      break;
    case DType::Q5_K:
      quantize_q5_k(x, nb, static_cast<BlockQ5_K*>(out));
      break;
    case DType::Q6_K:
      quantize_q6_k(x, nb, static_cast<BlockQ6_K*>(out));
      break;
    default:
      break;  // unreachable: row_size rejected the type
  }
  return bytes;
}

void dequantize_row(DType t, const void* src, float* y, int64_t n) {
  const size_t bytes = row_size(t, n);
  const int64_t nb = n / quant_block_elems(t);
  switch (t) {
    case DType::F32:
      if (n > 0) std::memcpy(y, src, bytes);
      break;
    case DType::F16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) y[i] = fp16_to_fp32(h[i]);
      break;
    }
    case DType::BF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) y[i] = bf16_to_fp32(h[i]);
      break;
    }
    case DType::Q4_0:
      dequantize_q4_0(static_cast<const BlockQ4_0*>(src), nb, y);
      break;
    case DType::Q5_0:
      dequantize_q5_0(static_cast<const BlockQ5_0*>(src), nb, y);
      break;
    case DType::Q8_0:
      dequantize_q8_0(static_cast<const BlockQ8_0*>(src), nb, y);
      break;
    case DType::Q4_K:
      dequantize_q4_k(static_cast<const BlockQ4_K*>(src), nb, y);
      break;
    case DType::Q5_K:
      dequantize_q5_k(static_cast<const BlockQ5_K*>(src), nb, y);
      break;
    case DType::Q6_K:
      dequantize_q6_k(static_cast<const BlockQ6_K*>(src), nb, y);
      break;
    default:
      break;
  }
}

}  // namespace vsynth::kernels
