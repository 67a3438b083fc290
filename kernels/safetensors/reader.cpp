#include "kernels/safetensors/reader.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <utility>

namespace vsynth::kernels {

static_assert(std::endian::native == std::endian::little,
              "the safetensors reader reads the little-endian length field in place");

namespace {

using Json = nlohmann::ordered_json;  // ordered: tensors() keeps header order

constexpr uint64_t kLengthFieldBytes = 8;
constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the format's own limit (safetensors crate)
constexpr int kMaxJsonDepth = 64;                  // a valid header nests 3 deep
constexpr std::string_view kMetadataKey = "__metadata__";

struct DTypeInfo {
  StDType type;
  std::string_view name;
  std::size_t size;  // bytes per element
};
constexpr std::array<DTypeInfo, 13> kDTypes = {{
    {StDType::BOOL, "BOOL", 1},
    {StDType::U8, "U8", 1},
    {StDType::I8, "I8", 1},
    {StDType::I16, "I16", 2},
    {StDType::U16, "U16", 2},
    {StDType::F16, "F16", 2},
    {StDType::BF16, "BF16", 2},
    {StDType::I32, "I32", 4},
    {StDType::U32, "U32", 4},
    {StDType::F32, "F32", 4},
    {StDType::F64, "F64", 8},
    {StDType::I64, "I64", 8},
    {StDType::U64, "U64", 8},
}};

template <class... A>
std::string cat(const A&... a) {
  std::ostringstream os;
  (os << ... << a);
  return os.str();
}

// Text from the file for a message: control bytes, '\' and (with `ascii_only`, for raw bytes
// that may not be UTF-8) bytes >= 0x80 as \xNN; long text cut at ~max_bytes on a character
// boundary.
std::string shown(std::string_view s, bool ascii_only = false, std::size_t max_bytes = 80) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    const bool continuation = (c & 0xC0) == 0x80;
    if (out.size() >= max_bytes && !continuation) {
      out += cat("...(", s.size(), " bytes)");
      break;
    }
    if (c < 0x20 || c == 0x7f || c == '\\' || (ascii_only && c >= 0x80)) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

template <class Int>
std::string shape_text(std::span<const Int> shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += cat(i ? ", " : "", shape[i]);
  return s + "]";
}

std::string valid_dtypes() {
  std::string s;
  for (const DTypeInfo& d : kDTypes) s += cat(s.empty() ? "" : ", ", d.name);
  return s;
}

// A tensor entry as the header states it, before the data span is made.
struct Entry {
  std::string name;
  StDType dtype = StDType::F32;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // into the data section, end exclusive
};

// Every message starts "safetensors: <label>: " so it names the file.
class Checker {
 public:
  explicit Checker(const std::string& label) : label_(label) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw SafetensorsError(cat("safetensors: ", label_, ": ", what));
  }
  [[noreturn]] void fail_tensor(std::string_view name, const std::string& what) const {
    fail(cat("tensor '", shown(name), "': ", what));
  }

  // Phase 1: the u64 header length, checked against the file and the format's limit.
  uint64_t header_length(std::span<const std::byte> bytes) const;
  // Phase 2: the header text as a JSON object (duplicate keys and deep nesting rejected).
  Json parse_json(std::string_view text) const;
  // Phase 3: one tensor entry, checked alone against the data section's size: its dtype, its
  // shape (giving the size it needs) and its offsets, in that order.
  Entry entry(const std::string& name, const Json& value, uint64_t data_size) const;
  std::map<std::string, std::string> metadata(const Json& value) const;
  // Phase 4: the ranges together cover the data section exactly once.
  void coverage(std::vector<const Entry*> entries, uint64_t data_size) const;

 private:
  struct Size {
    uint64_t elements, bytes;
  };
  const DTypeInfo& dtype(const std::string& name, const Json& v) const;
  Size shape(Entry& e, const DTypeInfo& dt, const Json& v) const;
  void offsets(Entry& e, const DTypeInfo& dt, Size size, const Json& v, uint64_t data_size) const;

  const std::string& label_;
};

uint64_t Checker::header_length(std::span<const std::byte> bytes) const {
  if (bytes.size() < kLengthFieldBytes) {
    fail(cat("file is ", bytes.size(),
             " bytes, shorter than the 8-byte header length at byte 0 "
             "(a safetensors file starts with a little-endian u64 header length)"));
  }
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), sizeof n);
  const uint64_t room = bytes.size() - kLengthFieldBytes;
  if (n > kMaxHeaderBytes) {
    fail(cat("header length ", n, " at byte 0 is over the format's limit of ", kMaxHeaderBytes,
             " bytes"));
  }
  if (n > room) {
    fail(cat("header length ", n, " at byte 0 runs past the end of the file (", room,
             " bytes follow the length field)"));
  }
  if (n < 2) {
    fail(cat("header length ", n,
             " at byte 0 is too short for a JSON object (at least 2 "
             "bytes: {})"));
  }
  return n;
}

