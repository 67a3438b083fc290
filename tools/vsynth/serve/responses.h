// vsynth serve: what every answer shares: the result's facts (ResultInfo; each dialect renders
// them in its shape, dialects/), Server-Sent Events framing for streams, and the error body
// every 4xx/5xx carries.
//
// Every OpenAI-style body carries a `vsynth` object: the task id, the pipeline, the item's
// status, the generation's own finish reason, and `context`: "used" (the request named its
// file), "none" (the pipeline has no context stages) or "skipped: ..." with the reason.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "tools/vsynth/serve/requests.h"

namespace vsynth::serve {

// What a finished (or streaming) generation says about itself.
struct ResultInfo {
  std::string id;       // the response id ("cmpl-..." from the task id)
  std::string model;    // the pipeline's name
  int64_t created = 0;  // unix seconds
  std::string text;     // candidate 0's text (what was streamed)
  std::string finish;   // generate.llm's finish (eog, stop, length, cancelled...); "" unknown
  int prompt_tokens = 0;
  int completion_tokens = 0;
  int cached_tokens = 0;  // prompt tokens served from the model's KV pool
  double prefill_ms = 0, decode_ms = 0;
  nlohmann::json vsynth = nlohmann::json::object();  // see the header
};

// OpenAI's finish_reason for a generation finish: stop (eog, stop string, hook), length
// (token budget, context), cancelled.
std::string openai_finish(std::string_view finish);

// "data: <json>\n\n"; the OpenAI end marker "data: [DONE]\n\n".
std::string sse(const nlohmann::json& j);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

// {"error": {"message", "type", "param" (the field, null when none), "code" (status)}}.
nlohmann::json error_body(int status, std::string_view message, std::string_view field = {});

}  // namespace vsynth::serve
