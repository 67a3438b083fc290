// context.deps' graph: two-hop dependency anchors across files and within one, name
// resolution through imports, ambiguity, and incremental updates of the project index.
#include <catch2/catch.hpp>

#include "stages/context/deps.h"
#include "tests/context/context_test_util.h"

using namespace vsynth::stages::context;
using vsynth::stages::context::test::Fixture;
using vsynth::stages::context::test::shown_form;

namespace {

const char* kMain = R"(from util import helper


def local_a(v):
    return local_b(v) + 1


def local_b(v):
    return v * 2


def run(x):
    y = local_a(x)
    return helper(<|>y)
)";

const char* kUtil = R"(from core import core_fn


def helper(value: int) -> int:
    """Doubles through the core."""
    return core_fn(value) * 2


def unused_in_util():
    return 0
)";

const char* kCore = R"(def core_fn(value: int) -> int:
    """The core computation."""
    return value + 1


def deeper():
    return core_fn(3)
)";

struct Project {
  ProjectIndex index;
  Fixture f{"main.py", kMain};
  Project() {
    index.update("util.py", kUtil);
    index.update("core.py", kCore);
    index.update("main.py", std::string(f.file->source()));
  }
  const ContextUnitsFacet::Dependency* dep(std::string_view name) const {
    for (const auto& d : f.candidates.deps) {
      if (d.name == name) return &d;
    }
    return nullptr;
  }
};

}  // namespace

TEST_CASE("deps: definitions one and two hops away, across files and within one",
          "[context][deps]") {
  Project p;
  const DepsStats stats = expand_dependencies(p.f.candidates, p.index, {}, p.f.arena);
  CHECK(stats.hop1 >= 2);
  const auto* helper = p.dep("helper");
  REQUIRE(helper);
  CHECK(helper->hop == 1);
  CHECK(helper->path == "util.py");
  const auto* core = p.dep("core_fn");
  REQUIRE(core);
  CHECK(core->hop == 2);
  CHECK(core->path == "core.py");
  CHECK(core->via == "helper");
  const auto* local_b = p.dep("local_b");  // in-file, through local_a
  REQUIRE(local_b);
  CHECK(local_b->hop == 2);
  CHECK(local_b->via == "local_a");
  CHECK(p.dep("deeper") == nullptr);          // three hops: uses core_fn, not used by it
  CHECK(p.dep("unused_in_util") == nullptr);  // never named
  CHECK(p.f.unit("local_b").reasons.hop == 2);

  // The copied units carry their file, forms and a dedup fingerprint.
  const Unit& h = p.f.unit("helper");
  CHECK(p.f.candidates.files[h.file].path == "util.py");
  CHECK(h.signature ==
        "def helper(value: int) -> int:\n    \"\"\"Doubles through the core.\"\"\"\n    ...\n");
  CHECK(!h.normalized.empty());
  CHECK(h.reasons.hop == 1);
  CHECK(h.reasons.hop_rank == 0);  // `helper` is the name nearest the cursor
}

TEST_CASE("deps: prune shows other files' definitions as signatures under their paths",
          "[context][deps]") {
  // The smallest budget that shows `helper` shows its signature; a roomy one, its body.
  int first_form = -1;
  for (uint32_t budget = 40; budget <= 400 && first_form < 0; budget += 4) {
    Project q;
    expand_dependencies(q.f.candidates, q.index, {}, q.f.arena);
    PruneOptions o;
    o.budget_tokens = budget;
    const PruneResult r = prune(q.f.candidates, EstimateCounter(), o, q.f.arena);
    const int form = shown_form(q.f.candidates, r, "helper");
    if (form >= static_cast<int>(Form::Signature)) first_form = form;
  }
  CHECK(first_form == static_cast<int>(Form::Signature));
  Project p;
  expand_dependencies(p.f.candidates, p.index, {}, p.f.arena);
  PruneOptions o;
  o.budget_tokens = 160;
  const PruneResult r = prune(p.f.candidates, EstimateCounter(), o, p.f.arena);
  CHECK(shown_form(p.f.candidates, r, "helper") >= static_cast<int>(Form::Signature));
  const std::size_t util = r.text.find("# file: util.py\n");
  const std::size_t main = r.text.find("# file: main.py\n");
  REQUIRE(util != std::string::npos);
  REQUIRE(main != std::string::npos);
  CHECK(util < main);  // other files first, the cursor's file last
  CHECK(r.used_tokens <= 160);
}