// nlohmann's message without its "[json.exception.parse_error.101] parse error at line 1,
// column 5: " prefix (the caller gives the file offset instead), bytes escaped.
std::string parser_reason(const nlohmann::json::exception& e) {
  std::string why = e.what();
  if (const auto close = why.find("] ");
      why.starts_with("[json.exception.") && close != std::string::npos) {
    why = why.substr(close + 2);
  }
  if (why.starts_with("parse error")) {
    if (const auto colon = why.find(": "); colon != std::string::npos) why = why.substr(colon + 2);
  }
  return shown(why, true, 240);
}

// The parser's events, seen while it builds the header: a repeated key is an error rather than
// the parser silently keeping one of the two values, and nesting is bounded (a valid header
// nests 3 deep) so hostile input cannot make the work or the error text grow without limit.
struct HeaderEvents {
  const Checker& check;
  std::vector<std::set<std::string>> open_objects{};  // keys seen in each, innermost last
  std::string top_key{};        // the tensor (or __metadata__) whose entry is being read
  bool root_is_object = false;  // otherwise "not an object" is the error, reported after

  bool on(int depth, Json::parse_event_t event, const Json& parsed) {
    using E = Json::parse_event_t;
    if (depth == 0 && event == E::object_start) root_is_object = true;
    if ((event == E::object_start || event == E::array_start) && depth >= kMaxJsonDepth) {
      check.fail(cat("header nests deeper than ", kMaxJsonDepth,
                     " levels (a valid header nests 3: object, entry, shape)"));
    }
    if (event == E::object_start) open_objects.emplace_back();
    if (event == E::object_end && !open_objects.empty()) open_objects.pop_back();
    if (event == E::key && root_is_object) key(depth, parsed.get_ref<const std::string&>());
    return true;  // keep everything: the checks after parsing need the whole header
  }

  void key(int depth, const std::string& k) {
    const bool fresh = open_objects.empty() || open_objects.back().insert(k).second;
    if (depth == 1) {
      if (!fresh) {
        check.fail_tensor(k, "the name appears twice in the header (each name must be unique)");
      }
      top_key = k;
    } else if (!fresh) {
      if (depth == 2 && top_key == kMetadataKey) {
        check.fail(cat("__metadata__: key '", shown(k), "' appears twice (keys must be unique)"));
      }
      check.fail_tensor(top_key, cat("key '", shown(k), "' appears twice in its entry"));
    }
  }
};

Json Checker::parse_json(std::string_view text) const {
  // The parser takes a NUL for the end of its input, which would let anything follow it
  // unread; JSON text never holds a raw NUL (strings escape it), so it is rejected here.
  if (const auto nul = text.find('\0'); nul != std::string_view::npos) {
    fail(cat("header has a NUL byte at byte ", kLengthFieldBytes + nul,
             " (JSON text holds none; the header may be padded with spaces only)"));
  }
  Json header;
  try {
    HeaderEvents events{*this};
    header = Json::parse(text.begin(), text.end(),
                         [&events](int depth, Json::parse_event_t event, Json& parsed) {
                           return events.on(depth, event, parsed);
                         });
  } catch (const Json::parse_error& e) {
    // e.byte: 1-based index of the last character read in the header text.
    const uint64_t at = kLengthFieldBytes + (e.byte > 0 ? e.byte - 1 : 0);
    fail(cat("header is not valid JSON at byte ", at, ": ", parser_reason(e),
             " (the header must be one UTF-8 JSON object)"));
  } catch (const Json::exception& e) {
    // Not a syntax error but still the input's fault (out_of_range 406: a number past the
    // double range); nlohmann gives no position for these.
    fail(cat("header is not valid JSON: ", parser_reason(e),
             " (the header must be one UTF-8 JSON object)"));
  }
  if (!header.is_object()) {
    fail(cat("header at byte 8 is a JSON ", header.type_name(),
             ", not an object (valid: {\"<tensor name>\": {\"dtype\", \"shape\", "
             "\"data_offsets\"}, ...})"));
  }
  return header;
}

