// vsynth's POST /v1/tasks: a task record (examples/tasks/*.jsonl), checked before it runs; the
// answer is the result record (server.cpp writes it: it is the item's own), streamed as stage
// events, text, retractions, then the record.
#include <fmt/format.h>

#include <cstring>
#include <limits>

#include "tools/vsynth/serve/dialects/dialect.h"
#include "tools/vsynth/serve/dialects/fields.h"

namespace vsynth::serve {

namespace {

using nlohmann::json;
using namespace fields;

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
  if (!d) return;
  if (!d->is_object()) bad("decode", fmt::format("must be an object (got {})", d->type_name()));
  const auto in = [&](const char* k) { return "decode." + std::string(k); };
  const auto check_int = [&](const char* k, int64_t lo, int64_t hi) -> std::optional<int64_t> {
    try {
      return int_of(*d, k, lo, hi);
    } catch (const RequestError& e) {
      throw RequestError(400, in(k), fmt::format("`{}`{}", in(k), e.what() + std::strlen(k) + 2));
    }
  };
  const auto check_num = [&](const char* k, double lo, double hi) {
    try {
      (void)number_of(*d, k, lo, hi);
    } catch (const RequestError& e) {
      throw RequestError(400, in(k), fmt::format("`{}`{}", in(k), e.what() + std::strlen(k) + 2));
    }
  };
  if (auto n = check_int("max_new_tokens", 1, 32768)) {
    task["decode"]["max_new_tokens"] = std::min<int64_t>(*n, limits.max_tokens);
  }
  check_num("temperature", 0.0, 5.0);
  check_num("top_p", 0.01, 1.0);
  (void)check_int("seed", 0, std::numeric_limits<int64_t>::max());
  (void)check_int("n_indent", 0, 1 << 16);
  (void)check_int("max_predict_ms", 0, int64_t{1} << 31);
  if (const json* w = find(*d, "warmup"); w && !w->is_boolean()) {
    bad(in("warmup"), "must be true or false");
  }
  if (const json* st = find(*d, "stop")) {
    if (!st->is_array()) bad(in("stop"), "must be an array of non-empty strings");
    for (std::size_t i = 0; i < st->size(); ++i) {
      if (!(*st)[i].is_string() || (*st)[i].get_ref<const std::string&>().empty()) {
        bad(fmt::format("decode.stop[{}]", i), "must be a non-empty string");
      }
    }
  }
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
  // The record itself is the answer (server.cpp); these are the text events of a stream.
  json result(const ResultInfo& r, const ParsedRequest&) const override {
    return {{"text", r.text}, {"vsynth", r.vsynth}};
  }
  json chunk(const ResultInfo&, std::string_view delta) const override {
    return {{"event", "text"}, {"text", delta}};
  }
  json last(const ResultInfo& r) const override { return {{"event", "end"}, {"vsynth", r.vsynth}}; }
};

}  // namespace

const Dialect& vsynth_tasks() {
  static const Tasks d;
  return d;
}

}  // namespace vsynth::serve
