#include "solvers/spec_parser.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <set>
#include <string>

#include "solvers/diagnostic.h"

namespace vsynth::solvers {

namespace {

// --- Lexer ---------------------------------------------------------------------------------------

struct Token {
  enum Kind { Name, Int, Float, Str, Punct, End } kind;
  std::string_view text;
  size_t pos;  // byte offset into the spec text
};

bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}
bool ident_char(char c) {
  return ident_start(c) || std::isdigit(static_cast<unsigned char>(c));
}

const std::set<std::string_view> kStringPrefixes = {"r",  "b",  "u", "f", "rb", "br",
                                                    "fr", "rf", "R", "B", "U",  "F"};

class Lexer {
 public:
  Lexer(std::string_view text, std::string_view what) : text_(text), what_(what) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    for (;;) {
      skip_space();
      if (pos_ >= text_.size()) break;
      const char c = text_[pos_];
      const size_t start = pos_;
      if (ident_start(c)) {
        while (pos_ < text_.size() && ident_char(text_[pos_])) ++pos_;
        if (pos_ < text_.size() && (text_[pos_] == '\'' || text_[pos_] == '"') &&
            kStringPrefixes.count(text_.substr(start, pos_ - start))) {
          string_literal(start);
          out.push_back({Token::Str, text_.substr(start, pos_ - start), start});
        } else {
          out.push_back({Token::Name, text_.substr(start, pos_ - start), start});
        }
      } else if (std::isdigit(static_cast<unsigned char>(c)) ||
                 (c == '.' && pos_ + 1 < text_.size() &&
                  std::isdigit(static_cast<unsigned char>(text_[pos_ + 1])))) {
        out.push_back(number());
      } else if (c == '\'' || c == '"') {
        string_literal(start);
        out.push_back({Token::Str, text_.substr(start, pos_ - start), start});
      } else {
        out.push_back(punct());
      }
    }
    out.push_back({Token::End, {}, text_.size()});
    return out;
  }

 private:
  [[noreturn]] void fail(size_t at, std::string_view msg) {
    throw spec_error(what_, msg, text_, at);
  }

  void skip_space() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (std::isspace(static_cast<unsigned char>(c))) {
        ++pos_;
      } else if (c == '\\' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '\n') {
        pos_ += 2;
      } else if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  void string_literal(size_t start) {
    const char q = text_[pos_];
    const bool triple = text_.substr(pos_, 3) == std::string(3, q);
    pos_ += triple ? 3 : 1;
    while (pos_ < text_.size()) {
      if (text_[pos_] == '\\') {
        pos_ += 2;
        continue;
      }
      if (triple ? text_.substr(pos_, 3) == std::string(3, q) : text_[pos_] == q) {
        pos_ += triple ? 3 : 1;
        return;
      }
      if (!triple && text_[pos_] == '\n') break;
      ++pos_;
    }
    fail(start, "unterminated string literal");
  }

  Token number() {
    const size_t start = pos_;
    auto digits = [&](auto pred) {
      while (pos_ < text_.size() && (pred(text_[pos_]) || text_[pos_] == '_')) ++pos_;
    };
    auto dec = [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)) != 0; };
    bool is_float = false;
    if (text_[pos_] == '0' && pos_ + 1 < text_.size() &&
        std::string_view("xXoObB").find(text_[pos_ + 1]) != std::string_view::npos) {
      pos_ += 2;
      digits([](char ch) { return std::isxdigit(static_cast<unsigned char>(ch)) != 0; });
    } else {
      digits(dec);
      if (pos_ < text_.size() && text_[pos_] == '.') {
        is_float = true;
        ++pos_;
        digits(dec);
      }
      if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
        is_float = true;
        ++pos_;
        if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
        const size_t exp_start = pos_;
        digits(dec);
        if (pos_ == exp_start) fail(start, "malformed float literal");
      }
    }
    if (pos_ < text_.size() && (text_[pos_] == 'j' || text_[pos_] == 'J'))
      fail(start, "complex literals are not supported");
    if (pos_ < text_.size() && ident_char(text_[pos_])) fail(start, "malformed number");
    return {is_float ? Token::Float : Token::Int, text_.substr(start, pos_ - start), start};
  }

  Token punct() {
    static const char* kTwo[] = {"**", "//", "<=", ">=", "==", "!=", "->", ":=", "<<", ">>"};
    for (const char* p : kTwo) {
      if (text_.substr(pos_, 2) == p) {
        pos_ += 2;
        return {Token::Punct, text_.substr(pos_ - 2, 2), pos_ - 2};
      }
    }
    const char c = text_[pos_];
    if (std::string_view("+-*/%<>()[]{},.:~&|^=@").find(c) == std::string_view::npos)
      fail(pos_, std::string("unexpected character '") + c + "'");
    ++pos_;
    return {Token::Punct, text_.substr(pos_ - 1, 1), pos_ - 1};
  }

  std::string_view text_;
  std::string_view what_;
  size_t pos_ = 0;
};