const DTypeInfo& Checker::dtype(const std::string& name, const Json& v) const {
  if (!v.is_string()) {
    fail_tensor(name, cat("dtype is a JSON ", v.type_name(), " (valid: a string, one of ",
                          valid_dtypes(), ")"));
  }
  const auto& text = v.get_ref<const std::string&>();
  const auto known = std::find_if(kDTypes.begin(), kDTypes.end(),
                                  [&](const DTypeInfo& d) { return d.name == text; });
  if (known == kDTypes.end()) {
    fail_tensor(name, cat("unknown dtype '", shown(text), "' (valid: ", valid_dtypes(), ")"));
  }
  return *known;
}

// Every running product of the dims (elements so far) must fit int64, so that
// SafetensorsTensor::elements() cannot overflow whatever the order of the dims, and
// elements x element size must fit u64.
Checker::Size Checker::shape(Entry& e, const DTypeInfo& dt, const Json& v) const {
  if (!v.is_array()) {
    fail_tensor(e.name, cat("shape is a JSON ", v.type_name(),
                            " (valid: a list of non-negative integers)"));
  }
  constexpr auto kMaxElements = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  Size size{1, 0};
  bool overflow = false;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const Json& d = v[i];
    const bool ok = d.is_number_unsigned() || (d.is_number_integer() && d.get<int64_t>() >= 0);
    if (!ok || d.get<uint64_t>() > kMaxElements) {
      fail_tensor(e.name, cat("shape[", i, "] is ", shown(d.dump(), true),
                              " (valid: an integer from 0 to 2^63-1)"));
    }
    e.shape.push_back(d.get<int64_t>());
    overflow = overflow ||
               __builtin_mul_overflow(size.elements, d.get<uint64_t>(), &size.elements) ||
               size.elements > kMaxElements;
  }
  overflow = overflow || __builtin_mul_overflow(size.elements, uint64_t{dt.size}, &size.bytes);
  if (overflow) {
    fail_tensor(e.name, cat("shape ", shape_text<int64_t>(e.shape), " of ", dt.name,
                            " overflows 64 bits (valid: each running product of the dims at "
                            "most 2^63-1 elements, and at most 2^64-1 bytes)"));
  }
  return size;
}

// [begin, end] within the data section, holding exactly the shape's bytes.
void Checker::offsets(Entry& e, const DTypeInfo& dt, Size size, const Json& v,
                      uint64_t data_size) const {
  if (!v.is_array() || v.size() != 2 || !v[0].is_number_unsigned() || !v[1].is_number_unsigned()) {
    fail_tensor(e.name, cat("data_offsets is ", shown(v.dump(), true),
                            " (valid: [begin, end], two non-negative integers)"));
  }
  e.begin = v[0].get<uint64_t>();
  e.end = v[1].get<uint64_t>();
  const std::string range = cat("data_offsets [", e.begin, ", ", e.end, "]");
  if (e.begin > e.end) fail_tensor(e.name, range + " are reversed (valid: begin <= end)");
  if (e.end > data_size) {
    fail_tensor(e.name, cat(range, " run past the data section (", data_size,
                            " bytes: valid offsets are 0 to ", data_size, ")"));
  }
  if (e.end - e.begin != size.bytes) {
    fail_tensor(e.name, cat(range, " hold ", e.end - e.begin, " bytes, but shape ",
                            shape_text<int64_t>(e.shape), " of ", dt.name, " needs ", size.bytes,
                            " (", size.elements, " elements x ", dt.size, " bytes)"));
  }
}

Entry Checker::entry(const std::string& name, const Json& value, uint64_t data_size) const {
  if (!value.is_object()) {
    fail_tensor(name, cat("entry is a JSON ", value.type_name(),
                          ", not an object (valid: {\"dtype\", \"shape\", \"data_offsets\"})"));
  }
  auto field = [&](const char* key) -> const Json& {
    const auto it = value.find(key);
    if (it == value.end()) fail_tensor(name, cat("entry has no \"", key, "\""));
    return *it;
  };
  Entry e;
  e.name = name;
  const DTypeInfo& dt = dtype(name, field("dtype"));
  e.dtype = dt.type;
  const Size size = shape(e, dt, field("shape"));
  offsets(e, dt, size, field("data_offsets"), data_size);
  return e;
}

