// Prefill kernels: the interleaved Q8A32 and Q8A256 activation rows and the multi-token
// dot kernels of Q4_0/Q5_0/Q8_0 and Q4_K/Q5_K/Q6_K (kernel_table.h, dot_*_il), bit-identical to
// the row kernels decode uses, and matmul against matvec at every shape edge of the default model
// (k = 256, 640, 1024, 2048; rows not a multiple of the tiling; 1..9, 15..17, 63, 64, 65 tokens),
// on every CPU path.
#include <catch2/catch.hpp>

#include <tbb/task_arena.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_path_internal.h"
#include "kernels/cpu/matvec.h"
#include "kernels/quant/blocks.h"
#include "tests/kernels/quant_test_util.h"
#include "tests/test_skip.h"

using namespace vsynth::kernels;
using namespace vsynth::kernels::test;

namespace {

WeightView view_of(const QuantMatrix& m) {
  return make_weight_view(m.type, m.rows, m.cols, m.data.data(), m.name);
}

// The SIMD tables this build and CPU can run (those that have the prefill kernels).
std::vector<const detail::KernelTable*> simd_tables() {
  std::vector<const detail::KernelTable*> t;
  if (cpu_path_available(CpuPath::Avx2)) t.push_back(&detail::kernels_for(CpuPath::Avx2));
  if (cpu_path_available(CpuPath::Avx512Vnni)) {
    t.push_back(&detail::kernels_for(CpuPath::Avx512Vnni));
  }
  return t;
}

// Block counts: 1..17 (every tail of a group of 8, one or two whole groups), 20 (k = 640: two
// groups and four), 64 (k = 2048), 8 (k = 256).
constexpr float kZeroF = 0.0f;

const std::vector<int64_t> kBlockCounts = {1,  2,  3,  4,  5,  6,  7,  8,  9, 10,
                                           11, 12, 13, 14, 15, 16, 17, 20, 64};

// K-quant super-blocks per row: one, the default model's k = 1024 and 2048, and odd counts.
const std::vector<int64_t> kSuperBlockCounts = {1, 2, 3, 4, 5, 8};

// Activation columns for a K-quant dot test: kMaxCols quantized columns in the plain and the
// interleaved layout (when the table has one), exactly sized (no slack), so a read past the last
// column shows under ASan.
struct KActs {
  size_t bytes, il_bytes;  // per column
  std::vector<uint8_t> plain, il;
};

KActs k_acts(const detail::KernelTable& kt, const std::vector<float>& X, int64_t k) {
  KActs a{
      detail::act_row_bytes(detail::ActFormat::Q8A256, k), detail::act_row_bytes_a256il(k), {}, {}};
  a.plain.resize(a.bytes * detail::kMaxCols);
  a.il.resize(a.il_bytes * detail::kMaxCols);
  for (int c = 0; c < detail::kMaxCols; ++c) {
    kt.quantize_a256(X.data() + c * k, k, a.plain.data() + c * a.bytes);
    if (kt.quantize_a256il) kt.quantize_a256il(X.data() + c * k, k, a.il.data() + c * a.il_bytes);
  }
  return a;
}

}  // namespace

