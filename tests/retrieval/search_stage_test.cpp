// retrieval.search and retrieval.index as pipelines run them: a helper the cursor's code does
// not name yet is found and packed into the context (with the real encoder, and lexically),
// each record is a function of its task (alone, serially twice, many in flight), a task sees
// its own version of a file and never another task's, a missing encoder degrades to BM25 and
// says so, the cache makes a second run start warm, and bad parameters fail validation at
// their file:line:col.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include <unistd.h>

#include "graph/pipeline.h"
#include "graph/spec.h"
#include "tests/graph/test_kinds.h"
#include "tests/test_skip.h"

namespace graph = vsynth::graph;
namespace fs = std::filesystem;

namespace {

// A repository: the helper the task needs sits in util/table.py among unrelated code.
const char* kTable = R"(import csv


def load_table(path):
    """Reads a CSV file into a list of rows."""
    with open(path) as f:
        return list(csv.reader(f))


def normalize_rows(rows):
    """Strips whitespace from every cell and drops the empty rows."""
    return [[cell.strip() for cell in row] for row in rows if any(c.strip() for c in row)]


def write_table(path, rows):
    with open(path, "w") as f:
        csv.writer(f).writerows(rows)
)";

const char* kGeometry = R"(import math


def distance(a, b):
    """Euclidean distance of two points."""
    return math.hypot(a[0] - b[0], a[1] - b[1])


def rotate(point, angle):
    c, s = math.cos(angle), math.sin(angle)
    return (point[0] * c - point[1] * s, point[0] * s + point[1] * c)
)";

const char* kServer = R"(class Server:
    def __init__(self, port):
        self.port = port

    def start(self):
        """Opens the listening socket."""
        return self.port
)";

// The cursor's file: `report` should clean its rows with normalize_rows, not named yet.
std::string main_source(const std::string& fn) {
  return "from util.table import load_table\n\n\ndef " + fn +
         "(path):\n    rows = load_table(path)\n    \n    return rows\n";
}

nlohmann::json task(const std::string& id, const std::string& fn, const std::string& instruction) {
  return {{"id", id},
          {"path", "app/" + fn + ".py"},
          {"source", main_source(fn)},
          {"cursor", {{"line", 6}, {"column", 5}}},
          {"instruction", instruction}};
}

struct Repo {
  fs::path root, cache;
  Repo() {
    const fs::path base =
        fs::temp_directory_path() / ("vsynth-retrieval-" + std::to_string(::getpid()) + "-" +
                                     std::to_string(reinterpret_cast<uintptr_t>(this)));
    fs::remove_all(base);
    root = base / "repo";
    cache = base / "cache";
    fs::create_directories(root / "util");
    fs::create_directories(root / "geo");
    fs::create_directories(root / ".git");
    write(root / "util" / "table.py", kTable);
    write(root / "geo" / "geometry.py", kGeometry);
    write(root / "server.py", kServer);
    write(root / ".git" / "hidden.py", "def normalize_rows_hidden():\n    return 0\n");
  }
  ~Repo() { fs::remove_all(root.parent_path()); }
  static void write(const fs::path& p, const std::string& text) {
    std::ofstream(p, std::ios::binary) << text;
  }
};

std::string pipeline(const Repo& repo, const std::string& encoder, bool context,
                     const std::string& extra = "") {
  std::string y = "pipeline: t\nresources:\n  code: { use: retrieval.index, with: { encoder: \"" +
                  encoder + "\", root: \"" + repo.root.string() + "\", cache_dir: \"" +
                  repo.cache.string() + "\" } }\nstages:\n" +
                  "  anchor: { use: ast.anchor, with: { cursor_base: one } }\n" +
                  "  retrieve: { use: retrieval.search, with: { index: code } }\n";
  if (context) {
    y += "  deps: { use: context.deps }\n"
         "  prune: { use: context.prune, with: { budget_tokens: 512, tokenizer: estimate } }\n"
         "edges:\n  - anchor -> retrieve -> deps -> prune -> out\n";
  } else {
    y += "edges:\n  - anchor -> retrieve -> out\n";
  }
  return y + extra;
}

