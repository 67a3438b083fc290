#include "kernels/cpu/matvec.h"

#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_path_internal.h"
#include "kernels/cpu/grouped.h"
#include "kernels/quant/quant_error.h"
#include "kernels/quant/quantize.h"

namespace vsynth::kernels {

namespace {

using detail::ActFormat;
using detail::DotFn;
using detail::KernelTable;

// Smallest amount of weight data one task streams: ~20 us at the ~10 GB/s one core reads from
// DRAM, so TBB's per-task cost (a few us) stays small. Smaller problems run on the caller alone.
constexpr size_t kMinTaskBytes = 192 * 1024;

// matmul tiles: a block of weight rows of ~kTileWeightBytes (L1/L2-resident while every token
// group of the tile passes over it) by up to kTileTokens tokens (their quantized activations,
// <= 150 KiB for k = 2048, stay in L2; one group of dot-call columns in L1: kRowKernelCols tokens
// for the row kernels, <= 6.5 KiB, or kMaxCols for the prefill kernels, 15 KiB at k = 640 for
// the 32-element types, 18 KiB at k = 1024 for the K-quants; a K-quant group at k = 2048, 37
// KiB, is read from L2). Row blocks hold at most kTileMaxRows rows, the size of the per-tile
// output staging buffer.
constexpr size_t kTileWeightBytes = 32 * 1024;
constexpr int64_t kTileTokens = 64;
constexpr int kRowKernelCols = 8;
constexpr int64_t kTileMaxRows = 256;

// Fewest tokens for which matmul unpacks a tile's rows (KernelTable::*_unpacked) rather than
// calling dot_*_il. A batched decode step (2-8 rows, its weights streamed from DRAM) paid for
// the unpacking more than the tiles gained: 2 / 4 / 8-row steps 1.39-1.41 / 1.52-1.55 /
// 1.94-1.98x a one-row step with it, 1.14-1.16 / 1.31-1.32 / 1.78-1.80x without (bench_batching
// --step-rounds 20 --steps-only --streams 1,2,4,8 --threads 1, three alternations); at 12 and
// 16 tokens the unpacked tiles are faster (q5_0 640 x 1024: 139 vs 93 and 159 vs 154 GOPS hot,
// bench_roofline --tokens 8,12,16).
constexpr int64_t kUnpackMinTokens = 9;

// Fewest tokens for which grouped rows go two at a time through the 512-bit pair kernels (below
// kUnpackMinTokens, where the CPU runs them at full width: zmm_pairs_enabled). At 2 tokens they
// gain nothing (docs/performance.md, "Grouped rows in 512-bit pairs for 3-8 tokens").
constexpr int64_t kPairMinTokens = 3;

std::string label(const WeightView& w) {
  return w.name.empty() ? std::string("weight") : "tensor '" + std::string(w.name) + "'";
}

std::string type_name(DType t) {
  const auto info = dtype_info(t);
  return info ? std::string(info->name) : "type id " + std::to_string(static_cast<uint32_t>(t));
}

// "f32, f16, ...": the types the kernels compute with, in kTypeTraits' order.
std::string supported_type_names() {
  std::string names;
  for (const detail::TypeTraits& t : detail::kTypeTraits) {
    names += (names.empty() ? "" : ", ") + type_name(t.type);
  }
  return names;
}

// Activation storage for one call: on the stack when small (decode), else on the heap. Not a
// thread_local, because a TBB worker waiting inside parallel_for may run another matvec.
class ActBuffer {
 public:
  explicit ActBuffer(size_t bytes) {
    if (bytes > sizeof(inline_)) {
      heap_.reset(new std::byte[bytes]);
      ptr_ = heap_.get();
    } else {
      ptr_ = inline_;
    }
  }
  std::byte* data() { return ptr_; }

 private:
  alignas(64) std::byte inline_[16 * 1024];
  std::unique_ptr<std::byte[]> heap_;
  std::byte* ptr_;
};

int concurrency() {
  return std::max(1, tbb::this_task_arena::max_concurrency());
}

// Quantizes n rows of k floats (stride k) with `quantize`; rows act_bytes apart.
void quantize_acts(detail::QuantizeActFn quantize, const float* X, int64_t n, int64_t k,
                   std::byte* out, size_t act_bytes) {
  const auto one = [&](int64_t t) {
    quantize(X + t * k, k, out + static_cast<size_t>(t) * act_bytes);
  };
  // Quantizing reads 4 bytes per element: split when there is >= ~1 MB of it.
  if (n * k < 256 * 1024 || concurrency() == 1) {
    for (int64_t t = 0; t < n; ++t) one(t);
    return;
  }
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, n), [&](const tbb::blocked_range<int64_t>& r) {
    for (int64_t t = r.begin(); t < r.end(); ++t) one(t);
  });
}

