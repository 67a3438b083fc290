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
  // Phase 3: one tensor entry, checked alone against the data section's size.
  Entry entry(const std::string& name, const Json& value, uint64_t data_size) const;
  std::map<std::string, std::string> metadata(const Json& value) const;
  // Phase 4: the ranges together cover the data section exactly once.
  void coverage(std::vector<const Entry*> entries, uint64_t data_size) const;

 private:
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

Json Checker::parse_json(std::string_view text) const {
  // The parser takes a NUL for the end of its input, which would let anything follow it
  // unread; JSON text never holds a raw NUL (strings escape it), so it is rejected here.
  if (const auto nul = text.find('\0'); nul != std::string_view::npos) {
    fail(cat("header has a NUL byte at byte ", kLengthFieldBytes + nul,
             " (JSON text holds none; the header may be padded with spaces only)"));
  }
  // Keys seen in each open object, innermost last, so a repeated key is an error rather than
  // the parser silently keeping one of the two values.
  std::vector<std::set<std::string>> open_objects;
  std::string top_key;          // the tensor (or __metadata__) whose entry is being read
  bool root_is_object = false;  // otherwise "not an object" is the error, reported below
  auto on_event = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (depth == 0 && event == Json::parse_event_t::object_start) root_is_object = true;
    switch (event) {
      case Json::parse_event_t::object_start:
      case Json::parse_event_t::array_start:
        if (depth >= kMaxJsonDepth) {
          fail(cat("header nests deeper than ", kMaxJsonDepth,
                   " levels (a valid header nests 3: object, entry, shape)"));
        }
        if (event == Json::parse_event_t::object_start) open_objects.emplace_back();
        break;
      case Json::parse_event_t::object_end:
        if (!open_objects.empty()) open_objects.pop_back();
        break;
      case Json::parse_event_t::key: {
        if (!root_is_object) break;
        const auto& key = parsed.get_ref<const std::string&>();
        const bool fresh = open_objects.empty() || open_objects.back().insert(key).second;
        if (depth == 1) {
          if (!fresh) {
            fail_tensor(key, "the name appears twice in the header (each name must be unique)");
          }
          top_key = key;
        } else if (!fresh) {
          if (depth == 2 && top_key == kMetadataKey) {
            fail(cat("__metadata__: key '", shown(key), "' appears twice (keys must be unique)"));
          }
          fail_tensor(top_key, cat("key '", shown(key), "' appears twice in its entry"));
        }
        break;
      }
      default:
        break;
    }
    return true;
  };

  Json header;
  try {
    header = Json::parse(text.begin(), text.end(), on_event);
  } catch (const Json::parse_error& e) {
    // e.byte: 1-based index of the last character read in the header text.
    const uint64_t at = kLengthFieldBytes + (e.byte > 0 ? e.byte - 1 : 0);
    std::string why = e.what();
    if (const auto p = why.find("parse error"); p != std::string::npos) {
      if (const auto colon = why.find(": ", p); colon != std::string::npos) {
        why = why.substr(colon + 2);
      }
    }
    fail(cat("header is not valid JSON at byte ", at, ": ", shown(why, true, 240),
             " (the header must be one UTF-8 JSON object)"));
  }
  if (!header.is_object()) {
    fail(cat("header at byte 8 is a JSON ", header.type_name(),
             ", not an object (valid: {\"<tensor name>\": {\"dtype\", \"shape\", "
             "\"data_offsets\"}, ...})"));
  }
  return header;
}

Entry Checker::entry(const std::string& name, const Json& value, uint64_t data_size) const {
  Entry e;
  e.name = name;
  if (!value.is_object()) {
    fail_tensor(name, cat("entry is a JSON ", value.type_name(),
                          ", not an object (valid: {\"dtype\", \"shape\", \"data_offsets\"})"));
  }
  auto field = [&](const char* key) -> const Json& {
    const auto it = value.find(key);
    if (it == value.end()) fail_tensor(name, cat("entry has no \"", key, "\""));
    return *it;
  };

  // dtype
  const Json& dtype = field("dtype");
  if (!dtype.is_string()) {
    fail_tensor(name, cat("dtype is a JSON ", dtype.type_name(), " (valid: a string, one of ",
                          valid_dtypes(), ")"));
  }
  const auto& dtype_name = dtype.get_ref<const std::string&>();
  const auto known = std::find_if(kDTypes.begin(), kDTypes.end(),
                                  [&](const DTypeInfo& d) { return d.name == dtype_name; });
  if (known == kDTypes.end()) {
    fail_tensor(name, cat("unknown dtype '", shown(dtype_name), "' (valid: ", valid_dtypes(), ")"));
  }
  e.dtype = known->type;

  // shape: non-negative integers; their product (elements) must fit int64 and the byte size
  // must fit u64, both checked without overflow.
  const Json& shape = field("shape");
  if (!shape.is_array()) {
    fail_tensor(name, cat("shape is a JSON ", shape.type_name(),
                          " (valid: a list of non-negative integers)"));
  }
  uint64_t elements = 1;
  bool overflow = false;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const Json& d = shape[i];
    const bool ok = d.is_number_unsigned() || (d.is_number_integer() && d.get<int64_t>() >= 0);
    if (!ok || d.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      fail_tensor(name, cat("shape[", i, "] is ", shown(d.dump(), true),
                            " (valid: an integer from 0 to 2^63-1)"));
    }
    e.shape.push_back(d.get<int64_t>());
    overflow = overflow || __builtin_mul_overflow(elements, d.get<uint64_t>(), &elements);
  }
  uint64_t need = 0;
  overflow = overflow || elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
             __builtin_mul_overflow(elements, uint64_t{known->size}, &need);
  if (overflow) {
    fail_tensor(name, cat("shape ", shape_text<int64_t>(e.shape), " of ", known->name,
                          " overflows 64 bits in elements or bytes (valid: at most 2^63-1 "
                          "elements and 2^64-1 bytes)"));
  }

  // data_offsets: [begin, end] within the data section, holding exactly the shape's bytes.
  const Json& offsets = field("data_offsets");
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned()) {
    fail_tensor(name, cat("data_offsets is ", shown(offsets.dump(), true),
                          " (valid: [begin, end], two non-negative integers)"));
  }
  e.begin = offsets[0].get<uint64_t>();
  e.end = offsets[1].get<uint64_t>();
  const std::string range = cat("data_offsets [", e.begin, ", ", e.end, "]");
  if (e.begin > e.end) fail_tensor(name, range + " are reversed (valid: begin <= end)");
  if (e.end > data_size) {
    fail_tensor(name, cat(range, " run past the data section (", data_size,
                          " bytes: valid offsets are 0 to ", data_size, ")"));
  }
  if (e.end - e.begin != need) {
    fail_tensor(name, cat(range, " hold ", e.end - e.begin, " bytes, but shape ",
                          shape_text<int64_t>(e.shape), " of ", known->name, " needs ", need, " (",
                          elements, " elements x ", known->size, " bytes)"));
  }
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
