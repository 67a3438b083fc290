// vsynth's POST /v1/tasks: a task record (examples/tasks/*.jsonl), checked before it runs; the
// answer is the item's result record, streamed as stage events, text, retractions, then the
// record.
#include <fmt/format.h>

#include <algorithm>

#include "stages/facets/decode_fields.h"
#include "tools/vsynth/serve/dialects/dialect.h"
#include "tools/vsynth/serve/dialects/fields.h"

namespace vsynth::serve {

namespace {

using nlohmann::json;
using stages::facets::decode_fields;
using stages::facets::DecodeField;
using stages::facets::DecodeType;
using namespace fields;

// The task's /decode object, every field in the types and limits of the /decode table
// (stages/facets/decode_fields.h); max_new_tokens is cut to the tenant's cap. Keys the table
// does not hold are left to generate.llm, which names the valid ones.
void check_decode(const json& d, const RequestLimits& limits, json& task) {
  for (const DecodeField& f : decode_fields()) {
    const std::string key(f.name);
    const std::string where = "decode." + key;
    switch (f.type) {
      case DecodeType::Integer:
      case DecodeType::Number:
        (void)decode_value(d, key.c_str(), f.name, where);
        break;
      case DecodeType::Boolean:
        if (const json* b = find(d, key.c_str()); b && !b->is_boolean()) {
          bad(where, fmt::format("must be true or false (got {})", b->type_name()));
        }
        break;
      case DecodeType::Strings:
        if (const json* st = find(d, key.c_str())) {
          if (!st->is_array()) bad(where, "must be an array of non-empty strings");
          for (std::size_t i = 0; i < st->size(); ++i) {
            if (!(*st)[i].is_string() || (*st)[i].get_ref<const std::string&>().empty()) {
              bad(fmt::format("{}[{}]", where, i), "must be a non-empty string");
            }
          }
        }
        break;
    }
  }
  if (const json* n = find(d, "max_new_tokens")) {
    task["decode"]["max_new_tokens"] = std::min<int64_t>(n->get<int64_t>(), limits.max_tokens);
  }
}

// /v1/tasks: the fields a task record's stages read, by type, so that a malformed record is a
// 400 naming the field rather than a stage failure.
void check_task(const json& body, const RequestLimits& limits, json& task) {
  for (const char* k : {"prompt", "prefix", "suffix", "instruction", "source", "path", "language",
                        "entry_point", "signature", "spec"}) {
    (void)string_of(body, k);
  }
  if (const json* c = find(body, "cursor"); c && !c->is_object()) {
    bad("cursor", fmt::format("must be an object (got {})", c->type_name()));
  }
  if (const json* f = find(body, "files"); f && !f->is_array() && !f->is_object()) {
    bad("files", fmt::format("must be an array or an object (got {})", f->type_name()));
  }
  const json* d = find(body, "decode");
  if (d && !d->is_object())
    bad("decode", fmt::format("must be an object (got {})", d->type_name()));
  if (!find(body, "prompt") && !find(body, "prefix") && !find(body, "instruction") &&
      !find(body, "source")) {
    throw RequestError(400, "prefix",
                       "the task has none of `prefix`, `prompt`, `instruction` or `source`: "
                       "nothing to generate from (examples/tasks/*.jsonl show the shapes)");
  }
  if (d) check_decode(*d, limits, task);
}

class Tasks : public Dialect {
 public:
  Endpoint endpoint() const override { return Endpoint::Tasks; }
  void parse(const json& body, const RequestLimits& limits, ParsedRequest& r) const override {
    r.task = body;
    for (const char* k : {"model", "stream", "resume_from"}) r.task.erase(k);
    for (const char* k : {"id", "task_id"}) {
      if (const json* id = find(body, k)) {
        if (!id->is_string()) bad(k, fmt::format("must be a string (got {})", id->type_name()));
        if (r.client_id.empty()) r.client_id = id->get<std::string>();
        r.task.erase(k);
      }
    }
    check_task(body, limits, r.task);
    r.has_cursor = find(body, "path") != nullptr || find(body, "source") != nullptr;
  }
  // The item's result record is the answer: its `id` the client's, `task_id` the server's.
  json result(const Finished& f) const override {
    if (!f.record) return {{"text", f.info.text}, {"vsynth", f.info.vsynth}};
    json r = *f.record;
    r["task_id"] = f.info.vsynth.value("task_id", std::string());
    if (!f.request.client_id.empty()) r["id"] = f.request.client_id;
    return r;
  }
  // A stream: stage events, text, retractions, then the record (resumed: an end event).
  json chunk(const ResultInfo&, std::string_view delta) const override {
    return {{"event", "text"}, {"text", delta}};
  }
  json last(const Finished& f) const override {
    if (!f.record) return {{"event", "end"}, {"vsynth", f.info.vsynth}};
    return {{"event", "result"}, {"record", result(f)}};
  }
  std::optional<json> stage_event(std::string_view stage, std::string_view event) const override {
    return json{{"event", "stage_" + std::string(event)}, {"stage", stage}};
  }
  json retraction(std::size_t bytes) const override {
    return {{"event", "retract"}, {"bytes", bytes}};
  }
  json error_event(const json& error) const override {
    return {{"event", "error"}, {"error", error["error"]}};
  }
};

}  // namespace

const Dialect& vsynth_tasks() {
  static const Tasks d;
  return d;
}

}  // namespace vsynth::serve