detail::QuantizeActFn row_quantizer(const KernelTable& kt, ActFormat f) {
  return f == ActFormat::Q8A32 ? kt.quantize_a32 : kt.quantize_a256;
}

// How matmul feeds a weight type's dot kernel: the interleaved activations (Q8A32 rows or
// BlockQ8A256 blocks) and the table's prefill kernel where it has one (bit-identical to the row
// kernel, see kernel_table.h), else the row format and kernel matvec uses.
struct MatmulKernel {
  DotFn dot;
  int cols;                          // tokens per dot call (the prefill kernels take kMaxCols)
  detail::QuantizeActFn quantize;    // nullptr: float activations, used as they are
  size_t act_bytes;                  // bytes from one token's activations to the next
  detail::DotRowsFn rows = nullptr;  // dot over a run of rows in one call, where the table has it
  // Where set, each tile's rows are unpacked once (unpacked_row_bytes apart) and `rows` takes
  // the unpacked rows.
  detail::UnpackRowsFn unpack = nullptr;
  size_t unpacked_row_bytes = 0;
};

// Grouped rows take interleaved activations for one token as for many; from kPairMinTokens
// tokens two rows at a time where the CPU runs 512-bit vectors at full width; from
// kUnpackMinTokens matmul unpacks their tiles where the table can (as it does plain rows).
MatmulKernel grouped_kernel(const KernelTable& kt, const WeightView& w, int64_t n) {
  const detail::Grouped& g = detail::type_kernels(kt, w.type).grouped;
  const size_t ab = detail::act_row_bytes_a32il(w.cols);
  if (g.unpacked.unpack != nullptr && n >= kUnpackMinTokens) {
    return {nullptr,
            detail::kMaxCols,
            kt.quantize_a32il,
            ab,
            g.unpacked.dot_rows,
            g.unpacked.unpack,
            detail::unpacked_row_bytes(w.type, w.cols)};
  }
  if (g.dot_pairs != nullptr && n >= kPairMinTokens && zmm_pairs_enabled()) {
    return {g.dot, detail::kMaxCols, kt.quantize_a32il, ab, g.dot_pairs};
  }
  return {g.dot, detail::kMaxCols, kt.quantize_a32il, ab, g.dot_rows};
}

// n: the tokens of the call (see kUnpackMinTokens).
MatmulKernel matmul_kernel(const KernelTable& kt, const WeightView& w, int64_t n) {
  const DType t = w.type;
  const int64_t k = w.cols;
  if (w.layout == WeightLayout::Grouped) return grouped_kernel(kt, w, n);
  const ActFormat f = detail::act_format(t);
  const detail::TypeKernels& tk = detail::type_kernels(kt, t);
  if (f == ActFormat::F32) {
    return {tk.dot, kRowKernelCols, nullptr, static_cast<size_t>(k) * sizeof(float)};
  }
  const DotFn il = tk.dot_il;
  if (const detail::Unpacked& u = tk.unpacked; u.unpack != nullptr && n >= kUnpackMinTokens) {
    const bool a32 = f == ActFormat::Q8A32;
    const detail::QuantizeActFn q = a32 ? kt.quantize_a32il : kt.quantize_a256il;
    const size_t ab = a32 ? detail::act_row_bytes_a32il(k) : detail::act_row_bytes_a256il(k);
    if (q != nullptr) {
      return {il, detail::kMaxCols, q, ab, u.dot_rows, u.unpack, detail::unpacked_row_bytes(t, k)};
    }
  }
  if (f == ActFormat::Q8A32 && il != nullptr && kt.quantize_a32il != nullptr) {
    return {il, detail::kMaxCols, kt.quantize_a32il, detail::act_row_bytes_a32il(k)};
  }
  if (f == ActFormat::Q8A256 && il != nullptr && kt.quantize_a256il != nullptr) {
    return {il, detail::kMaxCols, kt.quantize_a256il, detail::act_row_bytes_a256il(k)};
  }
  return {tk.dot, kRowKernelCols, row_quantizer(kt, f), detail::act_row_bytes(f, k)};
}

}  // namespace

