// Dot products, matvec, matmul and get_rows against float64 references, on every CPU path.
#include <catch2/catch.hpp>

#include <tbb/task_arena.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_path_internal.h"
#include "kernels/cpu/matvec.h"
#include "kernels/cpu/vec_kernels.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/quant_error.h"
#include "tests/kernels/quant_test_util.h"
#include "tests/test_skip.h"

using namespace vsynth::kernels;
using namespace vsynth::kernels::test;

namespace {

WeightView view_of(const QuantMatrix& m) {
  return make_weight_view(m.type, m.rows, m.cols, m.data.data(), m.name);
}

// Checks y[r] against the exact dot of decoded row r with x, within dot_error_bound.
void check_rows(const QuantMatrix& m, const float* x, const float* y) {
  REQUIRE(m.rows > 0);  // a matrix with no rows would check nothing
  for (int64_t r = 0; r < m.rows; ++r) {
    const float* w = m.decoded.data() + r * m.cols;
    const double exact = dot_exact(w, x, m.cols);
    const double bound = dot_error_bound(m.type, w, x, m.cols);
    const double err = std::fabs(static_cast<double>(y[r]) - exact);
    if (!(err <= bound)) {
      FAIL("row " << r << ": got " << y[r] << ", exact " << exact << ", error " << err
                  << " > bound " << bound);
    }
  }
}

}  // namespace

// The kernel tables' rows: tests/kernels/kernel_table_test.cpp.
TEST_CASE("every vector-math table sets every entry", "[quant][dot]") {
  CHECK(vec::complete(vec::vec_kernels_scalar()));
  CHECK(vec::complete(vec::vec_kernels()));
}

TEST_CASE("activation quantization is identical on scalar and AVX2", "[quant][dot]") {
  if (!cpu_path_available(CpuPath::Avx2))
    VSYNTH_SKIP("no AVX2 on this CPU: nothing to compare against");
  const auto& s = detail::kernels_for(CpuPath::Scalar);
  const auto& v = detail::kernels_for(CpuPath::Avx2);
  const int64_t k = 256 * 6;
  std::vector<float> x = random_values(k, 11);
  std::fill(x.begin() + 256, x.begin() + 512, 0.0f);  // an all-zero block (scale 0)
  x[600] = 1e30f;                                     // a huge one
  for (int64_t i = 768; i < 1024; ++i) x[i] = (i % 2 ? 0.5f : -0.5f) * 1.0000001f;  // ties
  for (auto [fmt, bytes] :
       {std::pair{detail::ActFormat::Q8A32, kQ8A32BytesPerBlock * (k / 32)},
        std::pair{detail::ActFormat::Q8A256, sizeof(BlockQ8A256) * (k / 256)}}) {
    std::vector<uint8_t> a(bytes), b(bytes);
    if (fmt == detail::ActFormat::Q8A32) {
      s.quantize_a32(x.data(), k, a.data());
      v.quantize_a32(x.data(), k, b.data());
    } else {
      s.quantize_a256(x.data(), k, a.data());
      v.quantize_a256(x.data(), k, b.data());
    }
    CHECK(std::memcmp(a.data(), b.data(), bytes) == 0);
  }
  // The sums the offset corrections rely on.
  // Q8A32 row layout (blocks.h): codes, then the block scales, then the integer block sums.
  std::vector<uint8_t> q32(kQ8A32BytesPerBlock * (k / 32));
  v.quantize_a32(x.data(), k, q32.data());
  for (int64_t b = 0; b < k / 32; ++b) {
    int32_t sum = 0, stored = 0;
    float d = 0;
    for (int i = 0; i < 32; ++i) sum += static_cast<int8_t>(q32[32 * b + i]);
    std::memcpy(&stored, q32.data() + 36 * (k / 32) + 4 * b, sizeof stored);
    std::memcpy(&d, q32.data() + 32 * (k / 32) + 4 * b, sizeof d);
    REQUIRE(stored == sum);
    // Each code is x / d rounded: within half a step of the input.
    for (int i = 0; i < 32; ++i) {
      const float xi = x[static_cast<size_t>(32 * b + i)];
      if (std::fabs(xi) < 1e29f) {
        REQUIRE(std::fabs(d * static_cast<int8_t>(q32[32 * b + i]) - xi) <= 0.5f * d * 1.0001f);
      }
    }
  }
  std::vector<BlockQ8A256> q256(k / 256);
  v.quantize_a256(x.data(), k, q256.data());
  for (const auto& blk : q256) {
    for (int s16 = 0; s16 < 16; ++s16) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += blk.qs[16 * s16 + i];
      REQUIRE(blk.bsums[s16] == sum);
    }
  }
}