std::map<std::string, std::string> Checker::metadata(const Json& value) const {
  std::map<std::string, std::string> out;
  if (value.is_null()) return out;  // the reference reader accepts null as "no metadata"
  if (!value.is_object()) {
    fail(cat("__metadata__ is a JSON ", value.type_name(), " (valid: an object of string values)"));
  }
  for (const auto& [key, v] : value.items()) {
    if (!v.is_string()) {
      fail(cat("__metadata__: key '", shown(key), "' is a JSON ", v.type_name(),
               " (valid: a string)"));
    }
    out.emplace(key, v.get<std::string>());
  }
  return out;
}

void Checker::coverage(std::vector<const Entry*> entries, uint64_t data_size) const {
  // Sorted by (begin, end), so zero-sized tensors sit before a tensor at the same offset and
  // each range only has to be compared with the one before it.
  std::sort(entries.begin(), entries.end(), [](const Entry* a, const Entry* b) {
    return std::pair(a->begin, a->end) < std::pair(b->begin, b->end);
  });
  uint64_t covered = 0;  // end of the ranges so far
  const Entry* last = nullptr;
  for (const Entry* e : entries) {
    if (e->begin < covered) {
      fail_tensor(e->name, cat("data_offsets [", e->begin, ", ", e->end, "] overlap tensor '",
                               shown(last->name), "' [", last->begin, ", ", last->end,
                               "] (each byte belongs to one tensor)"));
    }
    if (e->begin > covered) {
      fail_tensor(e->name, cat("data_offsets [", e->begin, ", ", e->end, "] leave bytes [", covered,
                               ", ", e->begin,
                               ") of the data section to no tensor (the format allows no "
                               "holes)"));
    }
    covered = e->end;
    last = e;
  }
  if (covered != data_size) {
    fail(cat("the tensors cover ", covered, " bytes of the ", data_size,
             "-byte data section (the format allows no unindexed bytes at the end)"));
  }
}

}  // namespace

std::string_view to_string(StDType t) {
  for (const DTypeInfo& d : kDTypes) {
    if (d.type == t) return d.name;
  }
  return "?";
}

std::size_t element_size(StDType t) {
  for (const DTypeInfo& d : kDTypes) {
    if (d.type == t) return d.size;
  }
  return 0;
}

int64_t SafetensorsTensor::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path) {
  auto file = std::make_shared<const MappedFile>(path);
  SafetensorsFile f = parse(file->bytes(), path.string());
  f.file_ = std::move(file);
  return f;
}

SafetensorsFile SafetensorsFile::parse(std::span<const std::byte> bytes, std::string label) {
  SafetensorsFile f;
  f.label_ = std::move(label);
  const Checker check(f.label_);

  const uint64_t n = check.header_length(bytes);
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()) + kLengthFieldBytes, n);
  const Json header = check.parse_json(text);
  const std::span<const std::byte> data = bytes.subspan(kLengthFieldBytes + n);

  std::vector<Entry> entries;
  for (const auto& [key, value] : header.items()) {
    if (key == kMetadataKey) {
      f.metadata_ = check.metadata(value);
    } else {
      entries.push_back(check.entry(key, value, data.size()));
    }
  }
  std::vector<const Entry*> ranges;
  for (const Entry& e : entries) ranges.push_back(&e);
  check.coverage(std::move(ranges), data.size());

  for (Entry& e : entries) {
    f.index_.emplace(e.name, f.tensors_.size());
    f.tensors_.push_back(
        {std::move(e.name), e.dtype, std::move(e.shape), data.subspan(e.begin, e.end - e.begin)});
  }
  return f;
}

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

const SafetensorsTensor& SafetensorsFile::require(std::string_view name, StDType dtype,
                                                  std::span<const int64_t> shape) const {
  const Checker check(label_);
  const SafetensorsTensor* t = find(name);
  if (t == nullptr) {
    std::string some;
    constexpr std::size_t kListed = 8;
    for (std::size_t i = 0; i < tensors_.size() && i < kListed; ++i) {
      some += cat(i ? ", " : "", "'", shown(tensors_[i].name), "'");
    }
    if (tensors_.size() > kListed) some += ", ...";
    check.fail_tensor(name, cat("not found (the file has ", tensors_.size(), " tensors",
                                tensors_.empty() ? "" : ": ", some, ")"));
  }
  if (t->dtype != dtype) {
    check.fail_tensor(name,
                      cat("dtype ", to_string(t->dtype), " (expected ", to_string(dtype), ")"));
  }
  if (!std::equal(t->shape.begin(), t->shape.end(), shape.begin(), shape.end())) {
    check.fail_tensor(name, cat("shape ", shape_text<int64_t>(t->shape), " (expected ",
                                shape_text<int64_t>(shape), ")"));
  }
  return *t;
}

}  // namespace vsynth::kernels
