// Each CUDA op against the CPU reference on fresh random inputs (label gpu): relative error
// bounds, outputs poisoned with NaN before the call so a skipped element fails.
#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>

#include "kernels/cpu/matvec.h"
#include "kernels/cpu/vec_kernels.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/memory.h"
#include "kernels/cuda/ops.h"
#include "kernels/model/rope.h"
#include "kernels/quant/fp16.h"
#include "kernels/quant/quantize.h"
#include "tests/cuda/cuda_test_util.h"

namespace vsynth::kernels::cuda {

using test::Dev;
using test::have_gpu;
using test::rel_err;

namespace {

const DType kTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q4_0, DType::Q5_0,
                        DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K};

// A random weight matrix quantized on the host, its exact decoded values, and a device copy.
struct TestWeight {
  std::vector<std::byte> bytes;
  std::vector<float> decoded;  // [rows][cols]
  DeviceWeight dw;
  WeightView hv;
  std::unique_ptr<Dev<std::byte>> dev;
  TestWeight(DType t, int64_t rows, int64_t cols, std::mt19937& rng) {
    const size_t rb = row_size(t, cols);
    bytes.resize(rb * static_cast<size_t>(rows));
    decoded.resize(static_cast<size_t>(rows * cols));
    for (int64_t r = 0; r < rows; ++r) {
      const std::vector<float> v = test::uniform(static_cast<size_t>(cols), rng);
      quantize_row(t, v.data(), cols, bytes.data() + static_cast<size_t>(r) * rb);
      dequantize_row(t, bytes.data() + static_cast<size_t>(r) * rb,
                     decoded.data() + static_cast<size_t>(r * cols), cols);
    }
    dev = std::make_unique<Dev<std::byte>>(bytes);
    dw = DeviceWeight{t, rows, cols, dev->get(), rb};
    hv = make_weight_view(t, rows, cols, bytes.data());
  }
};

// y[i][r] = sum_c W[r][c] x[i][c] in double.
std::vector<double> ref_linear(const TestWeight& w, const std::vector<float>& x, int m) {
  std::vector<double> y(static_cast<size_t>(m * w.dw.rows));
  for (int i = 0; i < m; ++i) {
    for (int64_t r = 0; r < w.dw.rows; ++r) {
      double s = 0;
      for (int64_t c = 0; c < w.dw.cols; ++c) {
        s += static_cast<double>(w.decoded[static_cast<size_t>(r * w.dw.cols + c)]) *
             x[static_cast<size_t>(i * w.dw.cols + c)];
      }
      y[static_cast<size_t>(i * w.dw.rows + r)] = s;
    }
  }
  return y;
}

}  // namespace

TEST_CASE("cuda: gemv matches the exact product and the CPU matvec for every type", "[gpu]") {
  if (!have_gpu()) return;
  const uint32_t seed = test::fresh_seed();
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  for (DType t : kTypes) {
    INFO("type " << static_cast<int>(t));
    TestWeight w(t, 200, 768, rng);
    for (int m : {1, 3, 8}) {
      INFO("rows " << m);
      const std::vector<float> x = test::uniform(static_cast<size_t>(m * 768), rng);
      Dev<float> dx(x);
      Dev<std::byte> dq(q8_bytes(768, m));
      Dev<float> dy(static_cast<size_t>(m * 200));
      quantize_q8(dx.get(), m, 768, dq.get(), nullptr);
      gemv(w.dw, dx.get(), dq.get(), m, dy.get(), nullptr);
      const std::vector<float> y = dy.host();
      // Quantized types quantize the activations to int8 (one part in ~250 per element).
      const bool quant = t != DType::F32 && t != DType::F16 && t != DType::BF16;
      CHECK(rel_err(y, ref_linear(w, x, m)) < (quant ? 2e-2 : 1e-2));
      std::vector<float> cpu(static_cast<size_t>(m * 200));
      matmul(w.hv, x.data(), m, cpu.data());
      // The CPU quantizes K-quant activations per 256 (we use 32) and does not round float-type
      // inputs (the engine does, before matmul; gemv does it inside).
      CHECK(rel_err(y, cpu) < (quant ? 2e-2 : 2e-3));
    }
  }
}

