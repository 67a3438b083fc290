// The Python 3 recogniser (recognizer.h): a byte-level lexer whose modes are PyMode below and
// the token rules of on_token / end_line / start_line. Sound against CPython 3.12 (PEP 701
// f-strings: any quote may open a nested string inside a replacement field) and earlier.
#include <array>
#include <cstring>
#include <string_view>

#include "stages/grammar/python.h"

namespace vsynth::stages::grammar::python {

namespace {

enum PyMode : uint8_t {
  kLineStart,     // measuring a logical line's indentation
  kCode,          // between tokens (top level, or a replacement field's code when n_ctx > 0)
  kIdent,         // inside a name or keyword
  kNumber,        // inside a number (greedy: digits, letters, `_`, `.`, exponent signs)
  kDot,           // after `.` (run: dots seen): attribute, `.5`, or `...`
  kComment,       // `#` after code on the line: the newline still ends the logical line
  kBlankComment,  // `#` on an otherwise blank line
  kBackslash,     // `\` outside a string: only a newline may follow
  kStrOpen,       // one quote seen: "" or """ or a string body next
  kStrOpen2,      // two quotes seen: the empty string, or a triple-quoted one
  kStr,           // a string's body (an f-string's literal part when str_flags has kF)
  kStrEsc,        // after `\` in a string
  kStrNamed0,     // after `\N` in a non-raw f-string: `{name}` is an escape, not a field
  kStrNamed,      // inside `\N{...}`
  kFBrace,        // `{` in an f-string's literal part: `{{` or a replacement field
  kFSpec,         // a replacement field's format spec (after its top-level `:`)
};

// str_flags
constexpr uint8_t kTriple = 1, kF = 2, kRaw = 4;
// flags
constexpr uint8_t kExpectIndent = 1, kLenientIndent = 2, kPermissive = 4;
// line
constexpr uint8_t kFirstSeen = 1, kImport = 2, kSoftPrev = 4;
constexpr uint8_t kCompound = 8;  // the line starts with a compound statement's keyword
constexpr uint8_t kColon = 16;    // a `:` outside brackets seen on the line
constexpr uint8_t kLambda = 32;   // `lambda` seen on the line (its defaults hold a lone `=`)
// prev
enum Prev : uint8_t { kNone, kOperand, kString, kOp, kKeyword };
// expect
// kSecondEq: a `=` in a block header before its `:` must be the first half of `==`.
enum Expect : uint8_t { kNothing, kDefName, kDefOpen, kClassName, kClassTail, kSecondEq };
// Ctx::kind: where a replacement field returns when its `}` comes.
enum CtxKind : uint8_t { kToLiteral, kToSpec };

enum class Tk : uint8_t {
  Name,
  SoftName,
  Number,
  String,
  Ellipsis,
  KwOperand,
  Keyword,
  Open,
  Close,
  Op
};

struct Keyword {
  std::string_view word;
  Tk kind;
  bool can_end;  // may end a logical line
};
// Keyword ids: the index in kKeywords (| 0x40 when it may end a line), or these three.
enum KwId : uint8_t { kKwFrom = 18, kKwDef = 0xF0, kKwClass, kKwImport };

constexpr std::array<Keyword, 38> kKeywords{{
    {"False", Tk::KwOperand, true},  {"None", Tk::KwOperand, true},
    {"True", Tk::KwOperand, true},   {"and", Tk::Keyword, false},
    {"as", Tk::Keyword, false},      {"assert", Tk::Keyword, false},
    {"async", Tk::Keyword, false},   {"await", Tk::Keyword, false},
    {"break", Tk::Keyword, true},    {"class", Tk::Keyword, false},
    {"continue", Tk::Keyword, true}, {"def", Tk::Keyword, false},
    {"del", Tk::Keyword, false},     {"elif", Tk::Keyword, false},
    {"else", Tk::Keyword, false},    {"except", Tk::Keyword, false},
    {"finally", Tk::Keyword, false}, {"for", Tk::Keyword, false},
    {"from", Tk::Keyword, false},    {"global", Tk::Keyword, false},
    {"if", Tk::Keyword, false},      {"import", Tk::Keyword, false},
    {"in", Tk::Keyword, false},      {"is", Tk::Keyword, false},
    {"lambda", Tk::Keyword, false},  {"nonlocal", Tk::Keyword, false},
    {"not", Tk::Keyword, false},     {"or", Tk::Keyword, false},
    {"pass", Tk::Keyword, true},     {"raise", Tk::Keyword, true},
    {"return", Tk::Keyword, true},   {"try", Tk::Keyword, false},
    {"while", Tk::Keyword, false},   {"with", Tk::Keyword, false},
    {"yield", Tk::Keyword, true},    {"match", Tk::SoftName, true},
    {"case", Tk::SoftName, true},    {"type", Tk::SoftName, true},
}};

bool is_ident_start(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
}
bool is_ident_char(unsigned char c) {
  return is_ident_start(c) || (c >= '0' && c <= '9');
}
bool is_digit(unsigned char c) {
  return c >= '0' && c <= '9';
}
char closer_of(char open) {
  return open == '(' ? ')' : open == '[' ? ']' : '}';
}

std::string_view word_of(const PyState& s) {
  return {s.word, s.word_len};
}

// A string prefix (r, b, u, f, t and their two-letter mixes, any case): 0 when `w` is none,
// else 1, + 2 when it makes an f-string or t-string, + 4 when raw.
int string_prefix(std::string_view w) {
  if (w.empty() || w.size() > 2) return 0;
  bool f = false, r = false, b = false, u = false;
  for (char c : w) {
    switch (c | 0x20) {
      case 'f':
      case 't':
        if (f) return 0;
        f = true;
        break;
      case 'r':
        if (r) return 0;
        r = true;
        break;
      case 'b':
        if (b) return 0;
        b = true;
        break;
      case 'u':
        if (u) return 0;
        u = true;
        break;
      default:
        return 0;
    }
  }
  if (u && w.size() > 1) return 0;  // "u" combines with nothing
  if (b && f) return 0;
  return 1 | (f ? 2 : 0) | (r ? 4 : 0);
}

// The token rules: def / class headers, operand adjacency, brackets.
bool on_token(PyState& s, Tk tk, char d) {
  switch (s.expect) {
    case kDefName:
    case kClassName:
      if (tk != Tk::Name && tk != Tk::SoftName) return false;
      s.expect = s.expect == kDefName ? kDefOpen : kClassTail;
      break;
    case kDefOpen:
      if (!(tk == Tk::Open && (d == '(' || d == '['))) return false;
      s.expect = kNothing;
      break;
    case kClassTail:
      if (!((tk == Tk::Open && (d == '(' || d == '[')) || (tk == Tk::Op && d == ':'))) return false;
      s.expect = kNothing;
      break;
    case kSecondEq:
      if (!(tk == Tk::Op && d == '=')) return false;  // `if x = 1:`
      s.expect = kNothing;
      return true;
    default:
      break;
  }
  const bool operand = tk == Tk::Name || tk == Tk::SoftName || tk == Tk::Number ||
                       tk == Tk::String || tk == Tk::Ellipsis || tk == Tk::KwOperand;
  // Two operands in a row: only adjacent string literals, or a soft keyword opening the line
  // (`match x:`, `case _:`, `type X = int`).
  if (operand && (s.prev == kOperand || s.prev == kString)) {
    if (!(tk == Tk::String && s.prev == kString) && !(s.line & kSoftPrev)) return false;
  }
  if (tk == Tk::Close) {
    // After an operator only `,` (trailing), `:` (slices), `/` (positional-only marker) or an
    // opener (empty brackets) may close a bracket.
    if (s.prev == kOp && !std::strchr(",:/([{", s.last)) return false;
    if (s.depth == 0) return false;
    if (s.depth <= PyState::kBrackets && closer_of(s.open[s.depth - 1]) != d) return false;
    --s.depth;
  } else if (tk == Tk::Open) {
    if (s.depth < PyState::kBrackets) s.open[s.depth] = d;
    if (s.depth < 0xFFFF) ++s.depth;
  }
  // A soft keyword starts a statement: first on the line, or after `;` or a header's `:`.
  if (tk == Tk::Op && d == ':' && s.depth == 0) s.line |= kColon;
  // A lone `=` (not after `=`, `!`, `<`, `>`, `:`) in a block header before its `:` is an
  // assignment where a condition belongs: only `==` can follow.
  if (tk == Tk::Op && d == '=' && s.depth == 0 && (s.line & kCompound) &&
      !(s.line & (kColon | kLambda)) && !(s.prev == kOp && std::strchr("=!<>:", s.last))) {
    s.expect = kSecondEq;
  }
  const bool soft_first =
      tk == Tk::SoftName &&
      (!(s.line & kFirstSeen) || (s.prev == kOp && (s.last == ';' || s.last == ':')));
  s.line = static_cast<uint8_t>((s.line | kFirstSeen) & ~kSoftPrev);
  if (soft_first) s.line |= kSoftPrev;
  switch (tk) {
    case Tk::String:
      s.prev = kString;
      break;
    case Tk::Name:
    case Tk::SoftName:
    case Tk::Number:
    case Tk::Ellipsis:
    case Tk::KwOperand:
    case Tk::Close:
      s.prev = kOperand;
      break;
    case Tk::Keyword:
      s.prev = kKeyword;
      s.last = static_cast<uint8_t>(d);
      if (static_cast<uint8_t>(d) == kKwDef) s.expect = kDefName;
      if (static_cast<uint8_t>(d) == kKwClass) s.expect = kClassName;
      if (static_cast<uint8_t>(d) == kKwImport) s.line |= kImport;
      break;
    case Tk::Open:
    case Tk::Op:
      s.prev = kOp;
      s.last = static_cast<uint8_t>(d);
      break;
  }
  return true;
}

// The identifier just read, as a token.
bool finish_word(PyState& s) {
  static_assert(kKeywords[kKwFrom].word == "from");
  if (s.word_len <= sizeof s.word) {
    const std::string_view w = word_of(s);
    for (std::size_t i = 0; i < kKeywords.size(); ++i) {
      const Keyword& k = kKeywords[i];
      if (k.word != w) continue;
      if (k.kind != Tk::Keyword) return on_token(s, k.kind, 0);
      // A line starting with one of these is a block header: it needs its `:` (the body may
      // follow on the same line).
      if (!(s.line & kFirstSeen) &&
          (w == "def" || w == "class" || w == "if" || w == "elif" || w == "else" || w == "while" ||
           w == "for" || w == "try" || w == "except" || w == "finally" || w == "with" ||
           w == "async")) {
        s.line |= kCompound;
      }
      if (w == "lambda") s.line |= kLambda;
      uint8_t id = static_cast<uint8_t>(i) | (k.can_end ? 0x40 : 0);
      if (w == "def") id = kKwDef;
      if (w == "class") id = kKwClass;
      if (w == "import") id = kKwImport;
      return on_token(s, Tk::Keyword, static_cast<char>(id));
    }
  }
  return on_token(s, Tk::Name, 0);
}

bool keyword_can_end(uint8_t id) {
  return id < kKwDef && (id & 0x40);
}

// The end of a logical line (a newline outside brackets at the top level).
bool end_line(PyState& s) {
  if (s.line & kFirstSeen) {
    if (s.expect != kNothing) return false;
    if ((s.line & kCompound) && !(s.line & kColon)) return false;  // a header without its `:`
    if (s.prev == kOp) {
      if (s.last == ':') {
        s.flags |= kExpectIndent;
      } else if (!(s.last == ',' || s.last == ';' || (s.last == '*' && (s.line & kImport)))) {
        return false;
      }
    } else if (s.prev == kKeyword && !keyword_can_end(s.last)) {
      return false;
    }
  }
  s.line = 0;
  s.prev = kNone;
  s.last = 0;
  s.mode = kLineStart;
  s.col = 0;
  return true;
}

// The first token of a logical line at column s.col: INDENT / DEDENT.
bool start_line(PyState& s) {
  s.mode = kCode;
  if (s.flags & kLenientIndent) {
    s.flags &= static_cast<uint8_t>(~kExpectIndent);
    return true;
  }
  const uint16_t top = s.n_indent ? s.indent[s.n_indent - 1] : 0;
  if (s.flags & kExpectIndent) {
    s.flags &= static_cast<uint8_t>(~kExpectIndent);
    if (s.col <= top) return false;  // expected an indented block
    if (s.n_indent == PyState::kIndents) {
      s.flags |= kLenientIndent;  // deeper than the state holds: stop checking indentation
    } else {
      s.indent[s.n_indent++] = s.col;
    }
    return true;
  }
  if (s.col > top) return false;  // unexpected indent
  while (s.n_indent && s.indent[s.n_indent - 1] > s.col) --s.n_indent;
  const uint16_t now = s.n_indent ? s.indent[s.n_indent - 1] : 0;
  return now == s.col;  // a dedent must land on an enclosing level
}

bool step(PyState& s, unsigned char c);

void begin_string(PyState& s, unsigned char quote, int prefix) {
  s.mode = kStrOpen;
  s.quote = quote;
  s.str_flags = static_cast<uint8_t>(((prefix & 2) ? kF : 0) | ((prefix & 4) ? kRaw : 0));
  s.run = 0;
}

// A string closed: back to the code around it.
void end_string(PyState& s) {
  s.mode = kCode;
  s.str_flags = 0;
}

bool push_field(PyState& s, uint8_t kind) {
  if (s.n_ctx == PyState::kContexts) {
    s.flags |= kPermissive;  // nested deeper than the state holds: stop checking
    return true;
  }
  PyState::Ctx& c = s.ctx[s.n_ctx++];
  c.kind = kind;
  c.quote = s.quote;
  c.triple = s.str_flags;  // the f-string's flags (triple, raw)
  c.depth = 0;
  s.mode = kCode;
  return true;
}

// `}` closing the innermost replacement field.
void close_field(PyState& s) {
  const PyState::Ctx c = s.ctx[--s.n_ctx];
  if (c.kind == kToSpec) {
    s.mode = kFSpec;
    return;
  }
  s.mode = kStr;
  s.quote = c.quote;
  s.str_flags = static_cast<uint8_t>(kF | c.triple);
  s.run = 0;
}

// A byte of a replacement field's code (no token rules there: only strings and brackets).
bool field_char(PyState& s, unsigned char c) {
  PyState::Ctx& f = s.ctx[s.n_ctx - 1];
  if (c == '"' || c == '\'') {
    begin_string(s, c, 0);
  } else if (c == '(' || c == '[' || c == '{') {
    if (f.depth < 0xFF) ++f.depth;
  } else if (c == ')' || c == ']') {
    if (f.depth) --f.depth;
  } else if (c == '}') {
    if (f.depth == 0) {
      close_field(s);
    } else {
      --f.depth;
    }
  } else if (c == ':' && f.depth == 0) {
    s.mode = kFSpec;
  } else if (c == '#') {
    s.mode = kComment;  // 3.12: a comment inside a multi-line replacement field
  } else if (is_ident_start(c)) {
    s.mode = kIdent;
    s.word_len = 1;
    s.word[0] = static_cast<char>(c);
  } else if (is_digit(c)) {
    s.mode = kNumber;
    s.run = c;
  }
  return true;
}

// A byte between tokens at the top level.
bool code_char(PyState& s, unsigned char c) {
  if (s.n_ctx) return field_char(s, c);
  switch (c) {
    case ' ':
    case '\t':
    case '\f':
    case '\r':
      return true;
    case '\n':
      return s.depth > 0 || end_line(s);
    case '#':
      s.mode = kComment;
      return true;
    case '\\':
      s.mode = kBackslash;
      return true;
    case '"':
    case '\'':
      begin_string(s, c, 0);
      return on_token(s, Tk::String, 0);
    case '.':
      s.mode = kDot;
      s.run = 1;
      return true;
    case '(':
    case '[':
    case '{':
      return on_token(s, Tk::Open, static_cast<char>(c));
    case ')':
    case ']':
    case '}':
      return on_token(s, Tk::Close, static_cast<char>(c));
    case '`':
    case '$':
    case '?':
    case 0x7f:
      return false;
    default:
      break;
  }
  if (is_digit(c)) {
    s.mode = kNumber;
    s.run = c;
    return on_token(s, Tk::Number, 0);
  }
  if (is_ident_start(c)) {
    s.mode = kIdent;
    s.word_len = 1;
    s.word[0] = static_cast<char>(c);
    return true;
  }
  if (c < 0x20) return false;  // control characters outside strings
  return on_token(s, Tk::Op, static_cast<char>(c));
}

bool line_start_char(PyState& s, unsigned char c) {
  switch (c) {
    case ' ':
      ++s.col;
      return true;
    case '\t':
      s.col = static_cast<uint16_t>((s.col / 8 + 1) * 8);
      return true;
    case '\f':
      s.col = 0;
      return true;
    case '\r':
      return true;
    case '\n':
      s.col = 0;  // a blank line
      return true;
    case '#':
      s.mode = kBlankComment;
      return true;
    default:
      return start_line(s) && code_char(s, c);
  }
}

bool ident_char(PyState& s, unsigned char c) {
  if (is_ident_char(c)) {
    if (s.word_len < sizeof s.word) s.word[s.word_len] = static_cast<char>(c);
    if (s.word_len < 0xFF) ++s.word_len;
    return true;
  }
  s.mode = kCode;
  if ((c == '"' || c == '\'') && s.word_len <= 2) {
    if (const int p = string_prefix(word_of(s))) {
      begin_string(s, c, p);
      return s.n_ctx || on_token(s, Tk::String, 0);
    }
  }
  if (!s.n_ctx && !finish_word(s)) return false;
  return code_char(s, c);
}

bool number_char(PyState& s, unsigned char c) {
  const bool sign_after_exp = (c == '+' || c == '-') && (s.run == 'e' || s.run == 'E');
  if (is_ident_char(c) || c == '.' || sign_after_exp) {
    // `1if x else 2` lexes as 1 if ...: after a letter the number may have ended before a
    // keyword, so the next token is not held to the operand rules.
    if (is_ident_start(c) && !s.n_ctx) s.prev = kNone;
    s.run = c;
    return true;
  }
  s.mode = kCode;
  return code_char(s, c);
}

bool dot_char(PyState& s, unsigned char c) {
  if (c == '.' && s.run < 3) {
    if (++s.run == 3) {
      s.mode = kCode;
      if (s.n_ctx) return true;
      // `from ...pkg import x`: relative-import dots, not an Ellipsis operand.
      const bool after_from = s.prev == kKeyword && s.last == kKwFrom;
      return after_from ? on_token(s, Tk::Op, '.') : on_token(s, Tk::Ellipsis, 0);
    }
    return true;
  }
  if (is_digit(c) && s.run == 1) {
    s.mode = kNumber;
    s.run = c;
    return s.n_ctx || on_token(s, Tk::Number, 0);
  }
  if (!s.n_ctx) {
    for (int i = 0; i < s.run; ++i) {
      if (!on_token(s, Tk::Op, '.')) return false;
    }
  }
  s.mode = kCode;
  return code_char(s, c);
}

bool string_char(PyState& s, unsigned char c) {
  const bool triple = s.str_flags & kTriple;
  if (c == '\\') {
    s.mode = kStrEsc;
    s.run = 0;
    return true;
  }
  if (c == s.quote) {
    if (!triple || ++s.run == 3) end_string(s);
    return true;
  }
  s.run = 0;
  if (c == '\n' && !triple) return false;  // a single-quoted string ends at its line
  if (c == '{' && (s.str_flags & kF)) s.mode = kFBrace;
  return true;
}

bool step(PyState& s, unsigned char c) {
  if (s.flags & kPermissive) return true;
  switch (s.mode) {
    case kLineStart:
      return line_start_char(s, c);
    case kCode:
      return code_char(s, c);
    case kIdent:
      return ident_char(s, c);
    case kNumber:
      return number_char(s, c);
    case kDot:
      return dot_char(s, c);
    case kComment:
      if (c != '\n') return true;
      s.mode = kCode;
      return code_char(s, c);
    case kBlankComment:
      if (c == '\n') {
        s.mode = kLineStart;
        s.col = 0;
      }
      return true;
    case kBackslash:
      if (c == '\r') return true;
      if (c != '\n') return false;
      s.mode = kCode;  // the lines join: no NEWLINE, no indentation
      return true;
    case kStrOpen:
      if (c == s.quote) {
        s.mode = kStrOpen2;
        return true;
      }
      s.mode = kStr;
      return string_char(s, c);
    case kStrOpen2:
      if (c == s.quote) {
        s.mode = kStr;
        s.str_flags |= kTriple;
        s.run = 0;
        return true;
      }
      end_string(s);  // ""
      return step(s, c);
    case kStr:
      return string_char(s, c);
    case kStrEsc:
      s.mode = kStr;
      if (s.str_flags & kF) {
        if (c == '{') s.mode = kFBrace;  // a backslash does not escape a brace
        if (c == 'N' && !(s.str_flags & kRaw)) s.mode = kStrNamed0;
      }
      return true;
    case kStrNamed0:
      if (c == '{') {
        s.mode = kStrNamed;
        return true;
      }
      s.mode = kStr;
      return string_char(s, c);
    case kStrNamed:
      if (c == '}') s.mode = kStr;
      return true;
    case kFBrace:
      if (c == '{') {
        s.mode = kStr;  // `{{`
        return true;
      }
      push_field(s, kToLiteral);
      return step(s, c);
    case kFSpec:
      if (c == '{') return push_field(s, kToSpec);
      if (c == '}') close_field(s);
      return true;
    default:
      return false;
  }
}

}  // namespace

bool feed(PyState& s, unsigned char c) {
  return step(s, c);
}

bool complete(PyState s) {
  if (s.flags & kPermissive) return true;
  if (!step(s, '\n')) return false;
  return s.mode == kLineStart && s.depth == 0 && s.n_ctx == 0 && !(s.flags & kExpectIndent);
}

}  // namespace vsynth::stages::grammar::python
