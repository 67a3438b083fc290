#include "kernels/tokenizer/gguf_vocab.h"

#include <string>

namespace vsynth::kernels {

namespace {

std::string where(const GgufFile& f, std::string_view key) {
  return f.name() + ": " + std::string(key);
}

std::string type_text(const GgufValue& v) {
  if (!v.is_array()) return std::string(gguf_type_name(v.type()));
  return "array of " + std::string(gguf_type_name(v.element_type()));
}

// The array at `key` (nullptr when absent) after checking its element type is one of `ok`.
const GgufValue* array_of(const GgufFile& f, std::string_view key,
                          std::initializer_list<GgufType> ok, std::string_view want) {
  const GgufValue* v = f.find(key);
  if (v == nullptr) return nullptr;
  bool good = v->is_array();
  if (good) {
    good = false;
    for (GgufType t : ok) good = good || v->element_type() == t;
  }
  if (!good) {
    throw TokenizerError(where(f, key) + " must be " + std::string(want) + ", got " +
                         type_text(*v) + " (value at offset " + std::to_string(v->offset()) + ")");
  }
  return v;
}

std::optional<TokenId> token_id(const GgufFile& f, std::string_view key, size_t n_tokens) {
  const GgufValue* v = f.find(key);
  if (v == nullptr) return std::nullopt;
  int64_t id = 0;
  switch (v->type()) {
    case GgufType::U8:
      id = v->as<uint8_t>();
      break;
    case GgufType::I8:
      id = v->as<int8_t>();
      break;
    case GgufType::U16:
      id = v->as<uint16_t>();
      break;
    case GgufType::I16:
      id = v->as<int16_t>();
      break;
    case GgufType::U32:
      id = v->as<uint32_t>();
      break;
    case GgufType::I32:
      id = v->as<int32_t>();
      break;
    case GgufType::I64:
      id = v->as<int64_t>();
      break;
    case GgufType::U64: {
      const uint64_t u = v->as<uint64_t>();
      id = u > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(u);
      break;
    }
    default:
      throw TokenizerError(where(f, key) + " must be an integer (u32), got " + type_text(*v));
  }
  if (id < 0 || static_cast<uint64_t>(id) >= n_tokens) {
    throw TokenizerError(where(f, key) + " = " + std::to_string(id) +
                         " is outside the vocabulary of " + std::to_string(n_tokens) +
                         " tokens (valid: 0.." + std::to_string(n_tokens - 1) + ")");
  }
  return static_cast<TokenId>(id);
}

std::optional<bool> flag(const GgufFile& f, std::string_view key) {
  const GgufValue* v = f.find(key);
  if (v == nullptr) return std::nullopt;
  if (v->type() != GgufType::Bool) {
    throw TokenizerError(where(f, key) + " must be a bool, got " + type_text(*v));
  }
  return v->as<bool>();
}

}  // namespace

Vocab load_vocab(const GgufFile& f) {
  Vocab v;
  v.source = f.name();

  const GgufValue* model = f.find("tokenizer.ggml.model");
  if (model == nullptr) throw TokenizerError(where(f, "tokenizer.ggml.model") + " is missing");
  if (model->type() != GgufType::String) {
    throw TokenizerError(where(f, "tokenizer.ggml.model") + " must be a string, got " +
                         type_text(*model));
  }
  v.model = std::string(model->as_string());
  if (const GgufValue* pre = f.find("tokenizer.ggml.pre")) {
    if (pre->type() != GgufType::String) {
      throw TokenizerError(where(f, "tokenizer.ggml.pre") + " must be a string, got " +
                           type_text(*pre));
    }
    v.pre = std::string(pre->as_string());
  }

  const GgufValue* tokens =
      array_of(f, "tokenizer.ggml.tokens", {GgufType::String}, "an array of string");
  if (tokens == nullptr) throw TokenizerError(where(f, "tokenizer.ggml.tokens") + " is missing");
  const auto strs = tokens->strings();
  v.tokens.assign(strs.begin(), strs.end());
  const size_t n = v.tokens.size();
  if (n == 0) throw TokenizerError(where(f, "tokenizer.ggml.tokens") + " is empty");

  const auto check_len = [&](std::string_view key, uint64_t len) {
    if (len != n) {
      throw TokenizerError(where(f, key) + " has " + std::to_string(len) + " entries for " +
                           std::to_string(n) + " tokens (must match)");
    }
  };
  if (const GgufValue* s = array_of(f, "tokenizer.ggml.scores", {GgufType::F32, GgufType::I32},
                                    "an array of f32 (or i32)")) {
    check_len("tokenizer.ggml.scores", s->size());
    if (s->element_type() == GgufType::F32) {
      v.scores = s->to_vector<float>();
    } else {
      const auto ints = s->to_vector<int32_t>();
      v.scores.assign(ints.begin(), ints.end());
    }
  }
  if (const GgufValue* t =
          array_of(f, "tokenizer.ggml.token_type", {GgufType::I32}, "an array of i32")) {
    check_len("tokenizer.ggml.token_type", t->size());
    v.types.reserve(n);
    for (int32_t raw : t->to_vector<int32_t>()) {
      // Types outside 1..6 are "undefined", as llama.cpp reads them.
      v.types.push_back(raw >= 1 && raw <= 6 ? static_cast<TokenType>(raw) : TokenType::Undefined);
    }
  }
  if (const GgufValue* m =
          array_of(f, "tokenizer.ggml.merges", {GgufType::String}, "an array of string")) {
    const auto ms = m->strings();
    v.merges.assign(ms.begin(), ms.end());
  } else if (v.model == "gpt2") {
    throw TokenizerError(where(f, "tokenizer.ggml.merges") +
                         " is missing (required for tokenizer.ggml.model = gpt2)");
  }

  // llama.cpp's defaults per model kind, used only where the file names no id.
  TokenId def_bos = kNoToken, def_eos = kNoToken, def_unk = kNoToken;
  if (v.model == "llama") {
    def_bos = 1;
    def_eos = 2;
    def_unk = 0;
  } else if (v.model == "gpt2") {
    def_bos = 11;
    def_eos = 11;
  }
  const auto in_range = [&](TokenId id) {
    return id != kNoToken && static_cast<size_t>(id) < n ? id : kNoToken;
  };
  v.bos = token_id(f, "tokenizer.ggml.bos_token_id", n).value_or(in_range(def_bos));
  v.eos = token_id(f, "tokenizer.ggml.eos_token_id", n).value_or(in_range(def_eos));
  v.unk = token_id(f, "tokenizer.ggml.unknown_token_id", n).value_or(in_range(def_unk));
  v.pad = token_id(f, "tokenizer.ggml.padding_token_id", n).value_or(kNoToken);
  v.eot = token_id(f, "tokenizer.ggml.eot_token_id", n).value_or(kNoToken);

  v.add_bos = flag(f, "tokenizer.ggml.add_bos_token");
  v.add_eos = flag(f, "tokenizer.ggml.add_eos_token");
  v.add_space_prefix = flag(f, "tokenizer.ggml.add_space_prefix");
  return v;
}

}  // namespace vsynth::kernels
