// GGUF reader: maps a model file read-only, checks every count, size and offset against the
// file size, and exposes metadata and tensors as views into the mapping (nothing is copied).
//
// Layout (little-endian; versions 2 and 3 share it):
//   header      "GGUF" u32 version, u64 tensor_count, u64 kv_count                  (24 bytes)
//   metadata    kv_count × { string key, u32 type, value }
//   tensor info tensor_count × { string name, u32 n_dims, u64 ne[n_dims], u32 type, u64 offset }
//   padding     up to a multiple of general.alignment (u32, default 32)
//   data        tensor bytes; each tensor's offset is relative to the data section start and a
//               multiple of the alignment
// A string is a u64 byte length followed by the bytes (no terminator). ne[0] is the contiguous
// dimension. Any malformed input throws GgufError naming the field, the byte offset and what
// would be valid; no input crashes the reader.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kernels/dtype.h"
#include "kernels/gguf/mapped_file.h"
#include "kernels/gguf/types.h"

namespace vsynth::kernels {

// Every problem with a GGUF file (malformed bytes, missing key, wrong value type, I/O).
class GgufError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One metadata value: a view into the file. Scalars are read with memcpy (values in the file
// are not aligned). Type mismatches throw GgufError naming the key, both types and the offset.
class GgufValue {
 public:
  GgufType type() const { return type_; }
  std::string_view key() const { return key_; }
  uint64_t offset() const { return offset_; }  // file offset of the value's first byte

  // Scalar of exactly the stored type (no conversions: a u32 is not an i32).
  template <GgufScalar T>
  T as() const {
    expect(gguf_type_of<T>());
    return load<T>(data_);
  }
  std::string_view as_string() const {
    expect(GgufType::String);
    return str_;
  }

  // Arrays: the element type (Array for nested arrays) and the element count.
  bool is_array() const { return type_ == GgufType::Array; }
  GgufType element_type() const;
  uint64_t size() const;

  // Elements of a fixed-size-type array, copied out (the file does not align them).
  template <GgufScalar T>
  T at(uint64_t i) const {
    expect_array_of(gguf_type_of<T>());
    check_index(i);
    return load<T>(data_ + i * sizeof(T));
  }
  template <GgufScalar T>
  std::vector<T> to_vector() const {
    expect_array_of(gguf_type_of<T>());
    std::vector<T> out(static_cast<std::size_t>(count_));
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = load<T>(data_ + i * sizeof(T));
    return out;
  }
  // Elements of a string array: views into the file, built once at open.
  std::span<const std::string_view> strings() const {
    expect_array_of(GgufType::String);
    return strings_;
  }
  // Elements of an array of arrays.
  std::span<const GgufValue> arrays() const {
    expect_array_of(GgufType::Array);
    return arrays_;
  }

 private:
  friend class GgufParser;

  template <GgufScalar T>
  static T load(const std::byte* p) {
    if constexpr (std::same_as<T, bool>) {
      return *p != std::byte{0};
    } else {
      T v;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
  }
  void expect(GgufType want) const;
  void expect_array_of(GgufType want) const;
  void check_index(uint64_t i) const;
  [[noreturn]] void mismatch(std::string_view wanted) const;
  std::string describe() const;  // "u32", "array of f32", "array of array"

  std::string_view key_;  // the metadata key this value (or its outer array) belongs to
  const std::string* source_ = nullptr;  // file name for messages (owned by the GgufFile)
  GgufType type_ = GgufType::U8;
  GgufType elem_type_ = GgufType::U8;  // arrays only
  uint64_t offset_ = 0;
  const std::byte* data_ = nullptr;        // scalar bytes / first element of a fixed-size array
  uint64_t count_ = 0;                     // arrays only
  std::string_view str_;                   // strings only
  std::vector<std::string_view> strings_;  // string arrays only
  std::vector<GgufValue> arrays_;          // arrays of arrays only
};

struct GgufKV {
  std::string_view key;
  GgufValue value;
};

// One tensor: its geometry and a view of its bytes inside the mapping.
struct GgufTensor {
  std::string_view name;
  DTypeInfo type;                          // type.type is the DType; block geometry from dtype.h
  uint32_t n_dims = 0;                     // 1..4
  std::array<uint64_t, 4> ne{1, 1, 1, 1};  // elements per dimension, ne[0] contiguous; unused = 1
  uint64_t n_elements = 0;
  uint64_t n_bytes = 0;
  uint64_t file_offset = 0;         // absolute offset of the first data byte
  uint64_t info_offset = 0;         // where its tensor-info record starts (for messages)
  std::span<const std::byte> data;  // n_bytes, inside the mapping

  DType dtype() const { return type.type; }
  std::span<const uint64_t> dims() const { return {ne.data(), n_dims}; }
  uint64_t row_bytes() const { return ne[0] / type.block_elems * type.block_bytes; }
  uint64_t n_rows() const { return ne[1] * ne[2] * ne[3]; }
};

class GgufFile {
 public:
  // Largest general.alignment accepted (bytes). Real files use 32; 1 MiB leaves room for
  // page- or hugepage-aligned layouts while rejecting nonsense that would skip most of a file.
  static constexpr uint32_t kMaxAlignment = 1u << 20;
  static constexpr uint32_t kDefaultAlignment = 32;
  // Nesting limit for arrays of arrays (each level costs a stack frame while parsing).
  static constexpr int kMaxArrayDepth = 8;

  // mmaps `path` read-only and parses it.
  static GgufFile open(const std::filesystem::path& path);
  // Parses bytes the caller owns and keeps alive (and unchanged) for the life of the result;
  // `name` stands for the file in messages.
  static GgufFile open_from_memory(std::span<const std::byte> bytes, std::string name = "<memory>");

  GgufFile(GgufFile&&) noexcept;
  GgufFile& operator=(GgufFile&&) noexcept;
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;
  ~GgufFile();

  const std::string& name() const { return *source_; }
  uint32_t version() const { return version_; }
  uint64_t file_size() const { return bytes_.size(); }
  std::span<const std::byte> bytes() const { return bytes_; }
  // MappedFile::drop_pages on the file's mapping; nothing for a file opened from memory (those
  // bytes are the caller's).
  void drop_pages(std::span<const std::byte> range) const noexcept;
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // start of the data section

  // ---- metadata (in file order) ----
  const std::vector<GgufKV>& metadata() const { return kvs_; }
  const GgufValue* find(std::string_view key) const;  // nullptr when absent
  bool has(std::string_view key) const { return find(key) != nullptr; }
  // The value or GgufError "metadata key 'k' not found".
  const GgufValue& value(std::string_view key) const;

  // get<uint32_t>("gemma3.block_count"): exact stored type, else GgufError naming the key, the
  // expected and the actual type.
  template <GgufScalar T>
  T get(std::string_view key) const {
    return value(key).as<T>();
  }
  // Absent → nullopt; present with another type → GgufError.
  template <GgufScalar T>
  std::optional<T> get_optional(std::string_view key) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return std::nullopt;
    return v->as<T>();
  }
  template <GgufScalar T>
  T get_or(std::string_view key, T fallback) const {
    return get_optional<T>(key).value_or(fallback);
  }
  std::string_view get_string(std::string_view key) const { return value(key).as_string(); }
  std::optional<std::string_view> get_string_optional(std::string_view key) const;
  // Arrays: numeric ones copied out (elements are unaligned in the file), string ones as views.
  template <GgufScalar T>
  std::vector<T> get_array(std::string_view key) const {
    return value(key).to_vector<T>();
  }
  std::span<const std::string_view> get_string_array(std::string_view key) const {
    return value(key).strings();
  }

  // general.architecture ("gemma3", "llama", ...), and "<arch>.<suffix>" keys.
  std::string_view architecture() const { return get_string("general.architecture"); }
  std::string arch_key(std::string_view suffix) const;

  // ---- tensors (in file order) ----
  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* find_tensor(std::string_view name) const;  // nullptr when absent
  // The tensor or GgufError "tensor 'x' not found".
  const GgufTensor& tensor(std::string_view name) const;

 private:
  friend class GgufParser;
  GgufFile() = default;

  std::unique_ptr<MappedFile> mapping_;  // null for open_from_memory
  std::unique_ptr<std::string> source_;  // heap-held so values can point at it across moves
  std::span<const std::byte> bytes_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<GgufKV> kvs_;
  std::vector<GgufTensor> tensors_;
  std::unordered_map<std::string_view, std::size_t> kv_index_;
  std::unordered_map<std::string_view, std::size_t> tensor_index_;
};

}  // namespace vsynth::kernels
