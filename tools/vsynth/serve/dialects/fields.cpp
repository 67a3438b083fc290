#include "tools/vsynth/serve/dialects/fields.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "stages/facets/decode_fields.h"

namespace vsynth::serve::fields {

using nlohmann::json;
using stages::facets::decode_field;
using stages::facets::DecodeField;
using stages::facets::DecodeType;

void bad(const std::string& field, const std::string& message) {
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

namespace {

// An Integer field's inclusive bounds as whole numbers: the table's doubles, its 2^64 - 1 (a
// seed's maximum, which a double rounds up to 2^64) as the largest uint64.
struct IntBounds {
  int64_t lo = 0;
  uint64_t hi = 0;
};

IntBounds int_bounds(const DecodeField& f) {
  constexpr double kTwo64 = 18446744073709551616.0;
  const uint64_t hi =
      f.max >= kTwo64 ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(f.max);
  return {static_cast<int64_t>(f.min), hi};
}

bool int_in(const json& v, const IntBounds& b) {
  if (v.is_number_unsigned())
    return v.get<uint64_t>() <= b.hi &&
           (b.lo <= 0 || v.get<uint64_t>() >= static_cast<uint64_t>(b.lo));
  const int64_t i = v.get<int64_t>();
  return i >= b.lo && (i < 0 || static_cast<uint64_t>(i) <= b.hi);
}

}  // namespace

std::string decode_range(std::string_view name) {
  const DecodeField& f = decode_field(name);
  if (f.type != DecodeType::Integer) return fmt::format("[{}, {}]", f.min, f.max);
  const IntBounds b = int_bounds(f);
  return fmt::format("[{}, {}]", b.lo, b.hi);
}

std::optional<json> decode_value(const json& body, const char* key, std::string_view name,
                                 std::string_view field) {
  const DecodeField& f = decode_field(name);
  const json* v = find(body, key);
  if (!v) return std::nullopt;
  const std::string shown(field.empty() ? std::string_view(key) : field);
  if (f.type == DecodeType::Number) {
    if (!v->is_number()) bad(shown, fmt::format("must be a number (got {})", v->type_name()));
    const double d = v->get<double>();
    if (!(d >= f.min && d <= f.max)) {
      bad(shown, fmt::format("must be in {} (got {})", decode_range(name), v->dump()));
    }
    return *v;
  }
  if (f.type != DecodeType::Integer) {
    throw std::logic_error(fmt::format("/decode field `{}` is not a number", name));
  }
  if (!v->is_number_integer()) {
    bad(shown,
        fmt::format("must be an integer (got {})", v->is_number() ? v->dump() : v->type_name()));
  }
  if (!int_in(*v, int_bounds(f))) {
    bad(shown, fmt::format("must be in {} (got {})", decode_range(name), v->dump()));
  }
  return *v;
}

// The sampling fields every endpoint shares, into /decode, in the limits of the /decode table.
// `budget_key` is max_tokens or n_predict; n_predict -1 means "as many as allowed".
json decode_of(const json& body, const char* budget_key, const RequestLimits& limits,
               bool& warmup) {
  json d = json::object();
  const int64_t lo = std::string_view(budget_key) == "n_predict" ? -1 : 0;
  const auto hi = static_cast<int64_t>(int_bounds(decode_field("max_new_tokens")).hi);
  if (auto n = int_of(body, budget_key, lo, hi)) {
    if (*n == 0) {
      warmup = true;
    } else {
      const int64_t want = *n < 0 ? limits.max_tokens : *n;
      d["max_new_tokens"] = std::min<int64_t>(want, limits.max_tokens);
    }
  }
  for (const char* k : {"temperature", "top_p"}) {
    if (auto v = decode_value(body, k, k)) d[k] = *v;
  }
  // Seeded always: a request's text is a function of the request, never of its task number.
  d["seed"] = decode_value(body, "seed", "seed").value_or(json(0));
  if (auto s = stop_of(body); !s.empty()) d["stop"] = s;
  if (warmup) d["warmup"] = true;
  return d;
}

// The current file's name: `file` (vsynth, OpenAI extension) or Tabby's `filepath`.
std::optional<std::string> file_of(const json& body) {
  if (auto f = string_of(body, "file")) return f;
  return string_of(body, "filepath");
}

// A cursor task from the text around it (see the header).
json cursor_task(const std::string& prefix, const std::string& suffix,
                 const std::optional<std::string>& file, const std::optional<std::string>& lang,
                 const char* file_field) {
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
  if (auto n = decode_value(body, "n_indent", "n_indent")) decode["n_indent"] = *n;
  if (auto t = decode_value(body, "t_max_predict_ms", "max_predict_ms")) {
    decode["max_predict_ms"] = *t;
  }
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

}  // namespace vsynth::serve::fields
