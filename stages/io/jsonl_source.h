// io.jsonl_source: tasks from a JSON Lines file, one object per line.
//
// The whole file is checked before the run starts: every line that is not a JSON object, has
// no string id (`id`, else `task_id`), or repeats an id is reported with file:line at once.
// Blank lines are skipped.
#pragma once

#include <string>
#include <vector>

#include "graph/registry.h"
#include "graph/stage.h"

namespace vsynth::stages::io {

class JsonlSource : public graph::Source {
 public:
  // Throws std::runtime_error listing every bad line.
  explicit JsonlSource(const std::string& path);
  std::optional<graph::Task> next() override;
  std::optional<std::size_t> total() const override { return tasks_.size(); }

 private:
  std::vector<graph::Task> tasks_;
  std::size_t next_ = 0;
};

graph::Contract jsonl_source_contract();

}  // namespace vsynth::stages::io
