// The CUDA op layer: every operation the decoder's forward pass needs, as asynchronous launches
// on a caller's stream. All pointers are device pointers unless a comment says otherwise; shapes
// are row-major, [rows][cols] with cols contiguous. Nothing here allocates or synchronises, so a
// sequence of these calls can be captured into a CUDA graph (kernels/cuda/memory.h, GraphExec);
// values that change between steps (positions, token ids, block tables) are read from device
// memory, never baked into launch arguments.
//
// Errors: shapes or types a kernel does not support throw CudaError before anything is launched
// (naming the op, the value and what would be valid); launch failures throw CudaError with the
// call site (kernels/cuda/check.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/dtype.h"
#include "kernels/model/config.h"

namespace vsynth::kernels::cuda {

// A weight matrix in device memory, in its GGUF encoding: `rows` output features of `cols`
// inputs, row r at data + r * row_bytes (same meaning as kernels/cpu/matvec.h's WeightView).
// Types: F32 F16 BF16 Q4_0 Q5_0 Q8_0 Q4_K Q5_K Q6_K.
struct DeviceWeight {
  DType type = DType::F32;
  int64_t rows = 0;
  int64_t cols = 0;
  const void* data = nullptr;
  size_t row_bytes = 0;
};

// True for the weight types the kernels below accept.
bool weight_type_supported(DType t);

// ---- Elementwise and normalisation -------------------------------------------------------------

// out[i][:] = row ids[i] of w decoded to floats, times `scale` (gemma3's sqrt(d_model)), i < m.
// Ids outside [0, w.rows) produce a row of NaN (never an out-of-bounds read): the engine checks
// ids on the host before they reach the device.
void get_rows(const DeviceWeight& w, const int32_t* ids, int m, float scale, float* out,
              cudaStream_t s);

// y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w, for `rows` rows of n (w may be null: no weight).
// In place (y == x) is allowed. One block per row; sums in fp32 (tree order).
void rms_norm(const float* x, const float* w, float* y, int rows, int n, float eps, cudaStream_t s);

// The residual add fused with the norms around it (one pass over the row):
//   x[r] += post_w ? rms_norm(o[r]) * post_w : o[r]
//   h[r]  = rms_norm(x[r]) * next_w          (skipped when h is null)
// gemma3 calls it with the post-attention / post-FFN norm weights; llama / qwen2 with null.
void add_rms_norm(float* x, const float* o, const float* post_w, const float* next_w, float* h,
                  int rows, int n, float eps, cudaStream_t s);

// y[r][:] += b for rows of n (qwen2's q/k/v biases).
void add_bias(float* y, const float* b, int rows, int n, cudaStream_t s);

// Rotary embedding in place on x [m][n_heads][head_dim], row i at position pos[i]; then every
// element times out_scale (q's 1/sqrt(dk) folded in; 1 for k). Angles as ggml computes them:
// theta_i = p * freq_scale * base^(-2i/rope_dims) in fp32 (kernels/model/rope.h).
struct RopeParams {
  RopeKind kind = RopeKind::Norm;
  int rope_dims = 0;
  float base = 10000.0f;
  float freq_scale = 1.0f;
};
void rope(float* x, const int32_t* pos, int m, int n_heads, int head_dim, const RopeParams& p,
          float out_scale, cudaStream_t s);

// g[i] = act(g[i]) * u[i] for i < n. GeluTanh matches the CPU's fp16-table GELU bit for bit
// (x rounded to fp16, gelu in fp32 rounded to fp16; |x| >= 10 bypasses), SiLU is x/(1+e^-x).
void gated_act(float* g, const float* u, int64_t n, FfnActivation act, cudaStream_t s);

// ---- Linear layers
// -------------------------------------------------------------------------------

// Activations quantized for the integer dot products: per 32 elements, float d = max|x|/127 and
// int8 codes (the layout of BlockQ8A32 in kernels/quant/blocks.h: d, d*sum, qs[32]; 40 bytes).
// m rows of cols (a multiple of 32) take q8_bytes(cols, m) bytes.
size_t q8_bytes(int64_t cols, int m);
void quantize_q8(const float* x, int m, int64_t cols, void* q8, cudaStream_t s);

// Most rows gemv handles in one launch (each weight row is read once for all of them).
inline constexpr int kGemvMaxRows = 8;

// y[i][0..w.rows) = W x[i] for i < m <= kGemvMaxRows: one warp per weight row, dequantized in
// registers. Quantized types take `xq` (quantize_q8 of x) and use __dp4a on int8 pairs; float
// types (F32/F16/BF16) take x as floats (xq unused).
void gemv(const DeviceWeight& w, const float* x, const void* xq, int m, float* y, cudaStream_t s);

// rows [row0, row0 + n) of w decoded to fp16 (IEEE half bits), [n][w.cols].
void dequantize_f16(const DeviceWeight& w, int64_t row0, int64_t n, uint16_t* out, cudaStream_t s);
// n floats -> fp16 bits (round to nearest even).
void f32_to_f16(const float* x, int64_t n, uint16_t* y, cudaStream_t s);

// ---- Paged KV cache and attention
// ----------------------------------------------------------------

// Where things live in the device KV pool. A block holds `block_tokens` consecutive positions of
// one sequence for EVERY layer (one block table per sequence, not per layer):
//   K   [n_layers][n_kv_heads][block_tokens][head_dim]   f16 or int8
//   V   [n_layers][n_kv_heads][block_tokens][head_dim]   f16 or int8
//   Int8 only: K scales f32 [n_layers][n_kv_heads][block_tokens], V scales likewise
// Int8 scales are per token and kv head (max|x|/127 of that head's row), set when the row is
// written, so a block never needs re-quantizing (the CPU cache's per-channel K scales need a
// full block; per-token scales let a step write straight into the pool).
struct KvLayout {
  KvType type = KvType::F16;
  int n_layers = 0;
  int n_kv_heads = 0;
  int head_dim = 0;  // keys and values (the CUDA backend needs head_dim_k == head_dim_v)
  int block_tokens = 32;
  size_t k_off = 0, v_off = 0, ks_off = 0, vs_off = 0;  // byte offsets inside a block
  size_t block_bytes = 0;                               // multiple of 256
};
KvLayout make_kv_layout(KvType type, int n_layers, int n_kv_heads, int head_dim, int block_tokens);

// Which sequence's block table each query row uses: tables is [n_tables][table_stride] block
// ids, row i uses table row_table[i] (row_table null: table 0 for every row) and sits at
// position pos[i].
struct KvRows {
  const int32_t* tables = nullptr;
  int table_stride = 0;
  const int32_t* row_table = nullptr;
  const int32_t* pos = nullptr;
};

// Stores k [m][n_kv_heads][head_dim] and v (same shape) of `layer` at each row's position.
void kv_write(const KvLayout& L, void* pool, int layer, const KvRows& rows, const float* k,
              const float* v, int m, cudaStream_t s);

// Bytes of scratch attention needs for m rows of n_heads split `splits` ways.
size_t attention_scratch_bytes(int m, int n_heads, int head_dim, int splits);

// out[i][h][:] = softmax over visible keys of (q[i][h] . k) times v, q already RoPE'd and scaled.
// Row i sees keys at positions [max(0, pos - window + 1), pos] (window 0: [0, pos]), all of
// which must already be written. Query head h reads kv head h / (n_heads / n_kv_heads).
// Split-K ("flash-decoding"): each (row, head) is cut into `splits` key ranges computed on the
// device from pos, each with its own online softmax, merged by a second kernel; splits = 1 skips
// the merge. head_dim must be 64, 128 or 256 (or 32).
void attention(const KvLayout& L, const void* pool, int layer, const KvRows& rows, const float* q,
               int m, int n_heads, int window, int splits, void* scratch, float* out,
               cudaStream_t s);

// ---- Sampling
// ------------------------------------------------------------------------------------

struct DeviceSampling {
  float temperature = 0.0f;  // <= 0: greedy (argmax; ties to the lowest id)
  int top_k = 40;            // 1..kMaxTopK; 0 = kMaxTopK candidates
  float top_p = 1.0f;        // (0, 1]
  float min_p = 0.0f;        // [0, 1]
  float uniform = 0.5f;      // the draw, in [0, 1): from the host's Rng, so runs reproduce
};
inline constexpr int kMaxTopK = 256;

// token[0] = a token drawn from logits[n] with `banned` applied (bit t of banned[t/32] set: t is
// never picked; null: no mask). -1 when every token is banned. Temperature, top-k, top-p, min-p
// as kernels/sampler/sampler.h, except that without top-k the candidates are capped at kMaxTopK.
// One block, all its state in shared memory (no scratch): no host round trip, so a decode step
// and its sampling can share a graph.
void sample(const float* logits, int64_t n, const uint32_t* banned, const DeviceSampling& p,
            int32_t* token, cudaStream_t s);

}  // namespace vsynth::kernels::cuda
