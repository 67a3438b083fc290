#include "tools/vsynth/serve/responses.h"

#include <algorithm>

namespace vsynth::serve {

using nlohmann::json;

std::string openai_finish(std::string_view f) {
  if (f == "length" || f == "context") return "length";
  if (f == "cancelled") return "cancelled";
  return "stop";
}

namespace {

bool llama_style(Endpoint e) {
  return e == Endpoint::Infill || e == Endpoint::Completion;
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

json usage(const ResultInfo& r) {
  return {{"prompt_tokens", r.prompt_tokens},
          {"completion_tokens", r.completion_tokens},
          {"total_tokens", r.prompt_tokens + r.completion_tokens}};
}

}  // namespace

json completion_body(Endpoint e, const ResultInfo& r) {
  if (llama_style(e)) return llama_body(r, r.text, true);
  json choice{{"index", 0}, {"finish_reason", openai_finish(r.finish)}, {"logprobs", nullptr}};
  if (e == Endpoint::Chat) {
    choice["message"] = {{"role", "assistant"}, {"content", r.text}};
  } else {
    choice["text"] = r.text;
  }
  return {{"id", r.id},
          {"object", e == Endpoint::Chat ? "chat.completion" : "text_completion"},
          {"created", r.created},
          {"model", r.model},
          {"choices", json::array({choice})},
          {"usage", usage(r)},
          {"vsynth", r.vsynth}};
}

json chunk_body(Endpoint e, const ResultInfo& r, std::string_view delta, std::string_view finish) {
  if (llama_style(e)) return llama_body(r, delta, !finish.empty());
  json choice{{"index", 0}, {"logprobs", nullptr}};
  choice["finish_reason"] = finish.empty() ? json(nullptr) : json(openai_finish(finish));
  if (e == Endpoint::Chat) {
    choice["delta"] = delta.empty() && !finish.empty() ? json::object() : json{{"content", delta}};
  } else {
    choice["text"] = delta;
  }
  json j{{"id", r.id},
         {"object", e == Endpoint::Chat ? "chat.completion.chunk" : "text_completion"},
         {"created", r.created},
         {"model", r.model},
         {"choices", json::array({choice})}};
  if (!finish.empty()) {
    j["usage"] = usage(r);
    j["vsynth"] = r.vsynth;
  }
  return j;
}

std::string sse(const json& j) {
  return "data: " + j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

json error_body(int status, std::string_view message, std::string_view field) {
  const char* type = status == 429   ? "rate_limit_exceeded"
                     : status == 401 ? "authentication_error"
                     : status >= 500 ? "server_error"
                                     : "invalid_request_error";
  return {{"error",
           {{"message", message},
            {"type", type},
            {"param", field.empty() ? json(nullptr) : json(field)},
            {"code", status}}}};
}

}  // namespace vsynth::serve
