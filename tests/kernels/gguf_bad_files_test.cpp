// The bad-file matrix: every malformed GGUF input is a GgufError whose text names the field,
// the offset and what would be valid. Bad files are made here with the writer plus byte
// patches (no committed binaries); each is opened from an exactly-sized buffer so that a
// sanitizer build catches any read past the end.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "kernels/gguf/reader.h"
#include "kernels/gguf/writer.h"
#include "tests/kernels/gguf_test_util.h"

using namespace vsynth::kernels;
using namespace vsynth::kernels::test;
using Catch::Matchers::Contains;

namespace {
constexpr uint64_t kAllOnes = std::numeric_limits<uint64_t>::max();
std::string at(uint64_t offset) {
  return "at offset " + std::to_string(offset);
}
}  // namespace

// ---------------------------------------------------------------- header

TEST_CASE("gguf bad: magic", "[gguf][bad]") {
  auto b = small_image().bytes;
  b[0] = std::byte{'X'};
  CHECK_THAT(gguf_error_of(b), Contains("gguf: bad.gguf: bad magic 'XGUF' at offset 0; "
                                        "expected 'GGUF'"));
  b[1] = std::byte{0};
  CHECK_THAT(gguf_error_of(b), Contains("bad magic 'X\\x00UF'"));
}

TEST_CASE("gguf bad: versions 0, 1, 4 and a big-endian file", "[gguf][bad]") {
  auto b = small_image().bytes;
  patch<uint32_t>(b, GgufLayout::kVersionOffset, 0);
  CHECK_THAT(gguf_error_of(b), Contains("unsupported version 0 at offset 4; valid: 2 or 3"));
  patch<uint32_t>(b, GgufLayout::kVersionOffset, 1);
  CHECK_THAT(gguf_error_of(b), Contains("unsupported version 1 at offset 4 (v1 used 32-bit "
                                        "counts); valid: 2 or 3"));
  patch<uint32_t>(b, GgufLayout::kVersionOffset, 4);
  CHECK_THAT(gguf_error_of(b), Contains("unsupported version 4 at offset 4; valid: 2 or 3"));
  patch<uint32_t>(b, GgufLayout::kVersionOffset, 0x03000000u);
  CHECK_THAT(gguf_error_of(b), Contains("big-endian GGUF file, which is not supported"));
}

TEST_CASE("gguf bad: tensor count and KV count of -1", "[gguf][bad]") {
  const auto good = small_image().bytes;
  auto b = good;
  patch<uint64_t>(b, GgufLayout::kTensorCountOffset, kAllOnes);
  CHECK_THAT(gguf_error_of(b), Contains("tensor count 18446744073709551615 at offset 8 is "
                                        "impossible") &&
                                   Contains("tensor infos (each takes at least 33 bytes)"));
  b = good;
  patch<uint64_t>(b, GgufLayout::kKvCountOffset, kAllOnes);
  CHECK_THAT(gguf_error_of(b), Contains("metadata KV count 18446744073709551615 at offset 16 is "
                                        "impossible") &&
                                   Contains("(each takes at least 14 bytes)"));
}

TEST_CASE("gguf bad: counts larger than what follows", "[gguf][bad]") {
  const auto good = small_image().bytes;
  // Plausible by size but wrong: the parser runs into the next section and must still stop
  // with a clean error.
  auto b = good;
  patch<uint64_t>(b, GgufLayout::kKvCountOffset, 7);
  CHECK_THAT(gguf_error_of(b), Contains("gguf: bad.gguf: "));
  b = good;
  patch<uint64_t>(b, GgufLayout::kTensorCountOffset, 4);
  CHECK_THAT(gguf_error_of(b), Contains("gguf: bad.gguf: "));
}

// ---------------------------------------------------------------- metadata

TEST_CASE("gguf bad: empty key", "[gguf][bad]") {
  GgufWriter w = small_writer();
  w.add("", uint32_t{1});
  const GgufImage img = w.build();
  CHECK_THAT(gguf_error_of(img.bytes),
             Contains("metadata entry #6 " + at(img.layout.kvs[6].key_offset) +
                      " has an empty key; valid: a non-empty name such as "
                      "'general.architecture'"));
}

TEST_CASE("gguf bad: duplicate key", "[gguf][bad]") {
  GgufWriter w = small_writer();
  w.add("general.name", "again");
  const GgufImage img = w.build();
  CHECK_THAT(gguf_error_of(img.bytes),
             Contains("duplicate metadata key 'general.name' " + at(img.layout.kvs[6].key_offset) +
                      " (entry #6); first defined by entry #1 " + at(img.layout.kvs[1].key_offset) +
                      "; keys must be unique"));
}