WeightView make_weight_view(DType type, int64_t rows, int64_t cols, const void* data,
                            std::string_view name) {
  WeightView w;
  w.type = type;
  w.rows = rows;
  w.cols = cols;
  w.data = data;
  w.row_bytes = row_size(type, cols);
  w.name = name;
  return w;
}

void validate_weight_view(const WeightView& w) {
  if (!quant_supported(w.type)) {
    throw QuantError(
        label(w) + " has element type " + type_name(w.type) +
        ", which the CPU kernels do not support (supported: " + supported_type_names() + ")");
  }
  const int64_t be = quant_block_elems(w.type);
  if (w.rows < 0 || w.cols <= 0 || w.cols % be != 0) {
    throw QuantError(label(w) + " (" + type_name(w.type) + ") has shape rows=" +
                     std::to_string(w.rows) + " cols=" + std::to_string(w.cols) +
                     "; rows must be >= 0 and cols a positive multiple of " + std::to_string(be));
  }
  const bool grouped = w.layout == WeightLayout::Grouped;
  if (grouped && !grouping_available(w.type)) {
    throw QuantError(label(w) +
                     " is in the grouped layout, which needs q8_0 or q5_0 weights and the " +
                     "avx2 or avx512vnni kernels (type " + type_name(w.type) + ", CPU path " +
                     detail::active_kernels().name + ")");
  }
  const size_t need = grouped ? grouped_row_bytes(w.type, w.cols) : row_size(w.type, w.cols);
  if (w.row_bytes < need) {
    throw QuantError(label(w) + " has row_bytes=" + std::to_string(w.row_bytes) + " but a " +
                     type_name(w.type) + " row of " + std::to_string(w.cols) + " elements needs " +
                     std::to_string(need));
  }
  if (w.rows > 0 && w.data == nullptr) throw QuantError(label(w) + " has no data (null pointer)");
  const size_t align = w.type == DType::F32 ? 4 : 2;
  if (reinterpret_cast<uintptr_t>(w.data) % align != 0 || w.row_bytes % align != 0) {
    throw QuantError(label(w) + " data or row stride is not " + std::to_string(align) +
                     "-byte aligned (" + type_name(w.type) + " rows must be)");
  }
}

void matvec(const WeightView& w, const float* x, float* y) {
  validate_weight_view(w);
  if (w.rows == 0) return;
  if (x == nullptr || y == nullptr) throw QuantError("matvec on " + label(w) + ": null x or y");
  const KernelTable& kt = detail::active_kernels();
  const int64_t k = w.cols;
  // The row kernel and its activation format (grouped rows: the interleaved row).
  MatmulKernel mk{detail::type_kernels(kt, w.type).dot, 1, nullptr, 0};
  if (w.layout == WeightLayout::Grouped) {
    mk = grouped_kernel(kt, w, 1);
  } else if (const ActFormat f = detail::act_format(w.type); f != ActFormat::F32) {
    mk.quantize = row_quantizer(kt, f);
    mk.act_bytes = detail::act_row_bytes(f, k);
  }
  const DotFn dot = mk.dot;

  ActBuffer buf(mk.act_bytes);
  const void* act = x;
  if (mk.quantize != nullptr) {
    quantize_acts(mk.quantize, x, 1, k, buf.data(), 0);
    act = buf.data();
  }

  const auto* base = static_cast<const std::byte*>(w.data);
  const auto run_rows = [&](int64_t r0, int64_t r1) {
    if (mk.rows != nullptr) {
      mk.rows(k, base + static_cast<size_t>(r0) * w.row_bytes, w.row_bytes, r1 - r0, act, 0, 1,
              y + r0, 0);
      return;
    }
    for (int64_t r = r0; r < r1; ++r) {
      dot(k, base + static_cast<size_t>(r) * w.row_bytes, act, 0, 1, y + r);
    }
  };

  // Equal chunks of >= kMinTaskBytes each, up to 4 per thread so a thread slowed by other load
  // on the machine does not hold everyone up, and a multiple of the thread count so that every
  // thread gets the same share.
  const size_t total = static_cast<size_t>(w.rows) * w.row_bytes;
  const int64_t threads = concurrency();
  int64_t chunks =
      std::min<int64_t>({4 * threads, w.rows, static_cast<int64_t>(total / kMinTaskBytes)});
  if (chunks > threads) chunks -= chunks % threads;
  if (chunks <= 1) {
    run_rows(0, w.rows);
    return;
  }
  const int64_t per = (w.rows + chunks - 1) / chunks;
  tbb::parallel_for(
      tbb::blocked_range<int64_t>(0, chunks, 1),
      [&](const tbb::blocked_range<int64_t>& cr) {
        for (int64_t c = cr.begin(); c < cr.end(); ++c) {
          run_rows(c * per, std::min(w.rows, (c + 1) * per));
        }
      },
      tbb::simple_partitioner());
}

