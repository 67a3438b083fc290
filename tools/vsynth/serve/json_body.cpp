#include "tools/vsynth/serve/json_body.h"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "tools/vsynth/serve/requests.h"

namespace vsynth::serve {

namespace {

using nlohmann::json;

// nlohmann's json_sax_dom_parser with a depth bound and the path of the value being read.
class BoundedDom {
 public:
  BoundedDom(json& root, int max_depth) : root_(root), max_depth_(max_depth) {}

  bool null() { return put(json(nullptr)); }
  bool boolean(bool v) { return put(json(v)); }
  bool number_integer(json::number_integer_t v) { return put(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return put(json(v)); }
  bool number_float(json::number_float_t v, const std::string&) { return put(json(v)); }
  bool string(json::string_t& v) { return put(json(std::move(v))); }
  bool binary(json::binary_t& v) { return put(json(std::move(v))); }

  bool start_object(std::size_t) { return open(json::value_t::object); }
  bool start_array(std::size_t) { return open(json::value_t::array); }
  bool key(json::string_t& k) {
    key_ = std::move(k);
    frames_.back().key = key_;
    return true;
  }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool parse_error(std::size_t byte, const std::string&, const json::exception& e) {
    error_byte_ = byte;
    error_ = e.what();
    error_id_ = e.id;
    return false;
  }

  // Where the parse stopped: `a.b[2]` ("" at the top level).
  std::string path() const {
    std::string p;
    for (std::size_t i = 0; i < frames_.size(); ++i) {
      const Frame& f = frames_[i];
      if (f.node->is_object()) {
        if (f.key.empty() && i + 1 == frames_.size() && !f.has_key) break;
        if (!p.empty()) p += '.';
        p += f.key;
      } else {
        p += fmt::format("[{}]", f.node->size() - (i + 1 < frames_.size() ? 1 : 0));
      }
    }
    return p;
  }
  bool too_deep() const { return too_deep_; }
  std::size_t error_byte() const { return error_byte_; }
  const std::string& error() const { return error_; }
  int error_id() const { return error_id_; }

 private:
  struct Frame {
    json* node;
    std::string key;  // objects: the key whose value is read now
    bool has_key = false;
  };

  json* slot() {
    if (frames_.empty()) return &root_;
    Frame& f = frames_.back();
    if (f.node->is_array()) {
      f.node->push_back(json());
      return &f.node->back();
    }
    f.has_key = true;
    return &(*f.node)[f.key];
  }
  bool put(json v) {
    *slot() = std::move(v);
    return true;
  }
  bool open(json::value_t t) {
    if (static_cast<int>(frames_.size()) >= max_depth_) {
      too_deep_ = true;
      return false;
    }
    json* s = slot();
    *s = json(t);
    frames_.push_back({s, {}, false});
    return true;
  }
  bool close() {
    frames_.pop_back();
    return true;
  }

  json& root_;
  int max_depth_;
  std::vector<Frame> frames_;
  std::string key_;
  bool too_deep_ = false;
  std::size_t error_byte_ = 0;
  std::string error_;
  int error_id_ = 0;
};

// nlohmann's message without its "[json.exception.parse_error.101] parse error at line 1,
// column N: " prefix (the byte is said separately).
std::string bare(const std::string& what) {
  std::string s = what;
  if (const auto close = s.find("] "); close != std::string::npos) s = s.substr(close + 2);
  if (const auto col = s.find("column "); col != std::string::npos) {
    if (const auto colon = s.find(": ", col); colon != std::string::npos) s = s.substr(colon + 2);
  }
  return s;
}

}  // namespace

std::size_t first_bad_utf8(std::string_view s) {
  const auto* b = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned c = b[i];
    std::size_t len = 0;
    unsigned lo = 0x80, hi = 0xBF;  // the second byte's range (RFC 3629, table 3-7)
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;  // no surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return i;
    }
    if (i + len > n) return i;
    if (b[i + 1] < lo || b[i + 1] > hi) return i;
    for (std::size_t k = 2; k < len; ++k) {
      if (b[i + k] < 0x80 || b[i + k] > 0xBF) return i;
    }
    i += len;
  }
  return n;
}

std::string valid_utf8(std::string_view s) {
  std::string out;
  while (true) {
    const std::size_t bad = first_bad_utf8(s);
    out.append(s.substr(0, bad));
    if (bad == s.size()) return out;
    out.append("\xEF\xBF\xBD");
    s.remove_prefix(bad + 1);
  }
}

json parse_json_body(std::string_view text, int max_depth) {
  json root;
  BoundedDom dom(root, max_depth);
  bool ok = false;
  try {
    ok = json::sax_parse(text, &dom);
  } catch (const json::exception& e) {  // defensive: the SAX parser reports through the handler
    throw RequestError(400, "", fmt::format("the body is not valid JSON: {}", e.what()));
  }
  if (ok) return root;
  const std::string path = dom.path();
  const std::string where = path.empty() ? std::string() : fmt::format(" in `{}`", path);
  if (dom.too_deep()) {
    root = json();  // the partial tree is at most max_depth deep: freed without deep recursion
    throw RequestError(400, path,
                       fmt::format("the body nests arrays and objects deeper than {} levels{}: "
                                   "refused before parsing further",
                                   max_depth, where));
  }
  const std::string msg = bare(dom.error());
  if (dom.error_id() == 406) {  // out_of_range.406: number overflow
    throw RequestError(400, path,
                       fmt::format("a number{} is outside the range of a double ({}; byte {})",
                                   where, msg, dom.error_byte()));
  }
  if (msg.find("UTF-8") != std::string::npos) {
    throw RequestError(400, path,
                       fmt::format("invalid UTF-8{} at byte offset {} (strings must be UTF-8)",
                                   where, first_bad_utf8(text)));
  }
  // A syntax error names no field (the body as a whole is at fault); the message says where.
  throw RequestError(
      400, "",
      fmt::format("the body is not valid JSON{} at byte {}: {}", where, dom.error_byte(), msg));
}

}  // namespace vsynth::serve
