// The safetensors reader (kernels/safetensors/reader.h): good files round trip through the
// in-test writer (every dtype family, 0-d scalars, zero-sized tensors, padded headers), the
// bad-file matrix (each malformed input is a SafetensorsError whose text names the tensor or
// the byte offset and what would be valid), require() errors, and the real encoder file.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "kernels/gguf/reader.h"
#include "kernels/safetensors/reader.h"
#include "tests/kernels/safetensors_test_util.h"
#include "tests/test_skip.h"

using namespace vsynth::kernels;
using namespace vsynth::kernels::test;
using Catch::Matchers::Contains;

namespace {

// {"w": {...}} with one tensor entry written verbatim.
std::string one(std::string_view entry) {
  return "{\"w\":" + std::string(entry) + "}";
}
std::vector<std::byte> with_length(uint64_t n, std::size_t total) {
  std::vector<std::byte> b(total);
  std::memcpy(b.data(), &n, 8);
  return b;
}
std::string nested(int depth) {
  return "{\"w\":" + std::string(depth, '[') + std::string(depth, ']') + "}";
}

// Writes `bytes` to a fresh file under the temp dir and returns its path (removed by the caller).
std::filesystem::path temp_file(const std::vector<std::byte>& bytes, const std::string& stem) {
  const auto path = std::filesystem::temp_directory_path() /
                    (stem + "-" + std::to_string(::getpid()) + ".safetensors");
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  return path;
}

}  // namespace

// ---------------------------------------------------------------- good files

TEST_CASE("safetensors: round trip of F32, F16, BF16 and I64 tensors", "[safetensors]") {
  const std::vector<float> f32 = {1.0f, -2.5f, 3.25f, 0.0f, 1e-3f, -7.0f};
  const std::vector<uint16_t> f16 = {0x3c00, 0xc000, 0x7bff, 0x0001};  // 1, -2, 65504, 2^-24
  const std::vector<uint16_t> bf16 = {0x3f80, 0xbf80, 0x4049, 0x0000};
  const std::vector<int64_t> i64 = {0, -1, std::numeric_limits<int64_t>::max()};
  const auto bytes = safetensors_bytes({{"a.f32", "F32", {2, 3}, bytes_of(f32)},
                                        {"b.f16", "F16", {4}, bytes_of(f16)},
                                        {"c.bf16", "BF16", {2, 1, 2}, bytes_of(bf16)},
                                        {"d.i64", "I64", {3}, bytes_of(i64)}},
                                       {{"format", "pt"}, {"note", "x\"y"}});
  const SafetensorsFile f = SafetensorsFile::parse(bytes, "mem");
  REQUIRE(f.tensors().size() == 4);
  CHECK(f.label() == "mem");
  CHECK(f.metadata() == std::map<std::string, std::string>{{"format", "pt"}, {"note", "x\"y"}});

  const SafetensorsTensor& a = f.require("a.f32", StDType::F32, std::vector<int64_t>{2, 3});
  CHECK(a.elements() == 6);
  std::vector<float> got(6);
  REQUIRE(a.data.size() == 24);
  std::memcpy(got.data(), a.data.data(), 24);
  CHECK(got == f32);

  const SafetensorsTensor* b = f.find("b.f16");
  REQUIRE(b != nullptr);
  CHECK(b->dtype == StDType::F16);
  CHECK(b->shape == std::vector<int64_t>{4});
  const auto f16_bytes = bytes_of(f16);
  CHECK(std::equal(b->data.begin(), b->data.end(), f16_bytes.begin(), f16_bytes.end()));

  const SafetensorsTensor* c = f.find("c.bf16");
  REQUIRE(c != nullptr);
  CHECK(c->dtype == StDType::BF16);
  CHECK(c->elements() == 4);
  const auto bf16_bytes = bytes_of(bf16);
  CHECK(std::equal(c->data.begin(), c->data.end(), bf16_bytes.begin(), bf16_bytes.end()));

  const SafetensorsTensor& d = f.require("d.i64", StDType::I64, std::vector<int64_t>{3});
  std::vector<int64_t> ids(3);
  std::memcpy(ids.data(), d.data.data(), 24);
  CHECK(ids == i64);

  // Views into the input, not copies: the first tensor starts right after the header.
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  CHECK(n % 8 == 0);  // the writer pads like the reference writer
  CHECK(a.data.data() == bytes.data() + 8 + n);
  CHECK(d.data.data() + d.data.size() == bytes.data() + bytes.size());
  CHECK(f.find("absent") == nullptr);
}

