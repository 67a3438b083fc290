#include "kernels/model/config.h"

#include <cmath>
#include <string>

#include "kernels/gguf/reader.h"

namespace vsynth::kernels {

namespace {

// Integer metadata may be stored as any integer type (converters use u32; hand-written files
// sometimes i32 or u64): accept them all, reject negatives and values past int32.
std::optional<int64_t> get_int(const GgufFile& f, const std::string& key) {
  const GgufValue* v = f.find(key);
  if (v == nullptr) return std::nullopt;
  switch (v->type()) {
    case GgufType::U8:
      return v->as<uint8_t>();
    case GgufType::I8:
      return v->as<int8_t>();
    case GgufType::U16:
      return v->as<uint16_t>();
    case GgufType::I16:
      return v->as<int16_t>();
    case GgufType::U32:
      return v->as<uint32_t>();
    case GgufType::I32:
      return v->as<int32_t>();
    case GgufType::U64:
      return static_cast<int64_t>(v->as<uint64_t>());
    case GgufType::I64:
      return v->as<int64_t>();
    default:
      throw EngineError(f.name() + ": metadata key '" + key +
                        "' must be an integer, found another type");
  }
}

std::optional<float> get_float(const GgufFile& f, const std::string& key) {
  const GgufValue* v = f.find(key);
  if (v == nullptr) return std::nullopt;
  if (v->type() == GgufType::F32) return v->as<float>();
  if (v->type() == GgufType::F64) return static_cast<float>(v->as<double>());
  throw EngineError(f.name() + ": metadata key '" + key + "' must be f32 or f64");
}

int32_t require_dim(const GgufFile& f, const std::string& key, std::optional<int64_t> v, int64_t lo,
                    int64_t hi) {
  if (!v) throw EngineError(f.name() + ": metadata key '" + key + "' not found (required)");
  if (*v < lo || *v > hi) {
    throw EngineError(f.name() + ": metadata key '" + key + "' = " + std::to_string(*v) +
                      " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return static_cast<int32_t>(*v);
}

}  // namespace

std::string_view to_string(Arch a) {
  switch (a) {
    case Arch::Gemma3:
      return "gemma3";
    case Arch::Llama:
      return "llama";
    case Arch::Qwen2:
      return "qwen2";
  }
  return "?";
}

ModelConfig read_model_config(const GgufFile& f) {
  ModelConfig c;
  const auto arch_opt = f.get_string_optional("general.architecture");
  if (!arch_opt) {
    throw EngineError(f.name() +
                      ": metadata key 'general.architecture' not found (required; "
                      "supported: gemma3, llama, qwen2)");
  }
  c.arch_name = std::string(*arch_opt);
  if (c.arch_name == "gemma3") {
    c.arch = Arch::Gemma3;
  } else if (c.arch_name == "llama") {
    c.arch = Arch::Llama;
  } else if (c.arch_name == "qwen2") {
    c.arch = Arch::Qwen2;
  } else {
    throw EngineError(f.name() + ": architecture '" + c.arch_name +
                      "' is not supported (supported: gemma3, llama, qwen2)");
  }
  const std::string p = c.arch_name + ".";
  const auto dim = [&](const std::string& k, int64_t lo, int64_t hi) {
    return require_dim(f, p + k, get_int(f, p + k), lo, hi);
  };
  constexpr int64_t kBig = 1 << 20;
  c.d_model = dim("embedding_length", 1, kBig);
  c.n_layers = dim("block_count", 1, 4096);
  c.ffn_dim = dim("feed_forward_length", 1, kBig);
  c.n_heads = dim("attention.head_count", 1, 4096);
  c.n_kv_heads =
      f.has(p + "attention.head_count_kv") ? dim("attention.head_count_kv", 1, 4096) : c.n_heads;
  if (c.n_heads % c.n_kv_heads != 0) {
    throw EngineError(f.name() + ": attention.head_count (" + std::to_string(c.n_heads) +
                      ") must be a multiple of attention.head_count_kv (" +
                      std::to_string(c.n_kv_heads) + ")");
  }
  const int32_t default_hd = c.d_model / c.n_heads;
  c.head_dim_k =
      f.has(p + "attention.key_length") ? dim("attention.key_length", 1, 65536) : default_hd;
  c.head_dim_v =
      f.has(p + "attention.value_length") ? dim("attention.value_length", 1, 65536) : default_hd;
  if (c.head_dim_k < 2 || c.head_dim_k % 2 != 0) {
    throw EngineError(f.name() + ": head dimension " + std::to_string(c.head_dim_k) +
                      " must be even (RoPE rotates pairs)");
  }
  c.trained_context = f.has(p + "context_length") ? dim("context_length", 1, 1 << 24) : 4096;
  c.rms_eps = get_float(f, p + "attention.layer_norm_rms_epsilon").value_or(1e-5f);
  if (!(c.rms_eps > 0.0f) || !std::isfinite(c.rms_eps)) {
    throw EngineError(f.name() + ": " + p + "attention.layer_norm_rms_epsilon must be > 0");
  }
  c.rope_base = get_float(f, p + "rope.freq_base").value_or(10000.0f);
  c.rope_base_sliding = c.rope_base;
  c.rope_dims = f.has(p + "rope.dimension_count") ? dim("rope.dimension_count", 2, c.head_dim_k)
                                                  : c.head_dim_k;
  if (c.rope_dims % 2 != 0) {
    throw EngineError(f.name() + ": " + p + "rope.dimension_count must be even");
  }
  if (const auto st = f.get_string_optional(p + "rope.scaling.type")) {
    if (*st == "linear") {
      const float factor = get_float(f, p + "rope.scaling.factor").value_or(1.0f);
      if (!(factor > 0.0f)) throw EngineError(f.name() + ": rope.scaling.factor must be > 0");
      c.rope_freq_scale = 1.0f / factor;
    } else if (*st != "none") {
      throw EngineError(f.name() + ": rope.scaling.type '" + std::string(*st) +
                        "' is not supported (supported: none, linear)");
    }
  } else if (const auto lin = get_float(f, p + "rope.scale_linear")) {
    if (!(*lin > 0.0f)) throw EngineError(f.name() + ": rope.scale_linear must be > 0");
    c.rope_freq_scale = 1.0f / *lin;
  }
  if (!(c.rope_base > 0.0f)) throw EngineError(f.name() + ": rope.freq_base must be > 0");

  c.layer_sliding.assign(static_cast<size_t>(c.n_layers), false);
  c.attn_scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim_k));
  switch (c.arch) {
    case Arch::Gemma3:
      c.rope_kind = RopeKind::Neox;
      c.ffn_act = FfnActivation::GeluTanh;
      c.qk_norm = true;
      c.post_norms = true;
      // llama.cpp scales by sqrtf(n_embd) in fp32 (HF's bf16 rounding is not reproduced).
      c.embed_scale = std::sqrt(static_cast<float>(c.d_model));
      c.sliding_window = dim("attention.sliding_window", 1, 1 << 24);
      c.rope_base_sliding = 10000.0f;
      for (int32_t l = 0; l < c.n_layers; ++l) c.layer_sliding[static_cast<size_t>(l)] = l % 6 < 5;
      if (f.has(p + "final_logit_softcapping") || f.has(p + "attn_logit_softcapping")) {
        throw EngineError(f.name() + ": gemma3 logit soft-capping is not supported");
      }
      break;
    case Arch::Llama:
      c.rope_kind = RopeKind::Norm;
      break;
    case Arch::Qwen2:
      c.rope_kind = RopeKind::Neox;
      c.qkv_bias = true;
      break;
  }

  const GgufTensor* embd = f.find_tensor("token_embd.weight");
  if (embd != nullptr && embd->n_dims == 2) {
    c.vocab_size = static_cast<int32_t>(embd->ne[1]);
  } else if (const GgufValue* toks = f.find("tokenizer.ggml.tokens")) {
    c.vocab_size = static_cast<int32_t>(toks->size());
  }
  c.tied_output = f.find_tensor("output.weight") == nullptr;
  return c;
}

}  // namespace vsynth::kernels
