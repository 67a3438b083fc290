#include "stages/validation/score.h"

#include "stages/validation/task_tests.h"

namespace vsynth::stages::validation {

CheckVerdict score_hidden(const graph::Task& task, const std::vector<std::string_view>& program,
                          const Checker& checker, std::string_view language) {
  const TaskTests tests = read_task_tests(task, language);
  Program p;
  p.pieces = program;
  p.source = "score_hidden";
  return checker.tests(p, tests, tests.hidden, /*oracle=*/true, checker.limits());
}

}  // namespace vsynth::stages::validation
