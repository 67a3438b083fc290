// The report page: one self-contained HTML file (styles, scripts, charts' data and the task
// table inline; nothing fetched when it is viewed). Sections: inputs and warnings, the pipeline
// graph, outcomes and pass rates, the feedback loop, where time went (trace), per-stage metrics,
// engine counters, the task table.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tools/vsynth/report/pipeline_svg.h"
#include "tools/vsynth/report/results_scan.h"
#include "tools/vsynth/report/run_metrics.h"
#include "tools/vsynth/report/trace_scan.h"

namespace vsynth::cli::report {

struct PageInputs {
  const ResultsSummary* results = nullptr;
  const TraceSummary* trace = nullptr;  // null: no --trace, or one from another run
  const RunMetrics* metrics = nullptr;  // null: no --metrics
  std::string pipeline;                 // the pipeline file drawn, "" when none
  PipelineSvg graph;
  std::string vega;                   // vega_scripts(); "" : charts shown as tables only
  std::vector<std::string> warnings;  // shown at the top, as on stderr
};

std::string render_page(const PageInputs& in);

}  // namespace vsynth::cli::report