TEST_CASE("gguf bad: unknown value types", "[gguf][bad]") {
  const GgufImage img = small_image();
  auto b = img.bytes;
  patch<uint32_t>(b, img.layout.kvs[2].type_offset, 13);
  CHECK_THAT(gguf_error_of(b),
             Contains("metadata key 'tiny.block_count': unknown value type id 13 " +
                      at(img.layout.kvs[2].type_offset) + "; valid: 0 u8, 1 i8,") &&
                 Contains("12 f64"));
  b = img.bytes;
  // An array's element type is the first field of its value.
  patch<uint32_t>(b, img.layout.kvs[3].value_offset, 99);
  CHECK_THAT(gguf_error_of(b), Contains("metadata key 'tokenizer.ggml.scores': unknown array "
                                        "element type id 99 " +
                                        at(img.layout.kvs[3].value_offset)));
}

TEST_CASE("gguf bad: a bool that is neither 0 nor 1", "[gguf][bad]") {
  const GgufImage img = small_image();
  auto b = img.bytes;
  b[img.layout.kvs[5].value_offset] = std::byte{2};
  CHECK_THAT(gguf_error_of(b), Contains("metadata key 'tiny.flag': bool 2 " +
                                        at(img.layout.kvs[5].value_offset) + "; valid: 0 or 1"));
}

TEST_CASE("gguf bad: string lengths past the end", "[gguf][bad]") {
  const GgufImage img = small_image();
  auto b = img.bytes;
  patch<uint64_t>(b, img.layout.kvs[0].key_offset, kAllOnes);
  CHECK_THAT(gguf_error_of(b), Contains("key of metadata entry #0: string length "
                                        "18446744073709551615 at offset 24 runs past end of "
                                        "file"));
  b = img.bytes;
  patch<uint64_t>(b, img.layout.kvs[1].value_offset, 1ull << 40);
  CHECK_THAT(gguf_error_of(b),
             Contains("value of metadata key 'general.name': string length 1099511627776 " +
                      at(img.layout.kvs[1].value_offset) + " runs past end of file") &&
                 Contains("file is " + std::to_string(b.size()) + " bytes"));
  b = img.bytes;
  patch<uint64_t>(b, img.layout.tensors[1].info_offset, b.size());
  CHECK_THAT(gguf_error_of(b),
             Contains("name of tensor #1: string length " + std::to_string(b.size()) + " " +
                      at(img.layout.tensors[1].info_offset)));
  // Inside a string array: element #1 of tokenizer.ggml.tokens ("a") at value + 4 + 8 + 8 + 3.
  b = img.bytes;
  const uint64_t elem1 = img.layout.kvs[4].value_offset + 4 + 8 + (8 + 3);
  patch<uint64_t>(b, elem1, kAllOnes - 3);
  CHECK_THAT(gguf_error_of(b), Contains("element #1 of string array 'tokenizer.ggml.tokens': "
                                        "string length 18446744073709551612 " +
                                        at(elem1)));
}

TEST_CASE("gguf bad: array counts that overflow", "[gguf][bad]") {
  const GgufImage img = small_image();
  const uint64_t f32_count = img.layout.kvs[3].value_offset + 4;
  auto b = img.bytes;
  patch<uint64_t>(b, f32_count, 1ull << 62);  // × 4 bytes wraps to 0 in 64 bits
  CHECK_THAT(gguf_error_of(b), Contains("metadata key 'tokenizer.ggml.scores': array count "
                                        "4611686018427387904 " +
                                        at(f32_count) + " is impossible") &&
                                   Contains("f32 elements (4 bytes each)"));
  b = img.bytes;
  const uint64_t str_count = img.layout.kvs[4].value_offset + 4;
  patch<uint64_t>(b, str_count, kAllOnes);
  CHECK_THAT(gguf_error_of(b), Contains("metadata key 'tokenizer.ggml.tokens': array count "
                                        "18446744073709551615 " +
                                        at(str_count) + " is impossible") &&
                                   Contains("string elements (at least 8 bytes each)"));
}

