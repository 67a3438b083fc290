// The C recogniser (recognizer.h): lexical structure (strings, character literals, comments,
// line splices, preprocessor lines, C23 digit separators) and bracket matching. Macros can
// make almost any token sequence valid, so no token-order rule is checked; brackets stop being
// matched once a conditional directive (#if, #ifdef, #else, ...) or a #define with unbalanced
// brackets appears, since either can hide or duplicate them.
#include <string_view>

#include "stages/grammar/c.h"

namespace vsynth::stages::grammar::c {

namespace {

enum CMode : uint8_t {
  kCode,
  kIdent,
  kNumber,          // a preprocessing number: digits, letters, `.`, `'`, exponent signs
  kSlash,           // after `/`: a comment or an operator
  kLineComment,     // `//` to the end of the line (a line splice continues it)
  kBlock,           // `/* ... */`
  kBlockStar,       // `*` inside a block comment
  kStr,             // string or character literal (quote: which)
  kStrEsc,          // after `\` in one
  kBackslash,       // `\` in code: a line splice needs a newline
  kDirective,       // `#` then the directive's name
  kDirectiveBody,   // the rest of a preprocessor line
  kDirectiveSlash,  // `/` in a preprocessor line
  kDirectiveEsc,    // `\` in a preprocessor line
};

bool is_ident_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '$' || c >= 0x80;
}
bool is_digit(unsigned char c) {
  return c >= '0' && c <= '9';
}
char closer_of(char open) {
  return open == '(' ? ')' : open == '[' ? ']' : '}';
}

bool open_bracket(CState& s, char c) {
  if (s.depth < CState::kBrackets) s.open[s.depth] = c;
  if (s.depth < 0xFFFF) ++s.depth;
  return true;
}

bool close_bracket(CState& s, char c) {
  if (s.depth == 0) return s.lenient;  // `}` at the top level
  if (!s.lenient && s.depth <= CState::kBrackets && closer_of(s.open[s.depth - 1]) != c) {
    return false;
  }
  --s.depth;
  return true;
}

// Where a comment or string returns to.
void resume(CState& s) {
  s.mode = s.in_directive ? kDirectiveBody : kCode;
}

// The end of a preprocessor line.
void end_directive(CState& s) {
  const std::string_view name(s.word, s.word_len);
  if (name == "define" && s.pp_balance != 0) s.lenient = 1;
  s.in_directive = 0;
  s.mode = kCode;
  s.line_start = 1;
}

bool code_char(CState& s, unsigned char c) {
  switch (c) {
    case '\n':
      s.line_start = 1;
      return true;
    case ' ':
    case '\t':
    case '\r':
    case '\f':
    case '\v':
      return true;
    default:
      break;
  }
  const bool at_line_start = s.line_start;
  s.line_start = 0;
  switch (c) {
    case '#':
      if (!at_line_start) return s.lenient;  // `#` and `##` belong to preprocessor lines
      s.mode = kDirective;
      s.in_directive = 1;
      s.word_len = 0;
      s.pp_balance = 0;
      return true;
    case '/':
      s.mode = kSlash;
      return true;
    case '"':
    case '\'':
      s.mode = kStr;
      s.quote = c;
      return true;
    case '\\':
      s.mode = kBackslash;
      return true;
    case '(':
    case '[':
    case '{':
      return open_bracket(s, static_cast<char>(c));
    case ')':
    case ']':
    case '}':
      return close_bracket(s, static_cast<char>(c));
    case '`':
    case '@':
    case 0x7f:
      return s.lenient;  // (inside `#if 0` anything goes)
    default:
      break;
  }
  if (is_digit(c)) {
    s.mode = kNumber;
    s.quote = c;  // the number's last character (exponent signs)
  } else if (is_ident_char(c)) {
    s.mode = kIdent;
  } else if (c < 0x20) {
    return s.lenient;
  }
  return true;
}

bool directive_char(CState& s, unsigned char c) {
  if ((c == ' ' || c == '\t') && s.word_len == 0) return true;
  if (c >= 'a' && c <= 'z') {
    if (s.word_len < sizeof s.word) s.word[s.word_len++] = static_cast<char>(c);
    return true;
  }
  const std::string_view name(s.word, s.word_len);
  if (name.starts_with("if") || name.starts_with("el")) s.lenient = 1;  // conditional
  s.mode = kDirectiveBody;
  return feed(s, c);
}

bool directive_body_char(CState& s, unsigned char c) {
  switch (c) {
    case '\n':
      end_directive(s);
      return true;
    case '\\':
      s.mode = kDirectiveEsc;
      return true;
    case '/':
      s.mode = kDirectiveSlash;
      return true;
    case '"':
    case '\'':
      s.mode = kStr;
      s.quote = c;
      return true;
    case '(':
    case '[':
    case '{':
      if (s.pp_balance < 100) ++s.pp_balance;
      return true;
    case ')':
    case ']':
    case '}':
      if (s.pp_balance > -100) --s.pp_balance;
      return true;
    default:
      return true;
  }
}

bool string_char(CState& s, unsigned char c) {
  if (c == '\\') {
    s.mode = kStrEsc;
  } else if (c == s.quote) {
    resume(s);
  } else if (c == '\n') {
    if (s.in_directive) {
      end_directive(s);  // `#error don't` holds no literal
    } else if (s.lenient) {
      s.mode = kCode;  // text in an `#if 0` block need not be C
      s.line_start = 1;
    } else {
      return false;  // a string or character literal ends at its line
    }
  }
  return true;
}

}  // namespace

