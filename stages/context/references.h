// Which names a piece of code uses: every identifier-like leaf (as stages/ast's Language
// tables define them: identifiers, field / property / type identifiers...) within a node,
// distinct by text, nearest to a byte position first. This is how the cursor's function points
// at the definitions it needs (calls, attribute accesses, type uses alike).
#pragma once

#include <tree_sitter/api.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "stages/ast/parsed_file.h"

namespace vsynth::stages::context {

struct NameUse {
  std::string_view name;  // a view into the file's source
  uint32_t distance = 0;  // bytes from `at` to its nearest occurrence (0: touching)
  uint32_t count = 0;     // occurrences within the node
};

// Distinct identifiers within `node`, nearest to byte `at` first (ties: earlier first).
std::vector<NameUse> names_used(const ast::ParsedFile& file, TSNode node, uint32_t at);

// The same, without distances: distinct names in first-occurrence order.
std::vector<std::string_view> names_in(const ast::ParsedFile& file, TSNode node);

}  // namespace vsynth::stages::context