TEST_CASE("cuda: prefill GEMM (fp16 tensor cores on dequantized slabs) matches", "[gpu]") {
  if (!have_gpu()) return;
  const uint32_t seed = test::fresh_seed();
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  DeviceArena arena(size_t{256} << 20, "test");
  // A slab of 100 rows forces several slabs per weight.
  Gemm gemm(arena, 100 * 512, 64 * 512);
  Stream stream;
  for (DType t : {DType::Q4_K, DType::Q8_0, DType::F16, DType::Q6_K}) {
    INFO("type " << static_cast<int>(t));
    TestWeight w(t, 333, 512, rng);
    const int m = 37;
    const std::vector<float> x = test::uniform(static_cast<size_t>(m * 512), rng);
    Dev<float> dx(x), dy(static_cast<size_t>(m * 333));
    gemm.run(w.dw, dx.get(), m, dy.get(), stream.get());
    stream.synchronize();
    CHECK(rel_err(dy.host(), ref_linear(w, x, m)) < 5e-3);
  }
}

TEST_CASE("cuda: get_rows and fp16 dequantization decode every type exactly", "[gpu]") {
  if (!have_gpu()) return;
  std::mt19937 rng(test::fresh_seed());
  for (DType t : kTypes) {
    INFO("type " << static_cast<int>(t));
    TestWeight w(t, 50, 512, rng);
    const std::vector<int32_t> ids = {7, 0, 49, 7, 23};
    Dev<int32_t> did(ids);
    Dev<float> out(ids.size() * 512);
    get_rows(w.dw, did.get(), static_cast<int>(ids.size()), 2.0f, out.get(), nullptr);
    std::vector<double> ref(ids.size() * 512);
    for (size_t i = 0; i < ids.size(); ++i) {
      for (size_t c = 0; c < 512; ++c) {
        ref[i * 512 + c] = 2.0 * w.decoded[static_cast<size_t>(ids[i]) * 512 + c];
      }
    }
    CHECK(rel_err(out.host(), ref) < 1e-6);
    Dev<uint16_t> h(10 * 512);
    dequantize_f16(w.dw, 20, 10, h.get(), nullptr);
    const std::vector<uint16_t> hh = h.host();
    std::vector<float> hf(hh.size());
    for (size_t i = 0; i < hh.size(); ++i) hf[i] = fp16_to_fp32(hh[i]);
    const std::vector<float> exp(w.decoded.begin() + 20 * 512, w.decoded.begin() + 30 * 512);
    CHECK(rel_err(hf, exp) < 1e-3);
  }
}

TEST_CASE("cuda: RMSNorm, fused residual add + norm, bias", "[gpu]") {
  if (!have_gpu()) return;
  std::mt19937 rng(test::fresh_seed());
  const int rows = 5, n = 640;
  const auto x = test::uniform(rows * n, rng, -3, 3), o = test::uniform(rows * n, rng);
  const auto w1 = test::uniform(n, rng, 0.5, 1.5), w2 = test::uniform(n, rng, 0.5, 1.5);
  const auto norm = [&](const std::vector<double>& v, int r, const std::vector<float>& w) {
    double ss = 0;
    for (int i = 0; i < n; ++i)
      ss += v[static_cast<size_t>(r * n + i)] * v[static_cast<size_t>(r * n + i)];
    const double sc = 1.0 / std::sqrt(ss / n + 1e-6);
    std::vector<double> y(n);
    for (int i = 0; i < n; ++i)
      y[static_cast<size_t>(i)] =
          v[static_cast<size_t>(r * n + i)] * sc * w[static_cast<size_t>(i)];
    return y;
  };
  Dev<float> dx(x), dy(rows * n), dw1(w1), dw2(w2), dov(o), dh(rows * n);
  rms_norm(dx.get(), dw1.get(), dy.get(), rows, n, 1e-6f, nullptr);
  std::vector<double> ref_y, ref_x, ref_h;
  const std::vector<double> xd(x.begin(), x.end()), od(o.begin(), o.end());
  std::vector<double> xnew(xd);
  for (int r = 0; r < rows; ++r) {
    const auto y = norm(xd, r, w1);
    ref_y.insert(ref_y.end(), y.begin(), y.end());
    const auto po = norm(od, r, w1);
    for (int i = 0; i < n; ++i) xnew[static_cast<size_t>(r * n + i)] += po[static_cast<size_t>(i)];
  }
  CHECK(rel_err(dy.host(), ref_y) < 1e-5);
  add_rms_norm(dx.get(), dov.get(), dw1.get(), dw2.get(), dh.get(), rows, n, 1e-6f, nullptr);
  for (int r = 0; r < rows; ++r) {
    const auto hh = norm(xnew, r, w2);
    ref_h.insert(ref_h.end(), hh.begin(), hh.end());
  }
  CHECK(rel_err(dx.host(), xnew) < 1e-5);
  CHECK(rel_err(dh.host(), ref_h) < 1e-5);
  // Without the post norm: a plain residual add.
  Dev<float> dx2(x);
  add_rms_norm(dx2.get(), dov.get(), nullptr, dw2.get(), dh.get(), rows, n, 1e-6f, nullptr);
  std::vector<double> plain(xd);
  for (size_t i = 0; i < plain.size(); ++i) plain[i] += od[i];
  CHECK(rel_err(dx2.host(), plain) < 1e-6);
  add_bias(dx2.get(), dw1.get(), rows, n, nullptr);
  for (size_t i = 0; i < plain.size(); ++i) plain[i] += w1[i % n];
  CHECK(rel_err(dx2.host(), plain) < 1e-6);
}

