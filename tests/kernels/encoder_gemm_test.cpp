// The encoder's F32 kernels (kernels/encoder/gemm.h): the packed GEMM against a float64
// reference on shapes with partial panels and token tiles, its bytes independent of the token
// range a call covers and of the CPU path, the transposed packing, and the GELU's erf
// approximation against std::erf.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/cpu_path.h"
#include "kernels/encoder/gemm.h"

using namespace vsynth::kernels;
using namespace vsynth::kernels::encoder_detail;

namespace {

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// A call of gemm on tokens [t0, t1) of X [n, ldx] into Y [n, ldy], Y pre-filled with a marker.
struct Case {
  int64_t rows, cols, n;
  size_t ldx, ldy;
  std::vector<float> w, x, bias;
  Panels p;
  Case(int64_t r, int64_t c, int64_t tokens, uint32_t seed)
      : rows(r),
        cols(c),
        n(tokens),
        ldx(size_t(c + 3)),
        ldy(size_t(r + 5)),
        w(random_floats(size_t(r * c), seed)),
        x(random_floats(size_t(tokens) * ldx, seed + 1)),
        bias(random_floats(size_t(r), seed + 2)),
        p(pack_panels(w.data(), r, c, c)) {}
  std::vector<float> run(const std::vector<std::pair<int64_t, int64_t>>& ranges) const {
    std::vector<float> y(size_t(n) * ldy, -7.0f);
    for (const auto& [t0, t1] : ranges) gemm(p, x.data(), ldx, t0, t1, y.data(), ldy, bias.data());
    return y;
  }
};

struct RestorePath {
  CpuPath was = active_cpu_path();
  ~RestorePath() { set_cpu_path(was); }
};

}  // namespace

TEST_CASE("encoder gemm: matches a float64 reference, partial panels and token tiles included",
          "[encoder]") {
  for (const auto& [rows, cols, n] : {std::tuple{37, 53, 13}, std::tuple{16, 1, 1},
                                      std::tuple{48, 384, 6}, std::tuple{5, 7, 20}}) {
    INFO(rows << " x " << cols << ", " << n << " tokens");
    const Case c(rows, cols, n, 11);
    const auto y = c.run({{0, n}});
    double worst = 0.0;
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t r = 0; r < rows; ++r) {
        double ref = c.bias[size_t(r)];
        for (int64_t k = 0; k < cols; ++k) {
          ref += double(c.x[size_t(t) * c.ldx + size_t(k)]) * c.w[size_t(r * cols + k)];
        }
        worst = std::max(worst, std::abs(y[size_t(t) * c.ldy + size_t(r)] - ref));
      }
      // The padding between rows of Y is never written.
      for (size_t r = size_t(rows); r < c.ldy; ++r) CHECK(y[size_t(t) * c.ldy + r] == -7.0f);
    }
    CHECK(worst < 1e-5 * std::sqrt(double(cols)));
  }
}

TEST_CASE("encoder gemm: a token's row does not depend on the range of the call or the CPU path",
          "[encoder]") {
  const Case c(40, 70, 23, 5);
  const auto whole = c.run({{0, 23}});
  CHECK(c.run({{0, 1}, {1, 8}, {8, 9}, {9, 23}}) == whole);
  CHECK(c.run({{17, 23}, {0, 5}, {5, 17}}) == whole);
  // The portable path runs the same FMA chains (std::fma) as the AVX2 one.
  if (cpu_path_available(CpuPath::Avx2)) {
    RestorePath restore;
    set_cpu_path(CpuPath::Scalar);
    const auto scalar = c.run({{0, 23}});
    set_cpu_path(CpuPath::Avx2);
    CHECK(c.run({{0, 23}}) == scalar);
  }
}

TEST_CASE("encoder gemm: transposed packing multiplies by W^T", "[encoder]") {
  // V [keys = 9, dim = 20] (row stride 24) as the [20, 9] weight the attention's P V needs.
  const int64_t keys = 9, dim = 20, ld = 24;
  const auto v = random_floats(size_t(keys * ld), 3);
  const auto probs = random_floats(size_t(4 * keys), 4);
  Panels p;
  pack_panels_transposed(p, v.data(), dim, keys, ld);
  std::vector<float> out(size_t(4 * dim));
  gemm(p, probs.data(), size_t(keys), 0, 4, out.data(), size_t(dim), nullptr);
  for (int64_t t = 0; t < 4; ++t) {
    for (int64_t c = 0; c < dim; ++c) {
      double ref = 0.0;
      for (int64_t j = 0; j < keys; ++j)
        ref += double(probs[size_t(t * keys + j)]) * v[size_t(j * ld + c)];
      CHECK(std::abs(out[size_t(t * dim + c)] - ref) < 1e-5);
    }
  }
}

TEST_CASE("encoder gelu: the erf approximation is within 1e-6 of std::erf's GELU", "[encoder]") {
  std::vector<float> x;
  for (int i = -20000; i <= 20000; ++i) x.push_back(float(i) * 0.0005f);  // [-10, 10]
  for (const float s : {1e-30f, 1e-7f, 30.0f, 1e4f, 3e38f}) {
    x.push_back(s);
    x.push_back(-s);
  }
  x.push_back(0.0f);
  auto y = x;
  gelu_erf(y.data(), int64_t(y.size()));
  double worst = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double ref = 0.5 * double(x[i]) * (1.0 + std::erf(double(x[i]) / std::sqrt(2.0)));
    worst = std::max(worst, std::abs(y[i] - ref) / std::max(1.0, std::abs(ref)));
  }
  WARN("GELU (erf approximation) vs std::erf in double: worst error " << worst);
  CHECK(worst < 1e-6);
  // Tails (n % 8 != 0) and the portable path give the same bytes.
  if (cpu_path_available(CpuPath::Avx2)) {
    RestorePath restore;
    auto t = x;
    set_cpu_path(CpuPath::Scalar);
    gelu_erf(t.data(), 13);
    gelu_erf(t.data() + 13, int64_t(t.size()) - 13);
    CHECK(t == y);
  }
}
