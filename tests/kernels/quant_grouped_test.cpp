// Grouped Q8_0 and Q5_0 weight rows (kernels/cpu/grouped.h): the layout holds the plain row's
// values, and matvec / matmul (the grouped kernels below kUnpackMinTokens tokens, unpacked tiles
// from it) / get_rows on grouped rows give the plain rows' bits, on every SIMD path, for every
// tail of a group, one or two threads, and row slices (the engine's decode cuts weights into row
// slices).
#include <catch2/catch.hpp>

#include <tbb/task_arena.h>

#include <cstring>
#include <memory>
#include <vector>

#include "kernels/cpu/cpu_path_internal.h"
#include "kernels/cpu/grouped.h"
#include "kernels/cpu/matvec.h"
#include "kernels/quant/kernel_table.h"
#include "kernels/quant/quant_error.h"
#include "tests/kernels/quant_test_util.h"
#include "tests/test_skip.h"

using namespace vsynth::kernels;
using namespace vsynth::kernels::test;

namespace {

WeightView plain_view(const QuantMatrix& m) {
  return make_weight_view(m.type, m.rows, m.cols, m.data.data(), m.name);
}

std::vector<CpuPath> simd_paths() {
  std::vector<CpuPath> out;
  for (CpuPath p : available_paths()) {
    if (detail::type_kernels(detail::kernels_for(p), DType::Q8_0).grouped.dot != nullptr)
      out.push_back(p);
  }
  return out;
}

const DType kGroupedTypes[] = {DType::Q8_0, DType::Q5_0};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), sizeof(float) * a.size()) == 0;
}

}  // namespace

TEST_CASE("grouped q8_0 and q5_0 rows decode to the plain rows' values", "[quant][grouped]") {
  const auto paths = simd_paths();
  if (paths.empty())
    VSYNTH_SKIP("no SIMD path on this CPU: the scalar table has no grouped kernel");
  ScopedCpuPath scoped(paths.front());
  // Block counts: every tail of a group (1..9), a 4-block tail after whole groups (12, 20:
  // k = 640), 13, and 64 (k = 2048).
  for (DType type : kGroupedTypes)
    for (int64_t nb : {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 20, 64}) {
      INFO(dtype_info(type)->name << " blocks " << nb);
      const int64_t k = 32 * nb, rows = 5;
      const QuantMatrix m = make_matrix(type, rows, k, static_cast<uint32_t>(nb + 11));
      const GroupedWeight g = group_weight(plain_view(m));
      CHECK(g.view.layout == WeightLayout::Grouped);
      const int64_t nbp = nb % 8 == 4 ? nb : (nb + 7) / 8 * 8;
      CHECK(g.view.row_bytes == static_cast<size_t>((type == DType::Q8_0 ? 34 : 22) * nbp));
      std::vector<int32_t> ids = {4, 0, 3, 1, 2, 2};
      std::vector<float> want(ids.size() * k), got(ids.size() * k);
      get_rows(plain_view(m), ids.data(), static_cast<int64_t>(ids.size()), want.data());
      get_rows(g.view, ids.data(), static_cast<int64_t>(ids.size()), got.data());
      REQUIRE(same_bits(got, want));
    }
}