bool feed(CState& s, unsigned char c) {
  switch (s.mode) {
    case kCode:
      return code_char(s, c);
    case kIdent:
      if (is_ident_char(c)) return true;
      s.mode = kCode;
      return code_char(s, c);
    case kNumber: {
      const bool sign = (c == '+' || c == '-') &&
                        (s.quote == 'e' || s.quote == 'E' || s.quote == 'p' || s.quote == 'P');
      if (is_ident_char(c) || c == '.' || c == '\'' || sign) {
        s.quote = c;
        return true;
      }
      s.mode = kCode;
      return code_char(s, c);
    }
    case kSlash:
      if (c == '/') {
        s.mode = kLineComment;
        s.quote = 0;
        return true;
      }
      if (c == '*') {
        s.mode = kBlock;
        return true;
      }
      s.mode = kCode;
      return code_char(s, c);
    case kLineComment:
      if (c == '\n' && s.quote != '\\') {
        if (s.in_directive) {
          end_directive(s);
        } else {
          s.mode = kCode;
          s.line_start = 1;
        }
      } else if (c != '\r') {
        s.quote = c;  // a `\` before the newline splices the next line in
      }
      return true;
    case kBlock:
      if (c == '*') s.mode = kBlockStar;
      return true;
    case kBlockStar:
      if (c == '/') {
        resume(s);
      } else if (c != '*') {
        s.mode = kBlock;
      }
      return true;
    case kStr:
      return string_char(s, c);
    case kStrEsc:
      s.mode = kStr;
      return true;
    case kBackslash:
      if (c == '\r') return true;
      if (c != '\n' && !s.lenient) return false;  // a stray `\`
      s.mode = kCode;
      return true;
    case kDirective:
      return directive_char(s, c);
    case kDirectiveBody:
      return directive_body_char(s, c);
    case kDirectiveSlash:
      if (c == '/') {
        s.mode = kLineComment;
        s.quote = 0;
        return true;
      }
      if (c == '*') {
        s.mode = kBlock;
        return true;
      }
      s.mode = kDirectiveBody;
      return directive_body_char(s, c);
    case kDirectiveEsc:
      if (c == '\r') return true;
      s.mode = kDirectiveBody;  // a line splice, or an escaped character
      return true;
    default:
      return false;
  }
}

bool complete(CState s) {
  if (!feed(s, '\n')) return false;
  return s.mode == kCode && (s.lenient || s.depth == 0);
}

}  // namespace vsynth::stages::grammar::c
