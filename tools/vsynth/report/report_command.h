// `vsynth report`: one self-contained HTML page from a run's results, and its trace and
// metrics when given (html_page.h lists what the page holds).
#pragma once

#include <cstddef>
#include <string>

#include "graph/registry.h"

namespace vsynth::cli {

struct ReportArgs {
  std::string results;
  std::string trace;     // `vsynth run --trace`, optional
  std::string metrics;   // `vsynth run --metrics-json`, optional
  std::string pipeline;  // drawn; default: the one the metrics or trace name
  std::string output;
  std::size_t max_tasks = 500;         // rows in the task table (failures first)
  std::size_t max_field_bytes = 4096;  // per string in a row
  bool quiet = false;
};

int cmd_report(const graph::Registry& registry, const ReportArgs& args);

}  // namespace vsynth::cli