// --- Parser --------------------------------------------------------------------------------------

const std::vector<std::string> kSupportedCalls = {"abs", "all", "any", "bool",  "float", "int",
                                                  "len", "max", "min", "range", "sum"};

// Python builtins that parse but are not modelled, with the sort their result would have.
const std::vector<std::pair<std::string, Sort>> kUnmodelledCalls = {
    {"sorted", Sort::IntSeq},    {"reversed", Sort::IntSeq}, {"list", Sort::IntSeq},
    {"tuple", Sort::IntSeq},     {"round", Sort::Int},       {"pow", Sort::Int},
    {"ord", Sort::Int},          {"hash", Sort::Int},        {"divmod", Sort::Opaque},
    {"isinstance", Sort::Bool},  {"callable", Sort::Bool},   {"set", Sort::Opaque},
    {"frozenset", Sort::Opaque}, {"dict", Sort::Opaque},     {"str", Sort::Opaque},
    {"repr", Sort::Opaque},      {"chr", Sort::Opaque},      {"zip", Sort::Opaque},
    {"enumerate", Sort::Opaque}, {"map", Sort::Opaque},      {"filter", Sort::Opaque},
    {"type", Sort::Opaque},      {"bin", Sort::Opaque},      {"hex", Sort::Opaque},
};

const std::set<std::string_view> kKeywords = {
    "and",  "or",    "not",   "in",     "is",    "if",    "else",   "for",    "lambda", "None",
    "True", "False", "yield", "await",  "def",   "class", "return", "while",  "import", "from",
    "as",   "with",  "try",   "except", "raise", "pass",  "del",    "global", "assert", "async"};

class Parser {
 public:
  Parser(std::string_view text, std::string_view what, std::vector<Param> names,
         std::optional<std::string> result_only_in_ensures)
      : text_(text),
        what_(what),
        toks_(Lexer(text, what).run()),
        names_(std::move(names)),
        result_hint_(std::move(result_only_in_ensures)) {}

  Expr parse() {
    if (toks_[0].kind == Token::End) fail(0, "empty expression");
    Expr e = ternary();
    if (cur().kind != Token::End) fail(cur().pos, "unexpected '" + std::string(cur().text) + "'");
    return e;
  }

 private:
  // --- helpers ---
  const Token& cur() const { return toks_[pos_]; }
  const Token& peek(size_t k = 1) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  bool is_punct(std::string_view p, size_t k = 0) const {
    const Token& t = k ? peek(k) : cur();
    return t.kind == Token::Punct && t.text == p;
  }
  bool is_kw(std::string_view w, size_t k = 0) const {
    const Token& t = k ? peek(k) : cur();
    return t.kind == Token::Name && t.text == w;
  }
  bool accept_punct(std::string_view p) {
    if (!is_punct(p)) return false;
    ++pos_;
    return true;
  }
  bool accept_kw(std::string_view w) {
    if (!is_kw(w)) return false;
    ++pos_;
    return true;
  }
  void expect_punct(std::string_view p, std::string_view context) {
    if (!accept_punct(p))
      fail(cur().pos, "expected '" + std::string(p) + "' " + std::string(context) + ", got " +
                          describe(cur()));
  }
  static std::string describe(const Token& t) {
    if (t.kind == Token::End) return "the end of the expression";
    return "'" + std::string(t.text) + "'";
  }

  [[noreturn]] void fail(size_t at, std::string_view msg, std::string_view hint = {}) {
    throw spec_error(what_, msg, text_, at, hint);
  }

  // Text of tokens [from, to) as written.
  std::string source(size_t from, size_t to) const {
    if (to <= from) return {};
    const size_t b = toks_[from].pos;
    const size_t e = toks_[to - 1].pos + toks_[to - 1].text.size();
    return std::string(text_.substr(b, e - b));
  }

  // Runs an IR builder; its SolverError (a sort mismatch) becomes a SpecError at `at`.
  template <class F>
  Expr build(size_t at, F&& f) {
    try {
      return f();
    } catch (const SpecError&) {
      throw;
    } catch (const SolverError& e) {
      std::string msg = e.what();
      if (msg.rfind("solvers: ", 0) == 0) msg = msg.substr(9);
      fail(at, msg);
    }
  }

