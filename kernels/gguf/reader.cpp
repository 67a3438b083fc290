#include "kernels/gguf/reader.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <numeric>
#include <sstream>
#include <utility>

namespace vsynth::kernels {

static_assert(std::endian::native == std::endian::little,
              "the GGUF reader reads little-endian fields in place");

namespace {

template <class... A>
std::string cat(const A&... a) {
  std::ostringstream os;
  (os << ... << a);
  return os.str();
}

// A key, name or magic for a message: printable ASCII kept, other bytes as \xNN, long text cut.
std::string printable(std::string_view s, std::size_t max_chars = 80) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (out.size() >= max_chars) {
      out += cat("...(", s.size(), " bytes)");
      break;
    }
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string dims_text(const std::array<uint64_t, 4>& ne, uint32_t n_dims) {
  std::string s = "[";
  for (uint32_t d = 0; d < n_dims; ++d) s += cat(d ? ", " : "", ne[d]);
  return s + "]";
}

// "0 f32, 1 f16, 2 q4_0, ..." for unknown-type messages.
std::string known_dtypes() {
  std::string s;
  for (uint32_t id = 0; id < 64; ++id) {
    if (auto info = dtype_info(id)) s += cat(s.empty() ? "" : ", ", id, " ", info->name);
  }
  return s;
}

std::string known_value_types() {
  std::string s;
  for (uint32_t id = 0; id < kGgufTypeCount; ++id) {
    s += cat(id ? ", " : "", id, " ", gguf_type_name(static_cast<GgufType>(id)));
  }
  return s;
}

constexpr uint64_t kHeaderBytes = 24;  // magic, version, tensor_count, kv_count
// Smallest possible records, used to reject impossible counts before allocating anything.
constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;                  // key len, 1-byte key, type, u8
constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 8 + 4 + 8;  // name, n_dims, ne[0], type, off
constexpr uint64_t kMaxDimValue = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
// Vectors sized from counts in the file grow from here on (a count is only a claim).
constexpr uint64_t kMaxReserve = 1u << 16;

// Bytes one array element takes at least: fixed size, or the length/header of strings/arrays.
uint64_t min_element_bytes(GgufType t) {
  if (t == GgufType::String) return 8;
  if (t == GgufType::Array) return 4 + 8;
  return gguf_type_size(t);
}

}  // namespace

// ---------------------------------------------------------------- GgufValue

GgufType GgufValue::element_type() const {
  if (type_ != GgufType::Array) mismatch("array");
  return elem_type_;
}

uint64_t GgufValue::size() const {
  if (type_ != GgufType::Array) mismatch("array");
  return count_;
}

void GgufValue::expect(GgufType want) const {
  if (type_ != want) mismatch(gguf_type_name(want));
}

void GgufValue::expect_array_of(GgufType want) const {
  if (type_ != GgufType::Array || elem_type_ != want) {
    mismatch(cat("array of ", gguf_type_name(want)));
  }
}

void GgufValue::check_index(uint64_t i) const {
  if (i >= count_) {
    throw GgufError(cat("gguf: ", source_ ? *source_ : std::string("<unknown>"), ": metadata key '",
                        printable(key_), "': index ", i, " out of range (array has ", count_,
                        " elements)"));
  }
}

std::string GgufValue::describe() const {
  if (type_ != GgufType::Array) return std::string(gguf_type_name(type_));
  return cat("array of ", gguf_type_name(elem_type_));
}

void GgufValue::mismatch(std::string_view wanted) const {
  throw GgufError(cat("gguf: ", source_ ? *source_ : std::string("<unknown>"), ": metadata key '",
                      printable(key_), "' is ", describe(), " (value at offset ", offset_,
                      "), expected ", wanted));
}

// ---------------------------------------------------------------- parser

class GgufParser {
 public:
  explicit GgufParser(GgufFile& f) : f_(f), b_(f.bytes_), src_(*f.source_) {}

  void parse() {
    parse_header();
    parse_metadata();
    parse_alignment();
    parse_tensor_infos();
    place_tensors();
  }

 private:
  [[noreturn]] void fail(const std::string& msg) const {
    throw GgufError(cat("gguf: ", src_, ": ", msg));
  }
  uint64_t size() const { return b_.size(); }
  uint64_t remaining() const { return size() - pos_; }

