#include "graph/dot.h"

#include <fmt/format.h>

namespace vsynth::graph {

namespace {
std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}
}  // namespace

std::string to_dot(const ValidatedPipeline& p) {
  std::string out = fmt::format(
      "digraph {} {{\n  rankdir=LR;\n  node [shape=box, fontname=\"Helvetica\"];\n", quote(p.name));
  out += "  in [shape=circle, label=\"in\"];\n  out [shape=doublecircle, label=\"out\"];\n";
  for (const auto& s : p.stages) {
    const auto conc = s.concurrency.limit == 0   ? std::string("unlimited")
                      : s.concurrency.limit == 1 ? std::string("serial")
                                                 : std::to_string(s.concurrency.limit);
    out += fmt::format("  {} [label=\"{}\\n{}\\n{}{}\"];\n", quote(s.name), s.name,
                       s.kind->contract.kind, conc,
                       s.kind->contract.execution == Execution::Async ? ", async" : "");
  }
  if (!p.stages.empty()) out += fmt::format("  in -> {};\n", quote(p.stages[p.entry].name));
  for (const auto& e : p.edges) {
    const auto& from = p.stages[e.from];
    const std::string to = e.to == kOut ? "out" : quote(p.stages[e.to].name);
    std::string label = from.kind->contract.ports[e.port].name;
    std::string style;
    if (e.back_edge) {
      label += fmt::format(" (max {})", e.max_attempts);
      style = ", style=dashed, constraint=false";
    }
    out += fmt::format("  {} -> {} [label={}{}];\n", quote(from.name), to, quote(label), style);
  }
  out += "}\n";
  return out;
}

}  // namespace vsynth::graph
