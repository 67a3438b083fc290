// Block formats: fp16/bf16 conversions, hand-made blocks with known values, quantize/dequantize
// round trips with error bounds, and argument errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/cpu/cpu_path_internal.h"
#include "kernels/cpu/matvec.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/fp16.h"
#include "kernels/quant/quant_error.h"
#include "kernels/quant/quantize.h"
#include "tests/kernels/quant_test_util.h"
#include "tests/test_skip.h"

using namespace vsynth::kernels;
using namespace vsynth::kernels::test;

namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

std::vector<float> decode(DType t, const void* block, int64_t n) {
  std::vector<float> y(static_cast<size_t>(n));
  dequantize_row(t, block, y.data(), n);
  return y;
}

// dot(block, e_p) for every position p through every CPU path's kernel: with a one-hot input
// the activation quantizes exactly (q = 127 at p, scale 1/127), so the dot kernel must
// reproduce the decoded element p. This pins the SIMD kernels' unpacking to the hand-made block.
void check_dot_decodes(DType t, const void* block, const std::vector<float>& expected) {
  const int64_t n = static_cast<int64_t>(expected.size());
  for (CpuPath path : available_paths()) {
    ScopedCpuPath scoped(path);
    INFO("path " << to_string(path));
    const WeightView w = make_weight_view(t, 1, n, block, "hand-made");
    std::vector<float> x(static_cast<size_t>(n), 0.0f);
    for (int64_t p = 0; p < n; ++p) {
      x[static_cast<size_t>(p)] = 1.0f;
      float y = 0.0f;
      matvec(w, x.data(), &y);
      INFO("position " << p);
      CHECK(y == Approx(expected[static_cast<size_t>(p)]).epsilon(1e-5).margin(1e-4));
      x[static_cast<size_t>(p)] = 0.0f;
    }
  }
}

}  // namespace

TEST_CASE("fp16 known values", "[quant][fp16]") {
  CHECK(fp16_to_fp32(0x3C00) == 1.0f);
  CHECK(fp16_to_fp32(0xC000) == -2.0f);
  CHECK(fp16_to_fp32(0x3555) == Approx(0.333251953125f).epsilon(0));
  CHECK(fp16_to_fp32(0x7BFF) == 65504.0f);
  CHECK(fp16_to_fp32(0x0400) == std::ldexp(1.0f, -14));  // smallest normal
  CHECK(fp16_to_fp32(0x0001) == std::ldexp(1.0f, -24));  // smallest subnormal
  CHECK(fp16_to_fp32(0x03FF) == std::ldexp(1023.0f, -24));
  CHECK(bits_of(fp16_to_fp32(0x8000)) == 0x80000000u);  // -0
  CHECK(std::isinf(fp16_to_fp32(0x7C00)));
  CHECK(fp16_to_fp32(0xFC00) < 0);
  CHECK(std::isnan(fp16_to_fp32(0x7E00)));

  CHECK(fp32_to_fp16(1.0f) == 0x3C00);
  CHECK(fp32_to_fp16(-2.0f) == 0xC000);
  CHECK(fp32_to_fp16(65504.0f) == 0x7BFF);
  CHECK(fp32_to_fp16(65519.0f) == 0x7BFF);  // below the rounding midpoint to inf
  CHECK(fp32_to_fp16(65520.0f) == 0x7C00);  // the midpoint rounds (to even) to inf
  CHECK(fp32_to_fp16(1e9f) == 0x7C00);
  CHECK(fp32_to_fp16(-1e9f) == 0xFC00);
  // Ties to even: 1 + 2^-11 lies halfway between 1 and 1 + 2^-10.
  CHECK(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)) == 0x3C00);
  CHECK(fp32_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3C02);
  CHECK(fp32_to_fp16(std::ldexp(1.0f, -24)) == 0x0001);
  CHECK(fp32_to_fp16(std::ldexp(1.0f, -25)) == 0x0000);  // tie between 0 and 2^-24 -> even
  CHECK(fp32_to_fp16(std::ldexp(1.5f, -25)) == 0x0001);
  CHECK(fp32_to_fp16(std::ldexp(3.0f, -25)) == 0x0002);     // tie between 1 and 2 units -> even
  CHECK(fp32_to_fp16(std::ldexp(1023.5f, -24)) == 0x0400);  // rounds up into the normals
  CHECK(fp32_to_fp16(-0.0f) == 0x8000);
  CHECK(fp32_to_fp16(std::numeric_limits<float>::infinity()) == 0x7C00);
  const uint16_t qnan = fp32_to_fp16(std::numeric_limits<float>::quiet_NaN());
  CHECK((qnan & 0x7C00) == 0x7C00);
  CHECK((qnan & 0x03FF) != 0);
}

