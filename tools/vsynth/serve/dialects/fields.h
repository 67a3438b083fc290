// vsynth serve's request dialects: the field vocabulary they share. Each reader returns the
// field when present and not null, and throws RequestError(400) naming the field (its path
// given by the caller) with what would be valid.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tools/vsynth/serve/requests.h"

namespace vsynth::serve::fields {

[[noreturn]] void bad(const std::string& field, const std::string& message);
const nlohmann::json* find(const nlohmann::json& body, const char* key);
std::optional<std::string> string_of(const nlohmann::json& body, const char* key);
std::optional<bool> bool_of(const nlohmann::json& body, const char* key);
std::optional<double> number_of(const nlohmann::json& body, const char* key, double lo, double hi);
std::optional<int64_t> int_of(const nlohmann::json& body, const char* key, int64_t lo, int64_t hi);
// stop: a string or an array of strings, any number of them (empty ones dropped).
std::vector<std::string> stop_of(const nlohmann::json& body);
// A prompt: a string, or an array holding one string.
std::optional<std::string> prompt_of(const nlohmann::json& body, const char* key);
// A /decode field (stages/facets/decode_fields.h: its type and limits are declared there once)
// read from the request's own field `key`: an error names `key` and the table's range.
// decode_value: Integer and Number fields; the value as sent (a seed past 2^63 stays unsigned).
// `field`: how errors name it ("" : key).
std::optional<nlohmann::json> decode_value(const nlohmann::json& body, const char* key,
                                           std::string_view name, std::string_view field = {});
// A field's inclusive range as the table declares it: "[0, 1024]", "[0.01, 1]".
std::string decode_range(std::string_view name);
// The sampling fields every endpoint shares, into /decode; `budget_key` is max_tokens or
// n_predict (-1: as many as allowed; 0: a warm-up, `warmup` set; at most the table's
// max_new_tokens, then cut to the tenant's cap).
nlohmann::json decode_of(const nlohmann::json& body, const char* budget_key,
                         const RequestLimits& limits, bool& warmup);
// The current file's name: `file` (vsynth, OpenAI extension) or `filepath`.
std::optional<std::string> file_of(const nlohmann::json& body);
// A cursor task: prefix, suffix, source = prefix + suffix, cursor {offset}; path and language
// when given (requests.h).
nlohmann::json cursor_task(const std::string& prefix, const std::string& suffix,
                           const std::optional<std::string>& file,
                           const std::optional<std::string>& lang, const char* file_field = "file");
// llama.cpp's n_indent and t_max_predict_ms into /decode (n_indent, max_predict_ms), in the
// table's limits.
void editor_decode(const nlohmann::json& body, nlohmann::json& decode);
// Chunks [{<name_key>, <text_key>}] at body[key] into /files entries {path, source}.
void chunks_into(const nlohmann::json& body, const char* key, const std::string& where_prefix,
                 const char* name_key, const char* text_key, nlohmann::json& files);
// llama.cpp's id_slot (>= 0; -1 or absent: none) and response_fields.
std::optional<int64_t> slot_of(const nlohmann::json& body);
std::vector<std::string> response_fields_of(const nlohmann::json& body);

}  // namespace vsynth::serve::fields