TEST_CASE("safetensors: tensors keep header order, not name order", "[safetensors]") {
  const auto bytes = safetensors_bytes({{"zeta", "U8", {1}, bytes_of(std::vector<uint8_t>{1})},
                                        {"alpha", "U8", {1}, bytes_of(std::vector<uint8_t>{2})},
                                        {"mid", "U8", {1}, bytes_of(std::vector<uint8_t>{3})}});
  const SafetensorsFile f = SafetensorsFile::parse(bytes, "mem");
  REQUIRE(f.tensors().size() == 3);
  CHECK(f.tensors()[0].name == "zeta");
  CHECK(f.tensors()[1].name == "alpha");
  CHECK(f.tensors()[2].name == "mid");
  CHECK(f.find("alpha") == &f.tensors()[1]);
  CHECK(std::to_integer<int>(f.tensors()[1].data[0]) == 2);
}

TEST_CASE("safetensors: 0-d scalars and zero-sized tensors", "[safetensors]") {
  const auto bytes = safetensors_bytes({{"empty.before", "F32", {0, 5}, {}},
                                        {"scalar", "F64", {}, bytes_of(std::vector<double>{0.5})},
                                        {"empty.between", "I32", {3, 0}, {}},
                                        {"flag", "BOOL", {2}, bytes_of(std::vector<uint8_t>{1, 0})},
                                        {"empty.end", "U64", {0}, {}}});
  const SafetensorsFile f = SafetensorsFile::parse(bytes, "mem");
  REQUIRE(f.tensors().size() == 5);
  const SafetensorsTensor& s = f.require("scalar", StDType::F64, {});
  CHECK(s.shape.empty());
  CHECK(s.elements() == 1);
  double v = 0;
  REQUIRE(s.data.size() == 8);
  std::memcpy(&v, s.data.data(), 8);
  CHECK(v == 0.5);
  for (const char* name : {"empty.before", "empty.between", "empty.end"}) {
    const SafetensorsTensor* t = f.find(name);
    REQUIRE(t != nullptr);
    CHECK(t->elements() == 0);
    CHECK(t->data.empty());
  }
  CHECK(f.find("flag")->data.size() == 2);

  // A header with no tensors at all, and one that holds only metadata.
  CHECK(SafetensorsFile::parse(raw_safetensors("{}"), "mem").tensors().empty());
  const SafetensorsFile m = SafetensorsFile::parse(safetensors_bytes({}, {{"k", "v"}}), "mem");
  CHECK(m.tensors().empty());
  CHECK(m.metadata().at("k") == "v");
}

TEST_CASE("safetensors: header padding, whitespace and unknown entry fields", "[safetensors]") {
  const std::vector<StSpec> specs = {{"w", "I16", {2}, bytes_of(std::vector<int16_t>{-3, 4})}};
  for (std::size_t align : {1, 8, 64, 4096}) {
    const auto bytes = safetensors_bytes(specs, {}, align);
    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    CHECK(n % align == 0);
    const SafetensorsFile f = SafetensorsFile::parse(bytes, "mem");
    CHECK(f.require("w", StDType::I16, std::vector<int64_t>{2}).data.size() == 4);
  }
  // Leading/inner whitespace, an unknown field, and "__metadata__": null all accepted.
  const auto b = raw_safetensors(
      " \n{ \"__metadata__\" : null , \"w\" : { \"extra\": [1, {\"x\": 2}], \"shape\" : [ 2 ] ,"
      " \"data_offsets\" : [ 0 , 2 ], \"dtype\" : \"I8\" } }   ",
      2);
  const SafetensorsFile f = SafetensorsFile::parse(b, "mem");
  CHECK(f.metadata().empty());
  CHECK(f.require("w", StDType::I8, std::vector<int64_t>{2}).elements() == 2);
}

