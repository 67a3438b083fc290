// vsynth serve: a request dialect is one small object per protocol (OpenAI completions and chat,
// llama.cpp /infill and /completion, Tabby's /v1/completions with `segments`, vsynth /v1/tasks):
// it parses a body into the request's task (ParsedRequest: the task record and its /decode
// overrides, validated once, every error naming its field) and renders a finished result, a
// streamed piece and a stream's last piece in its protocol's shape. A new protocol is a new
// file here and a line in dialect_for(); the server's phases do not change.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "tools/vsynth/serve/requests.h"
#include "tools/vsynth/serve/responses.h"

namespace vsynth::serve {

// A finished request as a dialect renders it: its facts, the request, and the item's result
// record (null for a result resumed from those the server holds: their records are not kept).
struct Finished {
  const ResultInfo& info;
  const ParsedRequest& request;
  const nlohmann::json* record = nullptr;
};

class Dialect {
 public:
  virtual ~Dialect() = default;
  virtual Endpoint endpoint() const = 0;
  // The body (a JSON object) into r.task and r's dialect fields (id_slot, response_fields,
  // client_id, has_cursor, warmup). Throws RequestError naming the field.
  virtual void parse(const nlohmann::json& body, const RequestLimits& limits,
                     ParsedRequest& r) const = 0;
  // The answer to a non-streamed request.
  virtual nlohmann::json result(const Finished& f) const = 0;
  // A streamed piece of text, and the stream's last piece (its finish known).
  virtual nlohmann::json chunk(const ResultInfo& r, std::string_view delta) const = 0;
  virtual nlohmann::json last(const Finished& f) const = 0;
  // A stream's event for a stage beginning or ending (`event`: begin | end); none by default.
  virtual std::optional<nlohmann::json> stage_event(std::string_view stage,
                                                    std::string_view event) const;
  // A stream's event saying a hook's rollback made the last `bytes` bytes shown void.
  virtual nlohmann::json retraction(std::size_t bytes) const;
  // A stream's event for a failure found after its head went out (`error`: error_body()).
  virtual nlohmann::json error_event(const nlohmann::json& error) const { return error; }
  // Whether a stream ends with `data: [DONE]` (OpenAI's marker; llama.cpp's streams have none).
  virtual bool done_marker() const { return true; }
};

// The dialect of an endpoint (Endpoint::Tabby: Tabby's body on /v1/completions).
const Dialect& dialect_for(Endpoint e);

// The dialects (dialects/*.cpp).
const Dialect& openai_completions();
const Dialect& openai_chat();
const Dialect& llama_infill();
const Dialect& llama_completion();
const Dialect& tabby_completions();
const Dialect& vsynth_tasks();

}  // namespace vsynth::serve
