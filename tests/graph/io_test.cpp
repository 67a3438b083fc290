// io.jsonl_source and io.jsonl_sink: input checking (encoding, JSON, ids, size limits), crash-
// safe appends, resume, one writer per output, and a failed write leaving whole records only.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "graph/pipeline.h"
#include "stages/io/jsonl_sink.h"
#include "stages/io/jsonl_source.h"
#include "stages/io/task_line.h"
#include "tests/graph/test_kinds.h"

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
    // What is wrong and at which byte: `not json` is a bad literal from its first byte on.
    CHECK(msg.find("bad.jsonl:2:2: not valid JSON: syntax error while parsing value - invalid "
                   "literal") != std::string::npos);
    CHECK(msg.find("bad.jsonl:3: not a JSON object but an array") != std::string::npos);
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

// --- the input: what is wrong with a line, and where ---

namespace {

std::string source_error(const fs::path& p, stages::io::SourceLimits limits = {}) {
  try {
    stages::io::JsonlSource src({p.string(), limits});
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("jsonl source: invalid UTF-8 and NUL bytes are named with line, column and offset") {
  // Line 2: 0xFF at column 12 (file byte 22, from 0); line 3: a NUL at column 9; line 4: a 3-byte
  // character cut off by its second byte; line 5: an overlong '/' (0xC0 0xAF).
  const std::string l1 = "{\"id\":\"a\"}\n";
  const std::string content = l1 + "{\"id\":\"b\",\"\xff\":1}\n" +
                              std::string("{\"id\":\"c\0\"}\n", 12) +
                              "{\"id\":\"d\xe2\x28\xa1\"}\n" + "{\"id\":\"e\xc0\xaf\"}\n";
  const std::string msg = source_error(temp_file("enc.jsonl", content));
  INFO(msg);
  CHECK(msg.find("4 bad line(s)") != std::string::npos);
  CHECK(msg.find("enc.jsonl:2:12: invalid UTF-8: byte 0xFF cannot start a character (byte "
                 "offset 22 in the file)") != std::string::npos);
  CHECK(msg.find("enc.jsonl:3:9: a raw NUL byte") != std::string::npos);
  CHECK(msg.find("enc.jsonl:4:10: invalid UTF-8: byte 0x28 where the 3-byte character") !=
        std::string::npos);
  CHECK(msg.find("enc.jsonl:5:9: invalid UTF-8: overlong 2-byte encoding of U+002F") !=
        std::string::npos);
  CHECK(msg.find("not a JSON object") == std::string::npos);
}

TEST_CASE("utf-8 check: valid text passes, surrogates and code points past U+10FFFF do not") {
  using stages::io::find_encoding_error;
  CHECK_FALSE(find_encoding_error("plain ascii, caf\xc3\xa9, \xe2\x82\xac, \xf0\x9f\x98\x80"));
  auto sur = find_encoding_error("ab\xed\xa0\x80");
  REQUIRE(sur);
  CHECK(sur->at == 2);
  CHECK(sur->what.find("U+D800 is a UTF-16 surrogate") != std::string::npos);
  auto big = find_encoding_error("\xf4\x90\x80\x80");
  REQUIRE(big);
  CHECK(big->what.find("past U+10FFFF") != std::string::npos);
  auto cut = find_encoding_error("x\xe2\x82");
  REQUIRE(cut);
  CHECK(cut->at == 1);
  CHECK(cut->what.find("cut short") != std::string::npos);
}

TEST_CASE("jsonl source: a directory given as the input is named as one") {
  const fs::path dir = fs::path(VSYNTH_BINARY_DIR) / "io_test" / "tasks_dir";
  fs::create_directories(dir);
  const std::string msg = source_error(dir);
  CHECK(msg.find("input `" + dir.string() + "` is a directory, not a file of tasks") !=
        std::string::npos);
}

// --- the input: size limits fail one task, never the run ---

TEST_CASE("id scanner: finds the top-level id of an object fed in any pieces") {
  const std::string text =
      R"({"nested": {"id": "inner"}, "list": [{"id": "x"}], "big": "a\"id\": \"no\"",)"
      R"( "n": 1, "task_id": "t-\u0041", "id": "outer\\1"})";
  for (std::size_t piece : {std::size_t{1}, std::size_t{3}, std::size_t{7}, text.size()}) {
    stages::io::IdScanner s;
    for (std::size_t i = 0; i < text.size(); i += piece) s.feed(text.substr(i, piece));
    INFO(piece);
    CHECK(s.id() == std::optional<std::string>("outer\\1"));
  }
  stages::io::IdScanner only_task_id;
  only_task_id.feed(R"({"id": 7, "task_id": "t-\u0041"})");
  CHECK(only_task_id.id() == std::optional<std::string>("t-A"));
  stages::io::IdScanner none;
  none.feed(R"({"x": {"id": "inner"}})");
  CHECK_FALSE(none.id());
}

TEST_CASE("line reader: a line past the limit is scanned, not stored") {
  const std::string big = "{\"source\": \"" + std::string(1 << 20, 'x') + "\", \"id\": \"big\"}";
  auto p = temp_file("lines.jsonl", "{\"id\":\"a\"}\n" + big + "\n{\"id\":\"c\"}");
  const int fd = ::open(p.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  stages::io::LineReader reader(fd);
  stages::io::Line line;
  REQUIRE(reader.next(4096, line));
  CHECK(line.text == "{\"id\":\"a\"}");
  REQUIRE(reader.next(4096, line));
  CHECK(line.over);
  CHECK(line.offset == 11);
  CHECK(line.length == big.size());
  CHECK(line.text.capacity() < 64 * 1024);  // never grew toward the line's megabyte
  CHECK(line.scanner.id() == std::optional<std::string>("big"));
  REQUIRE(reader.next(4096, line));  // the last line has no '\n'
  CHECK(line.text == "{\"id\":\"c\"}");
  CHECK_FALSE(reader.next(4096, line));
  ::close(fd);
}

TEST_CASE("jsonl source: a task over a limit is refused with the limit, its size and the fix") {
  const std::string files3 =
      R"([{"path":"a.py","source":"x"},{"path":"b.py","source":"y"},{"path":"c.py","source":"z"}])";
  const std::string long_line = "{\"id\":\"long\",\"pad\":\"" + std::string(300, 'p') + "\"}";
  const std::string content = "{\"id\":\"ok\",\"source\":\"short\"}\n"  // 1
                              + long_line +
                              "\n"  // 2: line
                              "{\"id\":\"bigsrc\",\"source\":\"" +
                              std::string(120, 's') +
                              "\"}\n"  // 3: /source
                              "{\"id\":\"many\",\"files\":" +
                              files3 +
                              "}\n"  // 4: count
                              "{\"id\":\"bigfile\",\"files\":[{\"path\":\"big.py\",\"source\":\"" +
                              std::string(150, 'f') +
                              "\"}]}\n"               // 5: file
                              "{\"id\":\"last\"}\n";  // 6
  auto p = temp_file("limits.jsonl", content);
  stages::io::SourceLimits lim;
  lim.task_bytes = 256;
  lim.file_bytes = 100;
  lim.files = 2;
  stages::io::JsonlSource src({p.string(), lim});
  REQUIRE(src.total() == 6u);
  std::map<std::string, std::string> refused;
  std::vector<std::string> ids;
  while (auto t = src.next()) {
    ids.push_back(t->id);
    if (!t->refused.empty()) refused[t->id] = t->refused;
  }
  CHECK(ids == std::vector<std::string>{"ok", "long", "bigsrc", "many", "bigfile", "last"});
  REQUIRE(refused.size() == 4);
  CHECK(refused["long"] ==
        "task is " + std::to_string(long_line.size()) +
            " bytes, over the input limit max_task_bytes = 256 bytes; raise it with "
            "`vsynth run --max-task-bytes N` or the source's `max_task_bytes` parameter (line 2 of "
            "`" +
            p.string() + "`)");
  CHECK(refused["bigsrc"].rfind("file /source is 120 bytes, over the input limit "
                                "max_file_bytes = 100 bytes; raise it with `vsynth run "
                                "--max-file-bytes N`",
                                0) == 0);
  CHECK(refused["many"].rfind("task has 3 files at /files, over the input limit max_files = 2; "
                              "raise it with `vsynth run --max-files N`",
                              0) == 0);
  CHECK(refused["bigfile"].rfind("file /files/0/source (`big.py`) is 150 bytes, over the input "
                                 "limit max_file_bytes = 100 bytes",
                                 0) == 0);
}

TEST_CASE("jsonl source: a task nested deeper than 64 levels is refused, never parsed") {
  // 100,000 levels (a reader that recursed over it crashed): that task fails, the others run.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::string at64 = std::string(63, '[') + std::string(63, ']');  // 64 with the object
  auto p = temp_file("deep.jsonl", "{\"id\":\"a\"}\n{\"id\":\"deep\",\"x\":" + deep +
                                       "}\n{\"id\":\"ok64\",\"x\":" + at64 +
                                       "}\n{\"id\":\"s\",\"x\":\"[[[[\"}\n");
  stages::io::JsonlSource src(p.string());
  std::map<std::string, std::string> refused;
  std::vector<std::string> ids;
  while (auto t = src.next()) {
    ids.push_back(t->id);
    if (!t->refused.empty()) refused[t->id] = t->refused;
  }
  CHECK(ids == std::vector<std::string>{"a", "deep", "ok64", "s"});
  REQUIRE(refused.size() == 1);
  CHECK(refused["deep"].rfind("task nests arrays and objects 100001 levels deep, over the limit "
                              "of 64; refused before parsing (line 2 of",
                              0) == 0);
  // Without an id it is a bad line of the file, named.
  const std::string msg = source_error(temp_file("deep_noid.jsonl", "{\"x\":" + deep + "}\n"), {});
  CHECK(msg.find("deep_noid.jsonl:1: task nests arrays and objects 100001 levels deep") !=
        std::string::npos);
}

TEST_CASE("jsonl source: a line over the limit with no id is a bad line, not a silent skip") {
  const std::string msg = source_error(
      temp_file("noid.jsonl", "{\"x\":\"" + std::string(100, 'x') + "\"}\n"), {64, 64, 10});
  CHECK(msg.find("noid.jsonl:1: 108 bytes, over max_task_bytes (64 bytes), and no string `id`") !=
        std::string::npos);
}

TEST_CASE("jsonl source: tasks are read back as the run asks, and a changed file is caught") {
  auto p = temp_file("reread.jsonl", "{\"id\":\"a\",\"v\":1}\n{\"id\":\"b\",\"v\":2}\n");
  stages::io::JsonlSource src(p.string());
  CHECK(src.next()->data["v"] == 1);
  // Same length, other id: the second line no longer holds what was checked.
  std::ofstream(p, std::ios::binary) << "{\"id\":\"a\",\"v\":1}\n{\"id\":\"X\",\"v\":2}\n";
  try {
    src.next();
    FAIL("expected an error");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("reread.jsonl:2: the input file changed while the run read "
                                     "it (this line held task `b`") != std::string::npos);
  }
}

TEST_CASE("jsonl source: a pipe is read once, each task kept as text") {
  const fs::path fifo = fs::path(VSYNTH_BINARY_DIR) / "io_test" / "tasks.fifo";
  fs::create_directories(fifo.parent_path());
  fs::remove(fifo);
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::thread writer([&] { std::ofstream(fifo) << "{\"id\":\"p1\",\"v\":1}\n{\"id\":\"p2\"}\n"; });
  stages::io::JsonlSource src(fifo.string());
  writer.join();
  REQUIRE(src.total() == 2u);
  CHECK(src.next()->data["v"] == 1);
  CHECK(src.next()->id == "p2");
  CHECK_FALSE(src.next());
}

TEST_CASE("a refused task is written as failed and the other tasks run, in order too") {
  auto reg = test::full_registry();
  auto p = temp_file("refuse_run.jsonl", "{\"id\":\"t0\"}\n{\"id\":\"t1\",\"pad\":\"" +
                                             std::string(200, 'p') + "\"}\n{\"id\":\"t2\"}\n");
  for (const char* ordered : {"false", "true"}) {
    graph::Pipeline pipe(test::load_text(std::string("stages:\n  a: { use: test.produce }\n"
                                                     "edges: [ a -> out ]\nordered: ") +
                                             ordered + "\n",
                                         reg),
                         reg);
    stages::io::JsonlSource src({p.string(), {128, 128, 10}});
    test::VectorSink sink;
    graph::RunControl control;
    const graph::RunResult r = pipe.run(src, sink, control);
    INFO("ordered: " << ordered);
    CHECK(r.fatal.empty());
    CHECK(r.written == 3);
    CHECK(r.passed == 2);
    CHECK(r.errors == 1);
    REQUIRE(sink.records.size() == 3);
    for (const auto& rec : sink.records) {
      if (rec["id"] != "t1") {
        CHECK(rec["passed"] == true);
        continue;
      }
      CHECK(rec["status"] == "error");
      CHECK(rec["exit"] == "source");
      CHECK(rec["error"].get<std::string>().find("over the input limit max_task_bytes = 128 "
                                                 "bytes") != std::string::npos);
      CHECK(rec["facets"].empty());  // no stage ever saw it
    }
    CHECK(pipe.metrics()[0].processed == 2);
  }
}

// --- the output: one writer, whole records ---

TEST_CASE("jsonl sink: a second writer on the same output is refused, naming the first") {
  auto p = temp_file("locked.jsonl", "");
  fs::remove(p);
  {
    stages::io::JsonlSink first({p.string(), true, false, false});
    auto a = item("a");
    first.write(a);
    try {
      stages::io::JsonlSink second({p.string(), true, true, false});
      FAIL("expected refusal");
    } catch (const stages::io::OutputError& e) {
      const std::string msg = e.what();
      INFO(msg);
      CHECK(msg.find("output `" + p.string() + "` is in use by another run (pid " +
                     std::to_string(::getpid())) != std::string::npos);
      CHECK(msg.find("interleave") != std::string::npos);
    }
    const std::string data = slurp(p);
    CHECK(std::count(data.begin(), data.end(), '\n') == 1);  // untouched by the second
  }
  stages::io::JsonlSink after({p.string(), true, true, false});  // the lock went with `first`
  CHECK(after.contains("a"));
}

TEST_CASE("jsonl sink: the lock is held while the run reads its own output back") {
  // A POSIX record lock would be dropped by the first close() of any descriptor of the file
  // (the resume pass reads it through an ifstream); flock's is not.
  auto p = temp_file("relock.jsonl", "{\"id\":\"a\"}\n");
  stages::io::JsonlSink sink({p.string(), true, true, false});
  const int fd = ::open(p.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  CHECK(::flock(fd, LOCK_EX | LOCK_NB) == -1);
  CHECK(errno == EWOULDBLOCK);
  ::close(fd);
}

TEST_CASE("jsonl sink: a directory or an unopenable output is said plainly") {
  const fs::path dir = fs::path(VSYNTH_BINARY_DIR) / "io_test" / "out_dir";
  fs::create_directories(dir);
  try {
    stages::io::JsonlSink s({dir.string(), true, false, false});
    FAIL("expected refusal");
  } catch (const stages::io::OutputError&) {
    FAIL("a directory is a usage error, not an I/O failure");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()) == "output `" + dir.string() +
                                       "` is a directory; --output names the results file, e.g. `" +
                                       dir.string() + "/results.jsonl`");
  }
  CHECK_THROWS_AS(stages::io::JsonlSink({"/nonexistent-dir/out.jsonl", true, false, false}),
                  stages::io::OutputError);
}

TEST_CASE("jsonl sink: a failed write cuts the file back to its last whole record") {
  // In a child process: RLIMIT_FSIZE makes the write that crosses it fail part-way (EFBIG once
  // SIGXFSZ is ignored), the way a full disk does. Exit status: 0 when every check held.
  auto p = temp_file("full.jsonl", "");
  fs::remove(p);
  const rlim_t limit = 1000;  // bytes; records are ~90 bytes, so the 12th or so crosses it
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl {
      limit, limit
    };
    ::setrlimit(RLIMIT_FSIZE, &rl);
    int written = 0;
    std::string error;
    {
      stages::io::JsonlSink sink({p.string(), false, false, false});
      try {
        for (; written < 100; ++written) sink.write(item("task-" + std::to_string(written)));
      } catch (const stages::io::OutputError& e) {
        error = e.what();
      }
      if (error.find("File too large; the file is cut back to its last complete record (" +
                     std::to_string(written) + " records") == std::string::npos) {
        ::_exit(10);
      }
      try {
        sink.write(item("after"));
        ::_exit(11);  // a write after the failure must fail too
      } catch (const stages::io::OutputError&) {
      }
    }
    ::_exit(written > 0 && written < 100 ? 0 : 12);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  const std::string data = slurp(p);
  REQUIRE_FALSE(data.empty());
  CHECK(data.size() <= limit);
  CHECK(data.back() == '\n');
  std::istringstream lines(data);
  std::size_t n = 0;
  for (std::string line; std::getline(lines, line); ++n) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    REQUIRE(j.is_object());
    CHECK(j["id"] == "task-" + std::to_string(n));
  }
  CHECK(n > 0);
  stages::io::JsonlSink resumed({p.string(), true, true, false});
  CHECK(resumed.repaired_bytes() == 0);  // nothing torn was left for resume to cut
  CHECK(resumed.already_done() == n);
}