TEST_CASE("matvec matches the float64 reference for every type and path", "[quant][dot]") {
  for (DType t : all_types()) {
    // k values: one block, the default model's widths, and an odd count of blocks.
    std::vector<int64_t> ks = is_k_quant(t) ? std::vector<int64_t>{256, 1024, 2048, 768}
                                            : std::vector<int64_t>{32, 640, 2048, 96};
    if (t == DType::F32 || t == DType::F16 || t == DType::BF16) ks.push_back(13);  // no blocks
    for (int64_t k : ks) {
      const QuantMatrix m =
          make_matrix(t, 37, k, static_cast<uint32_t>(k * 31 + static_cast<int>(t)));
      const std::vector<float> x = random_values(k, 5 + static_cast<uint32_t>(k));
      for (CpuPath path : available_paths()) {
        ScopedCpuPath scoped(path);
        INFO("type " << name_of(t) << " k " << k << " path " << to_string(path));
        std::vector<float> y(m.rows);
        matvec(view_of(m), x.data(), y.data());
        check_rows(m, x.data(), y.data());
      }
    }
  }
}

TEST_CASE("scalar and AVX2 results agree to float rounding", "[quant][dot]") {
  if (!cpu_path_available(CpuPath::Avx2))
    VSYNTH_SKIP("no AVX2 on this CPU: nothing to compare against");
  for (DType t : all_types()) {
    const int64_t k = is_k_quant(t) ? 2048 : 640;
    const QuantMatrix m = make_matrix(t, 64, k, 77);
    const std::vector<float> x = random_values(k, 78);
    std::vector<float> ys(m.rows), yv(m.rows);
    {
      ScopedCpuPath scoped(CpuPath::Scalar);
      matvec(view_of(m), x.data(), ys.data());
    }
    {
      ScopedCpuPath scoped(CpuPath::Avx2);
      matvec(view_of(m), x.data(), yv.data());
    }
    // Same activation codes and integer block sums on both paths; only the order of float
    // additions differs: a few ulp of sum|w x| (2^-23 per rounding, ~k / 8 roundings at worst).
    for (int64_t r = 0; r < m.rows; ++r) {
      double abs_wx = 0;
      for (int64_t i = 0; i < k; ++i) abs_wx += std::fabs(m.decoded[r * k + i] * x[i]);
      INFO("type " << name_of(t) << " row " << r);
      REQUIRE(std::fabs(ys[r] - yv[r]) <= (k / 8 + 16) * std::ldexp(1.0, -23) * abs_wx);
    }
  }
}

