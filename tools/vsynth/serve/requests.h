// vsynth serve: HTTP request bodies (OpenAI completions and chat, llama.cpp /infill and
// /completion, vsynth /v1/tasks) turned into one task record for a pipeline, with validation
// whose every error names the field at fault.
//
// A cursor request (OpenAI completions, llama.cpp /infill and /completion, Tabby) becomes a
// completion task: /prefix, /suffix, /source = prefix + suffix and /cursor {offset: bytes of the
// prefix}, so a pipeline's context stages (ast.anchor, context.*, retrieval.*) locate the cursor
// in the file being edited whether or not the client named it; /path only when it did (`file`,
// Tabby's segments.filepath), /language when it sent one. /files: llama.cpp's input_extra
// [{filename, text}] and Tabby's declarations and relevant_snippets_* [{filepath, body}] (one
// entry per chunk; Tabby's clipboard is not a file and is dropped). Sampling fields become the
// task's /decode object (stages/generation/task_decode.h), with llama.cpp's n_indent and
// t_max_predict_ms as /decode/n_indent and /decode/max_predict_ms.
//
// Every body is parsed with a nesting bound before anything recurses over it (json_body.h).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace vsynth::serve {

// The request's dialect. Tabby shares /v1/completions with OpenAI: a body with `segments` is
// Tabby's.
enum class Endpoint { Completions, Chat, Infill, Completion, Tasks, Tabby };
const char* to_string(Endpoint e);

// A request the server refuses: HTTP status (4xx), the field at fault ("" for the body as a
// whole) and why.
class RequestError : public std::runtime_error {
 public:
  RequestError(int status, std::string field, const std::string& message)
      : std::runtime_error(message), status_(status), field_(std::move(field)) {}
  int status() const { return status_; }
  const std::string& field() const { return field_; }

 private:
  int status_;
  std::string field_;
};

// resume_from: the client already holds `offset` bytes of the text, whose checksum
// (text_checksum) is `checksum`.
struct ResumeFrom {
  std::size_t offset = 0;
  std::string checksum;
};

// FNV-1a 64 of the bytes, as 16 lowercase hex digits: what resume_from's checksum is.
std::string text_checksum(std::string_view text);

struct ParsedRequest {
  Endpoint endpoint = Endpoint::Completions;
  std::string model;  // the pipeline asked for ("" : the default one)
  bool stream = false;
  nlohmann::json task;    // the task record, without an id (the server numbers its tasks)
  std::string client_id;  // /v1/tasks: the record's own id, given back in the result
  // The task has a file to read (a cursor request, or a task with source / path): its
  // pipeline's file-reading stages run. False (chat, an instruction-only task): they are
  // skipped (ServedPipeline::fileless_bypass).
  bool has_cursor = false;
  bool warmup = false;  // n_predict 0: prefill only
  std::optional<ResumeFrom> resume;
  // llama.cpp's id_slot (>= 0): a newer request of the same client on the same slot supersedes
  // this one. nullopt: none (or -1, llama.cpp's "any slot").
  std::optional<int64_t> id_slot;
  // llama.cpp's response_fields: only these fields in the answer ("timings/prompt_n" paths
  // flatten to the key "timings/prompt_n"); empty: all.
  std::vector<std::string> response_fields;
  // Identifies the request's result across requests (for resume_from): a hash of the task
  // record and the pipeline, whatever the stream / resume fields say.
  std::string fingerprint;
};

struct RequestLimits {
  int max_tokens = 2048;  // a larger max_tokens / n_predict is cut to this (the tenant's cap)
};

// Parses and validates a body. Throws RequestError: 400 for malformed JSON or a field of the
// wrong type or range, naming the field.
ParsedRequest parse_request(Endpoint endpoint, std::string_view body, const RequestLimits& limits);

}  // namespace vsynth::serve
