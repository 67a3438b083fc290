#include "stages/validation/candidate.h"

#include "stages/facets/candidates.h"

namespace vsynth::stages::validation {

namespace {

std::string_view task_string(const graph::Task& task, const char* field) {
  const auto it = task.data.find(field);
  if (it == task.data.end() || !it->is_string()) return {};
  return it->get_ref<const std::string&>();
}

}  // namespace

std::size_t Program::size() const {
  std::size_t n = 0;
  for (std::string_view p : pieces) n += p.size();
  return n;
}

std::vector<Program> programs_of(const graph::Item& item) {
  std::vector<Program> out;
  if (const auto* facet = item.find<facets::CandidatesFacet>()) {
    for (std::size_t i = 0; i < facet->candidates.size(); ++i) {
      out.push_back({{facet->candidates[i].code}, i, "candidates[" + std::to_string(i) + "]"});
    }
    return out;
  }
  const graph::Task& task = item.task();
  if (std::string_view c = task_string(task, "candidate"); !c.empty()) {
    out.push_back({{c}, 0, "task.candidate"});
  } else if (std::string_view comp = task_string(task, "completion"); !comp.empty()) {
    out.push_back({{task_string(task, "prompt"), comp}, 0, "task.prompt + task.completion"});
  } else if (std::string_view sol = task_string(task, "canonical_solution"); !sol.empty()) {
    out.push_back({{task_string(task, "prompt"), sol}, 0, "task.prompt + task.canonical_solution"});
  }
  return out;
}

}  // namespace vsynth::stages::validation
