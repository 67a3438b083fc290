// pipelines/context.yaml is a function of each task: the same multi-file task set gives the
// same records byte for byte run alone task by task, serially (max_in_flight: 1) and with
// many tasks in flight, twice each. The tasks are built to collide: six projects whose files
// share paths (app/main.py, pkg/util.py, ...) and symbol names (helper, core_fn, Store), each
// task sending its own versions of a subset of its project's files (a later task may send
// another version of the same path, or leave a file out that its code still names), half of
// them naming no project at all, some with a cursor left inside an unclosed call.
#include <catch2/catch.hpp>

#include <cstdint>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "graph/pipeline.h"
#include "tests/graph/test_kinds.h"

namespace graph = vsynth::graph;

namespace {

std::string read(const std::string& rel) {
  std::ifstream in(std::string(VSYNTH_SOURCE_DIR) + "/" + rel);
  std::stringstream b;
  b << in.rdbuf();
  return b.str();
}

// A small deterministic generator (its sequence is fixed by the standard on every platform,
// unlike std::uniform_int_distribution's).
struct Rng {
  uint64_t s;
  uint32_t next(uint32_t n) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<uint32_t>((s >> 33) % n);
  }
};

std::string util_py(int project, int version) {
  std::string s = "from pkg.core import core_fn\n\n\n";
  s += "def helper(value):\n    \"\"\"Project " + std::to_string(project) + " helper v" +
       std::to_string(version) + ".\"\"\"\n";
  s += version % 2 ? "    return core_fn(value) * " + std::to_string(project + 2) + "\n\n\n"
                   : "    return scale(value) + " + std::to_string(version) + "\n\n\n";
  s += "def scale(value):\n    return value * " + std::to_string(project * 10 + version) + "\n\n\n";
  s += "class Store:\n    def __init__(self):\n        self.items = []\n\n";
  s += "    def get(self, key):\n        return helper(len(self.items)) + key\n";
  for (int k = 0; k <= version; ++k) {
    s += "\n    def put_" + std::to_string(k) + "(self, item):\n        self.items.append(item)\n";
  }
  return s;
}

std::string core_py(int project, int version) {
  std::string s = "LIMIT = " + std::to_string(100 + project) + "\n\n\n";
  s += "def core_fn(value):\n    \"\"\"Core of project " + std::to_string(project) + ".\"\"\"\n";
  s += "    return min(value + " + std::to_string(version) + ", LIMIT)\n\n\n";
  s += "def other_fn(x):\n    return core_fn(x) - " + std::to_string(project) + "\n";
  if (version > 0) {
    s += "\n\ndef scale(value):\n    return value // " + std::to_string(version + 1) + "\n";
  }
  return s;
}

std::string tools_py(int project, int version) {
  std::string s =
      "def helper(value):\n    return str(value) + '" + std::to_string(project) + "'\n\n\n";
  s += "def format_value(v):\n    return helper(v).rjust(" + std::to_string(version + 4) + ")\n";
  return s;
}

std::string main_py(int project, int variant, bool broken) {
  std::string s = "from pkg.util import helper, Store\nfrom pkg.core import core_fn\n";
  if (variant % 3 == 0) s += "from lib.tools import format_value\n";
  s += "\n\nclass App:\n    def __init__(self):\n        self.store = Store()\n\n";
  s += "    def run(self, x):\n        y = core_fn(x) + " + std::to_string(project) + "\n";
  if (variant % 2) s += "        z = scale(y)\n";
  if (variant % 3 == 0) s += "        print(format_value(y))\n";
  s += "        return self.store.get(y) + helper(";
  s += broken ? "" : "y)\n";
  return s;
}

std::string fmt_id(int t) {
  std::string s = std::to_string(t);
  return "t" + std::string(3 - std::min<std::size_t>(3, s.size()), '0') + s;
}