TEST_CASE("32-element block kernels: every group/tail split, scalar vs AVX2, 1..8 columns",
          "[quant][dot]") {
  // The AVX2 kernels for Q4_0/Q5_0/Q8_0 work on groups of 8 blocks plus a tail of 1..7 and on
  // up to 8 activation columns at once: every block count 1..17 (tails, one or two full groups)
  // against the float64 reference and the scalar path, and every column count against a
  // one-column call (bit-identical).
  if (!cpu_path_available(CpuPath::Avx2))
    VSYNTH_SKIP("no AVX2 on this CPU: nothing to compare against");
  const auto& scalar = detail::kernels_for(CpuPath::Scalar);
  const auto& avx2 = detail::kernels_for(CpuPath::Avx2);
  constexpr int kCols = detail::kMaxCols;
  for (DType t : {DType::Q4_0, DType::Q5_0, DType::Q8_0}) {
    const detail::DotFn ds = detail::type_kernels(scalar, t).dot,
                        dv = detail::type_kernels(avx2, t).dot;
    for (int64_t nb = 1; nb <= 17; ++nb) {
      const int64_t k = 32 * nb;
      const QuantMatrix m = make_matrix(t, 3, k, static_cast<uint32_t>(100 + nb));
      const std::vector<float> X = random_values(kCols * k, static_cast<uint32_t>(nb));
      const size_t ab = detail::act_row_bytes(detail::ActFormat::Q8A32, k);
      // Exactly sized (no slack), so a read past the last column's row shows under ASan.
      std::vector<uint8_t> act(ab * kCols);
      for (int c = 0; c < kCols; ++c) avx2.quantize_a32(X.data() + c * k, k, act.data() + c * ab);
      for (int64_t r = 0; r < m.rows; ++r) {
        INFO("type " << name_of(t) << " blocks " << nb << " row " << r);
        const uint8_t* w = m.data.data() + r * m.row_bytes;
        const float* wd = m.decoded.data() + r * k;
        float ys[kCols], yv[kCols];
        ds(k, w, act.data(), ab, kCols, ys);
        dv(k, w, act.data(), ab, kCols, yv);
        for (int c = 0; c < kCols; ++c) {
          const float* x = X.data() + c * k;
          double abs_wx = 0;
          for (int64_t i = 0; i < k; ++i) abs_wx += std::fabs(wd[i] * x[i]);
          REQUIRE(std::fabs(ys[c] - yv[c]) <= (k / 8 + 16) * std::ldexp(1.0, -23) * abs_wx);
          REQUIRE(std::fabs(yv[c] - dot_exact(wd, x, k)) <= dot_error_bound(t, wd, x, k));
        }
        for (int n = 1; n <= kCols; ++n) {  // n columns starting at column c0 = kCols - n
          float yn[kCols];
          const int c0 = kCols - n;
          dv(k, w, act.data() + c0 * ab, ab, n, yn);
          for (int c = 0; c < n; ++c) REQUIRE(yn[c] == yv[c0 + c]);
        }
      }
    }
  }
}

TEST_CASE("AVX512-VNNI and AVX2 tables give bit-identical results", "[quant][dot]") {
  // vpdpbusd computes the same exact integer sums as maddubs + madd (which never saturates on
  // these codes), and every float operation is the same: results must match bit for bit, for
  // every type, whole groups and tails, and 1..8 columns; matmul at prefill sizes too.
  if (!cpu_path_available(CpuPath::Avx512Vnni))
    VSYNTH_SKIP("no AVX512-VNNI on this CPU or build: nothing to compare");
  const auto& avx2 = detail::kernels_for(CpuPath::Avx2);
  const auto& vnni = detail::kernels_for(CpuPath::Avx512Vnni);
  REQUIRE(std::string(vnni.name) == "avx512vnni");
  constexpr int kCols = detail::kMaxCols;
  for (DType t : all_types()) {
    const detail::DotFn d2 = detail::type_kernels(avx2, t).dot,
                        dv = detail::type_kernels(vnni, t).dot;
    const detail::ActFormat f = detail::act_format(t);
    for (int64_t k : is_k_quant(t) ? std::vector<int64_t>{256, 2048}
                                   : std::vector<int64_t>{32, 224, 256, 640, 1056}) {
      const QuantMatrix m = make_matrix(t, 5, k, static_cast<uint32_t>(k));
      const std::vector<float> X = random_values(kCols * k, static_cast<uint32_t>(k + 1));
      const size_t ab =
          f == detail::ActFormat::F32 ? k * sizeof(float) : detail::act_row_bytes(f, k);
      std::vector<uint8_t> act(ab * kCols);
      for (int c = 0; c < kCols; ++c) {
        uint8_t* out = act.data() + c * ab;
        if (f == detail::ActFormat::Q8A32) {
          avx2.quantize_a32(X.data() + c * k, k, out);
        } else if (f == detail::ActFormat::Q8A256) {
          avx2.quantize_a256(X.data() + c * k, k, out);
        } else {
          std::memcpy(out, X.data() + c * k, ab);
        }
      }
      for (int64_t r = 0; r < m.rows; ++r) {
        const uint8_t* w = m.data.data() + r * m.row_bytes;
        for (int n = 1; n <= kCols; ++n) {
          INFO("type " << name_of(t) << " k " << k << " row " << r << " columns " << n);
          float y2[kCols], yv[kCols];
          d2(k, w, act.data(), ab, n, y2);
          dv(k, w, act.data(), ab, n, yv);
          REQUIRE(std::memcmp(y2, yv, sizeof(float) * static_cast<size_t>(n)) == 0);
        }
      }
    }
    const int64_t k = is_k_quant(t) ? 512 : 640;
    const QuantMatrix m = make_matrix(t, 40, k, 99);
    const int64_t n = 70;
    const std::vector<float> X = random_values(n * k, 98);
    std::vector<float> Y2(static_cast<size_t>(n * m.rows)), YV(Y2.size());
    {
      ScopedCpuPath scoped(CpuPath::Avx2);
      matmul(view_of(m), X.data(), n, Y2.data());
    }
    {
      ScopedCpuPath scoped(CpuPath::Avx512Vnni);
      matmul(view_of(m), X.data(), n, YV.data());
    }
    INFO("matmul, type " << name_of(t));
    REQUIRE(std::memcmp(Y2.data(), YV.data(), sizeof(float) * Y2.size()) == 0);
  }
}

