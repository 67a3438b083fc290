// Definitions the context missed on real code (issue 18, item 2), each pinned by a test:
// definitions inside module-level `if` / `else` / `try` blocks, names re-exported by a
// package's __init__.py, methods reached through chained attributes, documented prototypes
// left in their name form, and same-named module globals of unrelated test files.
#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <string>

#include "stages/context/deps.h"
#include "tests/context/context_test_util.h"

using namespace vsynth::stages::context;
using vsynth::stages::context::test::Fixture;
using vsynth::stages::context::test::shown_form;

namespace {

// A task: the cursor's file (with `<|>`) and the project's other files, indexed as
// context.deps indexes them, with the dependencies expanded.
struct Task {
  ProjectIndex index;
  Fixture f;
  Task(const std::string& path, const std::string& source,
       const std::map<std::string, std::string>& files)
      : f(path, source) {
    for (const auto& [p, text] : files) index.update(p, text);
    index.update(path, f.candidates.extracted);
    expand_dependencies(f.candidates, index, {}, f.arena);
  }
  const ContextUnitsFacet::Dependency* dep(std::string_view name) const {
    for (const auto& d : f.candidates.deps) {
      if (d.name == name) return &d;
    }
    return nullptr;
  }
};

}  // namespace

TEST_CASE("extract: definitions inside module-level if / else / try blocks are units",
          "[context][resolve]") {
  const std::string source = R"(import sys

if sys.version_info >= (3, 8):
    def compat_read(path):
        return open(path).read()
else:
    def compat_read(path):
        return open(path, "rb").read().decode()

try:
    from fastjson import loads
except ImportError:
    def loads(text):
        """Slow fallback."""
        return eval(text)
finally:
    READY = True


def run(p):
    return loads(compat_read(<|>p))
)";
  Fixture f("main.py", source);
  int reads = 0;
  bool loads = false;
  for (const Unit& u : f.candidates.units) {
    if (u.name == "compat_read") {
      ++reads;
      CHECK(u.kind == UnitKind::Function);
      CHECK(u.reasons.ref_rank >= 0);  // named by the focus
      REQUIRE(u.parent >= 0);          // inside its branch's container
      CHECK(f.candidates.units[static_cast<std::size_t>(u.parent)].container);
    }
    if (u.name == "loads" && u.kind == UnitKind::Function) {
      loads = true;
      CHECK(u.reasons.ref_rank >= 0);
      CHECK(u.signature ==
            "    def loads(text):\n        \"\"\"Slow fallback.\"\"\"\n        ...\n");
    }
  }
  CHECK(reads == 2);
  CHECK(loads);
  CHECK(f.unit("READY").kind == UnitKind::Global);
  // Shown with the branch headers around them, the file's own text in its own order.
  PruneOptions o;
  o.budget_tokens = 400;
  const PruneResult r = prune(f.candidates, EstimateCounter(), o, f.arena);
  CHECK(shown_form(f.candidates, r, "compat_read") == static_cast<int>(Form::Full));
  CHECK(r.text.find("if sys.version_info >= (3, 8):\n    def compat_read(path):\n") !=
        std::string::npos);
  CHECK(r.text.find("else:\n    def compat_read(path):\n") != std::string::npos);
  CHECK(r.text.find("except ImportError:\n    def loads(text):\n") != std::string::npos);

  // Across files: a class defined under `try` in another file is followed too.
  Task t("app.py", "from util import Loader\n\n\ndef go():\n    return Loader(<|>)\n",
         {{"util.py",
           "try:\n    import yaml\n\n    class Loader:\n        def load(self, s):\n"
           "            return yaml.safe_load(s)\nexcept ImportError:\n    yaml = None\n"}});
  const auto* loader = t.dep("Loader");
  REQUIRE(loader);
  CHECK(loader->path == "util.py");
  CHECK(loader->hop == 1);
}

TEST_CASE("deps: a name a package re-exports is followed to its definition", "[context][resolve]") {
  std::map<std::string, std::string> files = {
      {"pkg/__init__.py", "from ._impl import build\nfrom pkg.tools import render\n"},
      {"pkg/_impl.py", "def build(spec):\n    \"\"\"The real one.\"\"\"\n    return [spec]\n"},
      {"pkg/tools.py", "def render(x):\n    return str(x)\n"},
  };
  // `build` and `render` are defined elsewhere too, too often to follow by name alone.
  for (int i = 0; i < 4; ++i) {
    files["other" + std::to_string(i) + ".py"] =
        "def build(x):\n    return x\n\n\ndef render(x):\n    return x\n";
  }
  Task t("main.py",
         "from pkg import build, render\n\n\ndef run():\n    return render(build(<|>1))\n", files);
  const auto* build = t.dep("build");
  REQUIRE(build);
  CHECK(build->path == "pkg/_impl.py");
  CHECK(build->hop == 1);
  const auto* render = t.dep("render");
  REQUIRE(render);
  CHECK(render->path == "pkg/tools.py");
  int builds = 0;
  for (const auto& d : t.f.candidates.deps) builds += d.name == "build";
  CHECK(builds == 1);  // the one definition, not the other four
}