// Tasks of several projects, colliding in paths and names (see the file comment).
std::vector<nlohmann::json> colliding_tasks(int count) {
  Rng rng{20261201};
  std::vector<nlohmann::json> tasks;
  for (int t = 0; t < count; ++t) {
    const int project = static_cast<int>(rng.next(6));
    const int variant = static_cast<int>(rng.next(6));
    const bool broken = rng.next(3) == 0;
    const std::string source = main_py(project, variant, broken);
    // The cursor right after `helper(`: the argument being typed.
    const std::size_t cursor = source.rfind("helper(") + 7;
    nlohmann::json task = {{"id", fmt_id(t)},
                           {"path", "app/main.py"},
                           {"source", source},
                           {"cursor", {{"offset", cursor}}}};
    if (rng.next(2) == 0) task["project"] = "p" + std::to_string(project);
    nlohmann::json files = nlohmann::json::array();
    auto maybe = [&](const std::string& path, std::string text) {
      if (rng.next(4) != 0) files.push_back({{"path", path}, {"source", std::move(text)}});
    };
    maybe("pkg/util.py", util_py(project, static_cast<int>(rng.next(3))));
    maybe("pkg/core.py", core_py(project, static_cast<int>(rng.next(3))));
    maybe("lib/tools.py", tools_py(project, static_cast<int>(rng.next(3))));
    maybe("pkg/__init__.py", "from pkg.util import helper\n");
    if (rng.next(5) == 0) {
      // An older version of the cursor's own file: the task's own text must win.
      files.push_back({{"path", "app/main.py"}, {"source", main_py(project, variant + 1, false)}});
    }
    task["files"] = std::move(files);
    tasks.push_back(std::move(task));
  }
  return tasks;
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

// Names of the facets whose JSON differs between two records.
std::string differing_facets(const std::string& a, const std::string& b) {
  const nlohmann::json ja = nlohmann::json::parse(a), jb = nlohmann::json::parse(b);
  std::string out;
  for (const auto& [name, facet] : ja["facets"].items()) {
    if (!jb["facets"].contains(name) || jb["facets"][name] != facet) out += name + " ";
  }
  if (ja["status"] != jb["status"]) out += "status ";
  return out;
}

}  // namespace

TEST_CASE("pipelines/context.yaml: each record is a function of its task, whatever else runs",
          "[context][stage][determinism]") {
  const std::vector<nlohmann::json> tasks = colliding_tasks(96);
  const std::string yaml = read("pipelines/context.yaml");

  // The reference: each task alone, in a pipeline of its own (nothing else ever ran).
  std::map<std::string, std::string> alone;
  for (const nlohmann::json& task : tasks) {
    for (auto& [id, rec] : run(yaml, {task})) alone[id] = std::move(rec);
  }
  REQUIRE(alone.size() == tasks.size());
  std::set<std::string> statuses;
  std::size_t with_deps = 0;
  for (const auto& [id, rec] : alone) {
    const nlohmann::json j = nlohmann::json::parse(rec);
    statuses.insert(j["status"].get<std::string>());
    with_deps += !j["facets"]["context_units"]["deps"].empty();
  }
  CHECK(statuses == std::set<std::string>{"prune.ok"});
  CHECK(with_deps > tasks.size() / 2);  // the tasks do reach across files

  const std::vector<std::pair<std::string, std::string>> runs = {
      {"serial", yaml + "max_in_flight: 1\n"},
      {"serial again", yaml + "max_in_flight: 1\n"},
      {"parallel", yaml + "max_in_flight: 96\n"},
      {"parallel again", yaml + "max_in_flight: 96\n"},
  };
  for (const auto& [name, text] : runs) {
    const std::map<std::string, std::string> got = run(text, tasks);
    REQUIRE(got.size() == tasks.size());
    std::vector<std::string> differ;
    std::string first;
    for (const auto& [id, rec] : got) {
      if (rec == alone.at(id)) continue;
      if (differ.empty()) first = id + ": " + differing_facets(rec, alone.at(id));
      differ.push_back(id);
    }
    INFO(name << ": " << differ.size() << " of " << tasks.size()
              << " records differ from the task run alone; first " << first);
    CHECK(differ.empty());
  }
}

