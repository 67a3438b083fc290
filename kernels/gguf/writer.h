// GGUF v3 writer (little-endian): metadata of every value type, tensors of any DType from raw
// bytes, the data section padded to the alignment. Tests use it to make small models and, with
// the byte layout it reports, to patch single fields into bad files.
//
// The writer encodes what it is given: duplicate keys, empty names or a raw unknown tensor type
// are written as asked (the reader is the one that rejects them). Only add_tensor() checks that
// the bytes match the declared geometry, because a model written with it is meant to load.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "kernels/dtype.h"
#include "kernels/gguf/types.h"

namespace vsynth::kernels {

// A metadata value ready to write: its type tag and its encoded bytes (without the tag).
class GgufMetaValue {
 public:
  template <GgufScalar T>
  static GgufMetaValue scalar(T v) {
    GgufMetaValue m(gguf_type_of<T>());
    m.put(v);
    return m;
  }
  static GgufMetaValue string(std::string_view s);

  // An array of scalars or of strings (anything convertible to std::string_view).
  template <std::ranges::input_range R>
  static GgufMetaValue array(const R& elems) {
    using E = std::remove_cvref_t<std::ranges::range_value_t<R>>;
    static_assert(GgufScalar<E> || std::convertible_to<const E&, std::string_view>,
                  "array elements must be GGUF scalars or strings");
    GgufMetaValue m(GgufType::Array);
    if constexpr (GgufScalar<E>) {
      m.put(static_cast<uint32_t>(gguf_type_of<E>()));
    } else {
      m.put(static_cast<uint32_t>(GgufType::String));
    }
    const std::size_t count_at = m.bytes_.size();
    m.put(uint64_t{0});  // patched below: input ranges need not know their size
    uint64_t n = 0;
    for (const auto& e : elems) {
      if constexpr (GgufScalar<E>) {
        m.put(static_cast<E>(e));
      } else {
        m.put_string(std::string_view(e));
      }
      ++n;
    }
    std::memcpy(m.bytes_.data() + count_at, &n, sizeof n);
    return m;
  }
  // An array whose elements are arrays (each element must itself be an array value).
  static GgufMetaValue array_of_arrays(std::span<const GgufMetaValue> elems);
  // An empty array with the given element type.
  static GgufMetaValue empty_array(GgufType elem);

  GgufType type() const { return type_; }
  const std::vector<std::byte>& bytes() const { return bytes_; }

 private:
  explicit GgufMetaValue(GgufType t) : type_(t) {}
  template <GgufScalar T>
  void put(T v) {
    if constexpr (std::same_as<T, bool>) {
      bytes_.push_back(std::byte{v ? uint8_t{1} : uint8_t{0}});
    } else {
      append_bytes(&v, sizeof v);
    }
  }
  void put_string(std::string_view s);
  void append(const std::vector<std::byte>& b) { append_bytes(b.data(), b.size()); }
  // resize + memcpy rather than vector::insert: GCC 12 at -O3 reports false stringop-overflow /
  // array-bounds errors for a range insert into a small vector (a Release build failed).
  void append_bytes(const void* p, size_t n) {
    if (n == 0) return;
    const size_t at = bytes_.size();
    bytes_.resize(at + n);
    std::memcpy(bytes_.data() + at, p, n);
  }

  GgufType type_;
  std::vector<std::byte> bytes_;
};

// Where each field of a written file landed (absolute byte offsets), for patching bad files.
struct GgufLayout {
  static constexpr uint64_t kVersionOffset = 4;
  static constexpr uint64_t kTensorCountOffset = 8;
  static constexpr uint64_t kKvCountOffset = 16;
  struct Kv {
    uint64_t key_offset;    // the key's u64 length
    uint64_t type_offset;   // u32 value type
    uint64_t value_offset;  // first byte of the value (for strings: the u64 length)
  };
  struct Tensor {
    uint64_t info_offset;    // the name's u64 length
    uint64_t n_dims_offset;  // u32
    uint64_t dims_offset;    // u64 ne[0]
    uint64_t type_offset;    // u32
    uint64_t offset_field;   // u64 data offset (relative to the data section)
    uint64_t data_offset;    // absolute offset of the first data byte
    uint64_t data_bytes;
  };
  std::vector<Kv> kvs;
  std::vector<Tensor> tensors;
  uint64_t data_section = 0;  // absolute offset of the data section
  uint64_t data_end = 0;      // end of the last tensor's bytes (before trailing padding)
};

struct GgufImage {
  std::vector<std::byte> bytes;
  GgufLayout layout;
};

class GgufWriter {
 public:
  // `alignment` pads the data section and each tensor; when it differs from 32 the writer adds
  // general.alignment (u32) as the first key unless one was added explicitly.
  explicit GgufWriter(uint32_t alignment = 32) : alignment_(alignment) {}

  void set_version(uint32_t v) { version_ = v; }  // 3 by default; 2 has the same layout

  void add_value(std::string key, GgufMetaValue v);
  template <GgufScalar T>
  void add(std::string key, T v) {
    add_value(std::move(key), GgufMetaValue::scalar(v));
  }
  void add(std::string key, std::string_view s) {
    add_value(std::move(key), GgufMetaValue::string(s));
  }
  void add(std::string key, const char* s) { add(std::move(key), std::string_view(s)); }
  template <std::ranges::input_range R>
  void add_array(std::string key, const R& elems) {
    add_value(std::move(key), GgufMetaValue::array(elems));
  }

  // A tensor of `type` with dims `ne` (ne[0] contiguous); `data` must hold exactly the bytes the
  // geometry needs (std::invalid_argument otherwise). The bytes are copied.
  void add_tensor(std::string name, DType type, std::vector<uint64_t> ne,
                  std::span<const std::byte> data);
  // Anything at all, unchecked: for bad-file tests.
  void add_raw_tensor(std::string name, uint32_t type_id, std::vector<uint64_t> ne,
                      std::span<const std::byte> data);

  GgufImage build() const;
  // Writes build().bytes to `path` (std::runtime_error when it cannot).
  void write(const std::filesystem::path& path) const;

 private:
  struct Kv {
    std::string key;
    GgufMetaValue value;
  };
  struct Tensor {
    std::string name;
    uint32_t type_id;
    std::vector<uint64_t> ne;
    std::vector<std::byte> data;
  };
  uint32_t alignment_;
  uint32_t version_ = 3;
  std::vector<Kv> kvs_;
  std::vector<Tensor> tensors_;
};

}  // namespace vsynth::kernels