TEST_CASE("matvec and matmul on grouped q8_0 and q5_0 rows give the plain rows' bits",
          "[quant][grouped][matmul]") {
  const auto paths = simd_paths();
  if (paths.empty())
    VSYNTH_SKIP("no SIMD path on this CPU: the scalar table has no grouped kernel");
  const std::vector<int64_t> token_counts = {2, 3, 4, 5, 8, 9, 16, 17, 33, 64, 65};
  for (DType type : kGroupedTypes)
    for (int64_t nb : {1, 3, 4, 8, 12, 13, 20, 64}) {
      const int64_t k = 32 * nb, rows = 45;
      const QuantMatrix m = make_matrix(type, rows, k, static_cast<uint32_t>(nb * 7 + 1));
      const std::vector<float> X = random_values(65 * k, static_cast<uint32_t>(nb + 99));
      for (CpuPath path : paths) {
        ScopedCpuPath scoped(path);
        const GroupedWeight g = group_weight(plain_view(m));
        // One token: matvec, and a row slice as the engine's decode groups take them.
        std::vector<float> ref(static_cast<size_t>(65 * rows));
        for (int64_t t = 0; t < 65; ++t) {
          matvec(plain_view(m), X.data() + t * k, ref.data() + t * rows);
        }
        std::vector<float> y(static_cast<size_t>(rows));
        for (int64_t t = 0; t < 65; t += 16) {
          INFO(dtype_info(type)->name << " path " << to_string(path) << " blocks " << nb
                                      << " token " << t);
          matvec(g.view, X.data() + t * k, y.data());
          REQUIRE(std::memcmp(y.data(), ref.data() + t * rows, sizeof(float) * y.size()) == 0);
        }
        WeightView slice = g.view;
        slice.rows = 7;
        slice.data = static_cast<const std::byte*>(g.view.data) + 30 * g.view.row_bytes;
        std::vector<float> ys(7);
        matvec(slice, X.data(), ys.data());
        REQUIRE(std::memcmp(ys.data(), ref.data() + 30, sizeof(float) * 7) == 0);
        // Many tokens: matmul, serially and on two threads.
        for (int64_t n : token_counts) {
          INFO(dtype_info(type)->name << " path " << to_string(path) << " blocks " << nb
                                      << " tokens " << n);
          std::vector<float> Y(static_cast<size_t>(n * rows), -1.0f);
          matmul(g.view, X.data(), n, Y.data());
          REQUIRE(std::memcmp(Y.data(), ref.data(), sizeof(float) * Y.size()) == 0);
        }
        std::vector<float> Y2(static_cast<size_t>(65 * rows));
        tbb::task_arena two(2);
        two.execute([&] { matmul(g.view, X.data(), 65, Y2.data()); });
        REQUIRE(same_bits(Y2, ref));
      }
    }
}

TEST_CASE("grouping refuses what it cannot group, and the grouped layout needs its kernel",
          "[quant][grouped][errors]") {
  const QuantMatrix q4 = make_matrix(DType::Q4_0, 3, 64, 5);
  const QuantMatrix q8 = make_matrix(DType::Q8_0, 3, 64, 6);
  {
    ScopedCpuPath scalar(CpuPath::Scalar);
    CHECK_FALSE(grouping_available(DType::Q8_0));
    CHECK_FALSE(grouping_available(DType::Q5_0));
    CHECK_THROWS_AS(group_weight(plain_view(q8)), QuantError);
  }
  const auto paths = simd_paths();
  if (paths.empty())
    VSYNTH_SKIP("no SIMD path on this CPU: the scalar table has no grouped kernel");
  ScopedCpuPath scoped(paths.front());
  CHECK_FALSE(grouping_available(DType::Q4_0));
  CHECK_THROWS_WITH(group_weight(plain_view(q4)),
                    Catch::Contains("not a plain q8_0 or q5_0 matrix"));
  const GroupedWeight g = group_weight(plain_view(q8));
  CHECK_THROWS_AS(group_weight(g.view), QuantError);  // already grouped
  WeightView wrong = g.view;
  wrong.type = DType::Q4_0;  // a grouped layout on another type
  std::vector<float> x(64, 1.0f), y(3);
  CHECK_THROWS_WITH(matvec(wrong, x.data(), y.data()), Catch::Contains("grouped layout"));
  // The scalar path cannot run grouped rows made under a SIMD one: a clear error, not garbage.
  ScopedCpuPath scalar(CpuPath::Scalar);
  CHECK_THROWS_WITH(matvec(g.view, x.data(), y.data()), Catch::Contains("CPU path scalar"));
}