  // Index of the token closing the bracket at `open` (a '(' '[' or '{' token).
  size_t matching(size_t open) {
    int depth = 0;
    for (size_t i = open; i < toks_.size(); ++i) {
      const Token& t = toks_[i];
      if (t.kind != Token::Punct) continue;
      if (t.text == "(" || t.text == "[" || t.text == "{") ++depth;
      if (t.text == ")" || t.text == "]" || t.text == "}") {
        if (--depth == 0) return i;
      }
    }
    fail(toks_[open].pos, "unclosed '" + std::string(toks_[open].text) + "'");
  }

  // A depth-0 `for` keyword in (from, to), or 0.
  size_t top_level_for(size_t from, size_t to) const {
    int depth = 0;
    for (size_t i = from; i < to; ++i) {
      const Token& t = toks_[i];
      if (t.kind == Token::Punct && (t.text == "(" || t.text == "[" || t.text == "{")) ++depth;
      if (t.kind == Token::Punct && (t.text == ")" || t.text == "]" || t.text == "}")) --depth;
      if (depth == 0 && t.kind == Token::Name && t.text == "for") return i;
    }
    return 0;
  }

  std::vector<std::string> visible_names() const {
    std::vector<std::string> out;
    for (const auto& p : names_) out.push_back(p.name);
    for (const auto& b : bound_)
      if (std::find(out.begin(), out.end(), b) == out.end()) out.push_back(b);
    return out;
  }

  // --- grammar ---
  // Recursion guard for the rules that recurse without consuming a bracket pair (not, unary
  // minus, **) and for brackets (~15 parser frames a level); real specs nest a few levels.
  struct Nesting {
    Parser& p;
    explicit Nesting(Parser& parser) : p(parser) {
      if (++p.nesting_ > kMaxNesting) p.fail(p.cur().pos, "expression nested too deeply");
    }
    ~Nesting() { --p.nesting_; }
    Nesting(const Nesting&) = delete;
    Nesting& operator=(const Nesting&) = delete;
  };

  Expr ternary() {
    Nesting guard(*this);
    if (is_kw("lambda")) fail(cur().pos, "lambda is not supported in specs");
    const size_t at = cur().pos;
    Expr a = or_test();
    if (!is_kw("if")) return a;
    const size_t if_at = cur().pos;
    ++pos_;
    Expr c = or_test();
    if (!accept_kw("else")) fail(cur().pos, "expected 'else' in the conditional expression");
    Expr b = ternary();
    (void)at;
    return build(if_at, [&] { return ir::ite(ir::truthy(c), a, b); });
  }

  // `a or b or c`: one n-ary Or when every operand is bool; Python's value-returning form else.
  Expr bool_chain(bool is_or) {
    std::vector<Expr> xs;
    std::vector<size_t> at;
    xs.push_back(is_or ? bool_chain(false) : not_test());
    while (is_kw(is_or ? "or" : "and")) {
      at.push_back(cur().pos);
      ++pos_;
      xs.push_back(is_or ? bool_chain(false) : not_test());
    }
    if (xs.size() == 1) return xs[0];
    const bool all_bool =
        std::all_of(xs.begin(), xs.end(), [](const Expr& e) { return e->sort == Sort::Bool; });
    if (all_bool) return build(at[0], [&] { return is_or ? ir::or_(xs) : ir::and_(xs); });
    Expr acc = xs[0];
    for (size_t i = 1; i < xs.size(); ++i)
      acc =
          build(at[i - 1], [&] { return is_or ? ir::py_or(acc, xs[i]) : ir::py_and(acc, xs[i]); });
    return acc;
  }
  Expr or_test() { return bool_chain(true); }

  Expr not_test() {
    Nesting guard(*this);
    if (is_kw("not")) {
      const size_t at = cur().pos;
      ++pos_;
      Expr a = not_test();
      return build(at, [&] { return ir::not_(ir::truthy(a)); });
    }
    return comparison();
  }

