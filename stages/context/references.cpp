#include "stages/context/references.h"

#include <algorithm>
#include <tuple>
#include <unordered_map>

#include "stages/context/ts_util.h"

namespace vsynth::stages::context {

std::vector<NameUse> names_used(const ast::ParsedFile& file, TSNode node, uint32_t at) {
  const ast::Language& lang = file.language();
  std::unordered_map<std::string_view, std::size_t> index;
  std::vector<NameUse> uses;
  std::vector<uint32_t> first_seen;
  walk(node, [&](TSNode n) {
    if (!lang.is_identifier(n)) return true;
    const uint32_t s = ts_node_start_byte(n), e = ts_node_end_byte(n);
    const uint32_t d = at < s ? s - at : at > e ? at - e : 0;
    const std::string_view name = file.text(n);
    auto [it, inserted] = index.try_emplace(name, uses.size());
    if (inserted) {
      uses.push_back(NameUse{name, d, 1});
      first_seen.push_back(s);
    } else {
      NameUse& u = uses[it->second];
      u.distance = std::min(u.distance, d);
      ++u.count;
    }
    return false;
  });
  std::vector<std::size_t> order(uses.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::tie(uses[a].distance, first_seen[a]) < std::tie(uses[b].distance, first_seen[b]);
  });
  std::vector<NameUse> sorted;
  sorted.reserve(uses.size());
  for (std::size_t i : order) sorted.push_back(uses[i]);
  return sorted;
}

std::vector<std::string_view> names_in(const ast::ParsedFile& file, TSNode node) {
  const ast::Language& lang = file.language();
  std::vector<std::string_view> names;
  std::unordered_map<std::string_view, bool> seen;
  walk(node, [&](TSNode n) {
    if (!lang.is_identifier(n)) return true;
    const std::string_view name = file.text(n);
    if (seen.try_emplace(name, true).second) names.push_back(name);
    return false;
  });
  return names;
}

}  // namespace vsynth::stages::context