TEST_CASE("gguf bad: arrays nested too deep", "[gguf][bad]") {
  GgufMetaValue v = GgufMetaValue::array(std::vector<uint8_t>{1});
  for (int depth = 1; depth <= GgufFile::kMaxArrayDepth; ++depth) {
    const std::vector<GgufMetaValue> one = {v};
    v = GgufMetaValue::array_of_arrays(one);
  }
  GgufWriter w;
  w.add_value("deep", v);
  CHECK_THAT(gguf_error_of(w.build().bytes),
             Contains("metadata key 'deep': arrays nest deeper than 8 levels"));
}

// ---------------------------------------------------------------- alignment

TEST_CASE("gguf bad: general.alignment of the wrong type", "[gguf][bad]") {
  GgufWriter w = small_writer();
  w.add("general.alignment", "32");
  CHECK_THAT(gguf_error_of(w.build().bytes),
             Contains("metadata key 'general.alignment' is string at offset") &&
                 Contains("expected u32 (a power of two from 1 to 1048576)"));
  GgufWriter w64 = small_writer();
  w64.add("general.alignment", uint64_t{32});
  CHECK_THAT(gguf_error_of(w64.build().bytes), Contains("metadata key 'general.alignment' is u64"));
}

TEST_CASE("gguf bad: alignment 0, not a power of two, huge", "[gguf][bad]") {
  for (uint32_t align : {0u, 48u, 3u, 1u << 21, 1u << 31}) {
    INFO("alignment " << align);
    GgufWriter w = small_writer();
    w.add("general.alignment", align);
    const GgufImage img = w.build();
    CHECK_THAT(gguf_error_of(img.bytes),
               Contains("general.alignment = " + std::to_string(align) + " " +
                        at(img.layout.kvs[6].value_offset) +
                        " is invalid; valid: a power of two from 1 to 1048576"));
  }
}

// ---------------------------------------------------------------- tensor infos

TEST_CASE("gguf bad: empty and duplicate tensor names", "[gguf][bad]") {
  GgufWriter w = small_writer();
  w.add_tensor("", DType::F32, {1}, some_bytes(4));
  const GgufImage img = w.build();
  CHECK_THAT(gguf_error_of(img.bytes),
             Contains("tensor #3 " + at(img.layout.tensors[3].info_offset) +
                      " has an empty name; valid: a non-empty name"));

  GgufWriter d = small_writer();
  d.add_tensor("blk.0.attn_q.weight", DType::F32, {1}, some_bytes(4));
  const GgufImage dup = d.build();
  CHECK_THAT(
      gguf_error_of(dup.bytes),
      Contains("duplicate tensor name 'blk.0.attn_q.weight' " +
               at(dup.layout.tensors[3].info_offset) + " (tensor #3); first used by " +
               "tensor #1 " + at(dup.layout.tensors[1].info_offset) + "; names must be unique"));
}

TEST_CASE("gguf bad: n_dims 0 and greater than 4", "[gguf][bad]") {
  const GgufImage img = small_image();
  for (uint32_t n : {0u, 5u, 0xFFFFFFFFu}) {
    auto b = img.bytes;
    patch<uint32_t>(b, img.layout.tensors[0].n_dims_offset, n);
    CHECK_THAT(gguf_error_of(b),
               Contains("tensor 'token_embd.weight': n_dims " + std::to_string(n) + " " +
                        at(img.layout.tensors[0].n_dims_offset) + " is invalid; valid: 1 to 4"));
  }
  // A raw 5-d tensor written as such.
  GgufWriter w;
  w.add_raw_tensor("five", 0, {1, 1, 1, 1, 1}, some_bytes(4));
  CHECK_THAT(gguf_error_of(w.build().bytes), Contains("tensor 'five': n_dims 5"));
}

TEST_CASE("gguf bad: a zero dimension", "[gguf][bad]") {
  GgufWriter w;
  w.add_raw_tensor("z", 0, {4, 0}, {});
  const GgufImage img = w.build();
  CHECK_THAT(gguf_error_of(img.bytes),
             Contains("tensor 'z': dimension ne[1] " + at(img.layout.tensors[0].dims_offset + 8) +
                      " is 0; every dimension must be at least 1"));
}

TEST_CASE("gguf bad: a dimension above 2^63-1", "[gguf][bad]") {
  GgufWriter w;
  w.add_raw_tensor("big", 0, {1ull << 63}, {});
  CHECK_THAT(gguf_error_of(w.build().bytes),
             Contains("tensor 'big': dimension ne[0] = 9223372036854775808") &&
                 Contains("is too large; valid: 1 to 9223372036854775807"));
}