  Expr comparison() {
    const size_t start = pos_;
    std::vector<Expr> operands{bitwise(0)};
    std::vector<Expr> links;
    for (;;) {
      const size_t at = cur().pos;
      std::string op;
      if (cur().kind == Token::Punct &&
          (cur().text == "<" || cur().text == ">" || cur().text == "==" || cur().text == ">=" ||
           cur().text == "<=" || cur().text == "!=")) {
        op = std::string(cur().text);
        ++pos_;
      } else if (is_kw("in")) {
        op = "in";
        ++pos_;
      } else if (is_kw("not") && is_kw("in", 1)) {
        op = "not in";
        pos_ += 2;
      } else if (is_kw("is")) {
        op = is_kw("not", 1) ? "is not" : "is";
        pos_ += op == "is" ? 1 : 2;
      } else if (is_punct("=")) {
        fail(at, "'=' is assignment; use '==' to compare");
      } else {
        break;
      }
      const size_t rhs_start = pos_;
      operands.push_back(bitwise(0));
      const Expr& a = operands[operands.size() - 2];
      const Expr& b = operands.back();
      if (op == "is" || op == "is not") {
        links.push_back(ir::unsupported(Sort::Bool, source(start, pos_),
                                        "identity comparison ('is') is not modelled"));
      } else if (op == "in") {
        links.push_back(build(at, [&] { return ir::in(a, b); }));
      } else if (op == "not in") {
        links.push_back(build(at, [&] { return ir::not_(ir::in(a, b)); }));
      } else {
        static const std::pair<std::string_view, Op> kOps[] = {{"<", Op::Lt},  {">", Op::Gt},
                                                               {"==", Op::Eq}, {">=", Op::Ge},
                                                               {"<=", Op::Le}, {"!=", Op::Ne}};
        Op o = Op::Eq;
        for (auto [s, v] : kOps)
          if (s == op) o = v;
        links.push_back(build(at, [&] { return ir::compare_chain({a, b}, {o}); }));
      }
      (void)rhs_start;
    }
    if (links.empty()) return operands[0];
    return build(toks_[start].pos, [&] { return ir::chain(links); });
  }

  // | ^ & << >> parse with Python's precedence but are not modelled.
  Expr bitwise(int level) {
    static const std::vector<std::vector<std::string_view>> kLevels = {
        {"|"}, {"^"}, {"&"}, {"<<", ">>"}};
    if (level == static_cast<int>(kLevels.size())) return arith();
    const size_t start = pos_;
    Expr a = bitwise(level + 1);
    for (;;) {
      const auto& ops = kLevels[static_cast<size_t>(level)];
      if (cur().kind != Token::Punct || std::find(ops.begin(), ops.end(), cur().text) == ops.end())
        return a;
      const size_t at = cur().pos;
      ++pos_;
      Expr b = bitwise(level + 1);
      Sort s = Sort::Int;
      if (a->sort == Sort::Bool && b->sort == Sort::Bool) s = Sort::Bool;
      if (a->sort == Sort::Opaque || b->sort == Sort::Opaque) s = Sort::Opaque;
      if (a->sort == Sort::Real || b->sort == Sort::Real || a->sort == Sort::IntSeq ||
          b->sort == Sort::IntSeq)
        fail(at, "bitwise operators need int or bool operands");
      a = ir::unsupported(s, source(start, pos_), "bitwise operators are not modelled");
    }
  }

  Expr arith() {
    Expr a = term();
    while (is_punct("+") || is_punct("-")) {
      const bool plus = cur().text == "+";
      const size_t at = cur().pos;
      ++pos_;
      Expr b = term();
      a = build(at, [&] { return plus ? ir::add(a, b) : ir::sub(a, b); });
    }
    return a;
  }

  Expr term() {
    Expr a = factor();
    for (;;) {
      if (cur().kind != Token::Punct) return a;
      const std::string_view op = cur().text;
      const size_t at = cur().pos;
      if (op == "@") fail(at, "matrix multiplication '@' is not supported");
      if (op != "*" && op != "/" && op != "//" && op != "%") return a;
      ++pos_;
      Expr b = factor();
      a = build(at, [&] {
        if (op == "*") return ir::mul(a, b);
        if (op == "/") return ir::div(a, b);
        if (op == "//") return ir::floor_div(a, b);
        return ir::mod(a, b);
      });
    }
  }

  Expr factor() {
    Nesting guard(*this);
    const size_t at = cur().pos;
    const size_t start = pos_;
    if (accept_punct("-")) {
      Expr a = factor();
      // Fold -<literal> so that -5 prints and solves as the literal it is.
      if (a->op == Op::IntLit && a->int_value != INT64_MIN) return ir::int_lit(-a->int_value);
      if (a->op == Op::RealLit && a->text[0] != '-') return ir::real_lit("-" + a->text);
      return build(at, [&] { return ir::neg(a); });
    }
    if (accept_punct("+")) {
      Expr a = factor();
      if (a->sort != Sort::Int && a->sort != Sort::Real && a->sort != Sort::Opaque)
        fail(at, "unary '+' needs an int or float operand, got " + std::string(sort_name(a->sort)));
      return a;
    }
    if (accept_punct("~")) {
      Expr a = factor();
      if (a->sort != Sort::Int && a->sort != Sort::Bool && a->sort != Sort::Opaque)
        fail(at, "'~' needs an int operand");
      return ir::unsupported(a->sort == Sort::Opaque ? Sort::Opaque : Sort::Int,
                             source(start, pos_), "bitwise operators are not modelled");
    }
    return power();
  }