TEST_CASE("deps: same-named module globals of unrelated test files are not pulled in",
          "[context][resolve]") {
  Task t("src/client.py",
         "from src.config import TIMEOUT\n\n\ndef fetch(url):\n"
         "    data = get(url, TIMEOUT)\n    return data<|>\n",
         {{"src/config.py", "TIMEOUT = 30\n"},
          {"src/net.py", "def get(url, timeout):\n    return (url, timeout)\n"},
          {"tests/test_client.py",
           "url = 'http://a'\ndata = {'k': 1}\n\n\ndef test_a():\n"
           "    assert url\n"},
          {"tests/test_net.py", "url = 'http://b'\n\n\ndef test_b():\n    assert url\n"}});
  for (const auto& d : t.f.candidates.deps) {
    INFO(d.name << " from " << d.path);
    CHECK(d.path.rfind("tests/", 0) != 0);
  }
  REQUIRE(t.dep("TIMEOUT"));
  CHECK(t.dep("TIMEOUT")->path == "src/config.py");
  REQUIRE(t.dep("get"));  // a unique definition elsewhere is still followed by its name
  CHECK(t.dep("get")->path == "src/net.py");
  // From a test file, the test files' own definitions stay reachable.
  Task from_test("tests/test_more.py", "def test_c():\n    assert url<|>\n",
                 {{"tests/test_net.py", "url = 'http://b'\n"}});
  REQUIRE(from_test.dep("url"));
}

TEST_CASE("deps: a method reached through a chained attribute (self.a.b.fetch) is resolved",
          "[context][resolve]") {
  std::map<std::string, std::string> files = {
      {"alpha.py",
       "from beta import Beta\n\n\nclass Alpha:\n    def __init__(self):\n"
       "        self.b = Beta()\n"},
      {"beta.py",
       "class Beta:\n    def fetch(self, v):\n        \"\"\"The one reached.\"\"\"\n"
       "        return v\n"},
  };
  // `fetch` is a method of many classes: by its name alone it says nothing.
  for (int i = 0; i < 4; ++i) {
    files["c" + std::to_string(i) + ".py"] = "class C" + std::to_string(i) +
                                             ":\n    def fetch(self, v):\n        return " +
                                             std::to_string(i) + "\n";
  }
  Task t("main.py",
         "from alpha import Alpha\n\n\nclass Service:\n    def __init__(self):\n"
         "        self.a = Alpha()\n\n    def run(self, v):\n        return self.a.b.fetch(<|>v)\n",
         files);
  int fetches = 0;
  for (const auto& d : t.f.candidates.deps) {
    if (d.name != "fetch") continue;
    ++fetches;
    CHECK(d.path == "beta.py");
    CHECK(d.hop == 1);
  }
  CHECK(fetches == 1);
  // An annotated attribute (`self.a: Alpha = make()`) is followed the same way.
  Task annotated("main.py",
                 "from alpha import Alpha\n\n\nclass Service:\n    def __init__(self):\n"
                 "        self.a: Alpha = make()\n\n    def run(self, v):\n"
                 "        return self.a.b.fetch(<|>v)\n",
                 files);
  REQUIRE(annotated.dep("fetch"));
  CHECK(annotated.dep("fetch")->path == "beta.py");
}

TEST_CASE("deps: an attribute assigned a plain value (self.x = {}) ends the chain, no crash",
          "[context][resolve]") {
  // The assignment has no annotation and no call on its right: there is no type to follow.
  // (The benchmark's tasks on click's core.py crashed here: a null node's type was read.)
  const std::map<std::string, std::string> files = {
      {"other.py", "class Other:\n    def items(self):\n        return []\n"}};
  Task t("main.py",
         "class Service:\n    def __init__(self):\n        self.settings = {}\n"
         "        self.count = 3\n\n    def run(self):\n"
         "        return self.settings.items(<|>) + self.count.bit_length()\n",
         files);
  // Reached without a crash: the focus is `run`, and deps finished (its name-only fallback may
  // still offer Other.items, the project's one definition of that name).
  REQUIRE(t.f.candidates.focus >= 0);
  CHECK(t.f.candidates.units[static_cast<std::size_t>(t.f.candidates.focus)].name == "run");
}

TEST_CASE("summarize: a documented prototype has a signature form, so it is not left as a name",
          "[context][resolve]") {
  const std::string header =
      "#pragma once\n\n"
      "struct Language;\n\n"
      "// Finds a language by its name (python, c, cpp, go, java, javascript, typescript,\n"
      "// tsx or rust), as the task's /language field names it. The names are the grammars'\n"
      "// own, lower case; an alias (py, js, ts) is not accepted, because the field is meant\n"
      "// to be machine-written and an alias would hide a typo in the caller that wrote it.\n"
      "// Returns null for an unknown name; the caller reports it with the valid names.\n"
      "const Language* find(const char* name) noexcept;\n";
  auto task = [&] {
    return std::make_unique<Task>(
        "main.cpp", "#include \"lang.h\"\n\nint run() {\n  return find(<|>\"x\") != nullptr;\n}\n",
        std::map<std::string, std::string>{{"lang.h", header}});
  };
  const auto t = task();
  const Unit& find = t->f.unit("find");
  CHECK(find.kind == UnitKind::Function);
  CHECK(find.signature ==
        "// Finds a language by its name (python, c, cpp, go, java, javascript, typescript,\n"
        "const Language* find(const char* name) noexcept;\n");
  // The smallest budget that shows more than its name shows its signature, not the whole
  // comment block.
  int first = -1;
  for (uint32_t budget = 40; budget <= 400 && first < 0; budget += 4) {
    const auto u = task();
    PruneOptions o;
    o.budget_tokens = budget;
    const PruneResult r = prune(u->f.candidates, EstimateCounter(), o, u->f.arena);
    const int form = shown_form(u->f.candidates, r, "find");
    if (form > static_cast<int>(Form::Name)) first = form;
  }
  CHECK(first == static_cast<int>(Form::Signature));
}
