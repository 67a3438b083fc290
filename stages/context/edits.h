// The task's edit history, which context.prune uses to favour recently edited blocks.
//
// Task field (a JSON pointer, `edits_field`, default /edits): a list, oldest first, most
// recent last, of
//   {"path": "src/app.py", "start_line": 10, "end_line": 12}
// with 1-based inclusive lines in the file's current text (after the edit). `path` may be
// left out for the task's own file; `end_line` defaults to `start_line`. An edit to a file
// the candidates do not hold is ignored. A malformed entry fails the item with a message
// naming the task, the entry and the field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/item.h"
#include "stages/context/context_units.h"

namespace vsynth::stages::context {

struct Edit {
  std::string path;                      // "" = the task's file
  uint32_t first_row = 0, last_row = 0;  // 0-based, inclusive
};

// The edits of `item` at `pointer`, oldest first; none when the field is absent or null.
std::vector<Edit> read_edits(const graph::Item& item, const std::string& pointer);

// Sets reasons.edit_rank (0 = the most recent edit) on every unit whose own rows overlap an
// edit.
void mark_edits(ContextUnitsFacet& candidates, const std::vector<Edit>& edits);

}  // namespace vsynth::stages::context
