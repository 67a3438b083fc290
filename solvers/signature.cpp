#include "solvers/signature.h"

#include <algorithm>
#include <cctype>

#include "solvers/diagnostic.h"

namespace vsynth::solvers {

const Param* Signature::find(std::string_view name) const {
  for (const auto& p : params)
    if (p.name == name) return &p;
  return nullptr;
}

namespace {

std::string strip_spaces(std::string_view s) {
  std::string r;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c))) r += c;
  return r;
}

bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

class SignatureParser {
 public:
  explicit SignatureParser(std::string_view text) : text_(text) {}

  Signature parse() {
    Signature sig;
    skip_ws();
    if (word("async")) skip_ws();
    if (word("def")) skip_ws();
    sig.function = identifier("the function name");
    skip_ws();
    expect('(', "'(' after the function name");
    parse_params(sig);
    skip_ws();
    if (text_.substr(pos_, 2) == "->") {
      pos_ += 2;
      const size_t start = pos_;
      const size_t end = scan_until(":", true);
      std::string ann = strip_spaces(text_.substr(start, end - start));
      if (ann.empty()) fail(start, "expected a return annotation after '->'");
      sig.result_annotation = ann;
      sig.result = (ann == "None") ? std::nullopt : std::optional<Sort>(sort_from_annotation(ann));
      pos_ = end;
    }
    skip_ws();
    if (pos_ < text_.size() && text_[pos_] == ':') ++pos_;
    skip_ws();
    if (pos_ < text_.size() && text_[pos_] != '#')
      fail(pos_, "unexpected text after the signature (give only the `def ...:` line)");
    return sig;
  }

 private:
  [[noreturn]] void fail(size_t at, std::string_view msg) {
    throw spec_error("signature", msg, text_, at);
  }

  void skip_ws() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  bool word(std::string_view w) {
    if (text_.substr(pos_, w.size()) == w &&
        (pos_ + w.size() == text_.size() || !ident_char(text_[pos_ + w.size()]))) {
      pos_ += w.size();
      return true;
    }
    return false;
  }

  std::string identifier(std::string_view what) {
    if (pos_ >= text_.size() || !ident_start(text_[pos_]))
      fail(pos_, "expected " + std::string(what));
    const size_t start = pos_;
    while (pos_ < text_.size() && ident_char(text_[pos_])) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  void expect(char c, std::string_view what) {
    if (pos_ >= text_.size() || text_[pos_] != c) fail(pos_, "expected " + std::string(what));
    ++pos_;
  }

  // Position of the first of `stops` at bracket depth 0 from pos_ (strings skipped); with
  // `to_end` the end of the text is an acceptable stop, otherwise reaching it is an error.
  size_t scan_until(std::string_view stops, bool to_end) {
    int depth = 0;
    for (size_t i = pos_; i < text_.size(); ++i) {
      const char c = text_[i];
      if (c == '\'' || c == '"') {
        const size_t close = text_.find(c, i + 1);
        if (close == std::string_view::npos) fail(i, "unterminated string");
        i = close;
      } else if (c == '(' || c == '[' || c == '{') {
        ++depth;
      } else if (c == ')' || c == ']' || c == '}') {
        if (depth == 0) {
          if (stops.find(c) != std::string_view::npos) return i;
          fail(i, "unbalanced brackets");
        }
        --depth;
      } else if (depth == 0 && stops.find(c) != std::string_view::npos) {
        return i;
      }
    }
    if (!to_end) fail(text_.size(), "expected ')' to close the parameter list");
    return text_.size();
  }

  void parse_params(Signature& sig) {
    bool first = true;
    for (;;) {
      skip_ws();
      if (pos_ < text_.size() && text_[pos_] == ')') {
        ++pos_;
        return;
      }
      std::string stars;
      while (pos_ < text_.size() && text_[pos_] == '*') stars += text_[pos_++];
      skip_ws();
      if (pos_ < text_.size() && text_[pos_] == '/' && stars.empty()) {  // positional-only marker
        ++pos_;
      } else if (!stars.empty() && pos_ < text_.size() &&
                 (text_[pos_] == ',' || text_[pos_] == ')')) {
        // bare `*`: keyword-only marker
      } else {
        const size_t name_at = pos_;
        Param p;
        p.name = identifier("a parameter name");
        skip_ws();
        if (pos_ < text_.size() && text_[pos_] == ':') {
          ++pos_;
          const size_t start = pos_;
          const size_t end = scan_until(",)=", false);
          p.annotation = strip_spaces(text_.substr(start, end - start));
          if (p.annotation.empty()) fail(start, "expected an annotation after ':'");
          pos_ = end;
        }
        p.sort = stars.empty() ? sort_from_annotation(p.annotation) : Sort::Opaque;
        skip_ws();
        if (pos_ < text_.size() && text_[pos_] == '=') {
          ++pos_;
          pos_ = scan_until(",)", false);
        }
        const bool receiver =
            first && stars.empty() && p.annotation.empty() && (p.name == "self" || p.name == "cls");
        if (!receiver) {
          if (sig.find(p.name)) fail(name_at, "duplicate parameter '" + p.name + "'");
          sig.params.push_back(std::move(p));
        }
      }
      first = false;
      skip_ws();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      expect(')', "',' or ')' in the parameter list");
      return;
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

Sort sort_from_annotation(std::string_view annotation) {
  std::string a = strip_spaces(annotation);
  if (a.rfind("typing.", 0) == 0) a = a.substr(7);
  if (a.empty() || a == "int") return Sort::Int;
  if (a == "bool") return Sort::Bool;
  if (a == "float") return Sort::Real;
  if (a == "list[int]" || a == "List[int]" || a == "Sequence[int]" || a == "tuple[int,...]" ||
      a == "Tuple[int,...]")
    return Sort::IntSeq;
  return Sort::Opaque;
}

Signature parse_python_signature(std::string_view line) {
  return SignatureParser(line).parse();
}

}  // namespace vsynth::solvers
