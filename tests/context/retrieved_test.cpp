// Retrieval hits in the context: context.deps adds the units of a `retrieved` facet to the
// candidates with their rank (reasons.retrieval_rank), so a helper the cursor's code does not
// name yet reaches the prompt; a hit on a dependency adds the reason to the same unit; a hit on
// a file the task did not send is shown from the text the hit carries.
#include <catch2/catch.hpp>

#include "stages/context/deps.h"
#include "stages/context/value.h"
#include "tests/context/context_test_util.h"

using namespace vsynth::stages::context;
using vsynth::stages::context::test::Fixture;
using vsynth::stages::facets::RetrievedFacet;

namespace {

// The cursor's function should call normalize_rows (util.py), but does not name it yet.
const char* kMain = R"(from util import load_table


def summarize(path):
    rows = load_table(path)
    <|>
)";

const char* kUtil = R"(def load_table(path):
    with open(path) as f:
        return [line.split(",") for line in f]


def normalize_rows(rows):
    """Strips every cell and drops empty rows."""
    return [[c.strip() for c in r] for r in rows if any(c.strip() for c in r)]


def unrelated():
    return 42
)";

struct Project {
  ProjectIndex index;
  Fixture f{"main.py", kMain};
  FileUnitsCache cache{1 << 20};
  Project() {
    index.update("util.py", kUtil);
    index.update("main.py", std::string(f.file->source()));
  }
  PruneResult prune_with(const RetrievedFacet* retrieved) {
    if (retrieved) {
      RetrievedUnits hits = resolve_retrieved(*retrieved, index, cache);
      expand_dependencies(f.candidates, index, {}, f.arena, &hits);
    } else {
      expand_dependencies(f.candidates, index, {}, f.arena);
    }
    PruneOptions o;
    o.budget_tokens = 400;
    return prune(f.candidates, EstimateCounter(), o, f.arena);
  }
};

RetrievedFacet::Hit hit(std::string path, std::string name, uint32_t first, uint32_t last) {
  RetrievedFacet::Hit h;
  h.path = std::move(path);
  h.name = std::move(name);
  h.first_line = first;
  h.last_line = last;
  return h;
}

const Shown* shown(const ContextUnitsFacet& c, const PruneResult& r, std::string_view name) {
  for (const Shown& s : r.shown) {
    if (c.units[s.unit].name == name) return &s;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("retrieved: a helper the cursor's code does not name is packed only when retrieved",
          "[context][retrieved]") {
  SECTION("without a retrieved facet it is not in the context") {
    Project p;
    const PruneResult r = p.prune_with(nullptr);
    CHECK(shown(p.f.candidates, r, "load_table"));  // named: a dependency
    CHECK_FALSE(shown(p.f.candidates, r, "normalize_rows"));
    CHECK(r.text.find("def normalize_rows") == std::string::npos);
  }
  SECTION("a hit naming it packs it, with its rank as the reason") {
    Project p;
    RetrievedFacet retrieved;
    retrieved.hits.push_back(hit("util.py", "normalize_rows", 6, 8));
    const PruneResult r = p.prune_with(&retrieved);
    const Shown* s = shown(p.f.candidates, r, "normalize_rows");
    REQUIRE(s);
    CHECK(s->reason == "retr#0");
    CHECK(r.text.find("def normalize_rows(rows):") != std::string::npos);
    CHECK_FALSE(shown(p.f.candidates, r, "unrelated"));
  }
}

TEST_CASE("retrieved: a hit on a dependency adds the reason to the same unit",
          "[context][retrieved]") {
  Project p;
  RetrievedFacet retrieved;
  retrieved.hits.push_back(hit("util.py", "normalize_rows", 6, 8));
  retrieved.hits.push_back(hit("util.py", "load_table", 1, 3));
  RetrievedUnits hits = resolve_retrieved(retrieved, p.index, p.cache);
  REQUIRE(hits.entries.size() == 2);
  const DepsStats stats = expand_dependencies(p.f.candidates, p.index, {}, p.f.arena, &hits);
  CHECK(stats.retrieved == 2);
  int copies = 0;
  for (const Unit& u : p.f.candidates.units) {
    if (u.name != "load_table") continue;
    ++copies;
    CHECK(u.reasons.hop == 1);
    CHECK(u.reasons.retrieval_rank == 1);
    // The stronger reason shows: a named dependency outweighs a retrieval hit.
    CHECK(reason_text(u, ValueWeights{}) == "dep1#0");
  }
  CHECK(copies == 1);
}

TEST_CASE("retrieved: hits on the focus, on unknown units and on lines that moved are skipped",
          "[context][retrieved]") {
  Project p;
  RetrievedFacet retrieved;
  retrieved.hits.push_back(hit("main.py", "summarize", 4, 6));         // the focus itself
  retrieved.hits.push_back(hit("util.py", "no_such_function", 1, 3));  // not in the file
  retrieved.hits.push_back(hit("util.py", "normalize_rows", 40, 44));  // no overlap
  retrieved.hits.push_back(hit("gone.py", "helper", 1, 2));            // not sent, no text
  RetrievedUnits hits = resolve_retrieved(retrieved, p.index, p.cache);
  CHECK(hits.unresolved == 3);
  const DepsStats stats = expand_dependencies(p.f.candidates, p.index, {}, p.f.arena, &hits);
  CHECK(stats.retrieved == 0);
  for (const Unit& u : p.f.candidates.units) CHECK(u.reasons.retrieval_rank < 0);
}

TEST_CASE("retrieved: a hit outside the task's files is shown from its text at its lines",
          "[context][retrieved]") {
  Project p;
  RetrievedFacet retrieved;
  RetrievedFacet::Hit h = hit("lib/cells.py", "Table.clean_cell", 12, 14);
  h.text =
      "    def clean_cell(self, cell):\n"
      "        \"\"\"Trims a cell.\"\"\"\n"
      "        return cell.strip()\n";
  retrieved.hits.push_back(h);
  RetrievedUnits hits = resolve_retrieved(retrieved, p.index, p.cache);
  REQUIRE(hits.entries.size() == 1);
  expand_dependencies(p.f.candidates, p.index, {}, p.f.arena, &hits);
  PruneOptions o;
  o.budget_tokens = 400;
  const PruneResult r = prune(p.f.candidates, EstimateCounter(), o, p.f.arena);
  const Shown* s = shown(p.f.candidates, r, "clean_cell");
  REQUIRE(s);
  CHECK(s->reason == "retr#0");
  const Unit& u = p.f.candidates.units[s->unit];
  CHECK(p.f.candidates.files[u.file].path == "lib/cells.py");
  CHECK(u.first_row == 11);  // line 12, 0-based
  CHECK(r.text.find("# file: lib/cells.py") != std::string::npos);
  CHECK(r.text.find("def clean_cell(self, cell):") != std::string::npos);
  CHECK(r.text.find("11 lines elided") != std::string::npos);  // the rows above it
}
