// The page's own style and script, inlined into every report: the layout, the charts' drawing
// (each <div data-chart> from its spec in #vsynth-charts), and the task table (search, status
// filter, pages of 50, a task's attempts -> candidates -> checks on click), all from the JSON
// data islands the writer puts in the page. Text from results is set with textContent only.
#pragma once

namespace vsynth::cli::report {

extern const char* const kPageStyle;
extern const char* const kPageScript;

}  // namespace vsynth::cli::report
