// Normalisation, residual adds, biases, RoPE, gated activations, fp32 -> fp16 (see ops.h).
#include <cmath>

#include "kernels/cuda/check.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops.h"

namespace vsynth::kernels::cuda {

namespace {

constexpr int kNormThreads = 256;

__global__ void rms_norm_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                float* __restrict__ y, int n, float eps) {
  __shared__ float red[32];
  const float* xr = x + static_cast<size_t>(blockIdx.x) * n;
  float* yr = y + static_cast<size_t>(blockIdx.x) * n;
  float ss = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) ss += xr[i] * xr[i];
  ss = dev::block_sum(ss, red);
  const float sc = 1.0f / sqrtf(ss / static_cast<float>(n) + eps);
  for (int i = threadIdx.x; i < n; i += blockDim.x) yr[i] = xr[i] * sc * (w ? w[i] : 1.0f);
}

// x += post ? norm(o) * post : o;  h = norm(x) * next. The row stays in registers between the
// passes when n <= kNormThreads * 8 (every model here: d_model <= 2048).
__global__ void add_rms_norm_kernel(float* __restrict__ x, const float* __restrict__ o,
                                    const float* __restrict__ post, const float* __restrict__ next,
                                    float* __restrict__ h, int n, float eps) {
  __shared__ float red[32];
  float* xr = x + static_cast<size_t>(blockIdx.x) * n;
  const float* orow = o + static_cast<size_t>(blockIdx.x) * n;
  float post_scale = 1.0f;
  if (post != nullptr) {
    float ss = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) ss += orow[i] * orow[i];
    ss = dev::block_sum(ss, red);
    post_scale = 1.0f / sqrtf(ss / static_cast<float>(n) + eps);
  }
  float ss = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const float add = post != nullptr ? orow[i] * post_scale * post[i] : orow[i];
    const float v = xr[i] + add;
    xr[i] = v;
    ss += v * v;
  }
  if (h == nullptr) return;
  ss = dev::block_sum(ss, red);
  const float sc = 1.0f / sqrtf(ss / static_cast<float>(n) + eps);
  float* hr = h + static_cast<size_t>(blockIdx.x) * n;
  for (int i = threadIdx.x; i < n; i += blockDim.x) hr[i] = xr[i] * sc * next[i];
}

__global__ void add_bias_kernel(float* __restrict__ y, const float* __restrict__ b, int rows,
                                int n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < static_cast<int64_t>(rows) * n) y[i] += b[i % n];
}

// One thread per rotated pair: (row, head, pair).
__global__ void rope_kernel(float* __restrict__ x, const int32_t* __restrict__ pos, int m,
                            int n_heads, int head_dim, int rope_dims, int neox, float theta_scale,
                            float freq_scale, float out_scale) {
  const int half = rope_dims / 2;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t pairs_per_row = static_cast<int64_t>(n_heads) * (head_dim / 2);
  if (t >= pairs_per_row * m) return;
  const int row = static_cast<int>(t / pairs_per_row);
  const int rem = static_cast<int>(t % pairs_per_row);
  const int head = rem / (head_dim / 2);
  const int i = rem % (head_dim / 2);
  float* v = x + (static_cast<size_t>(row) * n_heads + head) * head_dim;
  if (i >= half) {
    // Dims past rope_dims do not rotate; only the scale applies (pair i covers dims 2i, 2i+1).
    v[2 * i] *= out_scale;
    v[2 * i + 1] *= out_scale;
    return;
  }
  // ggml's angle: theta_0 = p, theta_{j+1} = theta_j * theta_scale, all in fp32.
  float theta = static_cast<float>(pos[row]);
  for (int j = 0; j < i; ++j) theta *= theta_scale;
  float sn, cs;
  sincosf(freq_scale * theta, &sn, &cs);
  const int a = neox ? i : 2 * i;
  const int b = neox ? i + half : 2 * i + 1;
  const float va = v[a], vb = v[b];
  v[a] = (va * cs - vb * sn) * out_scale;
  v[b] = (va * sn + vb * cs) * out_scale;
}

