// The usage half of the retrieval index: which names each chunk calls, for the search's usage
// list (call co-occurrence, search.h). A function F that calls a, b and c is like the other
// functions of the project that call a, b and c; the names those call and F does not yet are
// what F is likely to call next (the helper the user has not named yet). This index answers
// the two lookups that needs: the chunks calling a name (its postings) and the chunks
// defining a simple name.
//
// Called names (called_names): identifiers directly followed by '(' (spaces allowed between),
// so `f(x)`, `obj.method(x)`, `new Type(x)`, `MACRO(x)` give f, method, Type, MACRO; the
// language's keywords (`if (`, `while (`, `sizeof(`) and the unit's own name (its definition
// row, a recursive call) are left out. Text-based on purpose: the query side is the cursor's
// function as typed, cut anywhere, which a parser may not accept; both sides use the same rule.
// Strings and comments are not told apart ("see parse()" counts): rare, and weighed by IDF.
//
// Not thread-safe: Index locks.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace vsynth::stages::retrieval {

struct Chunk;

// The distinct names `text` calls, sorted (see above). `language`: an ast language name, for
// its keywords ("" for none); `own`: the unit's simple name, left out ("" for none).
std::vector<std::string> called_names(std::string_view text, std::string_view language,
                                      std::string_view own);

class UsageIndex {
 public:
  // Registers the chunk's Chunk::calls and its definition name (the simple name of
  // Chunk::name). `id` must not be present.
  void add(uint32_t id, const Chunk& chunk);
  void remove(uint32_t id, const Chunk& chunk);  // the chunk add got

  // Chunk ids calling / defining `name` (null: none).
  const std::set<uint32_t>* callers(const std::string& name) const;
  const std::set<uint32_t>* definitions(const std::string& name) const;

 private:
  std::unordered_map<std::string, std::set<uint32_t>> callers_, definitions_;
};

}  // namespace vsynth::stages::retrieval