  Expr power() {
    Expr a = primary();
    if (is_punct("**")) {
      const size_t at = cur().pos;
      ++pos_;
      Expr b = factor();
      return build(at, [&] { return ir::pow(a, b); });
    }
    return a;
  }

  Expr primary() {
    const size_t start = pos_;
    Expr a = atom();
    for (;;) {
      if (is_punct("[")) {
        const size_t at = cur().pos;
        const size_t close = matching(pos_);
        bool slice = false;
        for (size_t i = pos_ + 1; i < close; ++i) {
          if (toks_[i].kind == Token::Punct && toks_[i].text == ":") slice = true;
          if (toks_[i].kind == Token::Punct &&
              (toks_[i].text == "(" || toks_[i].text == "[" || toks_[i].text == "{"))
            i = matching(i);
        }
        if (slice) {
          skip_validating(pos_ + 1, close);
          pos_ = close + 1;
          if (a->sort != Sort::IntSeq && a->sort != Sort::Opaque)
            fail(at, "cannot slice a value of sort " + std::string(sort_name(a->sort)));
          a = ir::unsupported(a->sort, source(start, pos_), "slices are not modelled");
          continue;
        }
        ++pos_;
        Expr i = ternary();
        expect_punct("]", "to close the index");
        a = build(at, [&] { return ir::index(a, i); });
      } else if (is_punct(".")) {
        ++pos_;
        if (cur().kind != Token::Name) fail(cur().pos, "expected an attribute name after '.'");
        ++pos_;
        if (is_punct("(")) {
          const size_t close = matching(pos_);
          skip_validating(pos_ + 1, close);
          pos_ = close + 1;
        }
        a = ir::unsupported(Sort::Opaque, source(start, pos_),
                            "attributes and methods are not modelled");
      } else if (is_punct("(")) {
        fail(cur().pos, "'" + source(start, pos_) + "' is not callable");
      } else {
        return a;
      }
    }
  }

  // Parses tokens [from, to) as comma-separated expressions only to report unknown names and
  // syntax errors inside something unmodelled; keyword arguments and generators are skipped.
  void skip_validating(size_t from, size_t to) {
    const size_t saved = pos_;
    pos_ = from;
    if (top_level_for(from, to)) {
      pos_ = saved;
      return;  // generator/comprehension: its names are bound inside, do not second-guess
    }
    while (pos_ < to) {
      if (cur().kind == Token::Name && is_punct("=", 1)) pos_ += 2;
      if (is_punct("*") || is_punct("**")) ++pos_;
      if (is_punct(":")) {
        ++pos_;
        continue;
      }
      if (pos_ >= to) break;
      ternary();
      if (pos_ < to && !accept_punct(",") && !is_punct(":"))
        fail(cur().pos, "unexpected " + describe(cur()));
    }
    pos_ = saved;
  }

  Expr atom() {
    const Token t = cur();
    switch (t.kind) {
      case Token::End:
        fail(t.pos, "unexpected end of the expression");
      case Token::Int:
        ++pos_;
        return int_literal(t);
      case Token::Float:
        ++pos_;
        return build(t.pos, [&] { return ir::real_lit(t.text); });
      case Token::Str:
        ++pos_;
        while (cur().kind == Token::Str) ++pos_;  // implicit concatenation
        return ir::unsupported(Sort::Opaque, std::string(t.text), "strings are not modelled");
      case Token::Name:
        return name_or_call();
      case Token::Punct:
        break;
    }
    if (t.text == "(") return parenthesised();
    if (t.text == "[") return bracketed();
    if (t.text == "{") {
      const size_t close = matching(pos_);
      const size_t start = pos_;
      pos_ = close + 1;
      return ir::unsupported(Sort::Opaque, source(start, pos_), "sets and dicts are not modelled");
    }
    fail(t.pos, "expected an expression, got '" + std::string(t.text) + "'");
  }

