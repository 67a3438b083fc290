// Units and their signature / name forms in each language: what a definition shows when its
// body is left out (parameters, types, return type, first doc line), and which blocks become
// units, containers and members.
#include <catch2/catch.hpp>

#include "tests/context/context_test_util.h"

using namespace vsynth::stages::context;
using vsynth::stages::context::test::Fixture;

TEST_CASE("python: signatures keep decorators, types, defaults and the docstring's first line",
          "[context][summarize]") {
  Fixture f("shapes.py", R"(<|>import math
from typing import (
    List,
    Optional,  # maybe
)

LIMIT: int = compute_limit(
    1, 2)


@dataclass
class Circle(Shape):
    """A circle.

    More text.
    """
    r: float = 1.0

    def __init__(self, r: float = 1.0) -> None:
        self.r = r

    @property
    async def area(self, *, scale: Optional[float] = None) -> float:
        """Area of the circle.

        Long description.
        """
        return math.pi * self.r ** 2
)");
  CHECK(f.unit("area").signature ==
        "    @property\n"
        "    async def area(self, *, scale: Optional[float] = None) -> float:\n"
        "        \"\"\"Area of the circle.\"\"\"\n"
        "        ...\n");
  CHECK(f.unit("area").kind == UnitKind::Method);
  CHECK(f.unit("area").name_form == "    # method area\n");
  CHECK(f.unit("__init__").kind == UnitKind::Constructor);
  CHECK(f.unit("__init__").signature ==
        "    def __init__(self, r: float = 1.0) -> None:\n        ...\n");
  const Unit& circle = f.unit("Circle");
  CHECK(circle.container);
  CHECK(circle.kind == UnitKind::Class);
  CHECK(circle.full.substr(0, 11) == "@dataclass\n");  // header rows include the docstring
  CHECK(circle.signature == "@dataclass\nclass Circle(Shape):\n    \"\"\"A circle.\"\"\"\n");
  CHECK(circle.name_form == "@dataclass\nclass Circle(Shape):\n");
  CHECK(f.unit("r").kind == UnitKind::Field);
  // Imports collapse onto one line without comments; a long initializer is elided.
  CHECK(f.unit("from typing import (\n    List,\n    Optional,  # maybe\n)").signature ==
        "from typing import (List, Optional,)\n");
  CHECK(f.unit("LIMIT").signature == "LIMIT: int = ...\n");
}

TEST_CASE("c and c++: prototypes with the doc comment, classes and namespaces as containers",
          "[context][summarize]") {
  Fixture c("m.c", R"(<|>#include <stdio.h>

/* Adds two numbers.
 * Second line. */
static inline int add(int a, int b) {
  return a + b;
}

typedef struct {
  int x;
  int y;
} point_t;
)");
  CHECK(c.unit("add").signature == "// Adds two numbers.\nstatic inline int add(int a, int b);\n");
  CHECK(c.unit("point_t").container);
  CHECK(c.unit("x").kind == UnitKind::Field);

  Fixture cpp("w.cpp", R"(<|>namespace ns {
// A widget.
class Widget : public Base {
 public:
  Widget(int n) : n_(n) {}
  template <class T> T get(const T& fallback) const noexcept { return fallback; }
 private:
  int n_;
};
void Widget::run(int times) { while (times--) step(); }
}  // namespace ns
)");
  CHECK(cpp.unit("Widget").kind == UnitKind::Class);
  CHECK(cpp.unit("Widget").signature == "// A widget.\nclass Widget : public Base {\n");
  CHECK(cpp.unit("get").signature ==
        "  template <class T> T get(const T& fallback) const noexcept;\n");
  // A constructor's member-initializer list is body, not signature.
  const Unit& ctor = cpp.candidates.units[static_cast<std::size_t>(cpp.index("Widget") + 1)];
  CHECK(ctor.kind == UnitKind::Constructor);
  CHECK(ctor.signature == "  Widget(int n);\n");
  CHECK(cpp.unit("Widget::run").kind == UnitKind::Method);
  CHECK(cpp.unit("Widget::run").signature == "void Widget::run(int times);\n");
  CHECK(cpp.unit("ns").kind == UnitKind::Namespace);
  CHECK(!cpp.unit("ns").close.empty());
}

TEST_CASE("c: an include guard holds its members by its directive row alone",
          "[context][summarize]") {
  Fixture h("g.h", R"(<|>/* Licensed under
   some license. */
#ifndef G_H
#define G_H
#ifdef WIN32
#define EXPORT __declspec(dllexport)
#endif
#include <stdio.h>

typedef struct {
  int x;
} point_t;

#endif
)");
  const Unit& guard = h.unit("G_H");
  REQUIRE(guard.container);
  // Its header (from the license comment to the first member) is what the full form shows;
  // the name form, what showing a member needs, is the directive row.
  CHECK(guard.full.find("Licensed") != std::string_view::npos);
  REQUIRE(guard.has(Form::Name));
  CHECK(guard.name_form == "#ifndef G_H\n");
  CHECK(h.unit("point_t").parent == h.index("G_H"));
}