TEST_CASE("interleaved Q8A32 rows hold the plain row's codes, scales and sums",
          "[quant][prefill]") {
  const auto tables = simd_tables();
  if (tables.empty())
    VSYNTH_SKIP("no SIMD path on this CPU: the scalar table has no prefill kernels");
  for (const detail::KernelTable* kt : tables) {
    REQUIRE(kt->quantize_a32il != nullptr);
    for (int64_t nb : kBlockCounts) {
      INFO("table " << kt->name << " blocks " << nb);
      const int64_t k = 32 * nb;
      const std::vector<float> x = random_values(k, static_cast<uint32_t>(7 + nb));
      std::vector<uint8_t> plain(detail::act_row_bytes(detail::ActFormat::Q8A32, k));
      const size_t il_bytes = detail::act_row_bytes_a32il(k);
      // Padded to whole groups of 8 blocks, except a tail of exactly 4 (blocks.h).
      const int64_t nbp = nb % 8 == 4 ? nb : (nb + 7) / 8 * 8;
      REQUIRE(il_bytes == static_cast<size_t>(40 * nbp));
      std::vector<uint8_t> il(il_bytes, 0xAB);  // garbage: padding must be written as zero
      kt->quantize_a32(x.data(), k, plain.data());
      kt->quantize_a32il(x.data(), k, il.data());
      const auto* pq = reinterpret_cast<const int8_t*>(plain.data());
      const auto* pd = reinterpret_cast<const float*>(plain.data() + 32 * nb);
      const auto* ps = reinterpret_cast<const int32_t*>(plain.data() + 36 * nb);
      const auto* iq = reinterpret_cast<const int8_t*>(il.data());
      const auto* id = reinterpret_cast<const float*>(il.data() + 32 * nbp);
      const auto* is = reinterpret_cast<const int32_t*>(il.data() + 36 * nbp);
      for (int64_t b = 0; b < nbp; ++b) {
        for (int e = 0; e < 32; ++e) {
          const int64_t g = b / 8, j = b % 8, i = e / 4;
          const bool half = nbp - 8 * g == 4;  // the 4-block tail group
          const int64_t at = half ? 256 * g + 32 * (i % 4) + 16 * (i / 4) + 4 * j + e % 4
                                  : 256 * g + 32 * i + 4 * j + e % 4;
          const int8_t got = iq[at];
          REQUIRE(got == (b < nb ? pq[32 * b + e] : 0));
        }
        REQUIRE(std::memcmp(&id[b], b < nb ? &pd[b] : &kZeroF, sizeof(float)) == 0);
        REQUIRE(is[b] == (b < nb ? ps[b] : 0));
      }
    }
  }
}

TEST_CASE("prefill dot kernels are bit-identical to the row kernels, 1..8 columns",
          "[quant][prefill]") {
  const auto tables = simd_tables();
  if (tables.empty())
    VSYNTH_SKIP("no SIMD path on this CPU: the scalar table has no prefill kernels");
  constexpr int kCols = detail::kMaxCols;
  for (const detail::KernelTable* kt : tables) {
    for (DType t : {DType::Q4_0, DType::Q5_0, DType::Q8_0}) {
      const detail::DotFn row = detail::type_kernels(*kt, t).dot,
                          il = detail::type_kernels(*kt, t).dot_il;
      REQUIRE(il != nullptr);
      for (int64_t nb : kBlockCounts) {
        const int64_t k = 32 * nb;
        const QuantMatrix m = make_matrix(t, 3, k, static_cast<uint32_t>(300 + nb));
        const std::vector<float> X = random_values(kCols * k, static_cast<uint32_t>(nb + 50));
        const size_t ab = detail::act_row_bytes(detail::ActFormat::Q8A32, k);
        const size_t abi = detail::act_row_bytes_a32il(k);
        // Exactly sized (no slack), so a read past the last column's row shows under ASan.
        std::vector<uint8_t> act(ab * kCols), acti(abi * kCols);
        for (int c = 0; c < kCols; ++c) {
          kt->quantize_a32(X.data() + c * k, k, act.data() + c * ab);
          kt->quantize_a32il(X.data() + c * k, k, acti.data() + c * abi);
        }
        for (int64_t r = 0; r < m.rows; ++r) {
          const uint8_t* w = m.data.data() + r * m.row_bytes;
          float y1[kCols];
          for (int c = 0; c < kCols; ++c) row(k, w, act.data() + c * ab, ab, 1, &y1[c]);
          for (int n = 1; n <= kCols; ++n) {  // n columns starting at column c0 = kCols - n
            INFO("table " << kt->name << " type " << name_of(t) << " blocks " << nb << " row " << r
                          << " columns " << n);
            float yn[kCols];
            const int c0 = kCols - n;
            il(k, w, acti.data() + c0 * abi, abi, n, yn);
            REQUIRE(std::memcmp(yn, y1 + c0, sizeof(float) * static_cast<size_t>(n)) == 0);
          }
        }
      }
    }
  }
}