std::map<std::string, std::string> run(const std::string& yaml,
                                       const std::vector<nlohmann::json>& tasks) {
  const graph::Registry reg = vsynth::test::full_registry();
  graph::Pipeline p(vsynth::test::load_text(yaml, reg), reg);
  vsynth::test::JsonTaskSource src(tasks, "id");
  vsynth::test::VectorSink sink;
  graph::RunControl control;
  p.run(src, sink, control);
  std::map<std::string, std::string> out;
  for (const nlohmann::json& r : sink.records) out[r["id"].get<std::string>()] = r.dump();
  return out;
}

nlohmann::json only(const std::map<std::string, std::string>& records) {
  REQUIRE(records.size() == 1);
  return nlohmann::json::parse(records.begin()->second);
}

bool has_hit(const nlohmann::json& rec, const std::string& name) {
  for (const nlohmann::json& h : rec["facets"]["retrieved"]["hits"]) {
    if (h["name"] == name) return true;
  }
  return false;
}

std::string encoder_dir() {
  return vsynth::test::default_encoder().string();
}

}  // namespace

TEST_CASE("retrieval: a helper the cursor's code does not name yet reaches the context",
          "[retrieval][stage]") {
  if (!vsynth::test::have_default_encoder()) return;
  Repo repo;
  const nlohmann::json t =
      task("t1", "report", "clean the rows: strip each cell and drop empty rows");
  // Without retrieval the helper is nowhere in the context.
  {
    const std::string yaml =
        "pipeline: t\nstages:\n  anchor: { use: ast.anchor, with: { cursor_base: one } }\n"
        "  deps: { use: context.deps }\n"
        "  prune: { use: context.prune, with: { budget_tokens: 512, tokenizer: estimate } }\n"
        "edges:\n  - anchor -> deps -> prune -> out\n";
    const nlohmann::json rec = only(run(yaml, {t}));
    CHECK(rec["facets"]["context"]["text"].get<std::string>().find("def normalize_rows") ==
          std::string::npos);
  }
  for (const std::string& encoder : {encoder_dir(), std::string("/nonexistent/encoder")}) {
    INFO("encoder " << encoder);
    const nlohmann::json rec = only(run(pipeline(repo, encoder, true), {t}));
    const nlohmann::json& r = rec["facets"]["retrieved"];
    CHECK(r["served_by"] == (encoder == encoder_dir() ? "fusion" : "lexical"));
    REQUIRE(!r["hits"].empty());
    // Among the first three (load_table, which the function names, may rank above it).
    std::size_t at = 0;
    while (at < r["hits"].size() && r["hits"][at]["name"] != "normalize_rows") ++at;
    REQUIRE(at < 3);
    const nlohmann::json& hit = r["hits"][at];
    CHECK(hit["path"] == "util/table.py");
    CHECK(hit["lines"] == nlohmann::json::array({10, 12}));
    CHECK(hit["outside_task"] == true);
    CHECK(hit["ranks"]["lexical"] == 1);  // the instruction's words are its docstring's
    CHECK_FALSE(has_hit(rec, "report"));  // never the focus itself
    CHECK_FALSE(has_hit(rec, "normalize_rows_hidden"));  // .git is not walked
    const std::string text = rec["facets"]["context"]["text"];
    CHECK(text.find("# file: util/table.py") != std::string::npos);
    CHECK(text.find("def normalize_rows(rows):") != std::string::npos);
    bool reason = false;
    for (const nlohmann::json& u : rec["facets"]["context"]["units"]) {
      reason |= u["name"] == "normalize_rows" && u["reason"] == "retr#" + std::to_string(at);
    }
    CHECK(reason);
  }
}