TEST_CASE("safetensors: dtype names and sizes", "[safetensors]") {
  const std::vector<std::pair<StDType, std::size_t>> all = {
      {StDType::BOOL, 1}, {StDType::U8, 1},  {StDType::I8, 1},   {StDType::I16, 2},
      {StDType::U16, 2},  {StDType::F16, 2}, {StDType::BF16, 2}, {StDType::I32, 4},
      {StDType::U32, 4},  {StDType::F32, 4}, {StDType::F64, 8},  {StDType::I64, 8},
      {StDType::U64, 8}};
  for (const auto& [type, size] : all) {
    const std::string name(to_string(type));
    INFO(name);
    CHECK(element_size(type) == size);
    // Each name parses back to its type with that size.
    const auto b = safetensors_bytes({{"t", name, {3}, std::vector<std::byte>(3 * size)}});
    const SafetensorsFile f = SafetensorsFile::parse(b, "mem");
    CHECK(f.tensors().at(0).dtype == type);
  }
}

TEST_CASE("safetensors: open() maps a file and names it in errors", "[safetensors]") {
  const auto good = safetensors_bytes({{"w", "F32", {2}, bytes_of(std::vector<float>{1, 2})}});
  const auto path = temp_file(good, "vsynth-st-good");
  {
    const SafetensorsFile f = SafetensorsFile::open(path);
    CHECK(f.label() == path.string());
    float x[2] = {};
    std::memcpy(x, f.require("w", StDType::F32, std::vector<int64_t>{2}).data.data(), 8);
    CHECK(x[1] == 2.0f);
    // The views stay valid when the file object moves.
    const SafetensorsFile moved = f;
    CHECK(moved.find("w")->data.data() == f.find("w")->data.data());
  }
  std::filesystem::remove(path);

  const auto bad = temp_file(raw_safetensors("[]"), "vsynth-st-bad");
  try {
    (void)SafetensorsFile::open(bad);
    FAIL("no error");
  } catch (const SafetensorsError& e) {
    CHECK_THAT(e.what(), Contains("safetensors: " + bad.string() +
                                  ": header at byte 8 is a JSON "
                                  "array, not an object"));
  }
  std::filesystem::remove(bad);
  // An empty file maps to no bytes at all (MappedFile holds no mapping for it).
  const auto empty = temp_file({}, "vsynth-st-empty");
  try {
    (void)SafetensorsFile::open(empty);
    FAIL("no error");
  } catch (const SafetensorsError& e) {
    CHECK_THAT(e.what(), Contains("safetensors: " + empty.string() + ": file is 0 bytes"));
  }
  std::filesystem::remove(empty);
  CHECK_THROWS_AS(SafetensorsFile::open("/nonexistent/x.safetensors"), GgufError);
}

// ---------------------------------------------------------------- the bad-file matrix