void matmul(const WeightView& w, const float* X, int64_t n, float* Y) {
  if (n < 0) throw QuantError("matmul on " + label(w) + ": negative token count");
  if (Y == nullptr && n > 0) throw QuantError("matmul on " + label(w) + ": null X or Y");
  std::vector<float*> rows(static_cast<size_t>(n));
  for (int64_t t = 0; t < n; ++t) rows[static_cast<size_t>(t)] = Y + t * w.rows;
  matmul(w, X, rows);
}

void matmul(const WeightView& w, const float* X, std::span<float* const> Y) {
  validate_weight_view(w);
  const auto n = static_cast<int64_t>(Y.size());
  if (n == 0 || w.rows == 0) return;
  if (X == nullptr || std::find(Y.begin(), Y.end(), nullptr) != Y.end()) {
    throw QuantError("matmul on " + label(w) + ": null X or Y");
  }
  if (n == 1) {
    matvec(w, X, Y[0]);
    return;
  }
  const int64_t k = w.cols;
  const MatmulKernel mk = matmul_kernel(detail::active_kernels(), w, n);
  const DotFn dot = mk.dot;

  // Quantize every token's input once, into a 64-byte aligned buffer (the interleaved Q8A256
  // rows are a multiple of 64 bytes so that their vector loads stay aligned, blocks.h).
  const size_t act_bytes = mk.act_bytes;
  std::unique_ptr<std::byte[]> qbuf;
  const std::byte* act = reinterpret_cast<const std::byte*>(X);
  if (mk.quantize != nullptr) {
    constexpr size_t kAlign = 64;
    const size_t total = act_bytes * static_cast<size_t>(n);
    size_t space = total + kAlign - 1;
    qbuf.reset(new std::byte[space]);
    void* p = qbuf.get();
    auto* q = static_cast<std::byte*>(std::align(kAlign, total, p, space));
    quantize_acts(mk.quantize, X, n, k, q, act_bytes);
    act = q;
  }

  // Tile sizes: row blocks of ~kTileWeightBytes, at least 8 rows and at most kTileMaxRows.
  const int64_t threads = concurrency();
  const int64_t rows_cache = static_cast<int64_t>(kTileWeightBytes / w.row_bytes);
  const int64_t row_block = std::clamp<int64_t>(rows_cache, 8, kTileMaxRows);
  const int64_t row_blocks = (w.rows + row_block - 1) / row_block;
  const int64_t tok_blocks = (n + kTileTokens - 1) / kTileTokens;

  const auto* base = static_cast<const std::byte*>(w.data);
  // Row block rb over token blocks [tb0, tb1): the block's rows unpacked once into `scratch`
  // where the kernel takes unpacked rows; then for each group of up to mk.cols tokens, every row
  // of the block. The group's outputs are staged in `out` and copied to Y one contiguous token
  // row at a time (writing Y in place would scatter stores rows * 4 bytes apart, which
  // 4 KiB-aliases for 1024 or 2048 rows and stalls the loads of the next dot).
  const auto block = [&](int64_t rb, int64_t tb0, int64_t tb1, std::byte* scratch) {
    const int64_t r0 = rb * row_block, r1 = std::min(w.rows, r0 + row_block);
    const int64_t t0 = tb0 * kTileTokens, t1 = std::min(n, tb1 * kTileTokens);
    const std::byte* rows = base + static_cast<size_t>(r0) * w.row_bytes;
    size_t stride = w.row_bytes;
    if (mk.unpack != nullptr) {
      mk.unpack(k, rows, w.row_bytes, r1 - r0, scratch);
      rows = scratch;
      stride = mk.unpacked_row_bytes;
    }
    alignas(64) float out[detail::kMaxCols][kTileMaxRows];
    float col[detail::kMaxCols];
    for (int64_t t = t0; t < t1; t += mk.cols) {
      const int cols = static_cast<int>(std::min<int64_t>(mk.cols, t1 - t));
      const std::byte* a = act + static_cast<size_t>(t) * act_bytes;
      if (mk.rows != nullptr) {
        mk.rows(k, rows, stride, r1 - r0, a, act_bytes, cols, &out[0][0], kTileMaxRows);
      } else {
        for (int64_t r = r0; r < r1; ++r) {
          dot(k, rows + static_cast<size_t>(r - r0) * stride, a, act_bytes, cols, col);
          for (int c = 0; c < cols; ++c) out[c][r - r0] = col[c];
        }
      }
      for (int c = 0; c < cols; ++c) {
        std::memcpy(Y[static_cast<size_t>(t + c)] + r0, out[c],
                    static_cast<size_t>(r1 - r0) * sizeof(float));
      }
    }
  };
  // One row block's unpacked rows, per task (none where the kernel takes the plain rows).
  const size_t scratch_bytes =
      mk.unpack != nullptr ? detail::unpacked_bytes(w.type, k, row_block) : 0;
  const auto make_scratch = [&] {
    return std::unique_ptr<std::byte[]>(scratch_bytes > 0 ? new std::byte[scratch_bytes] : nullptr);
  };

  const int64_t tiles = row_blocks * tok_blocks;
  if (tiles <= 1 || threads == 1) {
    // Row block outer: its weights stay cached while every token passes over them.
    const auto scratch = make_scratch();
    for (int64_t rb = 0; rb < row_blocks; ++rb) block(rb, 0, tok_blocks, scratch.get());
    return;
  }
  // Each task takes whole row blocks over all tokens when there are enough row blocks for every
  // thread (weights read once per task), in ranges of 4-8 per thread as matvec's chunks: a row
  // block of a few-token step is ~1 us of work, no more than TBB's cost of a task of its own
  // (the 262,144-row output projection is 5,462 row blocks). Otherwise tiles of row block x
  // token block.
  if (row_blocks >= 4 * threads) {
    tbb::parallel_for(
        tbb::blocked_range<int64_t>(0, row_blocks, row_blocks / (4 * threads)),
        [&](const tbb::blocked_range<int64_t>& r) {
          const auto scratch = make_scratch();
          for (int64_t rb = r.begin(); rb < r.end(); ++rb) block(rb, 0, tok_blocks, scratch.get());
        },
        tbb::simple_partitioner());
    return;
  }
  tbb::parallel_for(
      tbb::blocked_range<int64_t>(0, tiles, 1),
      [&](const tbb::blocked_range<int64_t>& r) {
        const auto scratch = make_scratch();
        for (int64_t i = r.begin(); i < r.end(); ++i) {
          block(i / tok_blocks, i % tok_blocks, i % tok_blocks + 1, scratch.get());
        }
      },
      tbb::simple_partitioner());
}

