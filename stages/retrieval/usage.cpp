#include "stages/retrieval/usage.h"

#include <algorithm>
#include <cctype>

#include "stages/retrieval/index.h"
#include "stages/retrieval/search.h"
#include "stages/retrieval/terms.h"

namespace vsynth::stages::retrieval {

namespace {

bool word_byte(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$';
}

}  // namespace

std::vector<std::string> called_names(std::string_view text, std::string_view language,
                                      std::string_view own) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < text.size()) {
    if (!word_byte(text[i])) {
      ++i;
      continue;
    }
    const std::size_t start = i;
    while (i < text.size() && word_byte(text[i])) ++i;
    const std::string_view word = text.substr(start, i - start);
    std::size_t next = i;
    while (next < text.size() && (text[next] == ' ' || text[next] == '\t')) ++next;
    if (next >= text.size() || text[next] != '(') continue;
    if (std::isdigit(static_cast<unsigned char>(word[0])) || word == own) continue;
    if (!language.empty() && is_keyword(language, word)) continue;
    out.emplace_back(word);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void UsageIndex::add(uint32_t id, const Chunk& chunk) {
  for (const std::string& name : chunk.calls) callers_[name].insert(id);
  const std::string_view own = simple_name(chunk.name);
  if (!own.empty()) definitions_[std::string(own)].insert(id);
}

void UsageIndex::remove(uint32_t id, const Chunk& chunk) {
  auto drop = [id](std::unordered_map<std::string, std::set<uint32_t>>& map,
                   const std::string& name) {
    auto it = map.find(name);
    if (it == map.end()) return;
    it->second.erase(id);
    if (it->second.empty()) map.erase(it);
  };
  for (const std::string& name : chunk.calls) drop(callers_, name);
  const std::string_view own = simple_name(chunk.name);
  if (!own.empty()) drop(definitions_, std::string(own));
}

const std::set<uint32_t>* UsageIndex::callers(const std::string& name) const {
  auto it = callers_.find(name);
  return it == callers_.end() ? nullptr : &it->second;
}

const std::set<uint32_t>* UsageIndex::definitions(const std::string& name) const {
  auto it = definitions_.find(name);
  return it == definitions_.end() ? nullptr : &it->second;
}

}  // namespace vsynth::stages::retrieval
