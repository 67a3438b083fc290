#include "tools/vsynth/serve/requests.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>

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
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return fmt::format("{:016x}", h);
}

namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& field, const std::string& message) {
  throw RequestError(400, field, fmt::format("`{}` {}", field, message));
}

// The field when present and not null.
const json* find(const json& body, const char* key) {
  const auto it = body.find(key);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

std::optional<std::string> string_of(const json& body, const char* key) {
  const json* v = find(body, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) bad(key, fmt::format("must be a string (got {})", v->type_name()));
  return v->get<std::string>();
}

std::optional<bool> bool_of(const json& body, const char* key) {
  const json* v = find(body, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) bad(key, fmt::format("must be true or false (got {})", v->type_name()));
  return v->get<bool>();
}

std::optional<double> number_of(const json& body, const char* key, double lo, double hi) {
  const json* v = find(body, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) bad(key, fmt::format("must be a number (got {})", v->type_name()));
  const double d = v->get<double>();
  if (d < lo || d > hi) bad(key, fmt::format("must be in [{}, {}] (got {})", lo, hi, v->dump()));
  return d;
}

std::optional<int64_t> int_of(const json& body, const char* key, int64_t lo, int64_t hi) {
  const json* v = find(body, key);
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) {
    bad(key,
        fmt::format("must be an integer (got {})", v->is_number() ? v->dump() : v->type_name()));
  }
  if (!v->is_number_unsigned() && (v->get<int64_t>() < lo || v->get<int64_t>() > hi)) {
    bad(key, fmt::format("must be in [{}, {}] (got {})", lo, hi, v->dump()));
  }
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(hi)) {
    bad(key, fmt::format("must be in [{}, {}] (got {})", lo, hi, v->dump()));
  }
  return v->get<int64_t>();
}

// stop: a string or an array of strings, any number of them (empty ones dropped).
std::vector<std::string> stop_of(const json& body) {
  std::vector<std::string> out;
  const json* v = find(body, "stop");
  if (!v) return out;
  if (v->is_string()) {
    if (!v->get_ref<const std::string&>().empty()) out.push_back(v->get<std::string>());
    return out;
  }
  if (!v->is_array())
    bad("stop", fmt::format("must be a string or an array of strings (got {})", v->type_name()));
  for (std::size_t i = 0; i < v->size(); ++i) {
    const json& s = (*v)[i];
    if (!s.is_string()) {
      bad(fmt::format("stop[{}]", i), fmt::format("must be a string (got {})", s.type_name()));
    }
    if (!s.get_ref<const std::string&>().empty()) out.push_back(s.get<std::string>());
  }
  return out;
}

// A prompt: a string, or an array holding one string (OpenAI allows a batch; one per request).
std::optional<std::string> prompt_of(const json& body, const char* key) {
  const json* v = find(body, key);
  if (!v) return std::nullopt;
  if (v->is_string()) return v->get<std::string>();
  if (v->is_array() && v->size() == 1 && (*v)[0].is_string()) return (*v)[0].get<std::string>();
  bad(key, v->is_array() ? "must be a string or an array of exactly one string (token arrays and "
                           "batches are not served; send one request per prompt)"
                         : fmt::format("must be a string (got {})", v->type_name()));
}

// The sampling fields every endpoint shares, into /decode. `budget_key` is max_tokens or
// n_predict; n_predict -1 means "as many as allowed".
json decode_of(const json& body, const char* budget_key, const RequestLimits& limits,
               bool& warmup) {
  json d = json::object();
  const int64_t lo = std::string_view(budget_key) == "n_predict" ? -1 : 0;
  if (auto n = int_of(body, budget_key, lo, int64_t{1} << 30)) {
    if (*n == 0) {
      warmup = true;
    } else {
      const int64_t want = *n < 0 ? limits.max_tokens : *n;
      d["max_new_tokens"] = std::min<int64_t>(want, limits.max_tokens);
    }
  }
  if (auto t = number_of(body, "temperature", 0.0, 5.0)) d["temperature"] = *t;
  if (auto p = number_of(body, "top_p", 0.01, 1.0)) d["top_p"] = *p;
  // Seeded always: a request's text is a function of the request, never of its task number.
  d["seed"] = int_of(body, "seed", 0, std::numeric_limits<int64_t>::max()).value_or(0);
  if (auto s = stop_of(body); !s.empty()) d["stop"] = s;
  if (warmup) d["warmup"] = true;
  return d;
}

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

// The current file's name: `file` (vsynth, OpenAI extension) or Tabby's `filepath`.
std::optional<std::string> file_of(const json& body) {
  if (auto f = string_of(body, "file")) return f;
  return string_of(body, "filepath");
}

// A cursor task from the text around it (see the header).
json cursor_task(const std::string& prefix, const std::string& suffix,
                 const std::optional<std::string>& file, const std::optional<std::string>& lang,
                 const char* file_field = "file") {
  json t{{"prefix", prefix},
         {"suffix", suffix},
         {"source", prefix + suffix},
         {"cursor", {{"offset", prefix.size()}}}};
  if (file) {
    if (file->empty()) bad(file_field, "must not be empty");
    t["path"] = *file;
  }
  if (lang) t["language"] = *lang;
  return t;
}

// llama.cpp's editor fields: n_indent (the cursor line's indentation, columns) and
// t_max_predict_ms (a time budget for the generation), into /decode.
void editor_decode(const json& body, json& decode) {
  if (auto n = int_of(body, "n_indent", 0, 1 << 16)) decode["n_indent"] = *n;
  if (auto t = int_of(body, "t_max_predict_ms", 0, int64_t{1} << 31)) decode["max_predict_ms"] = *t;
}