// Rows [0, kRows) of m unpacked by u, then u.dot_rows over 1..kRows rows by 1..kMaxCols
// interleaved activation columns (abytes apart at acts) against dot_*_il (il) on each plain row.
static void check_unpacked(const detail::Unpacked& u, detail::DotFn il, const QuantMatrix& m,
                           const std::vector<uint8_t>& acts, size_t abytes) {
  constexpr int kCols = detail::kMaxCols;
  const int64_t k = m.cols;
  const size_t ub = detail::unpacked_row_bytes(m.type, k);
  REQUIRE(detail::unpacked_bytes(m.type, k, m.rows) >= ub * static_cast<size_t>(m.rows));
  std::vector<uint8_t> unpacked(detail::unpacked_bytes(m.type, k, m.rows));  // exact, for ASan
  u.unpack(k, m.data.data(), m.row_bytes, m.rows, unpacked.data());
  for (int64_t rows = 1; rows <= m.rows; ++rows) {
    for (int n = 1; n <= kCols; ++n) {
      INFO("rows " << rows << " columns " << n);
      constexpr size_t kYStride = 9;  // not the row count: the stride is honoured
      std::vector<float> y(kYStride * kCols, -1.0f);
      u.dot_rows(k, unpacked.data(), ub, rows, acts.data(), abytes, n, y.data(), kYStride);
      for (int64_t r = 0; r < rows; ++r) {
        float ref[kCols];
        il(k, m.data.data() + r * m.row_bytes, acts.data(), abytes, n, ref);
        for (int c = 0; c < n; ++c) {
          REQUIRE(std::memcmp(&y[c * kYStride + static_cast<size_t>(r)], &ref[c], sizeof(float)) ==
                  0);
        }
      }
      for (int c = 0; c < n; ++c) {  // nothing written past the rows asked for
        for (int64_t r = rows; r < static_cast<int64_t>(kYStride); ++r) {
          REQUIRE(y[c * kYStride + static_cast<size_t>(r)] == -1.0f);
        }
      }
    }
  }
}