TEST_CASE("matmul matches the reference and matvec for awkward token counts", "[quant][matmul]") {
  for (DType t : all_types()) {
    const int64_t k = is_k_quant(t) ? 512 : 96;
    const QuantMatrix m = make_matrix(t, 45, k, 1234);
    for (int64_t n : {2, 3, 5, 67, 130}) {  // 1..3 leftover tokens after groups of 4 and 64
      const std::vector<float> X = random_values(n * k, static_cast<uint32_t>(n));
      for (CpuPath path : available_paths()) {
        ScopedCpuPath scoped(path);
        INFO("type " << name_of(t) << " n " << n << " path " << to_string(path));
        std::vector<float> Y(static_cast<size_t>(n * m.rows), -12345.0f);
        matmul(view_of(m), X.data(), n, Y.data());
        std::vector<float> y(m.rows);
        for (int64_t tok = 0; tok < n; ++tok) {
          check_rows(m, X.data() + tok * k, Y.data() + tok * m.rows);
          // Token columns of a multi-column kernel are computed exactly like a single one.
          matvec(view_of(m), X.data() + tok * k, y.data());
          for (int64_t r = 0; r < m.rows; ++r) REQUIRE(Y[tok * m.rows + r] == y[r]);
        }
      }
    }
  }
}

TEST_CASE("matmul to per-token addresses writes each token's row where it is told",
          "[quant][matmul]") {
  for (DType t : {DType::Q8_0, DType::Q5_0, DType::Q4_K, DType::Q6_K, DType::F16}) {
    const int64_t k = is_k_quant(t) ? 256 : 64;
    const QuantMatrix m = make_matrix(t, 37, k, 99);
    for (int64_t n : {1, 3, 4, 9, 70}) {  // matvec, few-column kernels, tiles
      const std::vector<float> X = random_values(n * k, static_cast<uint32_t>(7 * n));
      std::vector<float> Y(static_cast<size_t>(n * m.rows));
      matmul(view_of(m), X.data(), n, Y.data());
      // Rows in reverse order with a guard gap between them: no row spills into another.
      const size_t stride = static_cast<size_t>(m.rows) + 5;
      std::vector<float> buf(static_cast<size_t>(n) * stride, -7.0f);
      std::vector<float*> out(static_cast<size_t>(n));
      for (int64_t tok = 0; tok < n; ++tok) {
        out[static_cast<size_t>(tok)] = buf.data() + static_cast<size_t>(n - 1 - tok) * stride;
      }
      matmul(view_of(m), X.data(), out);
      INFO("type " << name_of(t) << " n " << n);
      for (int64_t tok = 0; tok < n; ++tok) {
        const float* y = out[static_cast<size_t>(tok)];
        REQUIRE(std::memcmp(y, Y.data() + tok * m.rows, sizeof(float) * m.rows) == 0);
        for (size_t g = 0; g < 5; ++g) REQUIRE(y[m.rows + g] == -7.0f);
      }
    }
  }
  const QuantMatrix m = make_matrix(DType::Q8_0, 4, 32, 1);
  const std::vector<float> x(64, 1.0f);
  std::vector<float> y(4);
  std::vector<float*> bad = {y.data(), nullptr};
  REQUIRE_THROWS_WITH(matmul(view_of(m), x.data(), bad), Catch::Contains("null X or Y"));
}