TEST_CASE("gguf bad: element counts that overflow", "[gguf][bad]") {
  GgufWriter w;
  w.add_raw_tensor("wrap", 0, {1ull << 32, 1ull << 32, 1ull << 32}, {});  // 2^96 wraps
  const GgufImage img = w.build();
  CHECK_THAT(gguf_error_of(img.bytes),
             Contains("tensor 'wrap': element count of dims [4294967296, 4294967296, "
                      "4294967296] (" +
                      at(img.layout.tensors[0].dims_offset) + ") overflows"));
  GgufWriter w2;
  w2.add_raw_tensor("sign", 0, {1ull << 32, 1ull << 31}, {});  // 2^63: past int64
  CHECK_THAT(gguf_error_of(w2.build().bytes),
             Contains("tensor 'sign': element count of dims [4294967296, 2147483648]") &&
                 Contains("valid: a product of at most 9223372036854775807"));
}

TEST_CASE("gguf bad: byte sizes that overflow", "[gguf][bad]") {
  GgufWriter w;
  w.add_raw_tensor("f32", 0, {1ull << 62}, {});  // 2^62 elements fit, 2^64 bytes do not
  CHECK_THAT(gguf_error_of(w.build().bytes),
             Contains("tensor 'f32' (f32): byte size of dims [4611686018427387904]") &&
                 Contains("overflows; valid: at most 9223372036854775807 bytes"));
  GgufWriter w2;
  w2.add_raw_tensor("f64", 28, {1ull << 31, 1ull << 31}, {});  // 2^62 × 8 bytes wraps to 0
  CHECK_THAT(gguf_error_of(w2.build().bytes), Contains("tensor 'f64' (f64): byte size"));
  GgufWriter w3;
  // q8_0: 34 bytes per 32 elements; 2^63 - 32 elements fit, (2^58 - 1) × 34 bytes do not.
  w3.add_raw_tensor("q8", 8, {(1ull << 63) - 32}, {});
  CHECK_THAT(gguf_error_of(w3.build().bytes), Contains("tensor 'q8' (q8_0): byte size"));
}

TEST_CASE("gguf bad: unknown tensor type", "[gguf][bad]") {
  const GgufImage img = small_image();
  for (uint32_t id : {4u, 5u, 16u, 31u, 1000u, 0xFFFFFFFFu}) {
    auto b = img.bytes;
    patch<uint32_t>(b, img.layout.tensors[1].type_offset, id);
    CHECK_THAT(
        gguf_error_of(b),
        Contains("tensor 'blk.0.attn_q.weight': unknown type id " + std::to_string(id) + " " +
                 at(img.layout.tensors[1].type_offset) + "; valid: 0 f32, 1 f16, 2 q4_0,") &&
            Contains("30 bf16"));
  }
}

TEST_CASE("gguf bad: ne[0] not a multiple of the block size", "[gguf][bad]") {
  GgufWriter w;
  w.add_raw_tensor("blk.0.attn_q.weight", 12, {640, 1024}, {});
  CHECK_THAT(gguf_error_of(w.build().bytes),
             Contains("tensor 'blk.0.attn_q.weight' (q4_K, dims [640, 1024]") &&
                 Contains("ne[0] = 640 is not a multiple of the type's block size 256"));
}

// ---------------------------------------------------------------- tensor data

TEST_CASE("gguf bad: tensor offsets past the end", "[gguf][bad]") {
  const GgufImage img = small_image();
  const auto& t2 = img.layout.tensors[2];
  auto b = img.bytes;
  patch<uint64_t>(b, t2.offset_field, 1ull << 40);
  CHECK_THAT(
      gguf_error_of(b),
      Contains("tensor 'output_norm.weight': data offset 1099511627776 (relative to the "
               "data section at " +
               std::to_string(img.layout.data_section) + ") is past the end of the file (file is " +
               std::to_string(b.size()) + " bytes)"));
  b = img.bytes;
  patch<uint64_t>(b, t2.offset_field, kAllOnes - 31);  // aligned, and data + offset wraps
  CHECK_THAT(gguf_error_of(b),
             Contains("tensor 'output_norm.weight': data offset 18446744073709551584"));
}