TEST_CASE("go, java, rust: header up to the body plus a placeholder", "[context][summarize]") {
  Fixture go("s.go", R"(<|>package srv

// Server serves requests.
type Server struct {
	addr string
}

// Run starts the server.
func (s *Server) Run(ctx context.Context, n int) (int, error) {
	return 0, nil
}

func NewServer(addr string) *Server { return &Server{addr: addr} }
)");
  CHECK(go.unit("Run").kind == UnitKind::Method);
  CHECK(go.unit("Run").signature ==
        "// Run starts the server.\n"
        "func (s *Server) Run(ctx context.Context, n int) (int, error) { /* ... */ }\n");
  CHECK(go.unit("Server").container);
  CHECK(go.unit("Server").signature == "// Server serves requests.\ntype Server struct {\n");
  CHECK(go.unit("NewServer").kind == UnitKind::Constructor);

  Fixture java("T.java", R"(<|>package a.b;

/** A thing with a size. */
public class Thing extends Base {
  private final int n;

  /** Builds one.
   * @param n the size */
  public Thing(int n) { this.n = n; }

  @Override
  public <T> List<T> take(List<T> xs, int k) throws IOException {
    return xs.subList(0, k);
  }
}
)");
  CHECK(java.unit("take").signature ==
        "  @Override\n"
        "  public <T> List<T> take(List<T> xs, int k) throws IOException { /* ... */ }\n");
  CHECK(java.unit("Thing").container);
  CHECK(java.candidates.units[static_cast<std::size_t>(java.index("Thing") + 2)].signature ==
        "  // Builds one.\n  public Thing(int n) { /* ... */ }\n");

  Fixture rs("l.rs", R"(<|>use std::collections::HashMap;

/// A ledger of balances.
#[derive(Debug)]
pub struct Ledger {
    balances: HashMap<String, i64>,
}

impl Ledger {
    /// Adds `amount` to `who`.
    pub fn deposit<'a>(&mut self, who: &'a str, amount: i64) -> i64 where Self: Sized {
        0
    }
}
)");
  CHECK(rs.unit("deposit").signature ==
        "    /// Adds `amount` to `who`.\n"
        "    pub fn deposit<'a>(&mut self, who: &'a str, amount: i64) -> i64 where Self: Sized "
        "{ /* ... */ }\n");
  const Unit& ledger = rs.unit("Ledger");
  CHECK(ledger.container);
  CHECK(ledger.first_row == 2);  // the doc comment and the attribute belong to it
  CHECK(ledger.signature == "/// A ledger of balances.\npub struct Ledger {\n");
}

TEST_CASE("javascript, typescript, tsx: methods, arrow functions, interfaces",
          "[context][summarize]") {
  Fixture js("k.js", R"(<|>import x, { y as z } from 'z';

class K extends L {
  constructor(a) {
    super(a);
  }
  // Sums things.
  sum(a, b = 2) {
    return a + b;
  }
}

export const twice = (n) => {
  return n * 2;
};
)");
  CHECK(js.unit("sum").signature == "  // Sums things.\n  sum(a, b = 2) { /* ... */ }\n");
  CHECK(js.unit("constructor").kind == UnitKind::Constructor);
  CHECK(js.unit("twice").kind == UnitKind::Function);
  CHECK(js.unit("twice").signature == "export const twice = (n) => { /* ... */ }\n");

  for (const char* path : {"c.ts", "c.tsx"}) {
    Fixture ts(path, R"(<|>export interface Shape {
  area(): number;
}

export class Circle implements Shape {
  private r: number = 1;
  /** Area. */
  area(): number {
    return Math.PI * this.r * this.r;
  }
}

function scale<T extends Shape>(s: T, k: number): T {
  return s;
}
)");
    CHECK(ts.unit("Shape").container);
    CHECK(ts.unit("area").kind == UnitKind::Method);
    CHECK(ts.candidates.units[static_cast<std::size_t>(ts.index("Circle") + 2)].signature ==
          "  // Area.\n  area(): number { /* ... */ }\n");
    CHECK(ts.unit("scale").signature ==
          "function scale<T extends Shape>(s: T, k: number): T { /* ... */ }\n");
  }
}

TEST_CASE("rows are never split: nodes sharing a row are one unit", "[context][summarize]") {
  Fixture f("r.py", "<|>a = 1; b = 2\n\ndef f():\n    return 1\n");
  REQUIRE(f.candidates.units.size() == 2);
  CHECK(f.candidates.units[0].full == "a = 1; b = 2\n");
  CHECK(f.candidates.units[1].full == "def f():\n    return 1\n");
  CHECK(f.candidates.units[1].blank_before == 1);
}
