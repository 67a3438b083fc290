// CUDA backend behaviour that needs no GPU: the device query on a machine without one, the
// error `device: cuda` gives there, and argument checks that fail before any launch. Part of the
// default suite (no `gpu` label); ctest also runs it with CUDA_VISIBLE_DEVICES hidden so the
// no-device path is exercised on GPU machines too.
#include <catch2/catch.hpp>

#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_model.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/memory.h"
#include "kernels/cuda/ops.h"
#include "tests/kernels/engine_test_util.h"
#include "tests/test_skip.h"

namespace vsynth::kernels::cuda {

using Catch::Matchers::Contains;

TEST_CASE("cuda: device query lists devices or says why there are none", "[cuda]") {
  const DeviceQuery q = query_devices();
  INFO(describe(q));
  if (q.devices.empty()) {
    CHECK_THAT(q.reason, Contains("no CUDA device"));
    CHECK(describe(q) == q.reason);
    CHECK_THROWS_WITH(
        require_device(-1),
        Contains("device: cuda was requested but no CUDA device") && Contains("device: cpu"));
  } else {
    for (const DeviceInfo& d : q.devices) {
      CHECK(!d.name.empty());
      CHECK(d.total_bytes > 0);
      CHECK(d.sm_count > 0);
    }
    CHECK(q.reason.empty());
    CHECK_THAT(describe(q), Contains("cuda:0"));
    CHECK_THROWS_AS(require_device(static_cast<int>(q.devices.size())), CudaError);
  }
}

TEST_CASE("cuda: loading a model with no device is a clear error", "[cuda]") {
  if (!query_devices().devices.empty()) {
    VSYNTH_SKIP(
        "a CUDA device is present: this case runs as test_cuda_nodevice:hidden "
        "(CUDA_VISIBLE_DEVICES hides every device)");
  }
  test::TinySpec spec;
  const auto path = test::write_tiny_model(spec, "cuda_nodevice_tiny.gguf");
  CHECK_THROWS_AS(CudaModel::load(path), CudaError);
  CHECK_THROWS_WITH(CudaModel::load(path), Contains("no CUDA device") && Contains("device: cpu"));
  // Device-layer objects fail with CudaError (file:line and the runtime's error), not a crash.
  CHECK_THROWS_AS(Stream(), CudaError);
  CHECK_THROWS_AS(DeviceArena(1 << 20, "test"), CudaError);
  CHECK_THROWS_WITH(Stream(), Contains("memory.cpp:") && Contains("cudaStreamCreateWithFlags"));
}

TEST_CASE("cuda: op arguments are checked before any launch", "[cuda]") {
  DeviceWeight w;
  w.type = DType::Q4_K;
  w.rows = 4;
  w.cols = 640;  // not a multiple of 256
  CHECK_THROWS_WITH(gemv(w, nullptr, nullptr, 1, nullptr, nullptr), Contains("multiple of 256"));
  w.cols = 512;
  CHECK_THROWS_WITH(gemv(w, nullptr, nullptr, 9, nullptr, nullptr), Contains("valid 1..8"));
  w.type = DType::Q2_K;
  CHECK_THROWS_WITH(gemv(w, nullptr, nullptr, 1, nullptr, nullptr), Contains("not supported"));
  CHECK_FALSE(weight_type_supported(DType::Q2_K));
  CHECK(weight_type_supported(DType::Q6_K));
  CHECK_THROWS_WITH(make_kv_layout(KvType::F16, 2, 1, 96, 32), Contains("head_dim 96"));
  const KvLayout f16 = make_kv_layout(KvType::F16, 18, 1, 256, 32);
  CHECK(f16.block_bytes == 2 * 18 * 32 * 256 * 2);
  const KvLayout i8 = make_kv_layout(KvType::Int8, 18, 1, 256, 32);
  // 576 rows (18 layers x 1 head x 32 slots): K and V 576 x 256 bytes, two scales of 576 floats.
  CHECK(i8.block_bytes == 2 * 576 * 256 + 2 * 576 * 4);
  CHECK(i8.block_bytes < f16.block_bytes);
  CHECK(i8.block_bytes % 256 == 0);
  DeviceSampling p;
  p.top_p = 0.0f;
  CHECK_THROWS_WITH(sample(nullptr, 10, nullptr, p, nullptr, nullptr), Contains("top_p in (0, 1]"));
  CHECK_THROWS_WITH(quantize_q8(nullptr, 1, 48, nullptr, nullptr), Contains("multiple of 32"));
  RopeParams rp;
  rp.rope_dims = 3;
  CHECK_THROWS_WITH(rope(nullptr, nullptr, 1, 1, 4, rp, 1.0f, nullptr), Contains("even"));
}

}  // namespace vsynth::kernels::cuda
