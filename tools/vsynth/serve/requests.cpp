#include "tools/vsynth/serve/requests.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "base/hash.h"
#include "tools/vsynth/serve/dialects/dialect.h"
#include "tools/vsynth/serve/dialects/fields.h"
#include "tools/vsynth/serve/json_body.h"

namespace vsynth::serve {

const char* to_string(Endpoint e) {
  switch (e) {
    case Endpoint::Completions:
      return "/v1/completions";
    case Endpoint::Chat:
      return "/v1/chat/completions";
    case Endpoint::Infill:
      return "/infill";
    case Endpoint::Completion:
      return "/completion";
    case Endpoint::Tasks:
      return "/v1/tasks";
    case Endpoint::Tabby:
      return "/v1/completions";
  }
  return "?";
}

std::string text_checksum(std::string_view text) {
  return fmt::format("{:016x}", base::fnv1a64(text));
}

namespace {

using fields::bad;
using fields::bool_of;
using fields::find;
using fields::int_of;
using fields::string_of;
using nlohmann::json;

std::optional<ResumeFrom> resume_of(const json& body) {
  const json* v = find(body, "resume_from");
  if (!v) return std::nullopt;
  if (!v->is_object()) {
    bad("resume_from", fmt::format("must be an object {{\"offset\": bytes, \"checksum\": hex}} "
                                   "(got {})",
                                   v->type_name()));
  }
  ResumeFrom r;
  const auto off = int_of(*v, "offset", 0, int64_t{1} << 40);
  if (!off) bad("resume_from.offset", "is required (bytes of the text already received)");
  r.offset = static_cast<std::size_t>(*off);
  const auto sum = string_of(*v, "checksum");
  if (!sum) bad("resume_from.checksum", "is required (FNV-1a 64 of those bytes, 16 hex digits)");
  r.checksum = *sum;
  return r;
}

void finish_common(ParsedRequest& r, const json& body) {
  r.model = string_of(body, "model").value_or("");
  r.stream = bool_of(body, "stream").value_or(false);
  r.resume = resume_of(body);
  if (r.resume && !r.stream) bad("resume_from", "needs \"stream\": true (it continues a stream)");
  r.fingerprint = text_checksum(r.model + '\n' + r.task.dump());
}

}  // namespace

ParsedRequest parse_request(Endpoint endpoint, std::string_view text, const RequestLimits& limits) {
  json body = parse_json_body(text);
  if (!body.is_object()) {
    throw RequestError(400, "",
                       fmt::format("the body must be a JSON object (got {})", body.type_name()));
  }
  // Tabby shares /v1/completions with OpenAI: its bodies carry `segments`.
  if (endpoint == Endpoint::Completions && find(body, "segments")) endpoint = Endpoint::Tabby;
  ParsedRequest r;
  r.endpoint = endpoint;
  dialect_for(endpoint).parse(body, limits, r);
  finish_common(r, body);
  return r;
}

}  // namespace vsynth::serve
