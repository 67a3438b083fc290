// The Python and C recognisers on their own: known-bad continuations die at the byte that rules
// out every program, tricky valid code stays alive, whole programs are complete and unfinished
// ones are not, and every shipped piece of real code is a viable prefix at every byte.
#include <catch2/catch.hpp>

#include "tests/grammar/util.h"

using vsynth::gramtest::dies_at;
using vsynth::gramtest::viable;
using vsynth::gramtest::whole;
using vsynth::stages::grammar::Language;

namespace {
constexpr Language Py = Language::Python;
constexpr Language C = Language::C;
}  // namespace

TEST_CASE("python: known-bad continuations die where they go wrong", "[grammar]") {
  CHECK(dies_at(Py, "x = 1)") == 5);  // `)` with no open bracket
  CHECK(dies_at(Py, "def 1") == 4);   // def needs a name
  CHECK(dies_at(Py, "def f:") == 5);  // ... then `(`
  CHECK(dies_at(Py, "class (A):") == 6);
  CHECK(dies_at(Py, "x = 'abc\ny = 1") == 8);           // unterminated string, newline
  CHECK(dies_at(Py, "f(1]") == 3);                      // mismatched bracket
  CHECK(dies_at(Py, "x = 1\n    y = 2") == 10);         // unexpected indent
  CHECK(dies_at(Py, "if x:\ny = 1") == 6);              // expected an indented block
  CHECK(dies_at(Py, "if x:\n        a\n    b") == 20);  // dedent to no enclosing level
  CHECK(dies_at(Py, "print \"hello\"") == 6);           // two operands (Python 2)
  CHECK(dies_at(Py, "This function returns x") == 13);  // prose in code
  CHECK(dies_at(Py, "x = \n") == 4);                    // a line ending on an operator
  CHECK(dies_at(Py, "return x +)") == 10);              // closing after an operator
  CHECK(dies_at(Py, "x = 1 \\ y") == 7);                // `\` not before a newline
  CHECK(dies_at(Py, "x = `a`") == 4);
  CHECK(dies_at(Py, "def f(x)\n") == 8);  // a header without its `:`
  CHECK(dies_at(Py, "while x\n    pass") == 7);
  CHECK(dies_at(Py, "elif month % 4 = 0:") == 17);  // an assignment where a condition belongs
  CHECK(dies_at(Py, "if x += 1:") == 8);
}

TEST_CASE("python: valid code that looks odd stays alive", "[grammar]") {
  CHECK(whole(Py, "x = (1,\n     2)\n"));                                // brackets span lines
  CHECK(whole(Py, "x = 1 + \\\n    2\n"));                               // line continuation
  CHECK(whole(Py, "s = '''a\n'b'' \"\"\" \n'''\n"));                     // triple-quoted
  CHECK(whole(Py, "s = r'\\'' + b\"\\\"\"\n"));                          // escaped quotes
  CHECK(whole(Py, "s = 'a' \"b\" f'c'\n"));                              // concatenation
  CHECK(whole(Py, "s = f\"{x!r:>{w}} {{ }} {d['k']}\"\n"));              // f-string fields
  CHECK(whole(Py, "s = f\"{f'{x}'}\" + f'{\"a\" if y else \"b\"}'\n"));  // nested
  CHECK(whole(Py, "s = f\"{x[\"k\"]}\"\n"));                             // 3.12 same quotes
  CHECK(whole(Py, "s = f\"\\N{BULLET} {x:'>4}\"\n"));                    // escapes, fill char
  CHECK(whole(Py, "from ...pkg import (a,\n  b)\nfrom . import *\n"));
  CHECK(whole(Py, "y = 1if x else 2\n"));
  CHECK(whole(Py, "match p:\n    case [a, *_]:\n        pass\n    case _:\n        pass\n"));
  CHECK(whole(Py, "type Alias = list[int]\nx = 1; type B = int\n"));
  CHECK(whole(Py, "@dec(1)\nasync def f(a, /, *, b=2) -> None:\n    return\n"));
  CHECK(whole(Py, "def f():\n    # don't\n\n    return [x\n  for x in y]  # ok\n"));
  CHECK(whole(Py, "if a:\n    if b:\n        pass\nelif c:\n    pass\nelse:\n\tpass\n"));
  CHECK(whole(Py, "x = [1, 2,]\ny = x[1:]\nz = x[::2, ...]\nprint(*x, **k)\n"));
  CHECK(whole(Py, "class A(B, metaclass=M): pass\nclass C[T]:\n    x: int = 0\n"));
  CHECK(whole(Py, "if n := f():\n    pass\nfor i in x: print(i)\nwith a as (b, c): pass\n"));
  CHECK(whole(Py, "if a == 1 and b != 2 and c <= 3 >= d:\n    x = 1\nif f(k=1): y = 2\n"));
  CHECK(whole(Py, "while (lambda v=1: v)() == 1: pass\nif lambda q=1: q: pass\n"));
  CHECK(whole(Py, ""));
  CHECK(whole(Py, "\n\n# only a comment\n"));
}