  Expr int_literal(const Token& t) {
    std::string digits;
    for (char c : t.text)
      if (c != '_') digits += c;
    int base = 10;
    std::string_view body = digits;
    if (digits.size() > 1 && digits[0] == '0' &&
        std::isalpha(static_cast<unsigned char>(digits[1]))) {
      const char b = static_cast<char>(std::tolower(static_cast<unsigned char>(digits[1])));
      base = b == 'x' ? 16 : b == 'o' ? 8 : 2;
      body = body.substr(2);
    } else if (digits.size() > 1 && digits[0] == '0' &&
               digits.find_first_not_of('0') != std::string::npos) {
      fail(t.pos, "leading zeros in a decimal integer literal are not permitted in Python");
    }
    int64_t v = 0;
    auto [p, ec] = std::from_chars(body.data(), body.data() + body.size(), v, base);
    if (ec == std::errc::result_out_of_range)
      fail(t.pos, "integer literal " + std::string(t.text) + " does not fit in 64 bits");
    if (ec != std::errc() || p != body.data() + body.size() || body.empty())
      fail(t.pos, "malformed integer literal '" + std::string(t.text) + "'");
    return ir::int_lit(v);
  }

  Expr name_or_call() {
    const Token t = cur();
    const std::string name(t.text);
    if (name == "True" || name == "False") {
      ++pos_;
      return ir::bool_lit(name == "True");
    }
    if (name == "None") {
      ++pos_;
      return ir::unsupported(Sort::Opaque, "None", "None is not modelled");
    }
    if (is_punct("(", 1)) return call(name, t.pos);
    if (kKeywords.count(t.text))
      fail(t.pos, "expected an expression, got the keyword '" + name + "'");
    ++pos_;
    for (auto it = bound_.rbegin(); it != bound_.rend(); ++it)
      if (*it == name) return ir::var(name, Sort::Int);
    for (const auto& p : names_) {
      if (p.name != name) continue;
      if (p.sort == Sort::Opaque)
        return ir::unsupported(Sort::Opaque, name,
                               "parameter '" + name + "' has type '" +
                                   (p.annotation.empty() ? "?" : p.annotation) +
                                   "', which is not modelled");
      return ir::var(name, p.sort);
    }
    if (result_hint_ && name == "result") fail(t.pos, *result_hint_);
    std::vector<std::string> known = visible_names();
    std::string hint;
    if (std::string best = closest_name(name, known); !best.empty())
      hint = "did you mean '" + best + "'? ";
    hint += "(known: ";
    for (size_t i = 0; i < known.size(); ++i) hint += (i ? ", " : "") + known[i];
    hint += known.empty() ? "none)" : ")";
    fail(t.pos, "unknown name '" + name + "'", hint);
  }

  Expr parenthesised() {
    const size_t start = pos_;
    const size_t close = matching(pos_);
    ++pos_;
    if (pos_ == close) {
      pos_ = close + 1;
      return ir::unsupported(Sort::Opaque, "()", "tuples are modelled only as int sequences");
    }
    if (top_level_for(pos_, close)) {
      pos_ = close + 1;
      return ir::unsupported(
          Sort::Opaque, source(start, pos_),
          "generator expressions are modelled only inside all(), any() and sum()");
    }
    Expr first = ternary();
    if (accept_punct(")")) return first;
    if (!is_punct(",")) fail(cur().pos, "expected ')' or ',', got " + describe(cur()));
    std::vector<Expr> elems{first};
    while (accept_punct(",")) {
      if (is_punct(")")) break;
      elems.push_back(ternary());
    }
    expect_punct(")", "to close the tuple");
    return build(toks_[start].pos, [&] { return ir::list_lit(elems); });
  }

  Expr bracketed() {
    const size_t start = pos_;
    const size_t close = matching(pos_);
    ++pos_;
    if (top_level_for(pos_, close)) {
      pos_ = close + 1;
      return ir::unsupported(Sort::IntSeq, source(start, pos_),
                             "list comprehensions are not modelled");
    }
    std::vector<Expr> elems;
    while (!is_punct("]")) {
      elems.push_back(ternary());
      if (!accept_punct(",")) break;
    }
    expect_punct("]", "to close the list");
    return build(toks_[start].pos, [&] { return ir::list_lit(elems); });
  }

  struct Arg {
    Expr value;
    size_t pos;
  };

  std::vector<Arg> positional_args(const std::string& fn, size_t close) {
    std::vector<Arg> args;
    while (pos_ < close) {
      if (cur().kind == Token::Name && is_punct("=", 1))
        fail(cur().pos, fn + "() takes no keyword arguments here");
      if (is_punct("*") || is_punct("**")) fail(cur().pos, "argument unpacking is not supported");
      const size_t at = cur().pos;
      args.push_back({ternary(), at});
      if (pos_ < close) expect_punct(",", "between arguments");
    }
    pos_ = close + 1;
    return args;
  }

