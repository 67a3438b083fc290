// The usage signal (call co-occurrence, usage.h): called names of a text and of chunks, the
// index's callers / definitions lookups under updates and exclusion, and the search's usage
// list on a tiny hand-made project where sibling functions vote for the helper the cursor's
// function has not named yet; the local list, where the rest of the cursor's file votes.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "stages/retrieval/index.h"
#include "stages/retrieval/search.h"
#include "stages/retrieval/usage.h"

namespace vsynth::stages::retrieval {
namespace {

std::vector<std::string> names_of(const std::vector<Hit>& hits) {
  std::vector<std::string> out;
  for (const Hit& h : hits) out.push_back(h.data->name);
  return out;
}

TEST_CASE("called_names: identifiers before '(', keywords and the unit's own name left out",
          "[retrieval]") {
  const std::string text =
      "def total(cart, tax):\n"
      "    if (cart):\n"
      "        rows = cart.items ()\n"
      "        return total(rows) + round(tax(rows), 2) + Receipt(rows).amount\n"
      "    while (x): pass\n";
  CHECK(called_names(text, "python", "total") ==
        std::vector<std::string>{"Receipt", "items", "round", "tax"});
  // Without a language, keywords are names like the others; digits never start one.
  CHECK(called_names("if (a) f1(b) 2(c)", "", "") == std::vector<std::string>{"f1", "if"});
  CHECK(called_names("for (;;) { sizeof(x); g(y); }", "c", "") == std::vector<std::string>{"g"});
}

TEST_CASE("chunks carry the names their own rows call, not their container's row", "[retrieval]") {
  const std::string text =
      "class Cart(Base):\n"
      "    def receipt(self):\n"
      "        return format_lines(self.rows())\n";
  const std::vector<Chunk> chunks = chunk_file("shop/cart.py", text, {}, nullptr);
  const Chunk* method = nullptr;
  for (const Chunk& c : chunks) {
    if (c.name == "Cart.receipt") method = &c;
  }
  REQUIRE(method != nullptr);
  CHECK(method->calls == std::vector<std::string>{"format_lines", "rows"});
}

TEST_CASE("the index's callers and definitions follow updates and exclusion", "[retrieval]") {
  Index index(nullptr, {});
  index.update_file("a.py", "def fa():\n    load()\n    clean()\n");
  index.update_file("b.py", "def fb():\n    load()\n\ndef clean():\n    pass\n");
  const std::vector<std::string> load = {"load"}, clean = {"clean"}, both = {"load", "clean"};
  CHECK(names_of(index.callers(load, {})) == std::vector<std::string>{"fa", "fb"});
  const std::vector<Hit> callers = index.callers(both, {});
  REQUIRE(callers.size() == 2);
  CHECK(callers[0].data->name == "fa");
  CHECK(callers[0].score == 2);  // fa calls both names, fb one
  CHECK(index.caller_counts(both, {}) == std::vector<uint32_t>{2, 1});
  CHECK(index.caller_counts(both, {"a.py"}) == std::vector<uint32_t>{1, 0});
  CHECK(names_of(index.callers(load, {"b.py"})) == std::vector<std::string>{"fa"});
  CHECK(names_of(index.definitions(clean, {})) == std::vector<std::string>{"clean"});
  CHECK(index.definitions(clean, {"b.py"}).empty());

  // An edit that drops a call drops its posting; a removed file drops its definitions.
  index.update_file("a.py", "def fa():\n    clean()\n");
  CHECK(names_of(index.callers(load, {})) == std::vector<std::string>{"fb"});
  index.remove_file("b.py");
  CHECK(index.definitions(clean, {}).empty());
  CHECK(index.caller_counts(both, {}) == std::vector<uint32_t>{0, 1});
}

// A project where the functions that load and split rows also normalize them (two of
// them), one that loads renders instead, and `normalize` vs `render` are each defined once;
// `emit` is defined in four files (ambiguous).
void fill_project(Index& index) {
  index.update_file("pkg/helpers.py",
                    "def normalize(rows):\n    return [r.strip() for r in rows]\n\n"
                    "def render(data):\n    return str(data)\n\n"
                    "def load(path):\n    return open(path).read()\n\n"
                    "def split_rows(data):\n    return data.split()\n");
  index.update_file("pkg/orders.py",
                    "def read_orders(path):\n    data = load(path)\n"
                    "    rows = split_rows(data)\n    emit(rows)\n    return normalize(rows)\n");
  index.update_file("pkg/users.py",
                    "def read_users(path):\n    data = load(path)\n"
                    "    rows = split_rows(data)\n    return normalize(rows)\n");
  index.update_file("pkg/report.py",
                    "def show(path):\n    data = load(path)\n    return render(data)\n");
  for (int i = 0; i < 4; ++i) {
    index.update_file("pkg/emit" + std::to_string(i) + ".py", "def emit(x):\n    print(x)\n");
  }
}

// The cursor's function, cut before its call to normalize.
SearchQuery cursor_query() {
  SearchQuery q;
  q.cursor_path = "pkg/items.py";
  q.focus_text = "def read_items(path):\n    data = load(path)\n    rows = split_rows(data)\n";
  q.focus_first_line = 1;
  q.focus_last_line = 3;
  q.calls = called_names(q.focus_text, "python", "read_items");
  q.identifiers = {"split_rows", "data", "load", "path"};
  return q;
}

TEST_CASE("the usage list ranks the helper the co-callers call first", "[retrieval]") {
  Index shared(nullptr, {});
  fill_project(shared);
  Index overlay(nullptr, {});
  const SearchQuery q = cursor_query();
  overlay.update_file(q.cursor_path, q.focus_text);
  SearchOptions o;
  o.weight_lexical = 0;
  o.weight_structural = 0;
  o.weight_usage = 1;
  const facets::RetrievedFacet r = search(shared, overlay, {}, q, o, nullptr, nullptr);
  REQUIRE(r.hits.size() >= 2);
  // normalize: two co-callers sharing both of read_items' calls; render: one sharing one.
  CHECK(r.hits[0].name == "normalize");
  CHECK(r.hits[0].usage_rank == 1);
  CHECK(r.hits[1].name == "render");
  CHECK(r.hits[1].usage_rank == 2);
  for (const auto& h : r.hits) {
    CHECK(h.name != "emit");        // four definitions: ambiguous
    CHECK(h.name != "load");        // named already
    CHECK(h.name != "split_rows");  // named already
    CHECK(h.name != "read_items");  // the focus itself
  }

  // Weight 0: no usage list, no usage ranks.
  o.weight_usage = 0;
  o.weight_lexical = 1;
  for (const auto& h : search(shared, overlay, {}, q, o, nullptr, nullptr).hits) {
    CHECK(h.usage_rank == 0);
  }
}

TEST_CASE("the usage list sees the task's version of a file, not the shared one", "[retrieval]") {
  Index shared(nullptr, {});
  fill_project(shared);
  // The task's version of users.py no longer normalizes: only orders.py votes for it, and a
  // co-caller of the task's own file counts with the version the task sent.
  Index overlay(nullptr, {});
  overlay.update_file("pkg/users.py",
                      "def read_users(path):\n    data = load(path)\n"
                      "    rows = split_rows(data)\n    return render(rows)\n");
  SearchQuery q = cursor_query();
  q.cursor_path = "pkg/items.py";
  SearchOptions o;
  o.weight_lexical = 0;
  o.weight_structural = 0;
  const std::unordered_set<std::string> exclude = {"pkg/users.py"};
  const facets::RetrievedFacet r = search(shared, overlay, exclude, q, o, nullptr, nullptr);
  REQUIRE(r.hits.size() >= 2);
  // render: read_users (both calls shared) and show; normalize: read_orders alone.
  CHECK(r.hits[0].name == "render");
  CHECK(r.hits[1].name == "normalize");
}

TEST_CASE("the usage list keeps to the focus's language family", "[retrieval]") {
  Index shared(nullptr, {});
  fill_project(shared);
  // Java code calling the same names: neither its calls vote nor its definitions are hits.
  shared.update_file("java/Rows.java",
                     "class Rows {\n"
                     "  void normalize(String s) { }\n"
                     "  void finish(String s) { }\n"
                     "  void readAll(String p) {\n"
                     "    String data = load(p);\n"
                     "    split_rows(data);\n"
                     "    finish(data);\n"
                     "  }\n"
                     "}\n");
  Index overlay(nullptr, {});
  SearchOptions o;
  o.weight_lexical = 0;
  o.weight_structural = 0;
  const facets::RetrievedFacet r = search(shared, overlay, {}, cursor_query(), o, nullptr, nullptr);
  REQUIRE(!r.hits.empty());
  CHECK(r.hits[0].name == "normalize");
  CHECK(r.hits[0].path == "pkg/helpers.py");
  for (const auto& h : r.hits) CHECK(h.path != "java/Rows.java");
}

// A test file whose other tests connect and open cursors (db.py defines both), one also
// closes (close: defined in four files, ambiguous); the cursor is in a new test that has
// named nothing yet.
const char* kTestFile =
    "def test_insert():\n    c = connect(URL)\n    cur = open_cursor(c)\n    cur.run(1)\n\n"
    "def test_select():\n    c = connect(URL)\n    cur = open_cursor(c)\n    close(cur)\n\n"
    "def test_ping():\n    c = connect(URL)\n\n"
    "def test_update():\n    value = 3\n";

void fill_db_project(Index& shared) {
  shared.update_file("pkg/db.py",
                     "def connect(url):\n    return Conn(url)\n\n"
                     "def open_cursor(conn):\n    return conn.cursor()\n\n"
                     "def vacuum(conn):\n    conn.run('VACUUM')\n");
  for (int i = 0; i < 4; ++i) {
    shared.update_file("pkg/close" + std::to_string(i) + ".py", "def close(x):\n    x.done()\n");
  }
}

SearchQuery test_file_query() {
  SearchQuery q;
  q.cursor_path = "tests/test_db.py";
  q.focus_text = "def test_update():\n    value = 3\n";
  q.focus_first_line = 14;
  q.focus_last_line = 15;
  q.identifiers = {"value"};
  return q;
}

TEST_CASE("the local list ranks what the rest of the cursor's file calls", "[retrieval]") {
  Index shared(nullptr, {});
  fill_db_project(shared);
  const SearchQuery q = test_file_query();
  Index overlay(nullptr, {});
  overlay.update_file(q.cursor_path, kTestFile);
  SearchOptions o;
  o.weight_lexical = 0;
  o.weight_usage = 0;
  o.weight_structural = 0;
  o.weight_local = 1;
  const std::unordered_set<std::string> exclude = {q.cursor_path};
  const facets::RetrievedFacet r = search(shared, overlay, exclude, q, o, nullptr, nullptr);
  REQUIRE(r.hits.size() == 2);
  // connect: called by three of the file's other tests; open_cursor by two.
  CHECK(r.hits[0].name == "connect");
  CHECK(r.hits[0].local_rank == 1);
  CHECK(r.hits[1].name == "open_cursor");
  CHECK(r.hits[1].local_rank == 2);
  CHECK(r.hits[0].usage_rank == 0);  // the focus calls nothing: no usage list

  // A name the focus already names is not proposed again.
  SearchQuery named = q;
  named.identifiers.push_back("connect");
  const facets::RetrievedFacet n = search(shared, overlay, exclude, named, o, nullptr, nullptr);
  REQUIRE(n.hits.size() == 1);
  CHECK(n.hits[0].name == "open_cursor");

  // The cursor's file unchanged from the shared index (no overlay copy): the same list.
  Index empty(nullptr, {});
  shared.update_file(q.cursor_path, kTestFile);
  const facets::RetrievedFacet s = search(shared, empty, {}, q, o, nullptr, nullptr);
  REQUIRE(s.hits.size() == 2);
  CHECK(s.hits[0].name == "connect");

  // Weight 0: no local list.
  o.weight_local = 0;
  o.weight_lexical = 1;
  for (const auto& h : search(shared, overlay, exclude, q, o, nullptr, nullptr).hits) {
    CHECK(h.local_rank == 0);
  }
}

TEST_CASE("the per-file cap leaves the cursor's own file alone", "[retrieval]") {
  // Three helpers of the cursor's file and two of another file, each called by a sibling.
  const std::string cursor_file =
      "def h1(x):\n    return x\n\ndef h2(x):\n    return x\n\ndef h3(x):\n    return x\n\n"
      "def a():\n    h1(1)\n    h2(2)\n    h3(3)\n    x1(4)\n    x2(5)\n\n"
      "def focus():\n    pass\n";
  Index shared(nullptr, {});
  shared.update_file("pkg/other.py", "def x1(v):\n    return v\n\ndef x2(v):\n    return v\n");
  SearchQuery q;
  q.cursor_path = "pkg/main.py";
  q.focus_text = "def focus():\n    pass\n";
  q.focus_first_line = 17;
  q.focus_last_line = 18;
  Index overlay(nullptr, {});
  overlay.update_file(q.cursor_path, cursor_file);
  SearchOptions o;
  o.weight_lexical = 0;
  o.weight_usage = 0;
  o.per_file_cap = 1;
  const facets::RetrievedFacet r = search(shared, overlay, {q.cursor_path}, q, o, nullptr, nullptr);
  int own = 0, other = 0;
  for (const auto& h : r.hits) (h.path == q.cursor_path ? own : other) += 1;
  CHECK(own == 3);
  CHECK(other == 1);
}

}  // namespace
}  // namespace vsynth::stages::retrieval
