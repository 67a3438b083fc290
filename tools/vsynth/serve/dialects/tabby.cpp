// Tabby's POST /v1/completions (tabby-agent): {language, segments: {prefix, suffix, filepath,
// git_url, declarations, relevant_snippets_from_changed_files,
// relevant_snippets_from_recently_opened_files, clipboard}, temperature, seed}. Its answer
// {id, choices: [{index, text}]} is the OpenAI completion body, which holds those fields.
#include <fmt/format.h>

#include "tools/vsynth/serve/dialects/dialect.h"
#include "tools/vsynth/serve/dialects/fields.h"

namespace vsynth::serve {

namespace {

using nlohmann::json;
using namespace fields;

// Tabby's /v1/completions: {language, segments: {prefix, suffix, filepath, git_url,
// declarations, relevant_snippets_from_changed_files,
// relevant_snippets_from_recently_opened_files, clipboard}, temperature, seed, mode, user,
// debug_options}.
json tabby_task(const json& body) {
  const json* seg = find(body, "segments");
  if (!seg->is_object()) {
    bad("segments", fmt::format("must be an object {{prefix, suffix, filepath, ...}} (got {})",
                                seg->type_name()));
  }
  const auto prefix = string_of(*seg, "prefix");
  if (!prefix) bad("segments.prefix", "is required (a string)");
  const auto s = [&](const char* k) {
    try {
      return string_of(*seg, k);
    } catch (const RequestError& e) {
      throw RequestError(400, std::string("segments.") + k,
                         fmt::format("`segments.{}` must be a string", k));
    }
  };
  const std::string suffix = s("suffix").value_or("");
  const auto file = s("filepath");
  (void)s("git_url");
  (void)s("clipboard");  // not a file of the project: dropped (docs/serving.md)
  json t = cursor_task(*prefix, suffix, file, string_of(body, "language"), "segments.filepath");
  json files = json::array();
  chunks_into(*seg, "declarations", "segments.", "filepath", "body", files);
  chunks_into(*seg, "relevant_snippets_from_changed_files", "segments.", "filepath", "body", files);
  chunks_into(*seg, "relevant_snippets_from_recently_opened_files", "segments.", "filepath", "body",
              files);
  if (!files.empty()) t["files"] = std::move(files);
  return t;
}

class Tabby : public Dialect {
 public:
  Endpoint endpoint() const override { return Endpoint::Tabby; }
  void parse(const json& body, const RequestLimits& limits, ParsedRequest& r) const override {
    r.task = tabby_task(body);
    r.task["decode"] = decode_of(body, "max_tokens", limits, r.warmup);
    r.has_cursor = true;
  }
  json result(const Finished& f) const override { return openai_completions().result(f); }
  json chunk(const ResultInfo& r, std::string_view delta) const override {
    return openai_completions().chunk(r, delta);
  }
  json last(const Finished& f) const override { return openai_completions().last(f); }
};

}  // namespace

const Dialect& tabby_completions() {
  static const Tabby d;
  return d;
}

}  // namespace vsynth::serve
