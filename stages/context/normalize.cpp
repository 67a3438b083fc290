#include "stages/context/normalize.h"

#include <algorithm>
#include <string_view>

#include "base/hash.h"
#include "base/mix.h"
#include "stages/context/ts_util.h"

namespace vsynth::stages::context {

namespace {

uint64_t fnv(std::string_view s) {
  return base::fnv1a64(s, base::kFnv1a64ShortOffset);
}

bool is_string_literal(std::string_view t) {
  return t.find("string") != std::string_view::npos || t == "char_literal" ||
         t == "character_literal" || t == "template_string";
}

bool is_number_literal(std::string_view t) {
  return t.find("number") != std::string_view::npos ||
         t.find("integer") != std::string_view::npos || t.find("float") != std::string_view::npos ||
         t == "int_literal" || t.find("decimal") != std::string_view::npos ||
         t == "imaginary_literal";
}

bool is_call(std::string_view t) {
  return t == "call" || t == "call_expression" || t == "method_invocation";
}

// The bytes of a call's receiver and accessor (`obj.` in obj.m(...), `p->` in p->m(...)):
// from the callee's object to its member name. {0, 0} when the call has no receiver.
std::pair<uint32_t, uint32_t> receiver_of(TSNode call) {
  const bool java = type_of(call) == "method_invocation";
  const TSNode callee = java ? call : field(call, "function");
  if (ts_node_is_null(callee)) return {0, 0};
  const std::string_view t = type_of(callee);
  if (!java && t != "attribute" && t != "member_expression" && t != "field_expression" &&
      t != "selector_expression") {
    return {0, 0};
  }
  TSNode object{}, member{};
  for (const char* f : {"object", "argument", "value", "operand"}) {
    if (ts_node_is_null(object)) object = field(callee, f);
  }
  for (const char* f : {"attribute", "property", "field", "name"}) {
    if (ts_node_is_null(member)) member = field(callee, f);
  }
  if (ts_node_is_null(object) || ts_node_is_null(member)) return {0, 0};
  return {ts_node_start_byte(object), ts_node_start_byte(member)};
}

// What normalized_tokens() needs to know of a node type, worked out once per grammar symbol
// of a call (the type name is a function of ts_node_symbol; the substring tests on it cost
// more than the rest of the visit).
enum TypeClass : uint8_t {
  kKnown = 1,
  kComment = 2,
  kCall = 4,
  kString = 8,
  kNumber = 16,
};

uint8_t classify(std::string_view t) {
  uint8_t k = kKnown;
  if (t.find("comment") != std::string_view::npos) k |= kComment;  // is_comment()
  if (is_call(t)) k |= kCall;
  if (is_string_literal(t)) k |= kString;
  if (is_number_literal(t)) k |= kNumber;
  return k;
}

}  // namespace

std::vector<uint64_t> normalized_tokens(const ast::ParsedFile& file, TSNode node) {
  std::vector<uint64_t> out;
  // Byte ranges of receivers to leave out, innermost last.
  std::vector<std::pair<uint32_t, uint32_t>> skip;
  // TypeClass by symbol (0: not yet seen); ERROR (65535) and other large symbols are not kept.
  constexpr TSSymbol kTableSize = 2048;
  std::vector<uint8_t> classes;
  walk(node, [&](TSNode n) {
    const uint32_t s = ts_node_start_byte(n);
    while (!skip.empty() && skip.back().second <= s) skip.pop_back();
    if (!skip.empty() && s >= skip.back().first) {
      // Inside the receiver: drop it; the callee around it (`obj.m`) is entered for `m`.
      if (ts_node_end_byte(n) <= skip.back().second) return false;
      return true;
    }
    const TSSymbol sym = ts_node_symbol(n);
    uint8_t k = 0;
    if (sym < kTableSize) {
      if (sym >= classes.size()) classes.resize(std::size_t{sym} + 1, 0);
      if (classes[sym] == 0) classes[sym] = classify(type_of(n));
      k = classes[sym];
    } else {
      k = classify(type_of(n));
    }
    if (k & kComment) return false;
    if (k & kCall) {
      const auto r = receiver_of(n);
      if (r.second > r.first) skip.push_back(r);
      return true;
    }
    if (k & kString) {
      out.push_back(fnv("S"));
      return false;
    }
    if (k & kNumber) {
      out.push_back(fnv("N"));
      return false;
    }
    if (ts_node_child_count(n) == 0) {
      const std::string_view text = file.text(n);
      if (!trim(text).empty()) out.push_back(fnv(text));
      return false;
    }
    return true;
  });
  return out;
}

std::vector<uint64_t> shingles(const std::vector<uint64_t>& tokens, uint32_t k) {
  std::vector<uint64_t> out;
  if (tokens.empty() || k == 0) return out;
  const std::size_t n = tokens.size() < k ? 1 : tokens.size() - k + 1;
  const std::size_t width = std::min<std::size_t>(k, tokens.size());
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    uint64_t h = base::kFnv1a64ShortOffset;
    for (std::size_t j = 0; j < width; ++j) {
      h ^= tokens[i + j] + base::kGoldenGamma + (h << 6) + (h >> 2);
      h *= base::kFnv1a64Prime;
    }
    out.push_back(h);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

double jaccard(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  if (a.empty() && b.empty()) return 0;
  std::size_t i = 0, j = 0, both = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i] == b[j]) {
      ++both;
      ++i;
      ++j;
    } else if (a[i] < b[j]) {
      ++i;
    } else {
      ++j;
    }
  }
  return static_cast<double>(both) / static_cast<double>(a.size() + b.size() - both);
}

}  // namespace vsynth::stages::context