TEST_CASE("deps: names resolve through imports, ambiguous ones are not followed",
          "[context][deps]") {
  ProjectIndex index;
  for (int i = 0; i < 5; ++i) {
    index.update("m" + std::to_string(i) + ".py", "def get(k):\n    return k\n");
  }
  index.update("store.py", "def get(k):\n    return 'store'\n");
  index.update("app.py", "import store\n\ndef f():\n    return get(1)\n");
  index.update("lone.py", "def f():\n    return get(1)\n");
  const auto* app = index.find("app.py");
  const auto from_app = index.resolve("get", app, 3);
  REQUIRE(from_app.size() == 1);
  CHECK(from_app[0].file->path == "store.py");
  CHECK(index.resolve("get", index.find("lone.py"), 3).empty());  // 6 candidates
  CHECK(index.resolve("get", index.find("lone.py"), 10).size() == 6);
  // Defined in the file itself: that one.
  CHECK(index.resolve("get", index.find("m2.py"), 3)[0].file->path == "m2.py");
}

TEST_CASE("deps: the index updates incrementally and only for changed files", "[context][deps]") {
  ProjectIndex index;
  std::string util = kUtil;
  CHECK(index.update("util.py", util));
  CHECK(index.update("core.py", kCore));
  CHECK(index.parses() == 2);
  CHECK_FALSE(index.update("util.py", util));  // unchanged: nothing to do
  CHECK(index.reparses() == 0);
  // A one-line edit that renames a function: re-parsed from the old tree, re-indexed.
  const std::size_t at = util.find("def unused_in_util");
  util.replace(at, 18, "def renamed_in_util");
  CHECK(index.update("util.py", util));
  CHECK(index.parses() == 2);
  CHECK(index.reparses() == 1);
  CHECK(index.resolve("unused_in_util", nullptr, 3).empty());
  REQUIRE(index.resolve("renamed_in_util", nullptr, 3).size() == 1);
  const auto ref = index.resolve("renamed_in_util", nullptr, 3)[0];
  CHECK(ref.file->units[ref.unit].full == "def renamed_in_util():\n    return 0\n");
  // Same result as a fresh index of the new text.
  ProjectIndex fresh;
  fresh.update("util.py", util);
  const auto* a = index.find("util.py");
  const auto* b = fresh.find("util.py");
  REQUIRE(a->units.size() == b->units.size());
  for (std::size_t i = 0; i < a->units.size(); ++i) {
    CHECK(a->units[i].full == b->units[i].full);
    CHECK(a->units[i].signature == b->units[i].signature);
  }
  index.remove("util.py");
  CHECK(index.resolve("helper", nullptr, 3).empty());
}

TEST_CASE("deps: the index takes the cursor file's tree as parsed, without parsing again",
          "[context][deps]") {
  ProjectIndex index;
  std::string util = kUtil;
  CHECK(index.update("util.py", util));
  const auto parsed = std::make_shared<const vsynth::stages::ast::ParsedFile>(
      vsynth::stages::ast::ParsedFile::from_path("util.py",
                                                 util + "\n\ndef added():\n    return 1\n"));
  CHECK(index.update("util.py", parsed));
  CHECK(index.find("util.py")->parsed == parsed);  // the very same tree
  CHECK(index.parses() == 1);
  CHECK(index.reparses() == 0);
  REQUIRE(index.resolve("added", nullptr, 3).size() == 1);
  CHECK_FALSE(index.update("util.py", parsed));  // unchanged
  // A file the index did not hold is adopted the same way.
  const auto core = std::make_shared<const vsynth::stages::ast::ParsedFile>(
      vsynth::stages::ast::ParsedFile::from_path("core.py", kCore));
  CHECK(index.update("core.py", core));
  CHECK(index.parses() == 1);
  CHECK(index.find("core.py")->parsed == core);
}