TEST_CASE("python: unfinished programs are not complete", "[grammar]") {
  CHECK_FALSE(whole(Py, "x = (1,"));
  CHECK_FALSE(whole(Py, "def f():\n"));
  CHECK_FALSE(whole(Py, "def f():\n    # body later\n"));
  CHECK_FALSE(whole(Py, "s = '''abc"));
  CHECK_FALSE(whole(Py, "x = 1 +"));
  CHECK_FALSE(whole(Py, "x = 1 \\"));
  CHECK_FALSE(whole(Py, "from x import"));
  CHECK(whole(Py, "def f():\n    return 1"));  // no final newline needed
  CHECK(viable(Py, "x = (1,"));
}

TEST_CASE("c: known-bad continuations die, valid C stays alive", "[grammar]") {
  CHECK(dies_at(C, "int x;\n}") == 7);                 // `}` at the top level
  CHECK(dies_at(C, "int f() { return (1]; }") == 19);  // mismatched bracket
  CHECK(dies_at(C, "char *s = \"abc\nx") == 14);       // unterminated string, newline
  CHECK(dies_at(C, "int x = 1; # 2") == 11);           // `#` not starting a line
  CHECK(dies_at(C, "int a = `1`;") == 8);

  CHECK(whole(C, "#include <stdio.h>\nint main(void) { printf(\"%d}\\n\", 1); return 0; }\n"));
  CHECK(whole(C, "/* { */ // }\nint x = '}';\n"));
  CHECK(whole(C, "#define OPEN {\nint f() OPEN return 0; }\n"));  // a macro hides a bracket
  CHECK(whole(C, "#if A\nint f() {\n#else\nint f(int x) {\n#endif\n  return 0;\n}\n"));
  CHECK(whole(C, "long n = 1'000'000;\nchar c = u8'a';\n"));  // C23 digit separators
  CHECK(whole(C, "#define S(x) \\\n  #x\nconst char *s = \"a\\\nb\";\n"));
  CHECK_FALSE(whole(C, "int f() {"));
  CHECK_FALSE(whole(C, "/* open"));
  CHECK_FALSE(whole(C, "char c = 'a"));
}

TEST_CASE("every shipped piece of real code is viable at every byte and complete at its end",
          "[grammar][soundness]") {
  const auto corpus = vsynth::gramtest::real_code();
  REQUIRE(corpus.size() >= 90);  // the tasks' references and sources, examples, test data
  for (const auto& rc : corpus) {
    INFO(rc.name);
    const std::string text = rc.given + rc.code;
    const std::size_t at = dies_at(rc.language, text);
    INFO("dies at byte " << at << ": ..." << text.substr(at > 40 ? at - 40 : 0, 50));
    CHECK(at == text.size());
    CHECK(whole(rc.language, text));
  }
}
