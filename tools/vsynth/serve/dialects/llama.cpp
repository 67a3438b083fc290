// llama.cpp's server: POST /infill (input_prefix, prompt typed after it, input_suffix,
// input_extra) and POST /completion (prompt), with n_predict, n_indent, t_max_predict_ms,
// id_slot, response_fields; answers {content, stop, tokens_*, timings, ...} (streamed: the same
// objects, no [DONE]).
#include <fmt/format.h>

#include <algorithm>

#include "tools/vsynth/serve/dialects/dialect.h"
#include "tools/vsynth/serve/dialects/fields.h"

namespace vsynth::serve {

namespace {

using nlohmann::json;
using namespace fields;

json files_of(const json& body) {
  json files = json::array();
  chunks_into(body, "input_extra", "", "filename", "text", files);
  return files;
}

double per_second(int n, double ms) {
  return ms > 0 ? 1000.0 * n / ms : 0.0;
}

// llama.cpp server's fields (tools/server): content, stop, the stop kinds, token counts,
// timings. prompt_n counts the prompt tokens evaluated (those from the KV pool excluded, as
// llama.cpp counts its cache hits out); tokens_cached: the tokens the sequence holds at the end
// (prompt + generated). truncated: false, because the candidates facet does not say whether
// the prompt renderer dropped prompt tokens to fit the context (stages/generation/prompt.cpp).
json llama_body(const ResultInfo& r, std::string_view content, bool final) {
  json j{{"content", content}, {"stop", final}, {"model", r.model}};
  if (final) {
    j["tokens_predicted"] = r.completion_tokens;
    j["tokens_evaluated"] = r.prompt_tokens;
    j["tokens_cached"] = r.prompt_tokens + r.completion_tokens;
    j["truncated"] = false;
    j["stopped_eos"] = r.finish == "eog";
    j["stopped_word"] = r.finish == "stop";
    j["stopped_limit"] = r.finish == "length" || r.finish == "context";
    const int prompt_n = std::max(0, r.prompt_tokens - r.cached_tokens);
    j["timings"] = {{"prompt_n", prompt_n},
                    {"prompt_ms", r.prefill_ms},
                    {"prompt_per_token_ms", prompt_n > 0 ? r.prefill_ms / prompt_n : 0.0},
                    {"prompt_per_second", per_second(prompt_n, r.prefill_ms)},
                    {"predicted_n", r.completion_tokens},
                    {"predicted_ms", r.decode_ms},
                    {"predicted_per_token_ms",
                     r.completion_tokens > 0 ? r.decode_ms / r.completion_tokens : 0.0},
                    {"predicted_per_second", per_second(r.completion_tokens, r.decode_ms)}};
    j["vsynth"] = r.vsynth;
  }
  return j;
}

// llama.cpp's response_fields: only the listed fields; "a/b" reads a nested value and keeps
// the path as its key (llama.cpp's json_get_nested_values).
json select_fields(const json& body, const std::vector<std::string>& fields) {
  json out = json::object();
  for (const std::string& f : fields) {
    const json* at = &body;
    std::size_t start = 0;
    while (at && start <= f.size()) {
      const std::size_t slash = std::min(f.find('/', start), f.size());
      const std::string key = f.substr(start, slash - start);
      const auto it = at->is_object() ? at->find(key) : at->end();
      at = at->is_object() && it != at->end() ? &*it : nullptr;
      start = slash + 1;
    }
    if (at) out[f] = *at;
  }
  return out;
}

class Llama : public Dialect {
 public:
  explicit Llama(bool infill) : infill_(infill) {}
  Endpoint endpoint() const override { return infill_ ? Endpoint::Infill : Endpoint::Completion; }

  void parse(const json& body, const RequestLimits& limits, ParsedRequest& r) const override {
    std::string prefix;
    if (infill_) {
      prefix = string_of(body, "input_prefix").value_or("");
      // llama.cpp: `prompt` is the text typed after input_prefix, just before the cursor.
      prefix += prompt_of(body, "prompt").value_or("");
    } else {
      const auto prompt = prompt_of(body, "prompt");
      if (!prompt) bad("prompt", "is required (a string)");
      prefix = *prompt;
    }
    const std::string suffix = infill_ ? string_of(body, "input_suffix").value_or("") : "";
    r.task = cursor_task(prefix, suffix, file_of(body), string_of(body, "language"));
    if (json files = files_of(body); !files.empty()) r.task["files"] = std::move(files);
    (void)bool_of(body, "cache_prompt");  // always on: the model's KV pool does it
    r.task["decode"] = decode_of(body, "n_predict", limits, r.warmup);
    editor_decode(body, r.task["decode"]);
    r.id_slot = slot_of(body);
    r.response_fields = response_fields_of(body);
    r.has_cursor = true;
  }

  json result(const Finished& f) const override {
    json body = llama_body(f.info, f.info.text, true);
    const auto& only = f.request.response_fields;
    return only.empty() ? body : select_fields(body, only);
  }
  json chunk(const ResultInfo& r, std::string_view delta) const override {
    return llama_body(r, delta, false);
  }
  json last(const Finished& f) const override { return llama_body(f.info, "", true); }
  bool done_marker() const override { return false; }

 private:
  bool infill_;
};

}  // namespace

const Dialect& llama_infill() {
  static const Llama d(true);
  return d;
}

const Dialect& llama_completion() {
  static const Llama d(false);
  return d;
}

}  // namespace vsynth::serve
