// Incremental syntax recognisers for Python 3 and C: is the text so far a prefix of some
// syntactically valid program?
//
// Each recogniser is a hand-built pushdown machine over bytes: a lexer (strings, f-strings with
// their replacement fields, comments, numbers, identifiers, C preprocessor lines) feeding a few
// token-level rules (bracket matching, Python INDENT/DEDENT and line continuation, the token a
// `def` / `class` needs next, two operands without an operator between them, a logical line
// that ends on an operator or opens a block without one). It recognises a sound
// over-approximation of the language: every prefix of a valid program stays alive; many
// invalid ones die at the first byte that rules out every completion. Where the language
// escapes a byte-level view (C macros that hide brackets, conditional compilation, f-strings
// nested deeper than the state holds, more indentation levels than it holds) it stops checking
// that rule for the rest of the text instead of guessing.
//
// The whole state is a fixed-size value (about 100 bytes, no heap): copying it is how the
// vocabulary walk (vocab_table.h) tries every token from one position.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace vsynth::stages::grammar {

enum class Language : uint8_t { Python, C };

// "python" / "c" (also "py", "python3", case-insensitive); nullopt for anything else.
std::optional<Language> language_from_name(std::string_view name);
const char* to_string(Language l);
// The languages the recognisers know, as messages list them: "python, c".
const char* supported_languages();

struct PyState {
  uint8_t mode = 0;       // PyMode (python.cpp): where the next byte lands
  uint8_t quote = 0;      // the open string's quote character
  uint8_t str_flags = 0;  // triple-quoted / f-string, for the open string
  uint8_t run = 0;        // quotes seen in a row (string ends, openings); dots; last number char
  uint8_t word_len = 0;   // bytes of the identifier being read (saturates)
  char word[9] = {};      // its first bytes: keywords and string prefixes are short
  uint8_t prev = 0;       // the previous significant token's class on this logical line
  uint8_t last = 0;       // its detail: an operator's character, a keyword's id
  uint8_t expect = 0;     // what a `def` / `class` header needs next
  uint8_t line = 0;       // logical-line flags: first token seen, `import` seen, soft keyword
  uint8_t flags = 0;      // expect an indented block; lenient indentation; permissive
  uint8_t n_indent = 0;   // indentation levels above column 0 (up to kIndents)
  uint16_t col = 0;       // the indentation column being measured at a line start
  uint16_t depth = 0;     // open brackets at the top level (may exceed kBrackets)
  uint8_t n_ctx = 0;      // f-string nesting (up to kContexts)
  static constexpr int kIndents = 14, kBrackets = 28, kContexts = 4;
  uint16_t indent[kIndents] = {};
  char open[kBrackets] = {};  // the open brackets, innermost last
  struct Ctx {
    uint8_t kind = 0;   // f-string literal part, replacement field, format spec
    uint8_t quote = 0;  // f-string: its quote character
    uint8_t triple = 0;
    uint8_t depth = 0;  // replacement field: brackets open inside it
  } ctx[kContexts];
};

struct CState {
  uint8_t mode = 0;          // CMode (c.cpp)
  uint8_t quote = 0;         // the open string / character literal's quote
  uint8_t line_start = 1;    // only whitespace so far on this line
  uint8_t lenient = 0;       // conditional compilation or a macro with unbalanced brackets seen
  uint8_t in_directive = 0;  // the block comment / string being read is inside a # line
  uint8_t word_len = 0;      // the directive name being read
  char word[7] = {};
  int8_t pp_balance = 0;  // brackets a #define opens minus those it closes
  uint16_t depth = 0;
  static constexpr int kBrackets = 48;
  char open[kBrackets] = {};
};

struct SyntaxState {
  Language language = Language::Python;
  bool dead = false;
  union {
    PyState py;
    CState c;
  };
  SyntaxState() : py() {}
  explicit SyntaxState(Language l);
};

// Feeds bytes; false (and the state marked dead) once no continuation can make a valid program.
bool feed(SyntaxState& s, std::string_view bytes);
bool feed(SyntaxState& s, char byte);

// The text fed so far is a whole valid program (as far as the recogniser sees): no open string,
// comment, bracket or block header, no line ending on an operator.
bool complete(const SyntaxState& s);

}  // namespace vsynth::stages::grammar