TEST_CASE("retrieval: a task searches its own version of a file, never another task's",
          "[retrieval][stage]") {
  if (!vsynth::test::have_default_encoder()) return;
  Repo repo;
  // t1 sends util/table.py with the helper renamed; t2 sends nothing: t2 must still see the
  // repository's version, whatever t1 sent, before it or beside it.
  std::string renamed = kTable;
  renamed.replace(renamed.find("def normalize_rows"), 18, "def tidy_rows");
  nlohmann::json t1 = task("t1", "report", "clean the rows: strip each cell and drop empty rows");
  t1["files"] = {{{"path", "util/table.py"}, {"source", renamed}}};
  const nlohmann::json t2 =
      task("t2", "summary", "clean the rows: strip each cell and drop empty rows");
  const std::map<std::string, std::string> got =
      run(pipeline(repo, encoder_dir(), false), {t1, t2});
  REQUIRE(got.size() == 2);
  const nlohmann::json r1 = nlohmann::json::parse(got.at("t1"));
  const nlohmann::json r2 = nlohmann::json::parse(got.at("t2"));
  CHECK(has_hit(r1, "tidy_rows"));
  CHECK_FALSE(has_hit(r1, "normalize_rows"));
  CHECK(has_hit(r2, "normalize_rows"));
  CHECK_FALSE(has_hit(r2, "tidy_rows"));
  // A file the task sent carries no text: context.deps shows it from the task's own file.
  for (const nlohmann::json& h : r1["facets"]["retrieved"]["hits"]) {
    if (h["path"] == "util/table.py") CHECK_FALSE(h.contains("outside_task"));
  }
}

TEST_CASE("retrieval: each record is a function of its task (alone, serially, in flight)",
          "[retrieval][stage][determinism]") {
  if (!vsynth::test::have_default_encoder()) return;
  Repo repo;
  const std::vector<std::string> asks = {"clean the rows: strip each cell and drop empty rows",
                                         "distance between two points", "start the server socket",
                                         "write the rows back to a csv file", "rotate a point"};
  std::vector<nlohmann::json> tasks;
  for (int i = 0; i < 20; ++i) {
    nlohmann::json t = task("t" + std::to_string(100 + i), "f" + std::to_string(i % 7),
                            asks[static_cast<std::size_t>(i) % asks.size()]);
    if (i % 3 == 0) {  // some send their own edited version of a repository file
      t["files"] = {{{"path", "geo/geometry.py"},
                     {"source", std::string(kGeometry) + "\n\ndef scale_" + std::to_string(i) +
                                    "(p, k):\n    return (p[0] * k, p[1] * k)\n"}}};
    }
    tasks.push_back(std::move(t));
  }
  const std::string yaml = pipeline(repo, encoder_dir(), true);
  std::map<std::string, std::string> alone;
  for (const nlohmann::json& t : tasks) {
    for (auto& [id, rec] : run(yaml, {t})) alone[id] = rec;
  }
  REQUIRE(alone.size() == tasks.size());
  for (const auto& [name, text] : std::vector<std::pair<std::string, std::string>>{
           {"serial", yaml + "max_in_flight: 1\n"},
           {"serial again", yaml + "max_in_flight: 1\n"},
           {"in flight", yaml + "max_in_flight: 64\n"}}) {
    const std::map<std::string, std::string> got = run(text, tasks);
    REQUIRE(got.size() == tasks.size());
    uint32_t differ = 0;
    for (const auto& [id, rec] : got) differ += rec != alone.at(id);
    INFO(name << ": " << differ << " records differ from the task run alone");
    CHECK(differ == 0);
  }
}

