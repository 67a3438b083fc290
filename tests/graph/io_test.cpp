// io.jsonl_source and io.jsonl_sink: input checking, crash-safe appends, resume.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "stages/io/jsonl_sink.h"
#include "stages/io/jsonl_source.h"

using namespace vsynth;
namespace fs = std::filesystem;

namespace {

fs::path temp_file(const std::string& name, const std::string& content) {
  const fs::path dir = fs::path(VSYNTH_BINARY_DIR) / "io_test";
  fs::create_directories(dir);
  const fs::path p = dir / name;
  std::ofstream(p, std::ios::binary) << content;
  return p;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

graph::Item item(const std::string& id) {
  return graph::Item({id, {{"id", id}}}, 0);
}

}  // namespace

TEST_CASE("jsonl source: reads ids from id or task_id, skips blank lines") {
  auto p = temp_file("ok.jsonl",
                     "{\"id\": \"a\"}\n\n{\"task_id\": \"HumanEval/0\", \"prompt\": \"x\"}\r\n");
  stages::io::JsonlSource src(p.string());
  REQUIRE(src.total() == 2u);
  CHECK(src.next()->id == "a");
  auto t = src.next();
  CHECK(t->id == "HumanEval/0");
  CHECK(t->data["prompt"] == "x");
  CHECK_FALSE(src.next().has_value());
}

TEST_CASE("jsonl source: every bad line is reported with file:line") {
  auto p = temp_file(
      "bad.jsonl", "{\"id\": \"a\"}\nnot json\n[1,2]\n{\"x\": 1}\n{\"id\": \"a\"}\n{\"id\": 7}\n");
  try {
    stages::io::JsonlSource src(p.string());
    FAIL("expected an error");
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    CHECK(msg.find("5 bad line(s)") != std::string::npos);
    CHECK(msg.find("bad.jsonl:2: not a JSON object") != std::string::npos);
    CHECK(msg.find("bad.jsonl:3: not a JSON object") != std::string::npos);
    CHECK(msg.find("bad.jsonl:4: task has no non-empty string `id`") != std::string::npos);
    CHECK(msg.find("bad.jsonl:5: task id `a` already used on line 1") != std::string::npos);
    CHECK(msg.find("bad.jsonl:6: task has no non-empty string `id`") != std::string::npos);
  }
}

TEST_CASE("jsonl sink: appends one record per item, refuses to clobber an existing output") {
  auto p = temp_file("out1.jsonl", "");
  fs::remove(p);
  {
    stages::io::JsonlSink sink({p.string(), true, false, false});
    auto a = item("a"), b = item("b");
    sink.write(a);
    sink.write(b);
  }
  CHECK(slurp(p).find("\"id\":\"a\"") != std::string::npos);
  const std::string written = slurp(p);
  CHECK(std::count(written.begin(), written.end(), '\n') == 2);
  try {
    stages::io::JsonlSink again({p.string(), true, false, false});
    FAIL("expected refusal");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find(
              "already holds 2 record(s); pass --resume to continue it or --overwrite") !=
          std::string::npos);
  }
  stages::io::JsonlSink over({p.string(), true, false, true});
  CHECK(fs::file_size(p) == 0);
}

TEST_CASE("jsonl sink resume: finished ids are known, a torn last record is cut off") {
  const std::string good = "{\"id\":\"a\",\"status\":\"x\"}\n{\"id\":\"b\",\"status\":\"x\"}\n";
  auto p = temp_file("torn.jsonl", good + "{\"id\":\"c\",\"sta");
  stages::io::JsonlSink sink({p.string(), true, true, false});
  CHECK(sink.contains("a"));
  CHECK(sink.contains("b"));
  CHECK_FALSE(sink.contains("c"));
  CHECK(sink.already_done() == 2);
  CHECK(sink.repaired_bytes() == 14);
  CHECK(slurp(p) == good);
  auto c = item("c");
  sink.write(c);
  CHECK(slurp(p).substr(good.size()).rfind("{\"attempts\"", 0) == 0);
}

TEST_CASE("jsonl sink resume: a complete last line without its newline is also torn") {
  auto p = temp_file("nonl.jsonl", "{\"id\":\"a\"}\n{\"id\":\"b\"}");
  stages::io::JsonlSink sink({p.string(), true, true, false});
  CHECK(sink.contains("a"));
  CHECK_FALSE(sink.contains("b"));  // b's write may not have finished: it is redone
  CHECK(slurp(p) == "{\"id\":\"a\"}\n");
}

TEST_CASE("jsonl sink resume: garbage before the last line is refused and left untouched") {
  const std::string content = "{\"id\":\"a\"}\ngarbage\n{\"id\":\"b\"}\n";
  auto p = temp_file("garbage.jsonl", content);
  try {
    stages::io::JsonlSink sink({p.string(), true, true, false});
    FAIL("expected refusal");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("garbage.jsonl:2: not a result record") != std::string::npos);
  }
  CHECK(slurp(p) == content);
}
