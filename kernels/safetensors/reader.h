// safetensors reader: maps a file read-only, checks the header against the file and exposes each
// tensor as a view into the mapping (nothing is copied).
//
// Layout (https://github.com/huggingface/safetensors, format section):
//   u64 (little-endian) N        byte length of the JSON header
//   N bytes                      JSON object, UTF-8: { "<tensor name>": { "dtype": "F32",
//                                "shape": [d0, d1, ...], "data_offsets": [begin, end] }, ...,
//                                optionally "__metadata__": { "<key>": "<string>", ... } }
//                                (may be padded with trailing spaces)
//   data                         the tensors' bytes; data_offsets are relative to the data
//                                start (byte 8 + N), end exclusive
// Checks: N fits in the file (and under 100 MB, the format's own limit), the header parses as a
// JSON object of objects (no NUL byte, nesting under 64 levels), each dtype is a known one, each
// shape is a list of non-negative integers whose product times the dtype size equals end - begin
// (without overflow), every range lies inside the data section, and the ranges cover the data
// section exactly (no overlap, no hole, no unindexed bytes at the end: the format's rule against
// polyglot files, which the reference reader enforces too). Names and keys within an object are
// unique (a repeated one is an error, not "the last one wins"). Unknown fields inside an entry are
// ignored. Any violation throws SafetensorsError naming the file, the tensor (or the byte offset,
// for header-level problems) and what would be valid:
//   safetensors: <label>: tensor '<name>': <what> (<what would be valid>)
// No input crashes the reader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/gguf/mapped_file.h"

namespace vsynth::kernels {

class SafetensorsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The element types the format defines (names as written in the header).
enum class StDType : uint8_t { BOOL, U8, I8, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64 };
std::string_view to_string(StDType t);
std::size_t element_size(StDType t);  // bytes

struct SafetensorsTensor {
  std::string name;
  StDType dtype = StDType::F32;
  std::vector<int64_t> shape;       // outermost first (row-major, the last dimension contiguous)
  std::span<const std::byte> data;  // into the mapping; alignment is not guaranteed by the
                                    // format: read through memcpy or check before casting
  int64_t elements() const;
};

class SafetensorsFile {
 public:
  // Maps and checks `path`. Throws SafetensorsError (malformed header) or GgufError from
  // MappedFile (cannot open / map).
  static SafetensorsFile open(const std::filesystem::path& path);
  // Checks `bytes` (not copied: they must outlive the result); `label` names them in errors.
  // What the fuzz target and the bad-file tests drive.
  static SafetensorsFile parse(std::span<const std::byte> bytes, std::string label);

  const std::string& label() const { return label_; }
  // In header order.
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  // nullptr when absent.
  const SafetensorsTensor* find(std::string_view name) const;
  // The tensor, checked: throws SafetensorsError naming the file and the tensor when it is
  // absent, has another dtype, or another shape (the message gives both shapes).
  const SafetensorsTensor& require(std::string_view name, StDType dtype,
                                   std::span<const int64_t> shape) const;
  // "__metadata__" string entries.
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  std::shared_ptr<const MappedFile> file_;  // null for parse()
  std::string label_;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, std::string> metadata_;
  std::map<std::string, std::size_t, std::less<>> index_;  // name -> position in tensors_
};

}  // namespace vsynth::kernels
