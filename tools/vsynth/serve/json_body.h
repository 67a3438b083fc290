// vsynth serve: a request body's JSON, parsed with bounds before anything recurses over it.
// The parse is nlohmann's SAX parser (iterative) building the document itself, so that a
// document nested deeper than kMaxJsonDepth is refused while it is read: nothing (copy, dump,
// destruction) ever recurses over a deeper tree. Every error is a RequestError (400) whose
// field is the JSON path where the parse stopped (`messages[0].content`, `prompt`), with the
// byte offset: a syntax error, a number outside a double's range (`1e400`), ill-formed UTF-8.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace vsynth::serve {

// Arrays and objects nested deeper than this are refused (the body's outermost object is 1).
inline constexpr int kMaxJsonDepth = 64;

// The offset of the first byte that does not start a well-formed UTF-8 sequence; size() when
// every byte does.
std::size_t first_bad_utf8(std::string_view s);

// `s` with every byte that starts no well-formed UTF-8 sequence replaced by U+FFFD: the text a
// client receives (JSON strings must be UTF-8), so that what the server holds (resume_from's
// checksum) is byte for byte what it sent.
std::string valid_utf8(std::string_view s);

// Throws RequestError(400, path, message).
nlohmann::json parse_json_body(std::string_view text, int max_depth = kMaxJsonDepth);

}  // namespace vsynth::serve
