#include "stages/grammar/program.h"

#include <utility>

namespace vsynth::stages::grammar {

namespace {

// Where an instruct-mode answer is (ProgramState::md).
enum Md : uint8_t {
  kProse,  // outside fenced blocks: free text
  kInfo,   // the rest of an opening fence's line: its info string
  kOther,  // inside a block that does not name the language: free
  kCode,   // inside the constrained block (always, in complete mode)
  kDone,   // after the constrained block closed: free
};

// extract_code's rule: the info string's first word names the language.
bool names_language(std::string_view word, Language lang) {
  if (lang == Language::C) return word == "c";
  return word == "python" || word == "py" || word == "python3";
}

// One byte of a line for the fence rule (up to 3 spaces, then three ` or ~). True when this
// byte completes a fence. `want` is the open block's fence character, 0 outside blocks.
bool fence_step(ProgramState& s, char c, char want) {
  if (c == '\n') {
    s.fence_lead = 0;
    s.fence_run = 0;
    s.fence_ok = 1;
    return false;
  }
  if (!s.fence_ok) return false;
  if (s.fence_run == 0 && c == ' ' && s.fence_lead < 3) {
    ++s.fence_lead;
    return false;
  }
  char need = want;
  if (!need) {  // outside a block: the first ` or ~ picks the fence
    if (s.fence_run == 0 && (c == '`' || c == '~')) s.fence_char = c;
    need = s.fence_run == 0 && c != '`' && c != '~' ? 0 : s.fence_char;
  }
  if (need == 0 || c != need) {
    s.fence_ok = 0;
    return false;
  }
  if (++s.fence_run < 3) return false;
  s.fence_ok = 0;  // a fourth ` belongs to the same fence
  return true;
}

void info_char(ProgramState& s, char c) {
  const bool space = c == ' ' || c == '\t' || c == '\r';
  if (s.info_len == 0 && !s.info_done && (space || c == '`')) return;  // before the word
  if (s.info_done) return;
  if (space || c == '{') {
    s.info_done = 1;
    return;
  }
  if (s.info_len == 0xFF) return;
  if (s.info_len == sizeof s.info) {
    s.info_len = 0xFF;  // longer than any name we match
    return;
  }
  s.info[s.info_len++] = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
}

}  // namespace

Program::Program(Shape shape)
    : shape_(std::move(shape)), fresh_(shape_.language), after_given_(shape_.language) {
  if (!shape_.instruct) {
    start_.md = kCode;
    start_.fence_ok = 0;
    start_.code[0] = fresh_;
    start_.alive[0] = grammar::feed(start_.code[0], shape_.prefix);
    start_dead_ = !start_.alive[0];
    return;
  }
  start_.md = kProse;
  if (!shape_.given_code.empty()) {
    std::string given = shape_.given_code;
    if (given.back() != '\n') given += '\n';  // as assemble_program joins them
    has_given_ = grammar::feed(after_given_, given);
  }
}

void Program::open_block(ProgramState& s) const {
  s.md = kCode;
  s.code[0] = fresh_;
  s.alive[0] = true;
  s.code[1] = after_given_;
  s.alive[1] = has_given_;
  s.closable = 0;
  for (int i = 0; i < 2; ++i) {
    if (s.alive[i] && complete(s.code[i])) s.closable |= static_cast<uint8_t>(1 << i);
  }
}

bool Program::feed_code(ProgramState& s, char c) const {
  if (shape_.instruct && fence_step(s, c, s.fence_char)) {
    if (!s.closable) return false;  // the block would close on an unfinished program
    s.md = kDone;
    return true;
  }
  bool any = false;
  for (int i = 0; i < 2; ++i) {
    if (s.alive[i] && !grammar::feed(s.code[i], c)) s.alive[i] = false;
    any = any || s.alive[i];
  }
  if (!shape_.instruct) return any;
  if (c == '\n') {
    s.closable = 0;
    for (int i = 0; i < 2; ++i) {
      if (s.alive[i] && complete(s.code[i])) s.closable |= static_cast<uint8_t>(1 << i);
    }
  }
  return any || (s.fence_ok && s.closable != 0);  // a closing fence may still come
}

bool Program::feed(ProgramState& s, char c) const {
  switch (s.md) {
    case kCode:
      return feed_code(s, c);
    case kProse:
      if (fence_step(s, c, 0)) {
        s.md = kInfo;
        s.info_len = 0;
        s.info_done = 0;
      }
      return true;
    case kInfo:
      if (c != '\n') {
        info_char(s, c);
        return true;
      }
      fence_step(s, c, 0);
      if (s.info_len != 0xFF &&
          names_language(std::string_view(s.info, s.info_len), shape_.language)) {
        open_block(s);
      } else {
        s.md = kOther;
      }
      return true;
    case kOther:
      if (fence_step(s, c, s.fence_char)) s.md = kProse;
      return true;
    default:
      return true;
  }
}

bool Program::feed(ProgramState& s, std::string_view bytes) const {
  for (char c : bytes) {
    if (!feed(s, c)) return false;
  }
  return true;
}

bool Program::can_end(const ProgramState& s) const {
  if (s.md != kCode) return true;
  if (!shape_.instruct) {
    if (!s.alive[0]) return false;
    SyntaxState t = s.code[0];
    return grammar::feed(t, shape_.suffix) && complete(t);
  }
  for (int i = 0; i < 2; ++i) {
    if (s.alive[i] && complete(s.code[i])) return true;
  }
  return false;
}

bool Program::constraining(const ProgramState& s) const {
  return s.md == kCode;
}

}  // namespace vsynth::stages::grammar