TEST_CASE("fp16 round trip is exact for every finite half", "[quant][fp16]") {
  uint32_t finite = 0;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7C00) == 0x7C00) continue;  // inf / NaN
    ++finite;
    const uint16_t back = fp32_to_fp16(fp16_to_fp32(static_cast<uint16_t>(h)));
    if (back != h) FAIL("half 0x" << std::hex << h << " came back as 0x" << back);
  }
  CHECK(finite == 0x10000 - 2 * 0x400);  // every half but the 2 x 1024 inf/NaN codes
}

TEST_CASE("fp16 conversions agree with F16C", "[quant][fp16]") {
  if (!cpu_path_available(CpuPath::Avx2))
    VSYNTH_SKIP("no AVX2/F16C on this CPU: nothing to compare against");
  const auto& hw = detail::kernels_for(CpuPath::Avx2);
  // Every half value, widened.
  std::vector<uint16_t> all(0x10000);
  for (uint32_t h = 0; h < 0x10000; ++h) all[h] = static_cast<uint16_t>(h);
  std::vector<float> wide(all.size());
  hw.f16_to_f32(all.data(), wide.data(), static_cast<int64_t>(all.size()));
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float ours = fp16_to_fp32(static_cast<uint16_t>(h));
    if (std::isnan(ours)) {
      REQUIRE(std::isnan(wide[h]));
    } else if (bits_of(ours) != bits_of(wide[h])) {
      FAIL("half 0x" << std::hex << h << ": scalar " << ours << " vs F16C " << wide[h]);
    }
  }
  // Narrowing: random floats across the whole range plus every half's midpoints (ties).
  std::mt19937 rng(7);
  std::vector<float> xs;
  for (int i = 0; i < 200000; ++i) {
    uint32_t u = rng();
    if (((u >> 23) & 0xFF) == 0xFF) continue;  // skip inf/NaN
    float f;
    std::memcpy(&f, &u, sizeof f);
    xs.push_back(f);
  }
  for (uint32_t h = 0; h < 0x7BFF; ++h) {
    const float a = fp16_to_fp32(static_cast<uint16_t>(h));
    const float b = fp16_to_fp32(static_cast<uint16_t>(h + 1));
    xs.push_back((a + b) / 2);  // exact in fp32: a tie
    xs.push_back(-(a + b) / 2);
    xs.push_back(std::nextafter((a + b) / 2, 0.0f));
  }
  std::vector<uint16_t> narrow(xs.size());
  hw.f32_to_f16(xs.data(), narrow.data(), static_cast<int64_t>(xs.size()));
  for (size_t i = 0; i < xs.size(); ++i) {
    if (fp32_to_fp16(xs[i]) != narrow[i]) {
      FAIL("float " << xs[i] << " (0x" << std::hex << bits_of(xs[i]) << "): scalar 0x"
                    << fp32_to_fp16(xs[i]) << " vs F16C 0x" << narrow[i]);
    }
  }
}

