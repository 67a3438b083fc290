#include "tools/vsynth/serve/responses.h"

namespace vsynth::serve {

using nlohmann::json;

std::string openai_finish(std::string_view f) {
  if (f == "length" || f == "context") return "length";
  if (f == "cancelled") return "cancelled";
  return "stop";
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