TEST_CASE("gguf bad: data shorter than claimed", "[gguf][bad]") {
  const GgufImage img = small_image();
  // token_embd.weight f32 [4, 3] claims [4, 3000]: 48000 bytes.
  auto b = img.bytes;
  patch<uint64_t>(b, img.layout.tensors[0].dims_offset + 8, 3000);
  CHECK_THAT(gguf_error_of(b), Contains("tensor 'token_embd.weight' data [offset " +
                                        std::to_string(img.layout.tensors[0].data_offset) +
                                        ", 48000 bytes] runs past end of file (file is " +
                                        std::to_string(b.size()) + " bytes)"));
  // The last tensor cut short by one byte.
  const auto& last = img.layout.tensors[2];
  std::vector<std::byte> cut(img.bytes.begin(),
                             img.bytes.begin() + static_cast<long>(img.layout.data_end - 1));
  CHECK_THAT(gguf_error_of(cut),
             Contains("tensor 'output_norm.weight' data [offset " +
                      std::to_string(last.data_offset) + ", 8 bytes] runs past end of file " +
                      "(file is " + std::to_string(cut.size()) + " bytes)"));
}

TEST_CASE("gguf bad: data section beyond the end of the file", "[gguf][bad]") {
  const GgufImage img = small_image();
  const uint64_t infos_end = img.layout.tensors[2].offset_field + 8;
  REQUIRE(infos_end < img.layout.data_section);  // there is padding to cut into
  std::vector<std::byte> cut(img.bytes.begin(), img.bytes.begin() + static_cast<long>(infos_end));
  CHECK_THAT(gguf_error_of(cut),
             Contains("data section starts at offset " + std::to_string(img.layout.data_section) +
                      " (tensor infos end at " + std::to_string(infos_end) +
                      ", padded to the alignment 32), but the file is " +
                      std::to_string(infos_end) + " bytes"));
}

TEST_CASE("gguf bad: unaligned and overlapping tensor data", "[gguf][bad]") {
  const GgufImage img = small_image();
  auto b = img.bytes;
  const uint64_t rel = img.layout.tensors[1].data_offset - img.layout.data_section;
  patch<uint64_t>(b, img.layout.tensors[1].offset_field, rel + 4);
  CHECK_THAT(
      gguf_error_of(b),
      Contains("tensor 'blk.0.attn_q.weight': data offset " + std::to_string(rel + 4) + " " +
               at(img.layout.tensors[1].offset_field) + " is not a multiple of the alignment 32"));
  b = img.bytes;
  patch<uint64_t>(b, img.layout.tensors[1].offset_field, 0);  // on top of token_embd.weight
  CHECK_THAT(gguf_error_of(b), Contains("overlaps tensor") && Contains("token_embd.weight") &&
                                   Contains("blk.0.attn_q.weight"));
}

// ---------------------------------------------------------------- truncation

TEST_CASE("gguf bad: every truncation of a valid file throws cleanly", "[gguf][bad]") {
  const GgufImage img = small_image();
  REQUIRE(gguf_error_of(img.bytes) == "<no error>");
  // Every prefix shorter than the end of the last tensor's bytes is missing something.
  for (uint64_t n = 0; n < img.layout.data_end; ++n) {
    const std::string err = gguf_error_of(std::span(img.bytes).first(static_cast<std::size_t>(n)));
    INFO("prefix of " << n << " bytes: " << err);
    CHECK(err.rfind("gguf: bad.gguf: ", 0) == 0);
  }
  // Spot checks of the wording.
  CHECK_THAT(gguf_error_of(std::span(img.bytes).first(2)),
             Contains("file is 2 bytes; a GGUF file starts with the 4-byte magic 'GGUF'"));
  CHECK_THAT(gguf_error_of(std::span(img.bytes).first(10)),
             Contains("tensor count at offset 8 needs 8 bytes, but the file ends at offset 10 "
                      "(2 bytes left)"));
  const uint64_t type_at = img.layout.kvs[2].type_offset;
  CHECK_THAT(
      gguf_error_of(std::span(img.bytes).first(type_at + 1)),
      Contains("value type of metadata key 'tiny.block_count' " + at(type_at) + " needs 4 bytes"));
}

TEST_CASE("gguf bad: errors through open() name the path", "[gguf][bad]") {
  auto b = small_image().bytes;
  patch<uint32_t>(b, GgufLayout::kVersionOffset, 9);
  const auto path = std::filesystem::temp_directory_path() /
                    ("vsynth-gguf-bad-version-" + std::to_string(::getpid()) + ".gguf");
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  }
  CHECK_THROWS_WITH(GgufFile::open(path),
                    Contains("gguf: " + path.string() + ": unsupported version 9 at offset 4"));
  std::filesystem::remove(path);
}