TEST_CASE("cuda: RoPE NORM and NEOX match kernels/model/rope", "[gpu]") {
  if (!have_gpu()) return;
  std::mt19937 rng(test::fresh_seed());
  for (RopeKind kind : {RopeKind::Norm, RopeKind::Neox}) {
    const int m = 6, heads = 3, hd = 128;
    auto x = test::uniform(m * heads * hd, rng);
    const std::vector<int32_t> pos = {0, 1, 2, 517, 4000, 31999};
    Dev<float> dx(x);
    Dev<int32_t> dp(pos);
    RopeParams p{kind, hd, 1e6f, 1.0f};
    rope(dx.get(), dp.get(), m, heads, hd, p, 0.5f, nullptr);
    const Rope cpu(kind, hd, 1e6f, 1.0f);
    std::vector<float> cs, sn;
    for (int i = 0; i < m; ++i) {
      cpu.angles(pos[static_cast<size_t>(i)], 1, cs, sn);
      cpu.apply(x.data() + static_cast<size_t>(i * heads * hd), 1, heads, hd, cs, sn);
    }
    for (auto& v : x) v *= 0.5f;
    CHECK(rel_err(dx.host(), x) < 2e-5);
  }
}

TEST_CASE("cuda: gated activations match the CPU's GELU table and SiLU", "[gpu]") {
  if (!have_gpu()) return;
  std::mt19937 rng(test::fresh_seed());
  const int n = 100000;
  for (FfnActivation act : {FfnActivation::GeluTanh, FfnActivation::Silu}) {
    auto g = test::uniform(n, rng, -12, 12);
    const auto u = test::uniform(n, rng);
    Dev<float> dg(g), du(u);
    gated_act(dg.get(), du.get(), n, act, nullptr);
    const auto& vk = vec::vec_kernels_scalar();
    (act == FfnActivation::GeluTanh ? vk.gelu_mul : vk.silu_mul)(g.data(), u.data(), n);
    // GELU: tanhf may differ by an ulp between host and device, which can move the fp16
    // rounding of the table entry by one step (2^-11 relative).
    CHECK(rel_err(dg.host(), g) < 1e-3);
  }
}