TEST_CASE("unpacked-row prefill kernels give each row's dot_*_il bits, any rows and columns",
          "[quant][prefill]") {
  constexpr int kCols = detail::kMaxCols;
  constexpr int64_t kRows = 7;  // tiles of 4 and 6 rows, every remainder, odd counts
  bool any = false;
  for (const detail::KernelTable* kt : simd_tables()) {
    for (DType t : {DType::Q4_0, DType::Q5_0, DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
      const detail::Unpacked& u = detail::type_kernels(*kt, t).unpacked;
      if (u.unpack == nullptr) continue;
      any = true;
      REQUIRE(u.dot_rows != nullptr);
      const detail::DotFn il = detail::type_kernels(*kt, t).dot_il;
      const bool kq = is_k_quant(t);
      for (int64_t nb : kq ? kSuperBlockCounts : kBlockCounts) {
        INFO("table " << kt->name << " type " << name_of(t) << " blocks " << nb);
        const int64_t k = (kq ? 256 : 32) * nb;
        const QuantMatrix m = make_matrix(t, kRows, k, static_cast<uint32_t>(700 + nb));
        const std::vector<float> X = random_values(kCols * k, static_cast<uint32_t>(nb + 90));
        if (kq) {
          const KActs a = k_acts(*kt, X, k);
          check_unpacked(u, il, m, a.il, a.il_bytes);
        } else {
          const size_t abi = detail::act_row_bytes_a32il(k);
          std::vector<uint8_t> acti(abi * kCols);
          for (int c = 0; c < kCols; ++c) {
            kt->quantize_a32il(X.data() + c * k, k, acti.data() + c * abi);
          }
          check_unpacked(u, il, m, acti, abi);
        }
      }
    }
  }
  if (!any) VSYNTH_SKIP("no CPU path here has the unpacked-row kernels (the avx512vnni table)");
}

TEST_CASE("interleaved Q8A256 rows hold the plain blocks' codes transposed, sums and scales",
          "[quant][prefill]") {
  const auto tables = simd_tables();
  if (tables.empty())
    VSYNTH_SKIP("no SIMD path on this CPU: the scalar table has no prefill kernels");
  for (const detail::KernelTable* kt : tables) {
    REQUIRE(kt->quantize_a256il != nullptr);
    for (int64_t nb : kSuperBlockCounts) {
      INFO("table " << kt->name << " super-blocks " << nb);
      const int64_t k = 256 * nb;
      std::vector<float> x = random_values(k, static_cast<uint32_t>(70 + nb));
      std::fill(x.begin(), x.begin() + 256, 0.0f);  // an all-zero block (scale 0)
      std::vector<BlockQ8A256> plain(static_cast<size_t>(nb));
      const size_t bytes = detail::act_row_bytes_a256il(k);
      // 292 bytes per super-block, padded to a multiple of 64 (blocks.h).
      REQUIRE(bytes == static_cast<size_t>((292 * nb + 63) / 64 * 64));
      std::vector<uint8_t> il(bytes, 0xAB);  // garbage: the padding must be written as zero
      kt->quantize_a256(x.data(), k, plain.data());
      kt->quantize_a256il(x.data(), k, il.data());
      const auto* qs = reinterpret_cast<const int8_t*>(il.data());
      for (int64_t b = 0; b < nb; ++b) {
        // blocks.h: code 32L + 4v + e of super-block b at byte 256b + 32v + 4L + e.
        for (int v = 0; v < 8; ++v) {
          for (int L = 0; L < 8; ++L) {
            for (int e = 0; e < 4; ++e) {
              REQUIRE(qs[256 * b + 32 * v + 4 * L + e] == plain[b].qs[32 * L + 4 * v + e]);
            }
          }
        }
        REQUIRE(std::memcmp(il.data() + 256 * nb + 32 * b, plain[b].bsums, 32) == 0);
        REQUIRE(std::memcmp(il.data() + 288 * nb + 4 * b, &plain[b].d, 4) == 0);
      }
      for (size_t i = static_cast<size_t>(292 * nb); i < bytes; ++i) REQUIRE(il[i] == 0);
    }
  }
}

TEST_CASE("K-quant prefill and row kernels are bit-identical to one column, 1..16 columns",
          "[quant][prefill]") {
  const auto tables = simd_tables();
  if (tables.empty())
    VSYNTH_SKIP("no SIMD path on this CPU: the scalar table has no prefill kernels");
  constexpr int kCols = detail::kMaxCols;
  for (const detail::KernelTable* kt : tables) {
    for (DType t : {DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
      const detail::DotFn row = detail::type_kernels(*kt, t).dot,
                          il = detail::type_kernels(*kt, t).dot_il;
      REQUIRE(il != nullptr);
      for (int64_t nb : kSuperBlockCounts) {
        const int64_t k = 256 * nb;
        const QuantMatrix m = make_matrix(t, 4, k, static_cast<uint32_t>(500 + nb));
        const std::vector<float> X = random_values(kCols * k, static_cast<uint32_t>(nb + 90));
        const KActs a = k_acts(*kt, X, k);
        for (int64_t r = 0; r < m.rows; ++r) {
          const uint8_t* w = m.data.data() + r * m.row_bytes;
          float y1[kCols];
          for (int c = 0; c < kCols; ++c) row(k, w, a.plain.data() + c * a.bytes, 0, 1, &y1[c]);
          for (int n = 1; n <= kCols; ++n) {  // n columns starting at column c0 = kCols - n
            INFO("table " << kt->name << " type " << name_of(t) << " super-blocks " << nb << " row "
                          << r << " columns " << n);
            const int c0 = kCols - n;
            float yi[kCols], yr[kCols];
            il(k, w, a.il.data() + c0 * a.il_bytes, a.il_bytes, n, yi);
            REQUIRE(std::memcmp(yi, y1 + c0, sizeof(float) * static_cast<size_t>(n)) == 0);
            row(k, w, a.plain.data() + c0 * a.bytes, a.bytes, n, yr);
            REQUIRE(std::memcmp(yr, y1 + c0, sizeof(float) * static_cast<size_t>(n)) == 0);
          }
        }
      }
    }
  }
}

TEST_CASE("K-quant kernels at the largest codes, scales and activations: no int16 overflow",
          "[quant][prefill]") {
  // The AVX2 prefill kernels add several maddubs results in int16 before widening (kRun in
  // kernels_x86_kquants.inc): safe only while codes stay below 16 / 32 / 64. Every code, scale and
  // activation at its extreme (+127 and -127), against the scalar table, which sums in int32.
  const auto tables = simd_tables();
  if (tables.empty())
    VSYNTH_SKIP("no SIMD path on this CPU: the scalar table has no prefill kernels");
  const detail::KernelTable& scalar = detail::kernels_for(CpuPath::Scalar);
  constexpr int64_t k = 512;
  for (DType t : {DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    // 0xFF bytes: the top codes (15, 31, 63) and sc = m = 63; then the fp16 scales, and Q6_K's
    // signed scales alternating -128 and 127.
    const size_t rb = row_size(t, k);
    std::vector<uint8_t> w(rb + 32, 0xFF);
    for (size_t b = 0; b < rb / row_size(t, 256); ++b) {
      uint8_t* blk = w.data() + b * row_size(t, 256);
      const uint16_t one = 0x3C00, half = 0x3800;  // fp16 1.0 and 0.5
      if (t == DType::Q6_K) {
        auto* sc = reinterpret_cast<int8_t*>(blk + offsetof(BlockQ6_K, scales));
        for (int s = 0; s < 16; ++s) sc[s] = static_cast<int8_t>(s % 2 ? 127 : -128);
        std::memcpy(blk + offsetof(BlockQ6_K, d), &one, 2);
      } else {
        std::memcpy(blk, &one, 2);
        std::memcpy(blk + 2, &half, 2);
      }
    }
    for (float sign : {1.0f, -1.0f}) {
      std::vector<float> X(static_cast<size_t>(detail::kMaxCols * k), sign);
      for (int64_t i = 0; i < k; i += 2) X[static_cast<size_t>(i)] = -sign;  // column 0 mixed
      float ref[detail::kMaxCols];
      const KActs s = k_acts(scalar, X, k);
      detail::type_kernels(scalar, t).dot(k, w.data(), s.plain.data(), s.bytes, detail::kMaxCols,
                                          ref);
      for (const detail::KernelTable* kt : tables) {
        INFO("table " << kt->name << " type " << name_of(t) << " sign " << sign);
        const KActs a = k_acts(*kt, X, k);
        float yi[detail::kMaxCols], yr[detail::kMaxCols];
        detail::type_kernels(*kt, t).dot_il(k, w.data(), a.il.data(), a.il_bytes, detail::kMaxCols,
                                            yi);
        detail::type_kernels(*kt, t).dot(k, w.data(), a.plain.data(), a.bytes, detail::kMaxCols,
                                         yr);
        for (int c = 0; c < detail::kMaxCols; ++c) {
          REQUIRE(std::memcmp(&yi[c], &yr[c], sizeof(float)) == 0);
          REQUIRE(std::fabs(yi[c] - ref[c]) <= 1e-5f * std::fabs(ref[c]) + 1e-3f);
        }
      }
    }
  }
}

TEST_CASE("matmul equals matvec per token at the model's shape edges, every path",
          "[quant][prefill][matmul]") {
  // Rows 45 and 300: not multiples of 8 or of the row blocks matmul tiles by; token counts on
  // both sides of the 8- and 16-token groups and the 64-token tiles.
  const std::vector<int64_t> token_counts = {1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 63, 64, 65};
  for (DType t : quant_types()) {
    for (int64_t k : {int64_t{256}, int64_t{640}, int64_t{1024}, int64_t{2048}}) {
      if (k % quant_block_elems(t) != 0) continue;
      if (k == 1024 && !is_k_quant(t)) continue;  // the K-quants' attn_output width
      for (int64_t rows : {int64_t{45}, int64_t{300}}) {
        if (rows == 300 && k == 2048) continue;  // the large case adds time, not coverage
        const QuantMatrix m = make_matrix(t, rows, k, static_cast<uint32_t>(k + rows));
        const std::vector<float> X = random_values(65 * k, static_cast<uint32_t>(k * 3 + rows));
        for (CpuPath path : available_paths()) {
          ScopedCpuPath scoped(path);
          std::vector<float> ref(static_cast<size_t>(65 * rows));
          for (int64_t tok = 0; tok < 65; ++tok) {
            matvec(view_of(m), X.data() + tok * k, ref.data() + tok * rows);
          }
          for (int64_t n : token_counts) {
            INFO("type " << name_of(t) << " k " << k << " rows " << rows << " tokens " << n
                         << " path " << to_string(path));
            std::vector<float> Y(static_cast<size_t>(n * rows), -12345.0f);
            matmul(view_of(m), X.data(), n, Y.data());
            REQUIRE(std::memcmp(Y.data(), ref.data(), sizeof(float) * Y.size()) == 0);
          }
          // Two threads split the tiles differently: the same bits.
          std::vector<float> Y2(static_cast<size_t>(65 * rows));
          tbb::task_arena two(2);
          two.execute([&] { matmul(view_of(m), X.data(), 65, Y2.data()); });
          REQUIRE(std::memcmp(Y2.data(), ref.data(), sizeof(float) * Y2.size()) == 0);
        }
      }
    }
  }
}
