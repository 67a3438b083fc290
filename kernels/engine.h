// The inference engine's public API: load a GGUF decoder model (gemma3, llama, qwen2), then drive
// one or more sequences through it token by token. Everything a generation stage needs is here;
// the forward pass behind it is kernels/engine.cpp, over kernels/model/ (config, weights, RoPE,
// vector math) and kernels/kv/ (paged KV cache, attention), which builds on model/ alone.
//
//   using namespace vsynth::kernels;
//   auto model = Model::load("models/gemma-3-270m-q4_k_m.gguf",
//                            {.kv_type = KvType::Int8, .threads = 2, .context_length = 4096});
//   const Tokenizer& tok = model->tokenizer();
//   std::unique_ptr<Sequence> seq = model->new_sequence();
//   std::vector<TokenId> prompt = tok.encode("def fib(n):");
//   std::span<const float> logits = seq->prefill(prompt);      // float[vocab] of the last token
//   for (int i = 0; i < 32; ++i) {
//     TokenId next = argmax(logits);                            // the sampler's job
//     if (tok.is_eog(next)) break;
//     logits = seq->decode(next);                               // position() grows by one
//   }
//   // Speculation / backtracking: remember a position, try tokens, go back.
//   int32_t mark = seq->position();
//   std::span<const float> all = seq->prefill_all(draft);      // draft.size() x vocab rows
//   seq->rollback(mark + accepted);                            // drop the rejected tail
//   std::unique_ptr<Sequence> alt = seq->fork();               // shares the prefix's KV blocks
//
// Prefix caching (ModelOptions::prefix_cache_bytes > 0; kernels/kv/prefix_cache.h): every
// prefill() publishes the full KV blocks it completed; a sequence started with
//   PrefixUse use;
//   auto seq = model->new_sequence_with_prefix(prompt, &use);  // position() == use.cached_tokens
//   logits = seq->prefill(std::span(prompt).subspan(seq->position()));
// shares the longest cached run of the prompt's whole blocks and evaluates only the rest. Its
// logits equal those of a cold sequence that prefilled the prompt in the same two pieces.
//
// Threading: a Model is immutable after load and shared (std::shared_ptr) by every sequence and
// thread. Each Sequence is driven by one thread at a time; different sequences may run
// concurrently (they share the model's KV block pool, which is locked). Compute runs in the
// model's own oneTBB arena of `threads` threads.
//
// Batched steps (continuous batching; kernels/sched/scheduler.h drives them): one forward pass
// over several sequences at once,
//   BatchRow rows[] = {{.sequence = a.get(), .tokens = {&next_a, 1}},              // a decode
//                      {.sequence = b.get(), .tokens = prompt_b, .publish = true},  // a prefill
//                      {.sequence = c.get(), .tokens = verify_c, .logits = RowLogits::All}};
//   model->forward_batch(rows);     // rows[i].result: that row's logits
// concatenates every row's tokens for the linear layers (one matmul over all of them) and runs
// attention per row over that row's own KV. Each row's logits are bit-identical to evaluating
// that sequence alone with the same call (decode / prefill / prefill_all), whatever else is in
// the batch and whatever the thread count: the step changes speed, never results.
//
// Memory: weights stay mmap'd (never copied); resident memory is about the file size plus the
// KV blocks in use plus small per-sequence scratch buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/model/config.h"
#include "kernels/tokenizer/tokenizer.h"

namespace vsynth::kernels {

struct ModelOptions {
  KvType kv_type = KvType::F16;
  // Worker threads for this model's oneTBB arena; 0 = the machine's default concurrency.
  int threads = 0;
  // Positions one sequence may hold; 0 = the model's trained context length (gemma3: 32768).
  int32_t context_length = 4096;
  // Total KV tokens (per layer) the block pool may hold across all live sequences; blocks
  // shared by forks count once. 0 = 4 x context_length. Memory is only allocated as blocks are
  // first used, so a generous limit costs nothing until it is reached; allocation past it throws.
  int64_t kv_pool_tokens = 0;
  // Sliding-window layers free blocks that fall out of their window, but keep this many extra
  // tokens so that rollback(pos) always works for position() - pos <= rollback_window.
  int32_t rollback_window = 256;
  // Prefix cache budget (bytes of KV blocks it may hold, every layer counted); 0 = off. The pool
  // grows by this much on top of kv_pool_tokens, so cached prefixes never starve live sequences
  // (and when it is full, unreferenced cached blocks are evicted before allocation fails).
  int64_t prefix_cache_bytes = 0;
};

// What new_sequence_with_prefix reused of one prompt.
struct PrefixUse {
  int32_t prompt_tokens = 0;
  int32_t cached_tokens = 0;  // a multiple of KvStats::block_tokens, < prompt_tokens
  bool hit() const { return cached_tokens > 0; }
};

// Prefix cache counters since load (all zero when the cache is off).
struct PrefixStats {
  int64_t lookups = 0;        // new_sequence_with_prefix calls
  int64_t hits = 0;           // those that reused at least one block
  int64_t lookup_tokens = 0;  // prompt tokens looked up
  int64_t cached_tokens = 0;  // of those, served from cached blocks
  int64_t evictions = 0;      // cached entries (one block index, every layer) evicted
  int64_t bytes = 0;          // bytes of blocks the cache holds now
  int64_t budget_bytes = 0;   // ModelOptions::prefix_cache_bytes
  double hit_rate() const { return lookups > 0 ? static_cast<double>(hits) / lookups : 0.0; }
};

// KV memory accounting (bytes of the pool's blocks; a block shared by forks counts once).
struct KvStats {
  int64_t bytes_used = 0;      // blocks currently held by some sequence
  int64_t bytes_capacity = 0;  // kv_pool_tokens worth of blocks
  int64_t blocks_used = 0;
  int64_t blocks_capacity = 0;
  int32_t block_tokens = 0;  // tokens per block
  PrefixStats prefix;
};

class Sequence;

// Which logits a batch row wants: none (a prefill chunk that is not the last), the last
// token's (prefill, decode) or every token's (prefill_all: speculative verification).
enum class RowLogits { None, Last, All };

// One sequence's part of a batched step (Model::forward_batch).
struct BatchRow {
  Sequence* sequence = nullptr;     // a sequence of this model, at most once per step
  std::span<const TokenId> tokens;  // evaluated at position() .. position()+n-1; n >= 1
  RowLogits logits = RowLogits::Last;
  // Hand the full KV blocks this row completes to the prefix cache (what prefill does; decode
  // and prefill_all do not).
  bool publish = false;
  // Out: the row's logits, rows x vocab floats (All: n rows, Last: 1, None: empty). Like the
  // spans Sequence returns, valid until the sequence's next evaluation.
  std::span<const float> result;
};

class Model : public std::enable_shared_from_this<Model> {
 public:
  // Maps the file, reads the config and tokenizer, checks every tensor. Throws EngineError
  // (unknown architecture, missing/misshapen tensors, bad options) or GgufError / TokenizerError.
  static std::shared_ptr<Model> load(const std::filesystem::path& path,
                                     const ModelOptions& options = {});
  virtual ~Model();