  void arity(const std::string& fn, const std::vector<Arg>& args, size_t lo, size_t hi, size_t at) {
    if (args.size() >= lo && args.size() <= hi) return;
    std::string want = lo == hi
                           ? "exactly " + std::to_string(lo)
                           : (hi == SIZE_MAX ? "at least " + std::to_string(lo)
                                             : std::to_string(lo) + " to " + std::to_string(hi));
    fail(at, fn + "() takes " + want + " argument" + (lo == 1 && hi == 1 ? "" : "s") + " (" +
                 std::to_string(args.size()) + " given)");
  }

  Expr call(const std::string& fn, size_t at) {
    const size_t start = pos_;
    ++pos_;  // name
    const size_t open = pos_;
    const size_t close = matching(open);
    ++pos_;  // '('
    const size_t gen = top_level_for(pos_, close);

    if (std::find(kSupportedCalls.begin(), kSupportedCalls.end(), fn) == kSupportedCalls.end()) {
      for (const auto& [name, sort] : kUnmodelledCalls) {
        if (name != fn) continue;
        skip_validating(pos_, close);
        pos_ = close + 1;
        return ir::unsupported(sort, source(start, pos_), fn + "() is not modelled");
      }
      for (const auto& p : names_)
        if (p.name == fn) fail(at, "'" + fn + "' is not callable");
      std::vector<std::string> all = kSupportedCalls;
      for (const auto& [name, sort] : kUnmodelledCalls) all.push_back(name);
      std::string hint;
      if (std::string best = closest_name(fn, all); !best.empty())
        hint = "did you mean '" + best + "'? ";
      hint += "(supported: ";
      for (size_t i = 0; i < kSupportedCalls.size(); ++i)
        hint += (i ? ", " : "") + kSupportedCalls[i];
      hint += ")";
      fail(at, "unknown function '" + fn + "'", hint);
    }

    if (gen) {
      if (fn == "all") return comprehension(Gen::All, pos_, gen, close);
      if (fn == "any") return comprehension(Gen::Any, pos_, gen, close);
      if (fn == "sum") return comprehension(Gen::Sum, pos_, gen, close);
      skip_validating(pos_, close);
      pos_ = close + 1;
      return ir::unsupported(fn == "min" || fn == "max" ? Sort::Int : Sort::Opaque,
                             source(start, pos_), fn + "() over a generator is not modelled");
    }

    std::vector<Arg> args = positional_args(fn, close);
    auto arg = [&](size_t i) { return args[i].value; };
    if (fn == "abs" || fn == "len" || fn == "float" || fn == "int" || fn == "bool" || fn == "sum" ||
        fn == "all" || fn == "any") {
      arity(fn, args, 1, 1, at);
      return build(at, [&]() -> Expr {
        if (fn == "abs") return ir::abs(arg(0));
        if (fn == "len") return ir::len(arg(0));
        if (fn == "float") return ir::to_real(arg(0));
        if (fn == "int") return ir::to_int(arg(0));
        if (fn == "bool") return ir::truthy(arg(0));
        if (fn == "sum") return ir::sum(arg(0));
        // all(xs) / any(xs): over the elements' truthiness.
        Expr e = ir::var("_e", Sort::Int);
        Expr body = ir::ne(e, ir::int_lit(0));
        return fn == "all" ? ir::all(e, arg(0), body) : ir::any(e, arg(0), body);
      });
    }
    if (fn == "min" || fn == "max") {
      arity(fn, args, 1, SIZE_MAX, at);
      return build(at, [&]() -> Expr {
        if (args.size() == 1) return fn == "min" ? ir::seq_min(arg(0)) : ir::seq_max(arg(0));
        std::vector<Expr> xs;
        for (const auto& a : args) xs.push_back(a.value);
        return fn == "min" ? ir::min(xs) : ir::max(xs);
      });
    }
    // range
    arity(fn, args, 1, 3, at);
    if (args.size() == 3) {
      if (arg(2)->op == Op::IntLit && arg(2)->int_value == 1)
        return build(at, [&] { return ir::range(arg(0), arg(1)); });
      return ir::unsupported(Sort::IntSeq, source(start, pos_),
                             "range() with a step other than 1 is not modelled");
    }
    return build(at, [&] {
      return args.size() == 1 ? ir::range(ir::int_lit(0), arg(0)) : ir::range(arg(0), arg(1));
    });
  }

