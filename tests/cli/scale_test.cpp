// Sharding and merging, in process: which shard owns a task (stable, by file), a sharded
// source hands out exactly its tasks, and the merge of parts keeps every task once, whole.
#include <sys/file.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "stages/io/jsonl_source.h"
#include "stages/io/shard.h"
#include "tools/vsynth/scale/parts.h"

using namespace vsynth;
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::path(VSYNTH_BINARY_DIR) / "scale_test" / std::to_string(::getpid()) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
}

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

// 40 tasks over 10 files, 4 tasks per file.
fs::path write_tasks(const fs::path& dir) {
  const fs::path p = dir / "tasks.jsonl";
  std::ofstream f(p);
  for (int i = 0; i < 40; ++i) {
    f << nlohmann::json{{"id", "t" + std::to_string(i)},
                        {"path", "src/f" + std::to_string(i % 10) + ".py"},
                        {"source", "x = 1\n"}}
             .dump()
      << "\n";
  }
  return p;
}

std::vector<std::string> drain(stages::io::JsonlSource& s) {
  std::vector<std::string> ids;
  while (auto t = s.next()) ids.push_back(t->id);
  return ids;
}

std::vector<std::string> ids_of(const fs::path& results) {
  std::vector<std::string> ids;
  std::ifstream f(results);
  for (std::string line; std::getline(f, line);) {
    ids.push_back(nlohmann::json::parse(line)["id"].get<std::string>());
  }
  return ids;
}

std::string record(const std::string& id, const std::string& status) {
  return nlohmann::json{{"id", id}, {"status", status}}.dump() + "\n";
}

}  // namespace

TEST_CASE("shard specs: I/N parsed, anything else refused with the form expected") {
  std::string error;
  auto s = stages::io::parse_shard("2/5", error);
  REQUIRE(s);
  CHECK(s->index == 2);
  CHECK(s->count == 5);
  for (const char* bad : {"5/5", "1", "-1/4", "a/b", "1/0", "1/4x", "/4", "1/"}) {
    INFO(bad);
    error.clear();
    CHECK_FALSE(stages::io::parse_shard(bad, error));
    CHECK(error.find("expected I/N") != std::string::npos);
  }
  CHECK(stages::io::parse_shard_key("file") == stages::io::ShardKey::File);
  CHECK(stages::io::parse_shard_key("id") == stages::io::ShardKey::Id);
  CHECK_FALSE(stages::io::parse_shard_key("path"));
}

TEST_CASE("shard_of is stable across builds and spreads keys evenly") {
  // Fixed values: a job's ranks may run different builds; the split must not change.
  CHECK(stages::io::shard_of("src/f0.py", 1) == 0);
  const uint32_t a = stages::io::shard_of("src/f0.py", 7);
  CHECK(a == stages::io::shard_of(std::string("src/f0.py"), 7));
  std::vector<int> counts(4);
  for (int i = 0; i < 4000; ++i) ++counts[stages::io::shard_of("file" + std::to_string(i), 4)];
  for (int c : counts) CHECK((c > 850 && c < 1150));
}

TEST_CASE("a sharded source hands out its shard only, and the shards partition the input") {
  const fs::path dir = fresh_dir("partition");
  const fs::path tasks = write_tasks(dir);
  std::set<std::string> seen;
  std::map<std::string, uint32_t> file_shard;
  for (uint32_t k = 0; k < 3; ++k) {
    stages::io::SourceOptions o;
    o.path = tasks.string();
    o.shard = {k, 3, stages::io::ShardKey::File};
    stages::io::JsonlSource source(o);
    const auto ids = drain(source);
    CHECK(source.total() == ids.size());
    for (const auto& id : ids) CHECK(seen.insert(id).second);  // no task in two shards
    // assignment() agrees with what was handed out, and one file's tasks share a shard.
    for (const auto& t : source.assignment()) {
      const int i = std::stoi(std::string(t.id.substr(1)));
      const std::string file = "src/f" + std::to_string(i % 10) + ".py";
      auto [it, fresh] = file_shard.emplace(file, t.shard);
      CHECK(it->second == t.shard);
      const bool handed = std::find(ids.begin(), ids.end(), t.id) != ids.end();
      CHECK(handed == (t.shard == k));
    }
  }
  CHECK(seen.size() == 40);
}