  // The interface every backend implements (the CPU engine here; kernels/cuda's CudaModel).
  virtual const ModelConfig& config() const = 0;
  virtual const ModelOptions& options() const = 0;  // with 0 defaults resolved
  virtual const Tokenizer& tokenizer() const = 0;
  // Bytes of all weight tensors (CPU: mapped, not copied; CUDA: uploaded to the device).
  virtual std::size_t weight_bytes() const = 0;
  virtual KvStats kv_stats() const = 0;
  // Where the model runs, for logs and results: "cpu (avx2, 2 threads)", "cuda:0 NVIDIA H200".
  virtual std::string backend() const = 0;

  // A new, empty sequence (position 0). It keeps the model alive.
  virtual std::unique_ptr<Sequence> new_sequence() = 0;
  // A new sequence holding the longest cached prefix of `prompt` (whole blocks, at least one
  // token left to evaluate; position() == use->cached_tokens); the caller prefills the rest.
  // With the cache off (or on a backend without one) it is new_sequence() and use says 0.
  // Throws EngineError when the prompt's blocks alone need more than the cache's budget (the
  // message names both), so a caller can fall back to new_sequence().
  virtual std::unique_ptr<Sequence> new_sequence_with_prefix(std::span<const TokenId> prompt,
                                                             PrefixUse* use);

  // Evaluates every row in one step (see "Batched steps" above). Rows are checked first (a
  // sequence of another model or given twice, no tokens, a token outside the vocabulary, past
  // the context length: EngineError naming the row, nothing evaluated). If the step fails later
  // (KV pool exhausted) every row is left as its own failed evaluation leaves it and the error
  // is rethrown. Calls on disjoint sequences may come from several threads (they take turns).
  // The base implementation evaluates the rows one by one through the Sequence calls.
  virtual void forward_batch(std::span<BatchRow> rows);

 protected:
  Model() = default;
};

// One stream of tokens with its KV cache. Logit spans stay valid until the next call that
// evaluates tokens on this sequence (prefill, prefill_all, decode) or its destruction.
class Sequence {
 public:
  virtual ~Sequence();

  // Evaluates `tokens` at positions position() .. position()+n-1 in one batched pass and returns
  // the last token's logits (float[vocab]). Empty input: throws EngineError.
  virtual std::span<const float> prefill(std::span<const TokenId> tokens) = 0;
  // Same, but returns every token's logits: n rows of vocab floats, row-major (speculative
  // verification, teacher forcing).
  virtual std::span<const float> prefill_all(std::span<const TokenId> tokens) = 0;
  // One token at position(); its logits (float[vocab]).
  virtual std::span<const float> decode(TokenId token) = 0;

  // Tokens evaluated so far (= the position the next token gets).
  virtual int32_t position() const = 0;
  // Those tokens, in order.
  virtual std::span<const TokenId> tokens() const = 0;
  // The logits most recently returned (last row), empty before the first evaluation or after a
  // rollback.
  virtual std::span<const float> last_logits() const = 0;

  // Forgets every token at positions >= pos; blocks no longer needed go back to the pool.
  // Valid for min_rollback_position() <= pos <= position() (EngineError otherwise): sliding
  // layers cannot get back keys they already freed, so a model with sliding layers can always
  // roll back ModelOptions::rollback_window tokens, and further only while the keys are held.
  virtual void rollback(int32_t pos) = 0;
  virtual int32_t min_rollback_position() const = 0;
  // A new sequence with the same tokens and KV cache. Full blocks are shared (reference counted);
  // the partial last block is copied when either side writes to it (copy-on-write).
  virtual std::unique_ptr<Sequence> fork() const = 0;

  // Bytes of KV blocks this sequence references (shared blocks counted in full).
  virtual int64_t kv_bytes() const = 0;
  virtual const Model& model() const = 0;
};

}  // namespace vsynth::kernels
