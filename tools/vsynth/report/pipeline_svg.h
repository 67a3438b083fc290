// The pipeline graph as `vsynth dot` draws it (graph/dot.h), rendered to SVG by Graphviz's
// `dot -Tsvg` (Debian graphviz) at report time, for embedding in the page.
#pragma once

#include <string>

#include "graph/registry.h"

namespace vsynth::cli::report {

struct PipelineSvg {
  std::string svg;    // the <svg> element, "" when it could not be drawn
  std::string error;  // why not (the pipeline's errors, dot missing or failing)
};

// `dot_program`: the Graphviz executable (default `dot`, looked up on PATH).
PipelineSvg draw_pipeline(const graph::Registry& registry, const std::string& pipeline_file,
                          const std::string& dot_program = "dot");

}  // namespace vsynth::cli::report
