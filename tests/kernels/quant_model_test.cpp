// The kernels on the default model's real weight tensors (Q8_0, Q5_0, Q4_K, Q6_K in
// gemma-3-270m-q4_k_m.gguf). Fails without the model, unless VSYNTH_ALLOW_MISSING_MODEL=1
// makes it a skip (tests/test_skip.h).
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "kernels/cpu/matvec.h"
#include "kernels/gguf/reader.h"
#include "tests/kernels/quant_test_util.h"
#include "tests/test_skip.h"

using namespace vsynth::kernels;
using namespace vsynth::kernels::test;

TEST_CASE("model weights: decode plausibly and matvec within bounds", "[quant][model]") {
  if (!vsynth::test::have_default_model()) return;
  const std::filesystem::path path = vsynth::test::default_model();
  const GgufFile f = GgufFile::open(path);
  std::set<std::string> seen_types;
  int checked = 0;
  for (const GgufTensor& t : f.tensors()) {
    if (t.n_dims != 2) continue;  // norms are 1-D F32
    // One tensor of each (name kind, type) is enough: layers share layouts.
    const std::string name(t.name);
    const std::string kind = name.rfind("blk.", 0) == 0 ? name.substr(name.find('.', 4) + 1) : name;
    if (!seen_types.insert(kind + "/" + std::string(t.type.name)).second) continue;
    INFO("tensor " << name << " (" << t.type.name << ")");
    REQUIRE(quant_supported(t.dtype()));

    const int64_t cols = static_cast<int64_t>(t.ne[0]);
    const int64_t rows = static_cast<int64_t>(t.n_rows());
    // At most 256 rows, taken from the middle of the tensor (token_embd has 262144).
    const int64_t take = std::min<int64_t>(rows, 256);
    const int64_t first = (rows - take) / 2;
    WeightView w{t.dtype(),
                 take,
                 cols,
                 t.data.data() + first * t.row_bytes(),
                 static_cast<size_t>(t.row_bytes()),
                 t.name};

    // Decoded weights: finite, modest, and centred (a misread scale, min or bit plane shows up
    // as huge values or a large offset of the whole row).
    std::vector<float> decoded(static_cast<size_t>(take * cols));
    std::vector<int32_t> ids(static_cast<size_t>(take));
    for (int64_t r = 0; r < take; ++r) ids[static_cast<size_t>(r)] = static_cast<int32_t>(r);
    get_rows(w, ids.data(), take, decoded.data());
    double sum = 0, sum2 = 0, amax = 0;
    for (float v : decoded) {
      REQUIRE(std::isfinite(v));
      sum += v;
      sum2 += static_cast<double>(v) * v;
      amax = std::max(amax, std::fabs(static_cast<double>(v)));
    }
    const double n = static_cast<double>(decoded.size());
    const double mean = sum / n, rms = std::sqrt(sum2 / n);
    INFO("mean " << mean << " rms " << rms << " max|w| " << amax);
    CHECK(rms > 1e-3);
    CHECK(rms < 1.0);
    CHECK(amax < 64.0);
    CHECK(std::fabs(mean) < 0.2 * rms);

    const std::vector<float> x = random_values(cols, 17);
    for (CpuPath p : available_paths()) {
      ScopedCpuPath scoped(p);
      INFO("path " << to_string(p));
      std::vector<float> y(static_cast<size_t>(take));
      matvec(w, x.data(), y.data());
      for (int64_t r = 0; r < take; ++r) {
        const float* wr = decoded.data() + r * cols;
        const double err = std::fabs(y[static_cast<size_t>(r)] - dot_exact(wr, x.data(), cols));
        REQUIRE(err <= dot_error_bound(t.dtype(), wr, x.data(), cols));
      }
    }
    ++checked;
  }
  // token_embd, attn_q/k/v/output, ffn_gate/up/down across q8_0, q5_0, q4_K, q6_K.
  CHECK(checked >= 10);
}