TEST_CASE("bf16 conversions", "[quant][fp16]") {
  CHECK(bf16_to_fp32(0x3F80) == 1.0f);
  CHECK(bf16_to_fp32(0xC0A0) == -5.0f);
  CHECK(fp32_to_bf16(1.0f) == 0x3F80);
  CHECK(fp32_to_bf16(-5.0f) == 0xC0A0);
  // 1 + 2^-8 is halfway between bf16 1 and 1 + 2^-7: ties to even.
  CHECK(fp32_to_bf16(1.0f + std::ldexp(1.0f, -8)) == 0x3F80);
  CHECK(fp32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3F82);
  CHECK(fp32_to_bf16(std::numeric_limits<float>::max()) == 0x7F80);  // rounds to inf
  CHECK(std::isnan(bf16_to_fp32(fp32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  for (uint32_t b = 0; b < 0x10000; ++b) {
    if ((b & 0x7F80) == 0x7F80) continue;
    REQUIRE(fp32_to_bf16(bf16_to_fp32(static_cast<uint16_t>(b))) == b);
  }
}

// ---- Hand-made blocks: expected values worked out by hand from the layout ----

TEST_CASE("Q8_0 hand-made block", "[quant][known]") {
  BlockQ8_0 b{};
  b.d = 0x3800;  // 0.5
  for (int i = 0; i < 32; ++i) b.qs[i] = static_cast<int8_t>(i - 16);
  const auto y = decode(DType::Q8_0, &b, 32);
  CHECK(y[0] == -8.0f);
  CHECK(y[16] == 0.0f);
  CHECK(y[31] == 7.5f);
  std::vector<float> expect(32);
  for (int i = 0; i < 32; ++i) expect[i] = 0.5f * static_cast<float>(i - 16);
  CHECK(y == expect);
  check_dot_decodes(DType::Q8_0, &b, expect);
}

TEST_CASE("Q8_0 block with -128 codes", "[quant][known]") {
  // Quantizers never write -128, but a file may hold it; the sign trick must still be exact.
  BlockQ8_0 b{};
  b.d = 0x3C00;
  for (int i = 0; i < 32; ++i) b.qs[i] = static_cast<int8_t>(i % 2 ? -128 : 127);
  const auto y = decode(DType::Q8_0, &b, 32);
  CHECK(y[0] == 127.0f);
  CHECK(y[1] == -128.0f);
  check_dot_decodes(DType::Q8_0, &b, y);
}

TEST_CASE("Q4_0 hand-made block", "[quant][known]") {
  BlockQ4_0 b{};
  b.d = 0x4000;  // 2.0
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const auto y = decode(DType::Q4_0, &b, 32);
  // Low nibble of qs[j] is element j, high nibble element j + 16.
  CHECK(y[0] == -16.0f);   // (0 - 8) * 2
  CHECK(y[15] == 14.0f);   // (15 - 8) * 2
  CHECK(y[16] == 14.0f);   // high nibble of qs[0] = 15
  CHECK(y[31] == -16.0f);  // high nibble of qs[15] = 0
  CHECK(y[9] == 2.0f);
  check_dot_decodes(DType::Q4_0, &b, y);
}

TEST_CASE("Q5_0 hand-made block", "[quant][known]") {
  BlockQ5_0 b{};
  b.d = 0x3C00;  // 1.0
  // qh as little-endian uint32 0x80000001: fifth bit set for elements 0 and 31 only.
  b.qh[0] = 0x01;
  b.qh[3] = 0x80;
  b.qs[0] = 0x53;   // element 0 low nibble 3, element 16 high nibble 5
  b.qs[15] = 0xF0;  // element 15 low nibble 0, element 31 high nibble 15
  const auto y = decode(DType::Q5_0, &b, 32);
  CHECK(y[0] == 3.0f);     // (3 | 16) - 16
  CHECK(y[16] == -11.0f);  // 5 - 16
  CHECK(y[15] == -16.0f);  // 0 - 16, no fifth bit
  CHECK(y[31] == 15.0f);   // (15 | 16) - 16
  CHECK(y[1] == -16.0f);
  check_dot_decodes(DType::Q5_0, &b, y);
}

namespace {
// Scales sc = {1, 2, 3, 4, 17, 33, 50, 63}, mins m = {0, 5, 10, 63, 16, 20, 40, 1}, packed by
// hand: bytes 0-3 = sc[j] | (sc[j+4] >> 4) << 6; bytes 4-7 = m[j] | (m[j+4] >> 4) << 6;
// bytes 8-11 = (sc[j+4] & 15) | (m[j+4] & 15) << 4.
constexpr uint8_t kHandScales[12] = {0x41, 0x82, 0xC3, 0xC4, 0x40, 0x45,
                                     0x8A, 0x3F, 0x01, 0x41, 0x82, 0x1F};
}  // namespace

TEST_CASE("Q4_K hand-made block", "[quant][known]") {
  BlockQ4_K b{};
  b.d = 0x3C00;     // 1.0
  b.dmin = 0x3800;  // 0.5
  std::memcpy(b.scales, kHandScales, 12);
  for (int i = 0; i < 128; ++i) b.qs[i] = static_cast<uint8_t>((i % 16) | (((i / 16) % 16) << 4));
  const auto y = decode(DType::Q4_K, &b, 256);
  // element = d * sc * q - dmin * m; chunk c = element / 64 uses qs[32c..], low nibbles first.
  CHECK(y[0] == 0.0f);      // sub-block 0 (sc 1, m 0), q = 0
  CHECK(y[5] == 5.0f);      // q = 5
  CHECK(y[32] == -2.5f);    // sub-block 1 (sc 2, m 5): high nibble of qs[0] = 0 -> -0.5 * 5
  CHECK(y[63] == -0.5f);    // high nibble of qs[31] = 1 -> 2 - 2.5
  CHECK(y[64] == -5.0f);    // sub-block 2 (sc 3, m 10): q = 0 -> -5
  CHECK(y[100] == -23.5f);  // sub-block 3 (sc 4, m 63): high nibble of qs[36] = 2 -> 8 - 31.5
  CHECK(y[135] == 111.0f);  // sub-block 4 (sc 17, m 16): low nibble of qs[71] = 7 -> 119 - 8
  CHECK(y[191] == 155.0f);  // sub-block 5 (sc 33, m 20): high nibble of qs[95] = 5 -> 165 - 10
  CHECK(y[193] == 30.0f);   // sub-block 6 (sc 50, m 40): low nibble of qs[97] = 1 -> 50 - 20
  CHECK(y[255] == 440.5f);  // sub-block 7 (sc 63, m 1): high nibble of qs[127] = 7 -> 441 - 0.5
  check_dot_decodes(DType::Q4_K, &b, y);
}

TEST_CASE("Q5_K hand-made block", "[quant][known]") {
  BlockQ5_K b{};
  b.d = 0x3C00;
  b.dmin = 0x3800;
  std::memcpy(b.scales, kHandScales, 12);
  for (int i = 0; i < 128; ++i) b.qs[i] = static_cast<uint8_t>((i % 16) | (((i / 16) % 16) << 4));
  // Even l: every fifth bit set (all chunks, low and high); odd l: none.
  for (int l = 0; l < 32; ++l) b.qh[l] = l % 2 == 0 ? 0xFF : 0x00;
  const auto y = decode(DType::Q5_K, &b, 256);
  CHECK(y[0] == 16.0f);      // q = 0 | 16, sc 1
  CHECK(y[1] == 1.0f);       // odd: q = 1
  CHECK(y[35] == -2.5f);     // sub-block 1, l = 3 odd: q = 0 -> 0 - 2.5
  CHECK(y[34] == 29.5f);     // l = 2 even: q = 16 -> 32 - 2.5
  CHECK(y[68] == 55.0f);     // sub-block 2 (sc 3, m 10), l = 4: q = 4 | 16 = 20 -> 60 - 5
  CHECK(y[254] == 1448.5f);  // sub-block 7 (sc 63, m 1), l = 30: q = 7 | 16 = 23 -> 1449 - 0.5
  CHECK(y[255] == 440.5f);   // l = 31 odd: q = 7
  check_dot_decodes(DType::Q5_K, &b, y);
}

TEST_CASE("Q6_K hand-made block", "[quant][known]") {
  BlockQ6_K b{};
  b.d = 0x3800;  // 0.5
  const int8_t sc[16] = {1, -2, 3, -4, 5, -6, 7, -8, 16, -32, 64, -128, 127, 0, 2, 1};
  std::memcpy(b.scales, sc, 16);
  for (int i = 0; i < 128; ++i) b.ql[i] = static_cast<uint8_t>(i);
  for (int i = 0; i < 64; ++i) b.qh[i] = 0xE4;  // 2-bit fields 0, 1, 2, 3 from the bottom
  const auto y = decode(DType::Q6_K, &b, 256);
  // element = 0.5 * sc * (q - 32)
  CHECK(y[0] == -16.0f);     // ql[0] & 15 = 0, qh bits 0-1 = 0: q = 0, sc 1
  CHECK(y[17] == 31.0f);     // q = 1, sc -2 -> 0.5 * -2 * -31
  CHECK(y[33] == -22.5f);    // ql[33] & 15 = 1, qh bits 2-3 = 1: q = 17, sc 3
  CHECK(y[70] == 0.0f);      // ql[6] >> 4 = 0, qh bits 4-5 = 2: q = 32
  CHECK(y[90] == -3.0f);     // ql[26] >> 4 = 1: q = 33, sc -6
  CHECK(y[127] == -76.0f);   // ql[63] >> 4 = 3, qh bits 6-7 = 3: q = 51, sc -8
  CHECK(y[128] == -256.0f);  // second half: ql[64] & 15 = 0, q = 0, sc 16
  CHECK(y[176] == 1024.0f);  // ql[112] & 15 = 0 | 16: q = 16, sc -128
  CHECK(y[200] == 254.0f);   // ql[72] >> 4 = 4 | 32: q = 36, sc 127
  CHECK(y[220] == 0.0f);     // sc 0
  CHECK(y[255] == 11.5f);    // ql[127] >> 4 = 7 | 48: q = 55, sc 1
  check_dot_decodes(DType::Q6_K, &b, y);
}

TEST_CASE("F16 and BF16 rows decode and dot", "[quant][known]") {
  std::vector<uint16_t> h(32), bf(32);
  std::vector<float> expect(32);
  for (int i = 0; i < 32; ++i) {
    expect[i] = static_cast<float>(i - 10) * 0.25f;
    h[i] = fp32_to_fp16(expect[i]);
    bf[i] = fp32_to_bf16(expect[i]);
  }
  CHECK(decode(DType::F16, h.data(), 32) == expect);
  CHECK(decode(DType::BF16, bf.data(), 32) == expect);
  check_dot_decodes(DType::F16, h.data(), expect);
  check_dot_decodes(DType::BF16, bf.data(), expect);
  check_dot_decodes(DType::F32, expect.data(), expect);
}

// ---- Round trips ----

namespace {

// Per-type reconstruction error limits for one block of the row, in units the format fixes:
//   Q8_0: d = max|x| / 127 (fp16); codes are computed against the stored d, so every element is
//         within d / 2 (float rounding adds ~1e-5 d).
//   Q4_0, Q5_0: d = v / -L (v the largest-magnitude element, L = 8 or 16). Elements in the code
//         range are within |d| / 2; those beyond the positive end (x / d in (L - 0.5, L], the
//         mirror of v) clamp to L - 1 and are off by up to |d| (+ fp16 rounding of d: 2^-11 L).
void check_block_bound(DType t, const float* x, const float* y, const uint8_t* block) {
  if (t == DType::Q8_0) {
    BlockQ8_0 b;
    std::memcpy(&b, block, sizeof b);
    const float d = fp16_to_fp32(b.d);
    for (int i = 0; i < 32; ++i) REQUIRE(std::fabs(x[i] - y[i]) <= 0.5f * d * (1 + 1e-4f) + 1e-30f);
  } else if (t == DType::Q4_0 || t == DType::Q5_0) {
    uint16_t dh;
    std::memcpy(&dh, block, 2);
    const float d = std::fabs(fp16_to_fp32(dh));
    for (int i = 0; i < 32; ++i) REQUIRE(std::fabs(x[i] - y[i]) <= d * (1 + 1e-2f) + 1e-30f);
  }
}

}  // namespace

TEST_CASE("quantize/dequantize round trips stay within per-type bounds", "[quant][roundtrip]") {
  const int64_t n = 256 * 16;
  const std::vector<float> x = random_values(n, 42);
  for (DType t : all_types()) {
    INFO("type " << name_of(t));
    std::vector<uint8_t> q(row_size(t, n));
    REQUIRE(quantize_row(t, x.data(), n, q.data()) == q.size());
    std::vector<float> y(static_cast<size_t>(n));
    dequantize_row(t, q.data(), y.data(), n);

    if (t == DType::F32) {
      CHECK(y == x);
    } else if (t == DType::F16 || t == DType::BF16) {
      const float rel = t == DType::F16 ? std::ldexp(1.0f, -11) : std::ldexp(1.0f, -8);
      for (int64_t i = 0; i < n; ++i) REQUIRE(std::fabs(y[i] - x[i]) <= rel * std::fabs(x[i]));
    } else if (!is_k_quant(t)) {
      const size_t bb = dtype_info(t)->block_bytes;
      for (int64_t b = 0; b < n / 32; ++b) {
        check_block_bound(t, x.data() + 32 * b, y.data() + 32 * b, q.data() + bb * b);
      }
    } else {
      // K-quants: per 16/32-element sub-block the format is a uniform quantizer with step
      // range / nmax (nmax = 15, 31, 63 levels), whose mean squared error on spread-out data
      // is step^2 / 12; the least-squares fit and the 6-/8-bit sub-scales add a little. So the
      // RMS error over each super-block must stay below 0.45 x its mean sub-block step.
      // Per element the format itself limits the accuracy: a sub-scale is a whole number of
      // super-scale units d, a min a whole number of dmin units, so a quiet sub-block's grid can
      // be off by half a unit in scale (shrinking its span by up to nmax * d / 2) and in offset
      // (dmin / 2). Bound: 1.5 steps of the sub-block plus those two terms.
      const int sub = t == DType::Q6_K ? 16 : 32;
      const float levels = t == DType::Q4_K ? 15.0f : t == DType::Q5_K ? 31.0f : 63.0f;
      const size_t bb = dtype_info(t)->block_bytes;
      for (int64_t b = 0; b < n / 256; ++b) {
        const uint8_t* blk = q.data() + bb * b;
        uint16_t dh, dminh = 0;
        std::memcpy(&dh, t == DType::Q6_K ? blk + 208 : blk, 2);
        if (t != DType::Q6_K) std::memcpy(&dminh, blk + 2, 2);
        const float dsup = std::fabs(fp16_to_fp32(dh)), dmin = fp16_to_fp32(dminh);
        const float span = t == DType::Q6_K ? 32.0f : levels;
        double se = 0, steps = 0;
        for (int s = 0; s < 256 / sub; ++s) {
          const float* xs = x.data() + 256 * b + sub * s;
          const float* ys = y.data() + 256 * b + sub * s;
          float lo = xs[0], hi = xs[0];
          for (int i = 0; i < sub; ++i) {
            lo = std::min(lo, xs[i]);
            hi = std::max(hi, xs[i]);
          }
          if (t != DType::Q6_K) lo = std::min(lo, 0.0f);  // Q4_K/Q5_K mins are >= 0
          const float step = t == DType::Q6_K ? 2 * std::max(-lo, hi) / levels : (hi - lo) / levels;
          steps += step;
          const float limit = 1.5f * step + span * dsup / 2 + dmin / 2 + 1e-30f;
          for (int i = 0; i < sub; ++i) {
            const float e = std::fabs(xs[i] - ys[i]);
            INFO("super-block " << b << " element " << sub * s + i);
            REQUIRE(e <= limit);
            se += static_cast<double>(e) * e;
          }
        }
        const double rms = std::sqrt(se / 256), mean_step = steps / (256 / sub);
        INFO("super-block " << b << " rms " << rms << " mean step " << mean_step);
        REQUIRE(rms <= 0.45 * mean_step);
      }
    }
  }
}

TEST_CASE("special blocks round trip", "[quant][roundtrip]") {
  const int64_t n = 512;
  std::vector<std::vector<float>> cases;
  cases.emplace_back(n, 0.0f);    // all zero: scales 0, must decode to exact zeros
  cases.emplace_back(n, 3.0f);    // constant positive
  cases.emplace_back(n, -0.75f);  // constant negative
  std::vector<float> spike(n, 0.01f);
  spike[100] = 50.0f;  // one outlier dominating its block
  cases.push_back(spike);
  std::vector<float> tiny = random_values(n, 3);
  for (float& v : tiny) v *= 1e-6f;  // scales near the bottom of the fp16 range
  cases.push_back(tiny);
  for (DType t : all_types()) {
    for (size_t c = 0; c < cases.size(); ++c) {
      INFO("type " << name_of(t) << " case " << c);
      std::vector<uint8_t> q(row_size(t, n));
      quantize_row(t, cases[c].data(), n, q.data());
      std::vector<float> y(n);
      dequantize_row(t, q.data(), y.data(), n);
      for (int64_t i = 0; i < n; ++i) REQUIRE(std::isfinite(y[i]));
      if (c == 0) {
        for (int64_t i = 0; i < n; ++i) REQUIRE(y[i] == 0.0f);
      }
      if (c == 1 || c == 2) {
        // A constant block is representable (up to fp16 rounding of its scale) in every type.
        for (int64_t i = 0; i < n; ++i) REQUIRE(y[i] == Approx(cases[c][i]).epsilon(2e-3));
      }
      if (c == 3) {
        CHECK(y[100] == Approx(50.0f).epsilon(2e-3));  // the outlier sets the scale
      }
    }
  }
}

TEST_CASE("row sizes and argument errors", "[quant][errors]") {
  CHECK(row_size(DType::Q8_0, 640) == 20 * 34);
  CHECK(row_size(DType::Q4_0, 64) == 36);
  CHECK(row_size(DType::Q5_0, 640) == 20 * 22);
  CHECK(row_size(DType::Q4_K, 2048) == 8 * 144);
  CHECK(row_size(DType::Q5_K, 256) == 176);
  CHECK(row_size(DType::Q6_K, 1024) == 4 * 210);
  CHECK(row_size(DType::F16, 3) == 6);
  CHECK(row_size(DType::F32, 5) == 20);
  CHECK(row_size(DType::BF16, 0) == 0);

  CHECK_THROWS_AS(row_size(DType::Q4_K, 640), QuantError);  // 640 is not a multiple of 256
  CHECK_THROWS_WITH(row_size(DType::Q4_K, 640), Catch::Contains("256"));
  CHECK_THROWS_AS(row_size(DType::Q8_0, 33), QuantError);
  CHECK_THROWS_AS(row_size(DType::Q4_1, 32), QuantError);  // known type, no kernels
  CHECK_THROWS_WITH(row_size(DType::Q4_1, 32), Catch::Contains("q4_1"));
  CHECK_THROWS_AS(row_size(static_cast<DType>(99), 32), QuantError);
  CHECK_THROWS_AS(row_size(DType::F32, -1), QuantError);

  std::vector<float> x(32, 1.0f);
  x[7] = std::numeric_limits<float>::quiet_NaN();
  std::vector<uint8_t> out(64);
  CHECK_THROWS_WITH(quantize_row(DType::Q8_0, x.data(), 32, out.data()),
                    Catch::Contains("element 7"));
  x[7] = std::numeric_limits<float>::infinity();
  CHECK_THROWS_AS(quantize_row(DType::Q4_0, x.data(), 32, out.data()), QuantError);
  std::vector<float> y(32);
  CHECK_THROWS_AS(dequantize_row(DType::Q2_K, out.data(), y.data(), 256), QuantError);
}