TEST_CASE("deps: the index adopts the candidates' extraction of the cursor's file",
          "[context][deps]") {
  ProjectIndex index;
  CHECK(index.update("util.py", kUtil));
  CHECK(index.update("core.py", kCore));
  Fixture f{"main.py", kMain};
  REQUIRE(f.candidates.extracted);
  CHECK(f.candidates.extracted->file == f.file);
  // Adopted as it is: the same object, nothing parsed or extracted again.
  CHECK(index.update("main.py", f.candidates.extracted));
  const ProjectIndex::File* main = index.find("main.py");
  REQUIRE(main);
  CHECK(main->extracted == f.candidates.extracted);
  CHECK(main->parsed == f.file);
  CHECK(index.parses() == 2);
  CHECK_FALSE(index.update("main.py", f.candidates.extracted));  // unchanged
  // What the index holds is what it would have extracted itself.
  ProjectIndex fresh;
  fresh.update("main.py", std::string(f.file->source()));
  const ProjectIndex::File* own = fresh.find("main.py");
  REQUIRE(own->units.size() == main->units.size());
  for (std::size_t i = 0; i < own->units.size(); ++i) {
    CHECK(own->units[i].name == main->units[i].name);
    CHECK(own->units[i].full == main->units[i].full);
    CHECK(own->units[i].signature == main->units[i].signature);
  }
  REQUIRE(index.resolve("local_b", nullptr, 3).size() == 1);
  // Candidates' reasons are theirs: the index's units carry none.
  for (const Unit& u : main->units) CHECK_FALSE(u.reasons.focus);
  // The candidates' units stay valid after the index moves on to another version.
  CHECK(index.update("main.py", std::string(f.file->source()) + "\n\ndef later():\n    pass\n"));
  CHECK(f.unit("local_b").full == "def local_b(v):\n    return v * 2\n");
}

TEST_CASE("deps: units extracted with other options are extracted again by the index",
          "[context][deps]") {
  const auto file = std::make_shared<const vsynth::stages::ast::ParsedFile>(
      vsynth::stages::ast::ParsedFile::from_path("util.py", kUtil));
  ExtractOptions no_doc;
  no_doc.doc_line = false;
  const auto units = extract_file_units(file, no_doc);
  ProjectIndex index;
  CHECK(index.update("util.py", units));
  const ProjectIndex::File* util = index.find("util.py");
  CHECK(util->parsed == file);      // the tree is still shared
  CHECK(util->extracted != units);  // the units are the index's own (with doc lines)
  const auto ref = index.resolve("helper", nullptr, 3);
  REQUIRE(ref.size() == 1);
  CHECK(std::string(ref[0].file->units[ref[0].unit].signature).find("Doubles through the core") !=
        std::string::npos);
}

TEST_CASE("candidates: units of another file are refused with a clear error", "[context][deps]") {
  Fixture f{"main.py", kMain};
  const auto other = std::make_shared<const vsynth::stages::ast::ParsedFile>(
      vsynth::stages::ast::ParsedFile::from_path("util.py", kUtil));
  ContextUnitsFacet c;
  CHECK_THROWS_WITH(build_candidates(c, *f.anchor, extract_file_units(other)),
                    Catch::Contains("main.py") && Catch::Contains("util.py"));
  ProjectIndex index;
  CHECK_THROWS_WITH(index.update("x.py", std::shared_ptr<const FileUnits>()),
                    Catch::Contains("x.py"));
}