TEST_CASE("pipelines/context.yaml: the parse cache does not make a tree depend on another task",
          "[context][stage][determinism]") {
  // Tasks on one path each, its file cut mid-row at every row (the rest of the row being
  // typed), each cut right after the cut nine rows up: with an incremental re-parse from
  // the path's last version, some trees differ from a fresh parse of the same text.
  std::vector<nlohmann::json> tasks;
  for (const char* name : {"sample.c", "sample.cpp", "sample.go", "sample.java", "sample.js",
                           "sample.py", "sample.rs", "sample.ts", "sample.tsx"}) {
    const std::string path = std::string("tests/ast/data/") + name;
    const std::string source = read(path);
    std::vector<std::size_t> starts{0};
    for (std::size_t i = 0; i + 1 < source.size(); ++i) {
      if (source[i] == '\n') starts.push_back(i + 1);
    }
    const std::size_t rows = starts.size();
    auto cut = [&](std::size_t row) {
      const std::size_t end = row + 1 < rows ? starts[row + 1] - 1 : source.size();
      const std::size_t mid = starts[row] + (end - starts[row]) / 2;
      std::string t = source;
      t.erase(mid, end - mid);
      return std::make_pair(t, mid);
    };
    for (std::size_t j = 0; j < rows; ++j) {
      for (std::size_t row : {(j + rows - 9) % rows, j}) {
        auto [text, at] = cut(row);
        tasks.push_back({{"id", fmt_id(static_cast<int>(tasks.size()))},
                         {"path", path},
                         {"source", text},
                         {"cursor", {{"offset", at}}}});
      }
    }
  }
  // Retrieval is left out: this case is about the parse cache's trees, and embedding a query
  // for each of its ~1,500 tasks (three runs) would take minutes, under the sanitizers more.
  // The case above runs the whole pipeline, retrieval included.
  std::string yaml = read("pipelines/context.yaml");
  const std::string edge = "anchor -> retrieve -> summarize";
  REQUIRE(yaml.find(edge) != std::string::npos);
  yaml.replace(yaml.find(edge), edge.size(), "anchor -> summarize");
  for (const std::string prefix : {"resources:\n", "  code: {", "  retrieve: "}) {
    const std::size_t at = yaml.find(prefix);
    REQUIRE(at != std::string::npos);
    yaml.erase(at, yaml.find('\n', at) + 1 - at);
  }
  // The reference: no parse cache, every text parsed afresh.
  std::string uncached = yaml;
  const std::string anchor = "use: ast.anchor, with: { cursor_base: one }";
  REQUIRE(uncached.find(anchor) != std::string::npos);
  uncached.replace(uncached.find(anchor), anchor.size(),
                   "use: ast.anchor, with: { cursor_base: one, cache_mb: 0 }");
  const std::map<std::string, std::string> fresh = run(uncached + "max_in_flight: 1\n", tasks);
  REQUIRE(fresh.size() == tasks.size());
  for (const auto& [name, text] : std::vector<std::pair<std::string, std::string>>{
           {"serial", yaml + "max_in_flight: 1\n"}, {"parallel", yaml + "max_in_flight: 64\n"}}) {
    const std::map<std::string, std::string> got = run(text, tasks);
    std::vector<std::string> differ;
    std::string first;
    for (const auto& [id, rec] : got) {
      if (rec == fresh.at(id)) continue;
      if (differ.empty()) first = id + ": " + differing_facets(rec, fresh.at(id));
      differ.push_back(id);
    }
    INFO(name << ": " << differ.size() << " of " << tasks.size()
              << " records differ from a fresh parse's; first " << first);
    CHECK(differ.empty());
  }
}