// Both forms over many rows: dot_*_grouped_rows (one row at a time) and, on the VNNI table,
// dot_*_grouped_pairs (two rows per 512-bit vector, matmul's choice for 3-8 tokens where the CPU
// runs 512-bit vectors at full width; tested wherever the CPU has the table, whatever it would
// choose).
TEST_CASE("grouped q8_0 and q5_0: one call over many rows gives each row's own call's bits",
          "[quant][grouped]") {
  const auto paths = simd_paths();
  if (paths.empty())
    VSYNTH_SKIP("no SIMD path on this CPU: the scalar table has no grouped kernel");
  for (const DType t : {DType::Q8_0, DType::Q5_0}) {
    const detail::Grouped& g =
        detail::type_kernels(detail::kernels_for(CpuPath::Scalar), t).grouped;
    CHECK(g.dot_rows == nullptr);
    CHECK(g.dot_pairs == nullptr);
  }
  int pair_tables = 0;
  for (CpuPath path : paths)
    for (DType type : kGroupedTypes)
      for (bool pairs : {false, true}) {
        const auto& kt = detail::kernels_for(path);
        const detail::Grouped& gk = detail::type_kernels(kt, type).grouped;
        const detail::DotFn dot = gk.dot;
        const detail::DotRowsFn dot_rows = pairs ? gk.dot_pairs : gk.dot_rows;
        REQUIRE(dot != nullptr);
        // The pair kernels are the VNNI table's alone.
        CHECK((pairs && path != CpuPath::Avx512Vnni) == (dot_rows == nullptr));
        if (dot_rows == nullptr) continue;
        pair_tables += pairs ? 1 : 0;
        ScopedCpuPath scoped(path);
        // k = 128 (a 4-block row), 256 (one whole group), 416 (a group and a 5-block tail), 640
        // (two groups and the 4-block tail: the default model's output projection and q / k /
        // gate / up), 768 (three whole groups).
        for (int64_t nb : {4, 8, 13, 20, 24}) {
          const int64_t k = 32 * nb, rows = 37;
          const QuantMatrix m = make_matrix(type, rows, k, static_cast<uint32_t>(3 * nb + 2));
          const GroupedWeight g = group_weight(plain_view(m));
          const auto* w = static_cast<const std::byte*>(g.view.data);
          // 16 interleaved activation columns, 64-byte aligned as matmul lays them out.
          const size_t ab = detail::act_row_bytes_a32il(k);
          std::vector<std::byte> buf(16 * ab + 64);
          void* p = buf.data();
          size_t space = buf.size();
          auto* act = static_cast<std::byte*>(std::align(64, 16 * ab, p, space));
          const std::vector<float> X = random_values(16 * k, static_cast<uint32_t>(nb + 5));
          for (int c = 0; c < 16; ++c) kt.quantize_a32il(X.data() + c * k, k, act + c * ab);
          for (int ncols = 1; ncols <= 16; ++ncols) {
            INFO(dtype_info(type)->name << " path " << to_string(path) << (pairs ? " pairs" : "")
                                        << " blocks " << nb << " columns " << ncols);
            // y_stride rows + 3: the rows kernel writes column c at c * y_stride and nothing
            // between.
            const size_t stride = rows + 3;
            std::vector<float> want(ncols * stride, -1.0f), got(ncols * stride, -1.0f);
            for (int64_t r = 0; r < rows; ++r) {
              float col[16];
              dot(k, w + r * g.view.row_bytes, act, ab, ncols, col);
              for (int c = 0; c < ncols; ++c) want[c * stride + r] = col[c];
            }
            dot_rows(k, w, g.view.row_bytes, rows, act, ab, ncols, got.data(), stride);
            REQUIRE(same_bits(got, want));
            // Shorter runs give the same rows' bits: the first 1, 2, 3, 6 and 7 rows alone.
            for (int64_t n : {1, 2, 3, 6, 7}) {
              std::vector<float> part(ncols * stride, -1.0f), part_want(ncols * stride, -1.0f);
              for (int c = 0; c < ncols; ++c) {
                for (int64_t r = 0; r < n; ++r) part_want[c * stride + r] = want[c * stride + r];
              }
              dot_rows(k, w, g.view.row_bytes, n, act, ab, ncols, part.data(), stride);
              INFO("rows " << n);
              REQUIRE(same_bits(part, part_want));
            }
          }
        }
      }
  if (cpu_path_available(CpuPath::Avx512Vnni)) CHECK(pair_tables == 2);
}

TEST_CASE("VSYNTH_GROUPED picks the regrouped types, and a bad value is a clear error",
          "[quant][grouped]") {
  for (DType t : kGroupedTypes) {
    CHECK(grouping_wanted("", t));
    CHECK(grouping_wanted("1", t));
    CHECK_FALSE(grouping_wanted("0", t));
  }
  CHECK(grouping_wanted("q8_0", DType::Q8_0));
  CHECK_FALSE(grouping_wanted("q8_0", DType::Q5_0));
  CHECK(grouping_wanted("q5_0", DType::Q5_0));
  CHECK_FALSE(grouping_wanted("q5_0", DType::Q8_0));
  // A typo used to turn grouping off silently (no type matched it), skewing an A/B run.
  for (const char* bad : {"Q8_0", "yes", "q4_k", "q8_0,q5_0"}) {
    INFO(bad);
    CHECK_THROWS_WITH(grouping_wanted(bad, DType::Q8_0), Catch::Contains("VSYNTH_GROUPED") &&
                                                             Catch::Contains(bad) &&
                                                             Catch::Contains("q5_0"));
  }
}