TEST_CASE("threading: many rows, rows fewer than threads, 1 vs 2 threads", "[quant][matmul]") {
  for (DType t : {DType::Q8_0, DType::Q4_K, DType::F16}) {
    const int64_t k = is_k_quant(t) ? 256 : 64;
    // 20000 rows is enough for several parallel chunks; 1 row is fewer rows than threads.
    for (int64_t rows : {int64_t{1}, int64_t{3}, int64_t{20000}}) {
      const QuantMatrix m = make_matrix(t, rows, k, static_cast<uint32_t>(rows));
      const int64_t n = 9;
      const std::vector<float> X = random_values(n * k, 99);
      for (CpuPath path : available_paths()) {
        ScopedCpuPath scoped(path);
        INFO("type " << name_of(t) << " rows " << rows << " path " << to_string(path));
        std::vector<float> y1(rows), y2(rows), Y1(n * rows), Y2(n * rows);
        tbb::task_arena one(1), two(2);
        one.execute([&] {
          matvec(view_of(m), X.data(), y1.data());
          matmul(view_of(m), X.data(), n, Y1.data());
        });
        two.execute([&] {
          matvec(view_of(m), X.data(), y2.data());
          matmul(view_of(m), X.data(), n, Y2.data());
        });
        CHECK(y1 == y2);  // each row is one task's work either way: bit-identical
        CHECK(Y1 == Y2);
        check_rows(m, X.data(), y2.data());
        for (int64_t tok = 0; tok < n; ++tok)
          check_rows(m, X.data() + tok * k, Y2.data() + tok * rows);
      }
    }
  }
}

TEST_CASE("strided weight views", "[quant][matmul]") {
  // Rows padded to a larger stride, as a view into a wider buffer would be.
  const DType t = DType::Q5_0;
  const int64_t k = 64, rows = 7;
  const QuantMatrix m = make_matrix(t, rows, k, 5);
  const size_t stride = m.row_bytes + 10;
  std::vector<uint8_t> padded(stride * rows, 0xAB);
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(padded.data() + r * stride, m.data.data() + r * m.row_bytes, m.row_bytes);
  }
  WeightView w = view_of(m);
  w.data = padded.data();
  w.row_bytes = stride;
  const std::vector<float> x = random_values(k, 6);
  for (CpuPath path : available_paths()) {
    ScopedCpuPath scoped(path);
    std::vector<float> y(rows);
    matvec(w, x.data(), y.data());
    check_rows(m, x.data(), y.data());
  }
}

TEST_CASE("get_rows decodes embedding rows", "[quant][get_rows]") {
  for (DType t : all_types()) {
    const int64_t k = is_k_quant(t) ? 256 : 64;
    const QuantMatrix m = make_matrix(t, 10, k, 8);
    const std::vector<int32_t> ids = {3, 0, 9, 3};
    for (CpuPath path : available_paths()) {
      ScopedCpuPath scoped(path);
      std::vector<float> out(ids.size() * k);
      get_rows(view_of(m), ids.data(), static_cast<int64_t>(ids.size()), out.data());
      for (size_t i = 0; i < ids.size(); ++i) {
        for (int64_t j = 0; j < k; ++j) {
          REQUIRE(out[i * k + j] == m.decoded[ids[i] * k + j]);
        }
      }
    }
  }
}