// An editor session on one file: the cursor's file grows a function at a time and one of its
// functions is rewritten, a repository file is sent edited too; each request's overlay is
// built from the one before it (kept by the index resource), which must change nothing.
TEST_CASE("retrieval: overlays kept across requests give each record its cold run's bytes",
          "[retrieval][stage][determinism]") {
  if (!vsynth::test::have_default_encoder()) return;
  Repo repo;
  std::vector<nlohmann::json> tasks;
  std::string body;
  for (int v = 0; v < 8; ++v) {
    body += "\n\ndef step_" + std::to_string(v) +
            "(rows):\n    return [r for r in rows if r][:" + std::to_string(v) + "]\n";
    std::string source = main_source("report") + body;
    if (v % 2) {
      source.replace(source.find("return rows"), 11, "return rows[" + std::to_string(v) + ":]");
    }
    nlohmann::json t = task("e" + std::to_string(v), "report",
                            v % 3 ? "clean the rows" : "write the rows back to a csv file");
    t["source"] = source;
    if (v >= 4) {  // the repository's table.py, edited by the task, one version per two tasks
      t["files"] = {{{"path", "util/table.py"},
                     {"source", std::string(kTable) + "\n\ndef purge_" + std::to_string(v / 2) +
                                    "(rows):\n    return [r for r in rows if r]\n"}}};
    }
    tasks.push_back(std::move(t));
  }
  const std::string yaml = pipeline(repo, encoder_dir(), true);
  std::map<std::string, std::string> cold;
  for (const nlohmann::json& t : tasks) {
    for (auto& [id, rec] : run(yaml, {t})) cold[id] = rec;
  }
  REQUIRE(cold.size() == tasks.size());
  // Serially, the session's order and backwards (each overlay built from a later version),
  // then all in flight, each twice in one run (the second a hit).
  std::vector<nlohmann::json> backwards(tasks.rbegin(), tasks.rend());
  std::vector<nlohmann::json> twice = tasks;
  for (const nlohmann::json& t : tasks) {
    nlohmann::json again = t;
    again["id"] = t["id"].get<std::string>() + "-again";
    twice.push_back(std::move(again));
  }
  for (const auto& [name, text, list] :
       std::vector<std::tuple<std::string, std::string, std::vector<nlohmann::json>>>{
           {"serial", yaml + "max_in_flight: 1\n", twice},
           {"backwards", yaml + "max_in_flight: 1\n", backwards},
           {"in flight", yaml + "max_in_flight: 64\n", twice}}) {
    const std::map<std::string, std::string> got = run(text, list);
    REQUIRE(got.size() == list.size());
    uint32_t differ = 0;
    for (const auto& [id, rec] : got) {
      std::string base = id.substr(0, id.find("-again"));
      std::string expect = cold.at(base);
      if (base != id) {  // the record names its task: compare the rest
        const std::string from = "\"id\":\"" + base + "\"", to = "\"id\":\"" + id + "\"";
        for (std::size_t at = expect.find(from); at != std::string::npos;
             at = expect.find(from, at + to.size())) {
          expect.replace(at, from.size(), to);
        }
      }
      differ += rec != expect;
    }
    INFO(name << ": " << differ << " records differ from the task run cold");
    CHECK(differ == 0);
  }
}

TEST_CASE("retrieval: without an encoder the search is lexical, says why, and the run goes on",
          "[retrieval][stage]") {
  Repo repo;
  const std::vector<nlohmann::json> tasks = {
      task("t1", "report", "clean the rows: strip each cell and drop empty rows"),
      task("t2", "where", "distance between two points")};
  const std::map<std::string, std::string> got =
      run(pipeline(repo, "/nonexistent/encoder", false), tasks);
  REQUIRE(got.size() == 2);
  for (const auto& [id, text] : got) {
    const nlohmann::json rec = nlohmann::json::parse(text);
    INFO(id);
    CHECK(rec["status"] == "retrieve.ok");
    const nlohmann::json& r = rec["facets"]["retrieved"];
    CHECK(r["served_by"] == "lexical");
    CHECK_THAT(r["degraded_reason"].get<std::string>(), Catch::Contains("/nonexistent/encoder"));
    for (const nlohmann::json& h : r["hits"]) CHECK(h["ranks"]["dense"] == 0);
  }
  CHECK(has_hit(nlohmann::json::parse(got.at("t1")), "normalize_rows"));
  CHECK(has_hit(nlohmann::json::parse(got.at("t2")), "distance"));
}