void get_rows(const WeightView& w, const int32_t* ids, int64_t n, float* out) {
  validate_weight_view(w);
  if (n < 0) throw QuantError("get_rows on " + label(w) + ": negative count");
  if (n == 0) return;
  if (ids == nullptr || out == nullptr) {
    throw QuantError("get_rows on " + label(w) + ": null ids or out");
  }
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= w.rows) {
      throw QuantError("get_rows on " + label(w) + ": id " + std::to_string(ids[i]) +
                       " at position " + std::to_string(i) + " is outside [0, " +
                       std::to_string(w.rows) + ")");
    }
  }
  const auto* base = static_cast<const std::byte*>(w.data);
  const KernelTable& kt = detail::active_kernels();
  for (int64_t i = 0; i < n; ++i) {
    const std::byte* row = base + static_cast<size_t>(ids[i]) * w.row_bytes;
    float* dst = out + i * w.cols;
    if (w.layout == WeightLayout::Grouped) {
      dequantize_grouped_row(w.type, row, w.cols, dst);
    } else if (w.type == DType::F16) {
      kt.f16_to_f32(reinterpret_cast<const uint16_t*>(row), dst, w.cols);
    } else {
      dequantize_row(w.type, row, dst, w.cols);
    }
  }
}

}  // namespace vsynth::kernels
