// Chrome-trace / Perfetto JSON: one complete ("X") event per item per stage, written as items
// finish so an interrupted run still leaves a readable file (the viewers accept a missing `]`).
#pragma once

#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "graph/item.h"

namespace vsynth::graph {

class TraceWriter {
 public:
  // Throws std::runtime_error naming the path when it cannot be created. `pipeline` (the
  // pipeline file) and `name` (its `pipeline:`) go into a process_name metadata event first, so
  // viewers title the process and `vsynth report` finds the graph the trace came from.
  explicit TraceWriter(const std::string& path, const std::string& pipeline = {},
                       const std::string& name = {});
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Writes the item's spans; stage names are indexed by Span::stage.
  void write(const Item& item, const std::vector<std::string>& stage_names);
  void close();

 private:
  std::mutex mu_;
  std::FILE* f_ = nullptr;
  bool first_ = true;
};

}  // namespace vsynth::graph