// A list of chunks [{<name_key>, <text_key>}] into /files entries {path, source}.
void chunks_into(const json& body, const char* key, const std::string& where_prefix,
                 const char* name_key, const char* text_key, json& files) {
  const json* v = find(body, key);
  if (!v) return;
  const std::string field = where_prefix + key;
  if (!v->is_array()) {
    bad(field,
        fmt::format("must be an array of {{{}, {}}} (got {})", name_key, text_key, v->type_name()));
  }
  for (std::size_t i = 0; i < v->size(); ++i) {
    const json& e = (*v)[i];
    const std::string where = fmt::format("{}[{}]", field, i);
    if (!e.is_object()) bad(where, fmt::format("must be an object (got {})", e.type_name()));
    const json* name = find(e, name_key);
    const json* text = find(e, text_key);
    if (!name || !name->is_string()) bad(where + "." + name_key, "must be a string");
    if (!text || !text->is_string()) bad(where + "." + text_key, "must be a string");
    files.push_back({{"path", *name}, {"source", *text}});
  }
}

json files_of(const json& body) {
  json files = json::array();
  chunks_into(body, "input_extra", "", "filename", "text", files);
  return files;
}

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

std::optional<int64_t> slot_of(const json& body) {
  const auto s = int_of(body, "id_slot", -1, 1 << 20);
  if (!s || *s < 0) return std::nullopt;
  return s;
}

std::vector<std::string> response_fields_of(const json& body) {
  std::vector<std::string> out;
  const json* v = find(body, "response_fields");
  if (!v) return out;
  if (!v->is_array()) bad("response_fields", "must be an array of strings");
  for (std::size_t i = 0; i < v->size(); ++i) {
    if (!(*v)[i].is_string()) bad(fmt::format("response_fields[{}]", i), "must be a string");
    out.push_back((*v)[i].get<std::string>());
  }
  return out;
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

// Chat messages -> one instruction (generate.llm's instruct prompt has one user turn): a lone
// user message as it is, several as "role: content" lines in order.
std::string instruction_of(const json& body) {
  const json* v = find(body, "messages");
  if (!v) bad("messages", "is required (an array of {role, content})");
  if (!v->is_array() || v->empty()) bad("messages", "must be a non-empty array of {role, content}");
  std::vector<std::pair<std::string, std::string>> turns;
  for (std::size_t i = 0; i < v->size(); ++i) {
    const json& m = (*v)[i];
    const std::string where = fmt::format("messages[{}]", i);
    if (!m.is_object()) bad(where, fmt::format("must be an object (got {})", m.type_name()));
    const json* role = find(m, "role");
    const json* content = find(m, "content");
    if (!role || !role->is_string()) bad(where + ".role", "must be a string");
    if (!content || !content->is_string()) {
      bad(where + ".content", "must be a string (content parts are not served)");
    }
    turns.emplace_back(role->get<std::string>(), content->get<std::string>());
  }
  if (turns.size() == 1) return turns[0].second;
  std::string out;
  for (const auto& [role, content] : turns) out += role + ": " + content + "\n";
  return out;
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
  ParsedRequest r;
  if (endpoint == Endpoint::Completions && find(body, "segments")) endpoint = Endpoint::Tabby;
  r.endpoint = endpoint;
  const auto lang = string_of(body, "language");
  const auto file = file_of(body);
  r.has_cursor = endpoint != Endpoint::Chat;
  switch (endpoint) {
    case Endpoint::Tabby:
      r.task = tabby_task(body);
      r.task["decode"] = decode_of(body, "max_tokens", limits, r.warmup);
      break;
    case Endpoint::Completions: {
      const auto prompt = prompt_of(body, "prompt");
      if (!prompt) bad("prompt", "is required (a string)");
      r.task = cursor_task(*prompt, string_of(body, "suffix").value_or(""), file, lang);
      r.task["decode"] = decode_of(body, "max_tokens", limits, r.warmup);
      break;
    }
    case Endpoint::Chat:
      r.task = {{"instruction", instruction_of(body)}};
      if (lang) r.task["language"] = *lang;
      r.task["decode"] = decode_of(body, "max_tokens", limits, r.warmup);
      break;
    case Endpoint::Infill:
    case Endpoint::Completion: {
      const bool infill = endpoint == Endpoint::Infill;
      std::string prefix;
      if (infill) {
        prefix = string_of(body, "input_prefix").value_or("");
        // llama.cpp: `prompt` is the text typed after input_prefix, just before the cursor.
        prefix += prompt_of(body, "prompt").value_or("");
      } else {
        const auto prompt = prompt_of(body, "prompt");
        if (!prompt) bad("prompt", "is required (a string)");
        prefix = *prompt;
      }
      const std::string suffix = infill ? string_of(body, "input_suffix").value_or("") : "";
      r.task = cursor_task(prefix, suffix, file, lang);
      if (json files = files_of(body); !files.empty()) r.task["files"] = std::move(files);
      (void)bool_of(body, "cache_prompt");  // always on: the model's KV pool does it
      r.task["decode"] = decode_of(body, "n_predict", limits, r.warmup);
      editor_decode(body, r.task["decode"]);
      r.id_slot = slot_of(body);
      r.response_fields = response_fields_of(body);
      break;
    }
    case Endpoint::Tasks: {
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
      break;
    }
  }
  finish_common(r, body);
  return r;
}

}  // namespace vsynth::serve