  // all(body for x in d1 if c1 for y in d2 ...), any(...), sum(...): the for-clauses are parsed
  // first so that the body sees their targets; `body_at`/`for_at`/`close` are token indices.
  // Nested clauses nest the IR; an `if` guards what follows it (all: implies, any: and, sum:
  // the element counts 0).
  enum class Gen { All, Any, Sum };
  Expr comprehension(Gen kind, size_t body_at, size_t for_at, size_t close) {
    const bool is_all = kind == Gen::All;
    struct Clause {
      std::string name;
      Expr domain;
      std::vector<Expr> conds;
      size_t at;
    };
    std::vector<Clause> clauses;
    const size_t bound_before = bound_.size();
    pos_ = for_at;
    while (accept_kw("for")) {
      if (cur().kind != Token::Name || kKeywords.count(cur().text))
        fail(cur().pos, "expected a loop variable name after 'for'");
      Clause c;
      c.name = std::string(cur().text);
      c.at = cur().pos;
      ++pos_;
      if (is_punct(",")) fail(cur().pos, "only a single loop variable is supported");
      if (!accept_kw("in")) fail(cur().pos, "expected 'in' after the loop variable");
      const size_t dom_at = cur().pos;
      c.domain = or_test();
      if (c.domain->sort != Sort::IntSeq && c.domain->sort != Sort::Opaque)
        fail(dom_at, "can only iterate over a list[int] or range(), got " +
                         std::string(sort_name(c.domain->sort)));
      bound_.push_back(c.name);
      while (accept_kw("if")) c.conds.push_back(or_test());
      clauses.push_back(std::move(c));
    }
    if (pos_ != close) fail(cur().pos, "unexpected " + describe(cur()) + " in the generator");
    pos_ = body_at;
    const size_t body_pos = cur().pos;
    Expr body = ternary();
    if (pos_ != for_at) fail(cur().pos, "expected 'for', got " + describe(cur()));
    bound_.resize(bound_before);
    pos_ = close + 1;

    Expr e = build(body_pos, [&] {
      if (kind != Gen::Sum) return ir::truthy(body);
      if (body->sort == Sort::Bool) return ir::ite(body, ir::int_lit(1), ir::int_lit(0));
      if (body->sort != Sort::Int)
        fail(body_pos, "sum() over a generator adds ints or bools, got " +
                           std::string(sort_name(body->sort)));
      return body;
    });
    for (auto it = clauses.rbegin(); it != clauses.rend(); ++it) {
      const Clause& c = *it;
      e = build(c.at, [&] {
        std::vector<Expr> conds;
        for (const auto& x : c.conds) conds.push_back(ir::truthy(x));
        Expr inner = e;
        if (!conds.empty()) {
          Expr guard = ir::and_(conds);
          inner = kind == Gen::All   ? ir::implies(guard, inner)
                  : kind == Gen::Any ? ir::and_({guard, inner})
                                     : ir::ite(guard, inner, ir::int_lit(0));
        }
        Expr v = ir::var(c.name, Sort::Int);
        if (kind == Gen::Sum) return ir::sum_of(v, c.domain, inner);
        return is_all ? ir::all(v, c.domain, inner) : ir::any(v, c.domain, inner);
      });
    }
    return e;
  }

  std::string_view text_;
  std::string_view what_;
  std::vector<Token> toks_;
  size_t pos_ = 0;
  std::vector<Param> names_;
  std::vector<std::string> bound_;
  std::optional<std::string> result_hint_;
  int nesting_ = 0;
  static constexpr int kMaxNesting = 200;
};

}  // namespace

Expr parse_expression(std::string_view text, const std::vector<Param>& names,
                      std::string_view what) {
  return Parser(text, what, names, std::nullopt).parse();
}

Expr parse_spec(std::string_view text, const Signature& sig, SpecKind kind) {
  const std::string_view what = kind == SpecKind::Requires ? "requires" : "ensures";
  std::vector<Param> names = sig.params;
  std::optional<std::string> result_hint;
  if (sig.find("result"))
    throw SpecError(std::string(what) + ": parameter 'result' of " + sig.function +
                        " clashes with the name specs use for the return value; rename it",
                    1, 1);
  if (kind == SpecKind::Ensures && sig.result) {
    names.push_back({"result", *sig.result, sig.result_annotation});
  } else if (kind == SpecKind::Requires) {
    result_hint = "'result' is only available in ensures";
  } else {
    result_hint = "'result' is not available: " + sig.function + " returns None";
  }
  Expr e = Parser(text, what, names, result_hint).parse();
  try {
    return ir::truthy(e);
  } catch (const SolverError& err) {
    throw spec_error(what, err.what(), text, 0);
  }
}

}  // namespace vsynth::solvers