  // Every read goes through need(): `field` (a callable giving the field's name) is only
  // formatted when the bytes are not there.
  template <class Field>
  void need(uint64_t n, const Field& field) const {
    if (n > remaining()) {
      fail(cat(field(), " at offset ", pos_, " needs ", n, " bytes, but the file ends at offset ",
               size(), " (", remaining(), " bytes left)"));
    }
  }
  template <GgufScalar T, class Field>
  T read(const Field& field) {
    need(sizeof(T), field);
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  template <class Field>
  std::string_view read_string(const Field& field) {
    const uint64_t at = pos_;
    const auto len = read<uint64_t>([&] { return cat("length of ", field()); });
    if (len > remaining()) {
      fail(cat(field(), ": string length ", len, " at offset ", at, " runs past end of file (",
               remaining(), " bytes left after the length; file is ", size(), " bytes)"));
    }
    std::string_view s(reinterpret_cast<const char*>(b_.data() + pos_), len);
    pos_ += len;
    return s;
  }

  void parse_header() {
    if (size() < 4) {
      fail(cat("file is ", size(), " bytes; a GGUF file starts with the 4-byte magic 'GGUF'"));
    }
    std::string_view magic(reinterpret_cast<const char*>(b_.data()), 4);
    if (magic != "GGUF") {
      fail(cat("bad magic '", printable(magic), "' at offset 0; expected 'GGUF'"));
    }
    pos_ = 4;
    const auto version = read<uint32_t>([] { return std::string("version"); });
    if (version == 0x02000000u || version == 0x03000000u) {
      fail(cat("version field at offset 4 reads ", version,
               ": a big-endian GGUF file, which is not supported; valid: little-endian "
               "version 2 or 3"));
    }
    if (version != 2 && version != 3) {
      fail(cat("unsupported version ", version, " at offset 4",
               version == 1 ? " (v1 used 32-bit counts)" : "", "; valid: 2 or 3"));
    }
    f_.version_ = version;
    tensor_count_ = read<uint64_t>([] { return std::string("tensor count"); });
    kv_count_ = read<uint64_t>([] { return std::string("metadata KV count"); });
    const uint64_t body = size() - kHeaderBytes;
    if (kv_count_ > body / kMinKvBytes) {
      fail(cat("metadata KV count ", kv_count_, " at offset 16 is impossible: the ", body,
               " bytes after the header hold at most ", body / kMinKvBytes,
               " entries (each takes at least ", kMinKvBytes, " bytes)"));
    }
    if (tensor_count_ > body / kMinTensorInfoBytes) {
      fail(cat("tensor count ", tensor_count_, " at offset 8 is impossible: the ", body,
               " bytes after the header hold at most ", body / kMinTensorInfoBytes,
               " tensor infos (each takes at least ", kMinTensorInfoBytes, " bytes)"));
    }
  }

  void parse_metadata() {
    f_.kvs_.reserve(static_cast<std::size_t>(std::min(kv_count_, kMaxReserve)));
    std::vector<uint64_t> key_offsets;
    for (uint64_t i = 0; i < kv_count_; ++i) {
      const uint64_t at = pos_;
      const std::string_view key = read_string([&] { return cat("key of metadata entry #", i); });
      if (key.empty()) {
        fail(cat("metadata entry #", i, " at offset ", at,
                 " has an empty key; valid: a non-empty name such as 'general.architecture'"));
      }
      if (auto it = f_.kv_index_.find(key); it != f_.kv_index_.end()) {
        fail(cat("duplicate metadata key '", printable(key), "' at offset ", at, " (entry #", i,
                 "); first defined by entry #", it->second, " at offset ", key_offsets[it->second],
                 "; keys must be unique"));
      }
      const uint64_t type_at = pos_;
      const auto type_id =
          read<uint32_t>([&] { return cat("value type of metadata key '", printable(key), "'"); });
      const auto type = gguf_type_from_id(type_id);
      if (!type) {
        fail(cat("metadata key '", printable(key), "': unknown value type id ", type_id,
                 " at offset ", type_at, "; valid: ", known_value_types()));
      }
      GgufKV kv{key, {}};
      parse_value(kv.value, *type, key, 0);
      f_.kv_index_.emplace(key, f_.kvs_.size());
      key_offsets.push_back(at);
      f_.kvs_.push_back(std::move(kv));
    }
  }

  // Reads one value of type `t` (for arrays: element type, count, elements) at pos_.
  void parse_value(GgufValue& v, GgufType t, std::string_view key, int depth) {
    v.key_ = key;
    v.source_ = &src_;
    v.type_ = t;
    v.offset_ = pos_;
    auto what = [&] { return cat("value of metadata key '", printable(key), "'"); };
    switch (t) {
      case GgufType::String:
        v.str_ = read_string(what);
        return;
      case GgufType::Array:
        parse_array(v, key, depth);
        return;
      default: {
        const uint64_t n = gguf_type_size(t);
        need(n, what);
        v.data_ = b_.data() + pos_;
        if (t == GgufType::Bool) check_bools(key, 1);
        pos_ += n;
        return;
      }
    }
  }

  // A bool is one byte, 0 or 1; anything else is a corrupt file, not "true".
  void check_bools(std::string_view key, uint64_t count) const {
    for (uint64_t i = 0; i < count; ++i) {
      const auto byte = std::to_integer<unsigned>(b_[pos_ + i]);
      if (byte > 1) {
        fail(cat("metadata key '", printable(key), "': bool ", byte, " at offset ", pos_ + i,
                 "; valid: 0 or 1"));
      }
    }
  }

  void parse_array(GgufValue& v, std::string_view key, int depth) {
    if (depth >= GgufFile::kMaxArrayDepth) {
      fail(cat("metadata key '", printable(key), "': arrays nest deeper than ",
               GgufFile::kMaxArrayDepth, " levels at offset ", pos_));
    }
    const uint64_t type_at = pos_;
    const auto elem_id =
        read<uint32_t>([&] { return cat("element type of array '", printable(key), "'"); });
    const auto elem = gguf_type_from_id(elem_id);
    if (!elem) {
      fail(cat("metadata key '", printable(key), "': unknown array element type id ", elem_id,
               " at offset ", type_at, "; valid: ", known_value_types()));
    }
    const uint64_t count_at = pos_;
    const auto count =
        read<uint64_t>([&] { return cat("element count of array '", printable(key), "'"); });
    const uint64_t min_bytes = min_element_bytes(*elem);
    if (count > remaining() / min_bytes) {
      fail(cat("metadata key '", printable(key), "': array count ", count, " at offset ", count_at,
               " is impossible: the ", remaining(), " bytes left hold at most ",
               remaining() / min_bytes, " ", gguf_type_name(*elem), " elements (",
               *elem == GgufType::String || *elem == GgufType::Array ? "at least " : "", min_bytes,
               " bytes each)"));
    }
    v.elem_type_ = *elem;
    v.count_ = count;
    const auto reserve = static_cast<std::size_t>(std::min(count, kMaxReserve));
    if (*elem == GgufType::String) {
      v.strings_.reserve(reserve);
      for (uint64_t i = 0; i < count; ++i) {
        v.strings_.push_back(read_string(
            [&] { return cat("element #", i, " of string array '", printable(key), "'"); }));
      }
    } else if (*elem == GgufType::Array) {
      v.arrays_.reserve(reserve);
      for (uint64_t i = 0; i < count; ++i) {
        GgufValue child;
        parse_value(child, GgufType::Array, key, depth + 1);
        v.arrays_.push_back(std::move(child));
      }
    } else {
      v.data_ = b_.data() + pos_;
      if (*elem == GgufType::Bool) check_bools(key, count);
      pos_ += count * min_bytes;  // fits: count <= remaining / min_bytes
    }
  }

  void parse_alignment() {
    const GgufValue* a = f_.find("general.alignment");
    if (a == nullptr) return;
    if (a->type() != GgufType::U32) {
      fail(cat("metadata key 'general.alignment' is ", a->describe(), " at offset ", a->offset(),
               "; expected u32 (a power of two from 1 to ", GgufFile::kMaxAlignment, ")"));
    }
    const auto align = a->as<uint32_t>();
    if (!std::has_single_bit(align) || align > GgufFile::kMaxAlignment) {
      fail(cat("general.alignment = ", align, " at offset ", a->offset(),
               " is invalid; valid: a power of two from 1 to ", GgufFile::kMaxAlignment));
    }
    f_.alignment_ = align;
  }

  void parse_tensor_infos() {
    f_.tensors_.reserve(static_cast<std::size_t>(std::min(tensor_count_, kMaxReserve)));
    for (uint64_t i = 0; i < tensor_count_; ++i) {
      GgufTensor t;
      t.info_offset = pos_;
      t.name = read_string([&] { return cat("name of tensor #", i); });
      const std::string name = printable(t.name);
      if (t.name.empty()) {
        fail(cat("tensor #", i, " at offset ", t.info_offset,
                 " has an empty name; valid: a non-empty name such as 'token_embd.weight'"));
      }
      if (auto it = f_.tensor_index_.find(t.name); it != f_.tensor_index_.end()) {
        fail(cat("duplicate tensor name '", name, "' at offset ", t.info_offset, " (tensor #", i,
                 "); first used by tensor #", it->second, " at offset ",
                 f_.tensors_[it->second].info_offset, "; names must be unique"));
      }
      const uint64_t ndims_at = pos_;
      t.n_dims = read<uint32_t>([&] { return cat("n_dims of tensor '", name, "'"); });
      if (t.n_dims < 1 || t.n_dims > 4) {
        fail(cat("tensor '", name, "': n_dims ", t.n_dims, " at offset ", ndims_at,
                 " is invalid; valid: 1 to 4"));
      }
      const uint64_t dims_at = pos_;
      for (uint32_t d = 0; d < t.n_dims; ++d) {
        const uint64_t at = pos_;
        t.ne[d] = read<uint64_t>([&] { return cat("ne[", d, "] of tensor '", name, "'"); });
        if (t.ne[d] == 0) {
          fail(cat("tensor '", name, "': dimension ne[", d, "] at offset ", at,
                   " is 0; every dimension must be at least 1"));
        }
        if (t.ne[d] > kMaxDimValue) {
          fail(cat("tensor '", name, "': dimension ne[", d, "] = ", t.ne[d], " at offset ", at,
                   " is too large; valid: 1 to ", kMaxDimValue));
        }
      }
      const uint64_t type_at = pos_;
      const auto type_id = read<uint32_t>([&] { return cat("type of tensor '", name, "'"); });
      const auto info = dtype_info(type_id);
      if (!info) {
        fail(cat("tensor '", name, "': unknown type id ", type_id, " at offset ", type_at,
                 "; valid: ", known_dtypes()));
      }
      t.type = *info;
      const std::string dims = dims_text(t.ne, t.n_dims);
      if (t.ne[0] % info->block_elems != 0) {
        fail(cat("tensor '", name, "' (", info->name, ", dims ", dims, " at offset ", dims_at,
                 "): ne[0] = ", t.ne[0], " is not a multiple of the type's block size ",
                 info->block_elems));
      }
      // Element count and byte size, each checked for overflow (and kept within int64 so that
      // signed index arithmetic downstream is safe too).
      uint64_t n = 1;
      uint64_t bytes = t.ne[0] / info->block_elems;
      bool overflow = __builtin_mul_overflow(bytes, uint64_t{info->block_bytes}, &bytes);
      for (uint32_t d = 0; d < 4; ++d) {
        if (__builtin_mul_overflow(n, t.ne[d], &n) || n > kMaxDimValue) {
          fail(cat("tensor '", name, "': element count of dims ", dims, " (at offset ", dims_at,
                   ") overflows; valid: a product of at most ", kMaxDimValue));
        }
        if (d > 0) overflow = overflow || __builtin_mul_overflow(bytes, t.ne[d], &bytes);
      }
      if (overflow || bytes > kMaxDimValue) {
        fail(cat("tensor '", name, "' (", info->name, "): byte size of dims ", dims, " (at offset ",
                 dims_at, ") overflows; valid: at most ", kMaxDimValue, " bytes"));
      }
      t.n_elements = n;
      t.n_bytes = bytes;
      const uint64_t off_at = pos_;
      t.file_offset = read<uint64_t>([&] { return cat("data offset of tensor '", name, "'"); });
      if (t.file_offset % f_.alignment_ != 0) {
        fail(cat("tensor '", name, "': data offset ", t.file_offset, " at offset ", off_at,
                 " is not a multiple of the alignment ", f_.alignment_));
      }
      f_.tensor_index_.emplace(t.name, f_.tensors_.size());
      f_.tensors_.push_back(t);
    }
  }

  // Turns relative data offsets into views, checking that each tensor lies inside the file and
  // that no two overlap.
  void place_tensors() {
    const uint64_t align = f_.alignment_;
    const uint64_t infos_end = pos_;
    // pos_ <= size() < 2^63 and align <= 2^20: no overflow.
    const uint64_t data = (infos_end + align - 1) / align * align;
    f_.data_offset_ = data;
    if (f_.tensors_.empty()) return;  // the data section (and its padding) may be absent
    if (data > size()) {
      fail(cat("data section starts at offset ", data, " (tensor infos end at ", infos_end,
               ", padded to the alignment ", align, "), but the file is ", size(), " bytes"));
    }
    const uint64_t avail = size() - data;
    for (GgufTensor& t : f_.tensors_) {
      const uint64_t rel = t.file_offset;
      if (rel > avail) {
        fail(cat("tensor '", printable(t.name), "': data offset ", rel,
                 " (relative to the data section at ", data, ") is past the end of the file (",
                 "file is ", size(), " bytes)"));
      }
      if (t.n_bytes > avail - rel) {
        fail(cat("tensor '", printable(t.name), "' data [offset ", data + rel, ", ", t.n_bytes,
                 " bytes] runs past end of file (file is ", size(), " bytes)"));
      }
      t.file_offset = data + rel;
      t.data =
          b_.subspan(static_cast<std::size_t>(t.file_offset), static_cast<std::size_t>(t.n_bytes));
    }
    std::vector<std::size_t> order(f_.tensors_.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return f_.tensors_[a].file_offset < f_.tensors_[b].file_offset;
    });
    for (std::size_t k = 1; k < order.size(); ++k) {
      const GgufTensor& prev = f_.tensors_[order[k - 1]];
      const GgufTensor& cur = f_.tensors_[order[k]];
      if (cur.file_offset < prev.file_offset + prev.n_bytes) {
        fail(cat("tensor '", printable(cur.name), "' data [offset ", cur.file_offset, ", ",
                 cur.n_bytes, " bytes] overlaps tensor '", printable(prev.name), "' data [offset ",
                 prev.file_offset, ", ", prev.n_bytes, " bytes]"));
      }
    }
  }