__global__ void gelu_mul_kernel(float* __restrict__ g, const float* __restrict__ u, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float x = g[i];
  float r;
  if (x <= -10.0f) {
    r = 0.0f;
  } else if (x >= 10.0f) {
    r = x;
  } else {
    // The CPU's table: gelu of the fp16-rounded input, computed in fp32, rounded to fp16.
    const float xh = __half2float(__float2half_rn(x));
    const float t = tanhf(0.7978845608028654f * xh * (1.0f + 0.044715f * xh * xh));
    r = __half2float(__float2half_rn(0.5f * xh * (1.0f + t)));
  }
  g[i] = r * u[i];
}

__global__ void silu_mul_kernel(float* __restrict__ g, const float* __restrict__ u, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float x = g[i];
  g[i] = x / (1.0f + expf(-x)) * u[i];
}

__global__ void f32_to_f16_kernel(const float* __restrict__ x, int64_t n, __half* __restrict__ y) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __float2half_rn(x[i]);
}

unsigned blocks_for(int64_t n, int threads) {
  return static_cast<unsigned>((n + threads - 1) / threads);
}

}  // namespace

void rms_norm(const float* x, const float* w, float* y, int rows, int n, float eps,
              cudaStream_t s) {
  if (rows <= 0) return;
  rms_norm_kernel<<<rows, kNormThreads, 0, s>>>(x, w, y, n, eps);
  VSYNTH_CUDA_CHECK_LAUNCH();
}

void add_rms_norm(float* x, const float* o, const float* post_w, const float* next_w, float* h,
                  int rows, int n, float eps, cudaStream_t s) {
  if (rows <= 0) return;
  if (h != nullptr && next_w == nullptr) {
    throw CudaError("add_rms_norm: h given without next_w (the norm weight of h)");
  }
  add_rms_norm_kernel<<<rows, kNormThreads, 0, s>>>(x, o, post_w, next_w, h, n, eps);
  VSYNTH_CUDA_CHECK_LAUNCH();
}

void add_bias(float* y, const float* b, int rows, int n, cudaStream_t s) {
  const int64_t total = static_cast<int64_t>(rows) * n;
  if (total <= 0) return;
  add_bias_kernel<<<blocks_for(total, 256), 256, 0, s>>>(y, b, rows, n);
  VSYNTH_CUDA_CHECK_LAUNCH();
}

void rope(float* x, const int32_t* pos, int m, int n_heads, int head_dim, const RopeParams& p,
          float out_scale, cudaStream_t s) {
  if (head_dim % 2 != 0 || p.rope_dims % 2 != 0 || p.rope_dims > head_dim || p.rope_dims <= 0) {
    throw CudaError("rope: rope_dims " + std::to_string(p.rope_dims) + " and head_dim " +
                    std::to_string(head_dim) + " must be even with 0 < rope_dims <= head_dim");
  }
  const int64_t total = static_cast<int64_t>(m) * n_heads * (head_dim / 2);
  if (total <= 0) return;
  // Computed on the host exactly as kernels/model/rope.cpp does, so both sides multiply by the
  // same fp32 constant.
  const float theta_scale = std::pow(p.base, -2.0f / static_cast<float>(p.rope_dims));
  rope_kernel<<<blocks_for(total, 256), 256, 0, s>>>(x, pos, m, n_heads, head_dim, p.rope_dims,
                                                     p.kind == RopeKind::Neox ? 1 : 0, theta_scale,
                                                     p.freq_scale, out_scale);
  VSYNTH_CUDA_CHECK_LAUNCH();
}

void gated_act(float* g, const float* u, int64_t n, FfnActivation act, cudaStream_t s) {
  if (n <= 0) return;
  if (act == FfnActivation::GeluTanh) {
    gelu_mul_kernel<<<blocks_for(n, 256), 256, 0, s>>>(g, u, n);
  } else {
    silu_mul_kernel<<<blocks_for(n, 256), 256, 0, s>>>(g, u, n);
  }
  VSYNTH_CUDA_CHECK_LAUNCH();
}

void f32_to_f16(const float* x, int64_t n, uint16_t* y, cudaStream_t s) {
  if (n <= 0) return;
  f32_to_f16_kernel<<<blocks_for(n, 256), 256, 0, s>>>(x, n, reinterpret_cast<__half*>(y));
  VSYNTH_CUDA_CHECK_LAUNCH();
}

}  // namespace vsynth::kernels::cuda
