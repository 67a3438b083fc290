#include "stages/grammar/recognizer.h"

#include <string>

#include "stages/grammar/c.h"
#include "stages/grammar/python.h"

namespace vsynth::stages::grammar {

std::optional<Language> language_from_name(std::string_view name) {
  std::string n(name);
  for (char& ch : n) ch = static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
  if (n == "python" || n == "py" || n == "python3") return Language::Python;
  if (n == "c") return Language::C;
  return std::nullopt;
}

const char* to_string(Language l) {
  return l == Language::C ? "c" : "python";
}

const char* supported_languages() {
  return "python, c";
}

SyntaxState::SyntaxState(Language l) : language(l), py() {
  if (l == Language::C) c = CState();
}

bool feed(SyntaxState& s, char byte) {
  if (s.dead) return false;
  const auto b = static_cast<unsigned char>(byte);
  const bool ok = s.language == Language::C ? c::feed(s.c, b) : python::feed(s.py, b);
  if (!ok) s.dead = true;
  return ok;
}

bool feed(SyntaxState& s, std::string_view bytes) {
  for (char b : bytes) {
    if (!feed(s, b)) return false;
  }
  return !s.dead;
}

bool complete(const SyntaxState& s) {
  if (s.dead) return false;
  return s.language == Language::C ? c::complete(s.c) : python::complete(s.py);
}

}  // namespace vsynth::stages::grammar