  GgufFile& f_;
  std::span<const std::byte> b_;
  const std::string& src_;
  uint64_t pos_ = 0;
  uint64_t tensor_count_ = 0;
  uint64_t kv_count_ = 0;
};

// ---------------------------------------------------------------- GgufFile

GgufFile::GgufFile(GgufFile&&) noexcept = default;
GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;
GgufFile::~GgufFile() = default;

GgufFile GgufFile::open(const std::filesystem::path& path) {
  GgufFile f;
  f.source_ = std::make_unique<std::string>(path.string());
  f.mapping_ = std::make_unique<MappedFile>(path);
  f.bytes_ = f.mapping_->bytes();
  GgufParser(f).parse();
  return f;
}

void GgufFile::drop_pages(std::span<const std::byte> range) const noexcept {
  if (mapping_) mapping_->drop_pages(range);
}

GgufFile GgufFile::open_from_memory(std::span<const std::byte> bytes, std::string name) {
  GgufFile f;
  f.source_ = std::make_unique<std::string>(std::move(name));
  f.bytes_ = bytes;
  GgufParser(f).parse();
  return f;
}

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kvs_[it->second].value;
}

const GgufValue& GgufFile::value(std::string_view key) const {
  if (const GgufValue* v = find(key)) return *v;
  throw GgufError(cat("gguf: ", *source_, ": metadata key '", printable(key), "' not found (",
                      kvs_.size(), " keys in the file)"));
}

std::optional<std::string_view> GgufFile::get_string_optional(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  return v->as_string();
}

std::string GgufFile::arch_key(std::string_view suffix) const {
  return cat(architecture(), ".", suffix);
}

const GgufTensor* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GgufTensor& GgufFile::tensor(std::string_view name) const {
  if (const GgufTensor* t = find_tensor(name)) return *t;
  throw GgufError(cat("gguf: ", *source_, ": tensor '", printable(name), "' not found (",
                      tensors_.size(), " tensors in the file)"));
}

}  // namespace vsynth::kernels
