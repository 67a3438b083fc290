// GGUF writer → reader round trips: every metadata type, every tensor type, the accessor API,
// alignment, versions, the mmap path and move semantics.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "kernels/gguf/reader.h"
#include "kernels/gguf/writer.h"
#include "tests/kernels/gguf_test_util.h"

using namespace vsynth::kernels;
using namespace vsynth::kernels::test;
using Catch::Matchers::Contains;

namespace {

// A fresh folder under the system temp dir, removed when the test ends.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    static int counter = 0;
    path = std::filesystem::temp_directory_path() /
           ("vsynth-gguf-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

TEST_CASE("gguf: every scalar metadata type round-trips", "[gguf]") {
  GgufWriter w;
  w.add("t.u8", uint8_t{200});
  w.add("t.i8", int8_t{-5});
  w.add("t.u16", uint16_t{60000});
  w.add("t.i16", int16_t{-30000});
  w.add("t.u32", uint32_t{4000000000u});
  w.add("t.i32", int32_t{-2000000000});
  w.add("t.f32", 1.5f);
  w.add("t.true", true);
  w.add("t.false", false);
  w.add("t.u64", uint64_t{(1ull << 60) + 1});
  w.add("t.i64", int64_t{-(1ll << 60)});
  w.add("t.f64", 3.141592653589793);
  w.add("t.string", "h\xc3\xa9llo");
  w.add("t.empty_string", "");
  const GgufImage img = w.build();
  const GgufFile f = GgufFile::open_from_memory(img.bytes);

  CHECK(f.version() == 3);
  CHECK(f.metadata().size() == 14);
  CHECK(f.tensors().empty());
  CHECK(f.get<uint8_t>("t.u8") == 200);
  CHECK(f.get<int8_t>("t.i8") == -5);
  CHECK(f.get<uint16_t>("t.u16") == 60000);
  CHECK(f.get<int16_t>("t.i16") == -30000);
  CHECK(f.get<uint32_t>("t.u32") == 4000000000u);
  CHECK(f.get<int32_t>("t.i32") == -2000000000);
  CHECK(f.get<float>("t.f32") == 1.5f);
  CHECK(f.get<bool>("t.true"));
  CHECK_FALSE(f.get<bool>("t.false"));
  CHECK(f.get<uint64_t>("t.u64") == (1ull << 60) + 1);
  CHECK(f.get<int64_t>("t.i64") == -(1ll << 60));
  CHECK(f.get<double>("t.f64") == 3.141592653589793);
  CHECK(f.get_string("t.string") == "h\xc3\xa9llo");
  CHECK(f.get_string("t.empty_string").empty());

  // File order and offsets are kept.
  CHECK(f.metadata()[0].key == "t.u8");
  CHECK(f.metadata()[13].key == "t.empty_string");
  CHECK(f.metadata()[4].value.type() == GgufType::U32);
  CHECK(f.metadata()[4].value.offset() == img.layout.kvs[4].value_offset);
}

TEST_CASE("gguf: arrays of every element type round-trip, nested arrays too", "[gguf]") {
  GgufWriter w;
  w.add_array("a.u8", std::vector<uint8_t>{0, 1, 255});
  w.add_array("a.i8", std::vector<int8_t>{-128, 0, 127});
  w.add_array("a.u16", std::vector<uint16_t>{1, 65535});
  w.add_array("a.i16", std::vector<int16_t>{-32768, 32767});
  w.add_array("a.u32", std::vector<uint32_t>{7, 4294967295u});
  w.add_array("a.i32", std::vector<int32_t>{-1, 2, -3});
  w.add_array("a.f32", std::vector<float>{0.25f, -0.0f, 1e30f});
  w.add_array("a.bool", std::vector<bool>{true, false, true});
  w.add_array("a.u64", std::vector<uint64_t>{std::numeric_limits<uint64_t>::max()});
  w.add_array("a.i64", std::vector<int64_t>{std::numeric_limits<int64_t>::min(), 5});
  w.add_array("a.f64", std::vector<double>{1e-300, 2.5});
  w.add_array("a.string", std::vector<std::string>{"<s>", "", "\xe2\x96\x81the"});
  w.add_value("a.empty", GgufMetaValue::empty_array(GgufType::F32));
  const std::vector<GgufMetaValue> rows = {GgufMetaValue::array(std::vector<int32_t>{1, 2}),
                                           GgufMetaValue::array(std::vector<int32_t>{3})};
  w.add_value("a.nested", GgufMetaValue::array_of_arrays(rows));
  const std::vector<GgufMetaValue> inner = {
      GgufMetaValue::array(std::vector<std::string>{"x", "yz"})};
  const std::vector<GgufMetaValue> outer = {GgufMetaValue::array_of_arrays(inner),
                                            GgufMetaValue::empty_array(GgufType::Array)};
  w.add_value("a.nested2", GgufMetaValue::array_of_arrays(outer));
  const GgufImage img = w.build();
  const GgufFile f = GgufFile::open_from_memory(img.bytes);

  CHECK(f.get_array<uint8_t>("a.u8") == std::vector<uint8_t>{0, 1, 255});
  CHECK(f.get_array<int8_t>("a.i8") == std::vector<int8_t>{-128, 0, 127});
  CHECK(f.get_array<uint16_t>("a.u16") == std::vector<uint16_t>{1, 65535});
  CHECK(f.get_array<int16_t>("a.i16") == std::vector<int16_t>{-32768, 32767});
  CHECK(f.get_array<uint32_t>("a.u32") == std::vector<uint32_t>{7, 4294967295u});
  CHECK(f.get_array<int32_t>("a.i32") == std::vector<int32_t>{-1, 2, -3});
  const auto f32 = f.get_array<float>("a.f32");
  REQUIRE(f32.size() == 3);
  CHECK(f32[0] == 0.25f);
  CHECK(std::signbit(f32[1]));
  CHECK(f32[2] == 1e30f);
  CHECK(f.get_array<bool>("a.bool") == std::vector<bool>{true, false, true});
  CHECK(f.get_array<uint64_t>("a.u64") ==
        std::vector<uint64_t>{std::numeric_limits<uint64_t>::max()});
  CHECK(f.get_array<int64_t>("a.i64") ==
        std::vector<int64_t>{std::numeric_limits<int64_t>::min(), 5});
  CHECK(f.get_array<double>("a.f64") == std::vector<double>{1e-300, 2.5});
  const auto strings = f.get_string_array("a.string");
  REQUIRE(strings.size() == 3);
  CHECK(strings[0] == "<s>");
  CHECK(strings[1].empty());
  CHECK(strings[2] == "\xe2\x96\x81the");
  // String elements are views into the file, not copies.
  CHECK(reinterpret_cast<const std::byte*>(strings[0].data()) > img.bytes.data());

  const GgufValue& empty = f.value("a.empty");
  CHECK(empty.is_array());
  CHECK(empty.element_type() == GgufType::F32);
  CHECK(empty.size() == 0);
  CHECK(f.get_array<float>("a.empty").empty());

  const GgufValue& nested = f.value("a.nested");
  REQUIRE(nested.element_type() == GgufType::Array);
  REQUIRE(nested.size() == 2);
  CHECK(nested.arrays()[0].to_vector<int32_t>() == std::vector<int32_t>{1, 2});
  CHECK(nested.arrays()[1].to_vector<int32_t>() == std::vector<int32_t>{3});
  CHECK(nested.arrays()[1].at<int32_t>(0) == 3);

  const GgufValue& nested2 = f.value("a.nested2");
  REQUIRE(nested2.size() == 2);
  const GgufValue& level1 = nested2.arrays()[0];
  REQUIRE(level1.element_type() == GgufType::Array);
  const auto xs = level1.arrays()[0].strings();
  REQUIRE(xs.size() == 2);
  CHECK(xs[1] == "yz");
  CHECK(nested2.arrays()[1].element_type() == GgufType::Array);
  CHECK(nested2.arrays()[1].size() == 0);

  // Element access is checked.
  CHECK(f.value("a.i32").at<int32_t>(2) == -3);
  CHECK_THROWS_WITH(f.value("a.i32").at<int32_t>(3),
                    Contains("metadata key 'a.i32': index 3 out of range (array has 3 elements)"));
}

TEST_CASE("gguf: accessors name the key and both types when they do not match", "[gguf]") {
  const GgufImage img = small_image();
  const GgufFile f = GgufFile::open_from_memory(img.bytes, "tiny.gguf");

  CHECK(f.architecture() == "tiny");
  CHECK(f.arch_key("block_count") == "tiny.block_count");
  CHECK(f.get<uint32_t>(f.arch_key("block_count")) == 2);
  CHECK(f.has("general.name"));
  CHECK_FALSE(f.has("general.nope"));
  CHECK(f.find("general.nope") == nullptr);

  CHECK_THROWS_WITH(f.get<int32_t>("tiny.block_count"),
                    Contains("gguf: tiny.gguf: metadata key 'tiny.block_count' is u32 (value at "
                             "offset " +
                             std::to_string(img.layout.kvs[2].value_offset) + "), expected i32"));
  CHECK_THROWS_WITH(f.get_string("tiny.block_count"),
                    Contains("is u32") && Contains("expected string"));
  CHECK_THROWS_WITH(f.get<uint32_t>("general.nope"),
                    Contains("gguf: tiny.gguf: metadata key 'general.nope' not found"));
  CHECK_THROWS_WITH(
      f.get_array<int32_t>("tokenizer.ggml.scores"),
      Contains("'tokenizer.ggml.scores' is array of f32") && Contains("expected array of i32"));
  CHECK_THROWS_WITH(f.get_string_array("general.name"),
                    Contains("'general.name' is string") && Contains("expected array of string"));
  CHECK_THROWS_WITH(f.get<float>("tokenizer.ggml.scores"), Contains("expected f32"));
  CHECK_THROWS_AS(f.value("tiny.flag").size(), GgufError);

  CHECK(f.get_optional<uint32_t>("tiny.block_count") == 2u);
  CHECK_FALSE(f.get_optional<uint32_t>("tiny.absent").has_value());
  CHECK_THROWS_WITH(f.get_optional<uint64_t>("tiny.block_count"), Contains("expected u64"));
  CHECK(f.get_or<uint32_t>("tiny.absent", 7u) == 7u);
  CHECK(f.get_or<bool>("tiny.flag", false));
  CHECK(f.get_string_optional("general.name") == "tiny test model");
  CHECK_FALSE(f.get_string_optional("general.absent").has_value());
  CHECK(f.get_array<float>("tokenizer.ggml.scores") == std::vector<float>{0.5f, -1.0f, 2.0f});
}

TEST_CASE("gguf: tensors of every dtype round-trip as views into the file", "[gguf]") {
  GgufWriter w;
  struct Expect {
    std::string name;
    DType type;
    std::vector<uint64_t> ne;
    std::vector<std::byte> data;
  };
  std::vector<Expect> expected;
  uint32_t seed = 10;
  for (uint32_t id = 0; id < 64; ++id) {
    const auto info = dtype_info(id);
    if (!info) continue;
    // Two rows of two blocks, a third dimension of 1 and a fourth of 2 for variety.
    std::vector<uint64_t> ne = {2ull * info->block_elems, 2};
    if (id % 2 == 0) ne = {2ull * info->block_elems, 2, 1, 2};
    const std::size_t bytes = 2ull * info->block_bytes * 2 * (ne.size() == 4 ? 2 : 1);
    Expect e{"t." + std::string(info->name), info->type, ne, some_bytes(bytes, seed++)};
    w.add_tensor(e.name, e.type, e.ne, e.data);
    expected.push_back(std::move(e));
  }
  REQUIRE(expected.size() == 20);
  const GgufImage img = w.build();
  const GgufFile f = GgufFile::open_from_memory(img.bytes);

  REQUIRE(f.tensors().size() == expected.size());
  CHECK(f.data_offset() == img.layout.data_section);
  CHECK(f.data_offset() % 32 == 0);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const GgufTensor& t = f.tensors()[i];
    const Expect& e = expected[i];
    INFO("tensor " << e.name);
    CHECK(t.name == e.name);
    CHECK(t.dtype() == e.type);
    CHECK(t.n_dims == e.ne.size());
    CHECK(std::vector<uint64_t>(t.dims().begin(), t.dims().end()) == e.ne);
    uint64_t n = 1;
    for (uint64_t d : e.ne) n *= d;
    CHECK(t.n_elements == n);
    CHECK(t.n_bytes == e.data.size());
    CHECK(t.row_bytes() == 2ull * t.type.block_bytes);
    CHECK(t.n_rows() == n / e.ne[0]);
    CHECK(t.file_offset == img.layout.tensors[i].data_offset);
    CHECK(t.file_offset % 32 == 0);
    CHECK(t.info_offset == img.layout.tensors[i].info_offset);
    // A view: it points into the buffer the file was opened from.
    CHECK(t.data.data() == img.bytes.data() + t.file_offset);
    CHECK(std::equal(t.data.begin(), t.data.end(), e.data.begin(), e.data.end()));
    CHECK(f.find_tensor(e.name) == &t);
  }
  CHECK(f.find_tensor("missing") == nullptr);
  CHECK_THROWS_WITH(f.tensor("missing"),
                    Contains("tensor 'missing' not found (20 tensors in the file)"));
}

TEST_CASE("gguf: a custom alignment is written, read and honoured", "[gguf]") {
  for (uint32_t align : {1u, 8u, 64u, 4096u}) {
    INFO("alignment " << align);
    GgufWriter w(align);
    w.add("general.architecture", "tiny");
    w.add_tensor("a", DType::F32, {3}, some_bytes(12, 1));
    w.add_tensor("b", DType::F16, {5}, some_bytes(10, 2));
    w.add_tensor("c", DType::Q4_0, {32}, some_bytes(18, 3));
    const GgufImage img = w.build();
    const GgufFile f = GgufFile::open_from_memory(img.bytes);
    CHECK(f.alignment() == align);
    CHECK(f.get<uint32_t>("general.alignment") == align);
    CHECK(f.data_offset() % align == 0);
    for (const GgufTensor& t : f.tensors()) CHECK(t.file_offset % align == 0);
    CHECK(f.tensor("c").data.data() == img.bytes.data() + img.layout.tensors[2].data_offset);
  }
}

TEST_CASE("gguf: version 2 files read like version 3", "[gguf]") {
  GgufWriter w = small_writer();
  w.set_version(2);
  const GgufImage img = w.build();
  const GgufFile f = GgufFile::open_from_memory(img.bytes);
  CHECK(f.version() == 2);
  CHECK(f.tensors().size() == 3);
  CHECK(f.get_string("general.name") == "tiny test model");
}

TEST_CASE("gguf: trailing padding after the last tensor is optional", "[gguf]") {
  const GgufImage img = small_image();
  REQUIRE(img.layout.data_end < img.bytes.size());  // the writer pads like llama.cpp does
  for (uint64_t n = img.layout.data_end; n <= img.bytes.size(); ++n) {
    std::vector<std::byte> prefix(img.bytes.begin(), img.bytes.begin() + static_cast<long>(n));
    const GgufFile f = GgufFile::open_from_memory(prefix);
    CHECK(f.tensors().size() == 3);
  }
}

TEST_CASE("gguf: open() maps the file, and the object moves without invalidating views", "[gguf]") {
  TempDir dir;
  const auto path = dir.path / "tiny.gguf";
  small_writer().write(path);
  GgufFile f = GgufFile::open(path);
  CHECK(f.name() == path.string());
  CHECK(f.file_size() == std::filesystem::file_size(path));
  const GgufTensor& t = f.tensor("blk.0.attn_q.weight");
  CHECK(t.data.data() == f.bytes().data() + t.file_offset);
  CHECK(std::equal(t.data.begin(), t.data.end(), some_bytes(68, 2).begin()));
  const std::string_view name_view = f.get_string("general.name");

  GgufFile moved(std::move(f));
  CHECK(moved.get_string("general.name") == "tiny test model");
  CHECK(moved.get_string("general.name").data() == name_view.data());
  CHECK(moved.tensor("output_norm.weight").n_elements == 4);
  CHECK_THROWS_WITH(moved.get<float>("general.name"),
                    Contains("gguf: " + path.string() + ": metadata key 'general.name' is string"));

  // Move-assignment releases the target's own state and takes the source's.
  const GgufImage second = small_image();
  GgufFile other = GgufFile::open_from_memory(second.bytes);
  other = std::move(moved);
  CHECK(other.name() == path.string());
  CHECK(other.tensors().size() == 3);
  CHECK(other.get<uint32_t>("tiny.block_count") == 2);
}

TEST_CASE("gguf: rewriting a file leaves readers that mapped it untouched", "[gguf]") {
  // Several test processes (and users re-exporting a model) write the same path while another
  // process has it mapped: the writer must replace the file, never truncate it in place (a
  // mapped page past the new end is SIGBUS, and a page rewritten in place is silent corruption).
  TempDir dir;
  const auto path = dir.path / "shared.gguf";
  small_writer().write(path);
  const GgufFile first = GgufFile::open(path);
  GgufWriter other;
  other.add("general.name", "another model");
  other.write(path);
  CHECK(first.get_string("general.name") == "tiny test model");
  CHECK(first.tensor("output_norm.weight").n_elements == 4);
  CHECK(GgufFile::open(path).get_string("general.name") == "another model");
  // Nothing but the file itself is left behind (no temporary siblings).
  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path)) ++entries;
  CHECK(entries == 1);
  // An unwritable destination is an error naming it, and leaves no temporary file either.
  CHECK_THROWS_WITH(other.write(dir.path / "missing-dir" / "x.gguf"), Contains("missing-dir"));
}

TEST_CASE("gguf: open() reports files it cannot map", "[gguf]") {
  TempDir dir;
  CHECK_THROWS_WITH(GgufFile::open(dir.path / "absent.gguf"),
                    Contains("absent.gguf: cannot open: No such file or directory"));
  CHECK_THROWS_WITH(GgufFile::open(dir.path), Contains("not a regular file"));
  const auto empty = dir.path / "empty.gguf";
  GgufWriter().write(empty);
  std::filesystem::resize_file(empty, 0);
  CHECK_THROWS_WITH(GgufFile::open(empty),
                    Contains("empty.gguf: file is 0 bytes; a GGUF file starts with the 4-byte "
                             "magic 'GGUF'"));
}

TEST_CASE("gguf: a file with metadata only has no data section", "[gguf]") {
  GgufWriter w;
  w.add("general.architecture", "none");
  const GgufImage img = w.build();
  const GgufFile f = GgufFile::open_from_memory(img.bytes);
  CHECK(f.tensors().empty());
  CHECK(f.data_offset() >= img.bytes.size());
}