TEST_CASE("retrieval: the index is cached and re-validated by content on the next run",
          "[retrieval][stage]") {
  Repo repo;
  const nlohmann::json t =
      task("t1", "report", "clean the rows: strip each cell and drop empty rows");
  const std::string yaml = pipeline(repo, "/nonexistent/encoder", false);
  const nlohmann::json first = only(run(yaml, {t}));
  REQUIRE(fs::exists(repo.cache));
  CHECK(std::distance(fs::directory_iterator(repo.cache), fs::directory_iterator()) >= 1);
  CHECK(only(run(yaml, {t})) == first);  // warm: the same result
  // A file changed on disk is re-indexed: its new function is found.
  Repo::write(
      repo.root / "util" / "table.py",
      std::string(kTable) + "\n\ndef purge_empty_rows(rows):\n    return [r for r in rows if r]\n");
  const nlohmann::json after = only(run(pipeline(repo, "/nonexistent/encoder", false),
                                        {task("t1", "report", "purge the empty rows")}));
  CHECK(has_hit(after, "purge_empty_rows"));
}

TEST_CASE("retrieval: bad parameters fail validation at their position", "[retrieval][stage]") {
  const graph::Registry reg = vsynth::test::full_registry();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"  retrieve: { use: retrieval.search, with: { index: code, top_k: 0 } }\n",
       "test.yaml:6:66: "},
      {"  retrieve: { use: retrieval.search, with: { index: nosuch } }\n", "test.yaml:6:53: "},
      {"  retrieve: { use: retrieval.search, with: { index: code, rrf_k: -1 } }\n",
       "test.yaml:6:66: "},
  };
  for (const auto& [stage, where] : cases) {
    const std::string yaml =
        "pipeline: t\nresources:\n  code: { use: retrieval.index, with: { languages: [cobol] } }\n"
        "stages:\n  anchor: { use: ast.anchor }\n" +
        stage + "edges:\n  - anchor -> retrieve -> out\n";
    INFO(yaml);
    try {
      vsynth::test::load_text(yaml, reg);
      FAIL("validated");
    } catch (const std::exception& e) {
      const std::string what = e.what();
      CHECK_THAT(what, Catch::Contains(where));
      CHECK_THAT(what, Catch::Contains("test.yaml:3:53: "));  // cobol: not a language
    }
  }
}

TEST_CASE("retrieval: a damaged cache is rebuilt, a missing root is an error naming it",
          "[retrieval][stage]") {
  Repo repo;
  const nlohmann::json t =
      task("t1", "report", "clean the rows: strip each cell and drop empty rows");
  const std::string yaml = pipeline(repo, "/nonexistent/encoder", false);
  const nlohmann::json first = only(run(yaml, {t}));
  REQUIRE(has_hit(first, "normalize_rows"));
  // Every file of the cached index overwritten with junk: refused (checksums), rebuilt, the
  // same result.
  uint32_t damaged = 0;
  for (const auto& e : fs::recursive_directory_iterator(repo.cache)) {
    if (!e.is_regular_file()) continue;
    Repo::write(e.path(), "not an index");
    ++damaged;
  }
  REQUIRE(damaged > 0);
  CHECK(only(run(yaml, {t})) == first);
  CHECK(only(run(yaml, {t})) == first);  // and saved back whole

  Repo other;
  const std::string missing = (other.root / "no-such-dir").string();
  std::string bad = yaml;
  bad.replace(bad.find(repo.root.string()), repo.root.string().size(), missing);
  CHECK_THROWS_WITH(run(bad, {t}), Catch::Contains(missing) && Catch::Contains("root"));
}