TEST_CASE("sharding by id splits one file's tasks, and a task without a path goes by its id") {
  const fs::path dir = fresh_dir("by_id");
  const fs::path tasks = dir / "tasks.jsonl";
  write_file(tasks,
             "{\"id\":\"a\",\"path\":\"one.py\"}\n{\"id\":\"b\",\"path\":\"one.py\"}\n"
             "{\"id\":\"c\",\"path\":\"one.py\"}\n{\"id\":\"d\",\"path\":\"one.py\"}\n"
             "{\"id\":\"e\"}\n");
  stages::io::SourceOptions o;
  o.path = tasks.string();
  o.shard = {0, 2, stages::io::ShardKey::Id};
  stages::io::JsonlSource source(o);
  std::set<uint32_t> shards;
  for (const auto& t : source.assignment()) {
    CHECK(t.shard == stages::io::shard_of(t.id, 2));
    if (t.id != "e") shards.insert(t.shard);
  }
  CHECK(shards.size() == 2);  // a, b, c, d hash apart by id
}

TEST_CASE("merge: parts and the earlier output become one file, each id once, parts winning") {
  const fs::path dir = fresh_dir("merge");
  const std::string out = (dir / "out.jsonl").string();
  write_file(out, record("a", "old") + record("b", "old"));
  write_file(cli::part_path(out, 0), record("b", "new") + record("c", "new"));
  write_file(cli::part_path(out, 1), record("d", "new") + record("c", "dup"));
  const auto parts = cli::find_parts(out);
  REQUIRE(parts.size() == 2);
  CHECK(parts[1].rank == 1);

  cli::MergeOptions m;
  m.output = out;
  for (const auto& p : parts) m.parts.push_back(p.path);
  const cli::MergeResult r = cli::merge_results(m);
  CHECK(r.records == 4);
  CHECK(r.duplicates == 2);  // b (the part's wins over the output's), c (rank 0's wins)
  CHECK(ids_of(out) == std::vector<std::string>{"a", "b", "c", "d"});
  const std::string text = read_file(out);
  CHECK(text.find(R"("status":"old")") != std::string::npos);  // a
  CHECK(text.find(R"("id":"b","status":"new")") != std::string::npos);
  CHECK(text.find("dup") == std::string::npos);
  CHECK_FALSE(fs::exists(cli::part_path(out, 0)));  // merged: the parts are gone
  CHECK(cli::find_parts(out).empty());
}

TEST_CASE("merge in input order: a torn last line is no record, a foreign line stops it") {
  const fs::path dir = fresh_dir("order");
  const std::string out = (dir / "out.jsonl").string();
  write_file(cli::part_path(out, 0), record("c", "x") + record("a", "x") + "{\"id\":\"e\",\"st");
  write_file(cli::part_path(out, 1), record("b", "x"));
  cli::MergeOptions m;
  m.output = out;
  m.parts = {cli::part_path(out, 0), cli::part_path(out, 1)};
  m.order = {"a", "b", "c", "d", "e"};
  m.remove_parts = false;
  CHECK(cli::merge_results(m).records == 3);
  CHECK(ids_of(out) == std::vector<std::string>{"a", "b", "c"});
  CHECK(cli::record_ids(m.parts[0]) == std::set<std::string, std::less<>>{"a", "c"});

  write_file(m.parts[1], "not json\n" + record("b", "x"));
  const std::string before = read_file(out);
  CHECK_THROWS_WITH(cli::merge_results(m), Catch::Contains(m.parts[1] + ":1: not a result record"));
  CHECK(read_file(out) == before);  // nothing changed
}

TEST_CASE("merge refuses a part a run still writes, and keeps everything as it was") {
  const fs::path dir = fresh_dir("locked");
  const std::string out = (dir / "out.jsonl").string();
  const std::string part = cli::part_path(out, 0);
  write_file(part, record("a", "x"));
  const int fd = ::open(part.c_str(), O_RDONLY);
  REQUIRE(::flock(fd, LOCK_EX) == 0);  // as a running sink holds it
  cli::MergeOptions m;
  m.output = out;
  m.parts = {part};
  CHECK_THROWS_AS(cli::merge_results(m), cli::MergeIoError);
  CHECK_THROWS_WITH(cli::merge_results(m), Catch::Contains("still being written"));
  ::close(fd);
  CHECK(fs::exists(part));
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("an earlier job's files are refused without --resume or --overwrite") {
  const fs::path dir = fresh_dir("earlier");
  const std::string out = (dir / "out.jsonl").string();
  CHECK(cli::check_earlier_job(out, 2, false, false).empty());
  write_file(cli::part_path(out, 3), record("a", "x"));
  CHECK_THAT(cli::check_earlier_job(out, 2, false, false), Catch::Contains("more ranks"));
  CHECK(cli::check_earlier_job(out, 4, false, false).empty());
  write_file(out, record("z", "x"));
  CHECK_THAT(cli::check_earlier_job(out, 4, false, false), Catch::Contains("--resume"));
  CHECK(cli::check_earlier_job(out, 4, true, false).empty());
  CHECK(cli::check_earlier_job(out, 4, false, true).empty());
}
