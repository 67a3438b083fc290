// The four checks of a program: syntax (tree-sitter, in process), compile and tests (in the
// sandbox), spec (the verdict of constrain.z3's `proof` facet). Each returns one CheckVerdict
// and never throws for anything the candidate does.
//
//   compile  python: python3 -I -S -B -m py_compile candidate.py
//            c:      cc -std=gnu11 -fsyntax-only -Werror=implicit-function-declaration
//                    -include <each of kCStandardHeaders> candidate.c
//   tests    python: our runner (python_runner.h) with the suite in tests.json
//            c:      test_main.c includes candidate.c (its main renamed) and runs the statements
//                    (or includes tests.c and calls its main), compiled with cc -O0 and run;
//                    a failing assert() is reported with its expression
// Other languages: syntax only; compile and tests are `skipped` (unsupported).
#pragma once

#include <string>
#include <string_view>

#include "graph/item.h"
#include "stages/validation/candidate.h"
#include "stages/validation/sandbox.h"
#include "stages/validation/task_tests.h"
#include "stages/validation/verdict.h"

namespace vsynth::stages::validation {

struct CheckerConfig {
  SandboxConfig sandbox;
  SandboxLimits limits;
  // Host paths of the tools; each is resolved (symlinks followed, e.g. /usr/bin/cc through
  // /etc/alternatives) and must lie in /usr or under one of sandbox.ro_binds.
  std::string python = "/usr/bin/python3";
  std::string cc = "/usr/bin/cc";
};

class Checker {
 public:
  // Throws ValidationError when a tool lies outside what the sandbox can see. A tool that does
  // not exist is not an error here: the checks that need it report `error` naming it.
  explicit Checker(CheckerConfig config);

  CheckVerdict syntax(const Program& program, std::string_view language) const;
  CheckVerdict compile(const Program& program, std::string_view language,
                       const SandboxLimits& limits) const;
  // Runs `suite` against the program. `oracle` marks hidden tests in the verdict.
  CheckVerdict tests(const Program& program, const TaskTests& task, const TestSuite& suite,
                     bool oracle, const SandboxLimits& limits) const;
  // Reads the item's `proof` facet (constrain.z3; stages/facets/proof.h): verified passes,
  // refuted fails (with the counterexample), anything else is skipped, as is an item without
  // the facet. This one judges the item's summary verdict.
  static CheckVerdict spec(const graph::Item& item);
  // The same for one candidate: its own proof when the facet has one (constrain.z3 proves each
  // candidate), else the item's verdict.
  static CheckVerdict spec(const graph::Item& item, std::size_t candidate);

  const Sandbox& sandbox() const { return sandbox_; }
  const SandboxLimits& limits() const { return config_.limits; }
  const std::string& python() const { return python_; }  // resolved; empty when missing
  const std::string& cc() const { return cc_; }

  // "candidate.py", "candidate.c", "candidate.rs"...
  static std::string file_name(std::string_view language);

 private:
  CheckVerdict python_tests(const Program& program, const TaskTests& task, const TestSuite& suite,
                            const SandboxLimits& limits) const;
  CheckVerdict c_tests(const Program& program, const TestSuite& suite,
                       const SandboxLimits& limits) const;

  CheckerConfig config_;
  Sandbox sandbox_;
  std::string python_, cc_;
  std::string python_missing_, cc_missing_;  // why a tool cannot be used
};

}  // namespace vsynth::stages::validation