TEST_CASE("safetensors bad: the bad-file matrix", "[safetensors][bad]") {
  constexpr uint64_t kAllOnes = std::numeric_limits<uint64_t>::max();
  const auto entry = [](std::string_view dtype, std::string_view shape, std::string_view offs) {
    return "{\"dtype\":\"" + std::string(dtype) + "\",\"shape\":" + std::string(shape) +
           ",\"data_offsets\":" + std::string(offs) + "}";
  };
  struct Case {
    const char* what;
    std::vector<std::byte> bytes;
    std::string expected;  // after "safetensors: bad.safetensors: "
  };
  const std::vector<Case> cases = {
      // length field and header size
      {"empty file", {}, "file is 0 bytes, shorter than the 8-byte header length at byte 0"},
      {"truncated length field", std::vector<std::byte>(5),
       "file is 5 bytes, shorter than the 8-byte header length at byte 0"},
      {"8-byte file, header length 0", with_length(0, 8),
       "header length 0 at byte 0 is too short for a JSON object (at least 2 bytes: {})"},
      {"header longer than file", with_length(1000, 40),
       "header length 1000 at byte 0 runs past the end of the file (32 bytes follow the length "
       "field)"},
      {"header over 100 MB", with_length(100'000'001, 64),
       "header length 100000001 at byte 0 is over the format's limit of 100000000 bytes"},
      {"header length 2^64-1", with_length(kAllOnes, 16),
       "header length 18446744073709551615 at byte 0 is over the format's limit"},
      // JSON
      {"header not JSON", raw_safetensors("{nope}"),
       "header is not valid JSON at byte 10: syntax error while parsing object key - invalid "
       "literal; last read: '{no'; expected string literal (the header must be one UTF-8 JSON "
       "object)"},
      {"header JSON cut short", raw_safetensors("{\"w\": "),
       "header is not valid JSON at byte 14: "},
      {"NUL padding after the JSON", raw_safetensors(std::string("{}\0\0", 4)),
       "header has a NUL byte at byte 10 (JSON text holds none; the header may be padded with "
       "spaces only)"},
      {"NUL then text the parser would never read",
       raw_safetensors(std::string("{}\0{\"w\":1}", 10)), "header has a NUL byte at byte 10"},
      {"invalid UTF-8 in a name", raw_safetensors("{\"\xff\":1}"),
       "header is not valid JSON at byte 10: "},
      {"number past the double range (found by fuzz_safetensors)",
       raw_safetensors(one(entry("F32", "[1]", "[0,1.5e314]"))),
       "header is not valid JSON: number overflow parsing '1.5e314' (the header must be one "
       "UTF-8 JSON object)"},
      {"header JSON array", raw_safetensors("[1, 2]"),
       "header at byte 8 is a JSON array, not an object (valid: {\"<tensor name>\""},
      {"header JSON string", raw_safetensors("\"x\""),
       "header at byte 8 is a JSON string, not an object"},
      {"nesting 100 deep", raw_safetensors(nested(100)),
       "header nests deeper than 64 levels (a valid header nests 3"},
      // entries
      {"entry not an object", raw_safetensors(one("3")),
       "tensor 'w': entry is a JSON number, not an object"},
      {"no dtype", raw_safetensors(one("{\"shape\":[],\"data_offsets\":[0,0]}")),
       "tensor 'w': entry has no \"dtype\""},
      {"no data_offsets", raw_safetensors(one("{\"dtype\":\"F32\",\"shape\":[]}")),
       "tensor 'w': entry has no \"data_offsets\""},
      {"dtype F33", raw_safetensors(one(entry("F33", "[1]", "[0,4]")), 4),
       "tensor 'w': unknown dtype 'F33' (valid: BOOL, U8, I8, I16, U16, F16, BF16, I32, U32, "
       "F32, F64, I64, U64)"},
      {"dtype a number", raw_safetensors(one("{\"dtype\":4,\"shape\":[],\"data_offsets\":[0,4]}")),
       "tensor 'w': dtype is a JSON number (valid: a string, one of BOOL"},
      {"control byte in a name is escaped",
       raw_safetensors("{\"a\\u0001b\":" + entry("X", "[]", "[0,0]") + "}"),
       "tensor 'a\\x01b': unknown dtype 'X'"},
      // shape
      {"shape not a list", raw_safetensors(one(entry("F32", "4", "[0,16]")), 16),
       "tensor 'w': shape is a JSON number (valid: a list of non-negative integers)"},
      {"negative dim", raw_safetensors(one(entry("F32", "[2,-1]", "[0,8]")), 8),
       "tensor 'w': shape[1] is -1 (valid: an integer from 0 to 2^63-1)"},
      {"fractional dim", raw_safetensors(one(entry("F32", "[2.5]", "[0,8]")), 8),
       "tensor 'w': shape[0] is 2.5 (valid: an integer from 0 to 2^63-1)"},
      {"dim 2^63", raw_safetensors(one(entry("U8", "[9223372036854775808]", "[0,8]")), 8),
       "tensor 'w': shape[0] is 9223372036854775808 (valid: an integer from 0 to 2^63-1)"},
      {"element count overflow",
       raw_safetensors(one(entry("F32", "[4294967296,4294967296]", "[0,8]")), 8),
       "tensor 'w': shape [4294967296, 4294967296] of F32 overflows 64 bits (valid: each running "
       "product of the dims at most 2^63-1 elements, and at most 2^64-1 bytes)"},
      {"running product past 2^63-1, then a 0",
       raw_safetensors(one(entry("U8", "[4294967296,2147483648,0]", "[0,0]"))),
       "tensor 'w': shape [4294967296, 2147483648, 0] of U8 overflows 64 bits"},
      {"byte size overflow",
       raw_safetensors(one(entry("F64", "[4611686018427387904]", "[0,8]")), 8),
       "tensor 'w': shape [4611686018427387904] of F64 overflows 64 bits"},
      {"shape/size mismatch", raw_safetensors(one(entry("F32", "[2,3]", "[0,20]")), 20),
       "tensor 'w': data_offsets [0, 20] hold 20 bytes, but shape [2, 3] of F32 needs 24 (6 "
       "elements x 4 bytes)"},
      // data_offsets
      {"offsets reversed", raw_safetensors(one(entry("U8", "[0]", "[8,0]")), 8),
       "tensor 'w': data_offsets [8, 0] are reversed (valid: begin <= end)"},
      {"one offset", raw_safetensors(one(entry("U8", "[0]", "[0]"))),
       "tensor 'w': data_offsets is [0] (valid: [begin, end], two non-negative integers)"},
      {"negative offset", raw_safetensors(one(entry("U8", "[4]", "[-1,3]")), 4),
       "tensor 'w': data_offsets is [-1,3] (valid: [begin, end]"},
      {"range past end", raw_safetensors(one(entry("F32", "[4]", "[0,16]")), 8),
       "tensor 'w': data_offsets [0, 16] run past the data section (8 bytes: valid offsets are "
       "0 to 8)"},
      {"overlapping ranges",
       raw_safetensors(
           "{\"a\":" + entry("U8", "[8]", "[0,8]") + ",\"b\":" + entry("U8", "[8]", "[4,12]") + "}",
           12),
       "tensor 'b': data_offsets [4, 12] overlap tensor 'a' [0, 8] (each byte belongs to one "
       "tensor)"},
      {"overlap listed out of order",
       raw_safetensors(
           "{\"b\":" + entry("U8", "[8]", "[4,12]") + ",\"a\":" + entry("U8", "[8]", "[0,8]") + "}",
           12),
       "tensor 'b': data_offsets [4, 12] overlap tensor 'a' [0, 8]"},
      {"hole between ranges",
       raw_safetensors(
           "{\"a\":" + entry("U8", "[4]", "[0,4]") + ",\"b\":" + entry("U8", "[4]", "[8,12]") + "}",
           12),
       "tensor 'b': data_offsets [8, 12] leave bytes [4, 8) of the data section to no tensor"},
      {"bytes after the last tensor", raw_safetensors(one(entry("U8", "[4]", "[0,4]")), 8),
       "the tensors cover 4 bytes of the 8-byte data section (the format allows no unindexed "
       "bytes at the end)"},
      // names and metadata
      {"duplicate name",
       raw_safetensors("{\"w\":" + entry("U8", "[0]", "[0,0]") +
                       ",\"w\":" + entry("U8", "[0]", "[0,0]") + "}"),
       "tensor 'w': the name appears twice in the header (each name must be unique)"},
      {"duplicate key in an entry",
       raw_safetensors(
           one("{\"dtype\":\"U8\",\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}")),
       "tensor 'w': key 'dtype' appears twice in its entry"},
      {"metadata value not a string", raw_safetensors("{\"__metadata__\":{\"format\":1}}"),
       "__metadata__: key 'format' is a JSON number (valid: a string)"},
      {"metadata not an object", raw_safetensors("{\"__metadata__\":[\"pt\"]}"),
       "__metadata__ is a JSON array (valid: an object of string values)"},
      {"metadata key twice", raw_safetensors("{\"__metadata__\":{\"k\":\"a\",\"k\":\"b\"}}"),
       "__metadata__: key 'k' appears twice (keys must be unique)"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    CHECK_THAT(st_error_of(c.bytes), Contains("safetensors: bad.safetensors: " + c.expected));
  }
  // Nesting up to the limit is still only a bad entry, not a depth error.
  CHECK_THAT(st_error_of(raw_safetensors(nested(60))),
             Contains("tensor 'w': entry is a JSON array"));
}

// ---------------------------------------------------------------- require()

TEST_CASE("safetensors: require() names the tensor, and both dtypes or shapes", "[safetensors]") {
  const auto bytes = safetensors_bytes({{"a", "F32", {2, 3}, std::vector<std::byte>(24)},
                                        {"b", "I64", {1}, std::vector<std::byte>(8)}});
  const SafetensorsFile f = SafetensorsFile::parse(bytes, "enc.safetensors");
  CHECK(&f.require("a", StDType::F32, std::vector<int64_t>{2, 3}) == &f.tensors()[0]);
  auto error_of = [&](std::string_view name, StDType t, std::vector<int64_t> shape) {
    try {
      (void)f.require(name, t, shape);
    } catch (const SafetensorsError& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  CHECK(error_of("nope", StDType::F32, {1}) ==
        "safetensors: enc.safetensors: tensor 'nope': not found (the file has 2 tensors: 'a', "
        "'b')");
  CHECK(error_of("a", StDType::F16, {2, 3}) ==
        "safetensors: enc.safetensors: tensor 'a': dtype F32 (expected F16)");
  CHECK(error_of("a", StDType::F32, {3, 2}) ==
        "safetensors: enc.safetensors: tensor 'a': shape [2, 3] (expected [3, 2])");
  CHECK(error_of("a", StDType::F32, {2, 3, 1}) ==
        "safetensors: enc.safetensors: tensor 'a': shape [2, 3] (expected [2, 3, 1])");
  CHECK(error_of("b", StDType::I64, {}) ==
        "safetensors: enc.safetensors: tensor 'b': shape [1] (expected [])");
}

// ---------------------------------------------------------------- the real encoder file

TEST_CASE("safetensors: the all-MiniLM-L6-v2 encoder file", "[safetensors][model]") {
  if (!vsynth::test::have_default_encoder()) return;
  const SafetensorsFile f =
      SafetensorsFile::open(vsynth::test::default_encoder() / "model.safetensors");
  CHECK(f.metadata() == std::map<std::string, std::string>{{"format", "pt"}});
  // 6 layers x 16 tensors + 5 embedding tensors + position_ids + the pooler's weight and bias.
  CHECK(f.tensors().size() == 104);
  std::size_t f32 = 0, i64 = 0;
  for (const SafetensorsTensor& t : f.tensors()) {
    f32 += t.dtype == StDType::F32;
    i64 += t.dtype == StDType::I64;
  }
  CHECK(f32 == 103);
  CHECK(i64 == 1);

  const SafetensorsTensor& emb = f.require("embeddings.word_embeddings.weight", StDType::F32,
                                           std::vector<int64_t>{30522, 384});
  std::vector<float> w(static_cast<std::size_t>(emb.elements()));
  REQUIRE(emb.data.size() == w.size() * 4);
  std::memcpy(w.data(), emb.data.data(), emb.data.size());
  CHECK(std::all_of(w.begin(), w.end(),
                    [](float x) { return std::isfinite(x) && std::fabs(x) < 2; }));
  // Row 101 ([CLS]) against numpy reading the same file.
  CHECK(w[101 * 384 + 0] == Approx(-0.0176194f).margin(1e-7));
  CHECK(w[101 * 384 + 2] == Approx(0.04710554f).margin(1e-7));

  const SafetensorsTensor& pos =
      f.require("embeddings.position_ids", StDType::I64, std::vector<int64_t>{1, 512});
  std::vector<int64_t> ids(512);
  std::memcpy(ids.data(), pos.data.data(), pos.data.size());
  for (int64_t i = 0; i < 512; ++i) CHECK(ids[static_cast<std::size_t>(i)] == i);
  CHECK(f.find("encoder.layer.5.output.LayerNorm.weight") != nullptr);
  CHECK(f.find("encoder.layer.6.output.LayerNorm.weight") == nullptr);
}