TEST_CASE("bad views and arguments throw QuantError", "[quant][errors]") {
  const QuantMatrix m = make_matrix(DType::Q8_0, 4, 64, 1);
  const std::vector<float> x(64, 1.0f);
  std::vector<float> y(64);

  WeightView w = view_of(m);
  w.type = DType::Q4_1;
  CHECK_THROWS_WITH(matvec(w, x.data(), y.data()),
                    Catch::Contains("q4_1") && Catch::Contains("test.q8_0"));
  w = view_of(m);
  w.cols = 48;  // not a whole number of blocks
  CHECK_THROWS_WITH(matvec(w, x.data(), y.data()), Catch::Contains("multiple of 32"));
  w = view_of(m);
  w.row_bytes = 40;
  CHECK_THROWS_WITH(matvec(w, x.data(), y.data()), Catch::Contains("row_bytes"));
  w = view_of(m);
  w.data = nullptr;
  CHECK_THROWS_AS(matmul(w, x.data(), 1, y.data()), QuantError);
  w = view_of(m);
  w.data = m.data.data() + 1;  // odd address
  CHECK_THROWS_WITH(matvec(w, x.data(), y.data()), Catch::Contains("aligned"));
  CHECK_THROWS_AS(matmul(view_of(m), x.data(), -1, y.data()), QuantError);
  CHECK_THROWS_AS(matvec(view_of(m), nullptr, y.data()), QuantError);

  const std::vector<int32_t> bad = {0, 4};
  CHECK_THROWS_WITH(get_rows(view_of(m), bad.data(), 2, y.data()),
                    Catch::Contains("id 4") && Catch::Contains("position 1"));
  const std::vector<int32_t> neg = {-1};
  CHECK_THROWS_AS(get_rows(view_of(m), neg.data(), 1, y.data()), QuantError);
  CHECK_THROWS_AS(make_weight_view(DType::Q6_K, 1, 640, m.data.data()), QuantError);

  // Empty problems are no-ops.
  WeightView empty = view_of(m);
  empty.rows = 0;
  CHECK_NOTHROW(matvec(empty, x.data(), y.data()));
  CHECK_NOTHROW(matmul(view_of(m), x.data(), 0, y.data()));
}

TEST_CASE("CPU path selection from VSYNTH_CPU", "[quant][cpu]") {
  CHECK(choose_cpu_path("", true) == CpuPath::Avx2);
  CHECK(choose_cpu_path("", false) == CpuPath::Scalar);
  CHECK(choose_cpu_path("auto", true) == CpuPath::Avx2);
  CHECK(choose_cpu_path("scalar", true) == CpuPath::Scalar);
  CHECK(choose_cpu_path("avx2", true) == CpuPath::Avx2);
  CHECK_THROWS_WITH(choose_cpu_path("avx2", false), Catch::Contains("AVX2"));
  CHECK(choose_cpu_path("", true, true) == CpuPath::Avx512Vnni);
  CHECK(choose_cpu_path("auto", true, true) == CpuPath::Avx512Vnni);
  CHECK(choose_cpu_path("avx2", true, true) == CpuPath::Avx2);
  CHECK(choose_cpu_path("avx512vnni", true, true) == CpuPath::Avx512Vnni);
  CHECK_THROWS_WITH(choose_cpu_path("avx512vnni", true, false), Catch::Contains("AVX512"));
  CHECK(to_string(CpuPath::Avx512Vnni) == "avx512vnni");
  CHECK_THROWS_WITH(choose_cpu_path("sse9", true),
                    Catch::Contains("sse9") && Catch::Contains("scalar"));
  CHECK(cpu_path_available(CpuPath::Scalar));
  // The process-wide choice honours the variable this test run was started with.
  const char* env = std::getenv("VSYNTH_CPU");
  if (env != nullptr && std::string(env) == "scalar") {
    CHECK(active_cpu_path() == CpuPath::Scalar);
  }
}

TEST_CASE("512-bit row pairs from VSYNTH_ZMM_PAIRS", "[quant][cpu]") {
  CHECK(choose_zmm_pairs("", true));
  CHECK_FALSE(choose_zmm_pairs("", false));
  CHECK(choose_zmm_pairs("auto", true));
  CHECK_FALSE(choose_zmm_pairs("auto", false));
  CHECK(choose_zmm_pairs("1", false));
  CHECK_FALSE(choose_zmm_pairs("0", true));
  CHECK_THROWS_WITH(choose_zmm_pairs("yes", true),
                    Catch::Contains("VSYNTH_ZMM_PAIRS") && Catch::Contains("'yes'"));
  // The process-wide choice honours the variable this test run was started with.
  const char* env = std::getenv("VSYNTH_ZMM_PAIRS");
  const std::string value = env != nullptr ? env : "";
  if (value == "0" || value == "1") CHECK(zmm_pairs_enabled() == (value == "1"));
  if (value.empty()) CHECK(zmm_pairs_enabled() == cpu_full_width_512());
}