namespace {

// Attention in double over explicit K/V rows [pos][kv head][hd], as the CPU engine defines it.
std::vector<double> ref_attention(const std::vector<float>& q, const std::vector<float>& K,
                                  const std::vector<float>& V, const std::vector<int32_t>& pos,
                                  int H, int Hkv, int hd, int window) {
  std::vector<double> out(q.size());
  for (size_t r = 0; r < pos.size(); ++r) {
    const int p = pos[r];
    const int lo = window > 0 ? std::max(0, p - window + 1) : 0;
    for (int h = 0; h < H; ++h) {
      const int g = h / (H / Hkv);
      std::vector<double> s;
      double mx = -INFINITY;
      for (int j = lo; j <= p; ++j) {
        double d = 0;
        for (int e = 0; e < hd; ++e) {
          d += static_cast<double>(q[(r * H + h) * hd + e]) *
               K[(static_cast<size_t>(j) * Hkv + g) * hd + e];
        }
        s.push_back(d);
        mx = std::max(mx, d);
      }
      double sum = 0;
      for (auto& v : s) sum += (v = std::exp(v - mx));
      for (int e = 0; e < hd; ++e) {
        double o = 0;
        for (int j = lo; j <= p; ++j) {
          o +=
              s[static_cast<size_t>(j - lo)] / sum * V[(static_cast<size_t>(j) * Hkv + g) * hd + e];
        }
        out[(r * H + h) * hd + e] = o;
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("cuda: paged attention (FP16 and INT8, splits, sliding window, GQA)", "[gpu]") {
  if (!have_gpu()) return;
  const uint32_t seed = test::fresh_seed();
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  for (int hd : {64, 128, 256}) {
    for (KvType type : {KvType::F16, KvType::Int8}) {
      for (int window : {0, 100}) {
        for (int splits : {1, 7}) {
          INFO("head_dim " << hd << " int8 " << (type == KvType::Int8) << " window " << window
                           << " splits " << splits);
          const int layers = 2, layer = 1, H = 8, Hkv = 2, bt = 32, T = 300;
          const KvLayout L = make_kv_layout(type, layers, Hkv, hd, bt);
          const int nblocks = (T + bt - 1) / bt;
          // Blocks in a shuffled order inside a larger pool: tables must be followed.
          std::vector<int32_t> table(static_cast<size_t>(nblocks));
          std::iota(table.begin(), table.end(), 3);
          std::shuffle(table.begin(), table.end(), rng);
          Dev<std::byte> pool(L.block_bytes * static_cast<size_t>(nblocks + 3));
          Dev<int32_t> dtable(table);
          const auto K = test::uniform(static_cast<size_t>(T) * Hkv * hd, rng, -2, 2);
          const auto Vv = test::uniform(static_cast<size_t>(T) * Hkv * hd, rng);
          std::vector<int32_t> all(T);
          std::iota(all.begin(), all.end(), 0);
          Dev<int32_t> dall(all);
          Dev<float> dK(K), dV(Vv);
          kv_write(L, pool.get(), layer, KvRows{dtable.get(), nblocks, nullptr, dall.get()},
                   dK.get(), dV.get(), T, nullptr);
          const std::vector<int32_t> pos = {0, 5, 31, 32, 150, 299};
          const int m = static_cast<int>(pos.size());
          const auto q = test::uniform(static_cast<size_t>(m) * H * hd, rng, -0.3f, 0.3f);
          Dev<int32_t> dpos(pos);
          Dev<float> dq(q), out(static_cast<size_t>(m) * H * hd);
          Dev<std::byte> scratch(std::max<size_t>(1, attention_scratch_bytes(m, H, hd, splits)));
          attention(L, pool.get(), layer, KvRows{dtable.get(), nblocks, nullptr, dpos.get()},
                    dq.get(), m, H, window, splits, scratch.get(), out.get(), nullptr);
          const auto ref = ref_attention(q, K, Vv, pos, H, Hkv, hd, window);
          CHECK(rel_err(out.host(), ref) < (type == KvType::Int8 ? 3e-2 : 3e-3));
        }
      }
    }
  }
}

TEST_CASE("cuda: sampling on the device (greedy, mask, top-k, top-p)", "[gpu]") {
  if (!have_gpu()) return;
  std::mt19937 rng(test::fresh_seed());
  const int n = 262144;
  auto logits = test::uniform(n, rng, -5, 5);
  logits[123457] = 9.0f;
  logits[77] = 9.0f;  // tie: the lower id wins
  logits[200000] = 8.5f;
  logits[5] = 8.0f;
  Dev<float> dl(logits);
  Dev<int32_t> tok(1);
  const auto run = [&](const DeviceSampling& p, const std::vector<uint32_t>* banned) {
    std::unique_ptr<Dev<uint32_t>> db;
    if (banned) db = std::make_unique<Dev<uint32_t>>(*banned);
    sample(dl.get(), n, db ? db->get() : nullptr, p, tok.get(), nullptr);
    return tok.host()[0];
  };
  DeviceSampling greedy;
  CHECK(run(greedy, nullptr) == 77);
  std::vector<uint32_t> banned((n + 31) / 32, 0u);
  banned[77 / 32] |= 1u << (77 % 32);
  CHECK(run(greedy, &banned) == 123457);
  banned[123457 / 32] |= 1u << (123457 % 32);
  CHECK(run(greedy, &banned) == 200000);
  std::vector<uint32_t> all((n + 31) / 32, ~0u);
  CHECK(run(greedy, &all) == -1);
  all[5 / 32] &= ~(1u << 5);  // allow only token 5
  DeviceSampling hot{1.0f, 40, 1.0f, 0.0f, 0.99f};
  CHECK(run(hot, &all) == 5);
  // top_k 3 at high temperature: only the three largest ever come out.
  for (float u : {0.0f, 0.2f, 0.5f, 0.8f, 0.999f}) {
    DeviceSampling p{100.0f, 3, 1.0f, 0.0f, u};
    const int32_t t = run(p, nullptr);
    CHECK((t == 77 || t == 123457 || t == 200000));
  }
  // A low top_p keeps only the single most likely token.
  DeviceSampling narrow{1.0f, 50, 0.01f, 0.0f, 0.999f};
  CHECK(run(narrow, nullptr) == 77);
  // u = 0 draws the most likely candidate.
  DeviceSampling first{1.0f, 10, 1.0f, 0.0f, 0.0f};
  CHECK(run(first, nullptr) == 77);
}

}  // namespace vsynth::kernels::cuda
