#include "stages/validation/checks.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "stages/ast/language.h"
#include "stages/facets/proof.h"
#include "stages/validation/c_harness.h"
#include "stages/validation/error.h"
#include "stages/validation/python_runner.h"
#include "stages/validation/syntax_check.h"

namespace vsynth::stages::validation {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// The resolved path of a host tool, or "" with `why` set.
std::string resolve_tool(const std::string& path, const SandboxConfig& sc, const char* what,
                         std::string& why) {
  char buf[PATH_MAX];
  if (path.empty() || ::realpath(path.c_str(), buf) == nullptr || ::access(buf, X_OK) != 0) {
    why = fmt::format("{} not found at `{}`", what, path);
    return "";
  }
  std::string real(buf);
  auto under = [&](const std::string& dir) {
    return real.size() > dir.size() && real.compare(0, dir.size(), dir) == 0 &&
           real[dir.size()] == '/';
  };
  bool visible = under("/usr");
  for (const auto& b : sc.ro_binds) visible = visible || under(b) || real == b;
  if (!visible) {
    throw ValidationError(fmt::format(
        "sandbox: {} `{}` resolves to `{}`, which the sandbox cannot see (it shows /usr and the "
        "ro_binds only); use a {} under /usr or add its prefix to ro_binds",
        what, path, real, what));
  }
  return real;
}

struct Report {
  std::vector<nlohmann::json> events;
  const nlohmann::json* final = nullptr;  // the pass or fail event
  const nlohmann::json* last_test = nullptr;
  bool loaded = false, compiled = false;
};

Report parse_report(const std::string& text) {
  Report r;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    auto j = nlohmann::json::parse(text.begin() + static_cast<std::ptrdiff_t>(pos),
                                   text.begin() + static_cast<std::ptrdiff_t>(eol), nullptr,
                                   /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("event") && j["event"].is_string()) {
      r.events.push_back(std::move(j));
    }
    pos = eol + 1;
  }
  for (const auto& e : r.events) {
    const std::string& ev = e["event"].get_ref<const std::string&>();
    if (ev == "pass" || ev == "fail") r.final = &e;
    if (ev == "test") r.last_test = &e;
    if (ev == "loaded") r.loaded = true;
    if (ev == "compiled") r.compiled = true;
  }
  return r;
}

std::string json_string(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// What the test process was doing when it died: "while running `assert f(3) == 4`".
std::string doing(const Report& r, bool c_program) {
  if (r.last_test) {
    std::string src = json_string(*r.last_test, "source");
    if (src.empty()) src = json_string(*r.last_test, "name");
    return fmt::format("while running `{}`", src);
  }
  if (c_program) return r.compiled ? "before the first test" : "while compiling the tests";
  return r.loaded ? "before the first test" : "while loading the candidate";
}

// The compiler's first error with the lines that follow it (source line, caret), as
// "candidate.c:3:5: error: ..." — what a retry needs.
std::string first_c_error(std::string_view err) {
  std::size_t pos = 0;
  while (pos < err.size()) {
    std::size_t eol = err.find('\n', pos);
    if (eol == std::string_view::npos) eol = err.size();
    const std::string_view line = err.substr(pos, eol - pos);
    if (line.find(" error: ") != std::string_view::npos ||
        line.find(" fatal error: ") != std::string_view::npos ||
        line.find("undefined reference") != std::string_view::npos) {
      return trim_message(err.substr(pos), 6, 800);
    }
    pos = eol + 1;
  }
  return trim_message(err, 8, 800);
}

// py_compile's message ("  File "candidate.py", line 2\n    code\n    ^\nSyntaxError: x") as
// "candidate.py:2: SyntaxError: x\n    code\n    ^".
std::string python_compile_message(std::string_view err) {
  const std::size_t file = err.find("File \"candidate.py\", line ");
  if (file == std::string_view::npos) return trim_message(err);
  std::size_t p = file + std::string_view("File \"candidate.py\", line ").size();
  std::size_t q = p;
  while (q < err.size() && err[q] >= '0' && err[q] <= '9') ++q;
  const std::string_view line_no = err.substr(p, q - p);
  std::string_view rest =
      err.substr(err.find('\n', q) == std::string_view::npos ? err.size() : err.find('\n', q) + 1);
  while (!rest.empty() && rest.back() == '\n') rest.remove_suffix(1);
  const std::size_t last_nl = rest.rfind('\n');
  const std::string_view last = last_nl == std::string_view::npos ? rest : rest.substr(last_nl + 1);
  const std::string_view snippet =
      last_nl == std::string_view::npos ? std::string_view() : rest.substr(0, last_nl);
  return trim_message(
      fmt::format("candidate.py:{}: {}{}{}", line_no, last, snippet.empty() ? "" : "\n", snippet),
      8, 800);
}

CheckVerdict unsupported(Check check, std::string_view language) {
  CheckVerdict v;
  v.check = check;
  v.status = Status::Skipped;
  v.message = fmt::format("the {} check does not support {} (python and c only)", to_string(check),
                          language);
  return v;
}

CheckVerdict infra_error(Check check, std::string message) {
  CheckVerdict v;
  v.check = check;
  v.status = Status::Error;
  v.message = std::move(message);
  return v;
}

}  // namespace

Checker::Checker(CheckerConfig config) : config_(std::move(config)), sandbox_(config_.sandbox) {
  python_ = resolve_tool(config_.python, config_.sandbox, "python", python_missing_);
  cc_ = resolve_tool(config_.cc, config_.sandbox, "cc", cc_missing_);
}

std::string Checker::file_name(std::string_view language) {
  const ast::Language* l = ast::Language::find(language);
  if (l == nullptr || l->extensions().empty()) return "candidate.txt";
  return "candidate" + std::string(l->extensions().front());
}

CheckVerdict Checker::syntax(const Program& program, std::string_view language) const {
  const auto t0 = Clock::now();
  CheckVerdict v;
  v.check = Check::Syntax;
  const ast::Language* l = ast::Language::find(language);
  if (l == nullptr) return unsupported(Check::Syntax, language);
  const SyntaxReport r = check_syntax(*l, program.pieces, file_name(language));
  v.status = r.issues.empty() && r.message.empty() ? Status::Pass : Status::Fail;
  v.message = r.message;
  if (v.status == Status::Fail) v.kind = "syntax_error";
  v.ms = ms_since(t0);
  return v;
}

CheckVerdict Checker::compile(const Program& program, std::string_view language,
                              const SandboxLimits& limits) const {
  const auto t0 = Clock::now();
  SandboxRequest req;
  req.limits = limits;
  const std::string name = file_name(language);
  req.files.push_back({name, program.pieces});
  if (language == "python") {
    if (python_.empty()) return infra_error(Check::Compile, python_missing_);
    req.argv = {python_, "-I", "-S", "-B", "-m", "py_compile", name};
  } else if (language == "c") {
    if (cc_.empty()) return infra_error(Check::Compile, cc_missing_);
    req.argv = {cc_, "-std=gnu11", "-fsyntax-only", "-fdiagnostics-color=never",
                "-Werror=implicit-function-declaration"};
    for (std::string_view h : kCStandardHeaders)
      req.argv.insert(req.argv.end(), {"-include", std::string(h)});
    req.argv.push_back(name);
  } else {
    return unsupported(Check::Compile, language);
  }
  SandboxResult r = sandbox_.run(req);
  CheckVerdict v;
  v.check = Check::Compile;
  v.ms = ms_since(t0);
  if (!r.started) {
    v.status = Status::Error;
    v.message = r.describe(limits);
  } else if (r.exited_ok()) {
    v.status = Status::Pass;
  } else {
    v.status = Status::Fail;
    v.kind = r.killed != KillReason::None || r.signal ? "killed" : "compile_error";
    if (v.kind == "killed") {
      v.message = "the compiler was " + r.describe(limits);
    } else {
      v.message =
          language == "python" ? python_compile_message(r.err.data) : first_c_error(r.err.data);
    }
  }
  v.run = std::move(r);
  return v;
}

CheckVerdict Checker::tests(const Program& program, const TaskTests& task, const TestSuite& suite,
                            bool oracle, const SandboxLimits& limits) const {
  CheckVerdict v;
  if (suite.empty()) {
    v.check = Check::Tests;
    v.status = Status::Skipped;
    v.message = oracle ? "the task has no hidden tests (`hidden_tests`, `test` or `test_list`)"
                       : "the task has no visible tests (`tests`, or `>>>` examples in `prompt`)";
  } else if (task.language == "python") {
    v = python_tests(program, task, suite, limits);
  } else if (task.language == "c") {
    v = c_tests(program, suite, limits);
  } else {
    v = unsupported(Check::Tests, task.language);
  }
  v.oracle = oracle;
  return v;
}

CheckVerdict Checker::python_tests(const Program& program, const TaskTests& task,
                                   const TestSuite& suite, const SandboxLimits& limits) const {
  const auto t0 = Clock::now();
  if (python_.empty()) return infra_error(Check::Tests, python_missing_);
  const std::string spec =
      python_tests_json(to_string(suite.kind), task.entry_point, suite.statements, suite.text);
  SandboxRequest req;
  req.limits = limits;
  req.report_fd = true;
  req.argv = {python_, "-I", "-S", "-B", "runner.py"};
  req.files.push_back({"runner.py", {python_runner_script()}});
  req.files.push_back({"candidate.py", program.pieces});
  req.files.push_back({"tests.json", {spec}});
  SandboxResult r = sandbox_.run(req);

  CheckVerdict v;
  v.check = Check::Tests;
  v.ms = ms_since(t0);
  const Report rep = parse_report(r.report.data);
  if (!r.started) {
    v.status = Status::Error;
    v.message = r.describe(limits);
  } else if (rep.final && r.killed == KillReason::None) {
    const nlohmann::json& f = *rep.final;
    if (json_string(f, "event") == "pass") {
      v.tests = f.value("tests", 0);
      v.status = v.tests > 0 ? Status::Pass : Status::Skipped;
      if (v.tests == 0) v.message = "no tests found in " + suite.origin;
    } else {
      v.status = json_string(f, "kind") == "test_error" ? Status::Error : Status::Fail;
      v.kind = json_string(f, "kind");
      v.message = trim_message(json_string(f, "message"));
    }
  } else {
    v.status = Status::Fail;
    if (r.killed == KillReason::WallTime) {
      v.kind = "timeout";
    } else if (r.killed == KillReason::OutputLimit) {
      v.kind = "output_limit";
    } else {
      v.kind = "crash";
    }
    v.message = fmt::format("the tests were {} {}", r.describe(limits), doing(rep, false));
    if (v.kind == "crash" && !r.err.data.empty()) {
      v.message += "\n" + trim_message(r.err.data, 10, 800);
    }
  }
  v.run = std::move(r);
  return v;
}

CheckVerdict Checker::c_tests(const Program& program, const TestSuite& suite,
                              const SandboxLimits& limits) const {
  const auto t0 = Clock::now();
  if (cc_.empty()) return infra_error(Check::Tests, cc_missing_);
  if (suite.kind != TestsKind::Statements && suite.kind != TestsKind::Script) {
    return unsupported(Check::Tests, "c doctest examples");
  }
  const std::string main_c = c_test_main(suite);
  const std::string script = c_run_script(cc_);
  SandboxRequest req;
  req.limits = limits;
  req.report_fd = true;
  req.argv = {"/bin/sh", "run.sh"};
  req.files.push_back({"candidate.c", program.pieces});
  req.files.push_back({"test_main.c", {main_c}});
  if (suite.kind == TestsKind::Script) req.files.push_back({"tests.c", {suite.text}});
  req.files.push_back({"run.sh", {script}});
  SandboxResult r = sandbox_.run(req);

  CheckVerdict v;
  v.check = Check::Tests;
  v.ms = ms_since(t0);
  const Report rep = parse_report(r.report.data);
  if (!r.started) {
    v.status = Status::Error;
    v.message = r.describe(limits);
  } else if (rep.final && r.killed == KillReason::None &&
             json_string(*rep.final, "event") == "pass") {
    v.status = Status::Pass;
    v.tests = rep.final->value("tests", 0);
  } else if (!rep.compiled && r.killed == KillReason::None) {
    v.status = Status::Fail;
    v.kind = "test_compile";
    v.message = "the tests do not compile against the candidate:\n" + first_c_error(r.err.data);
  } else {
    v.status = Status::Fail;
    const std::string assertion = c_assertion_message(r.err.data);
    if (r.killed == KillReason::WallTime) {
      v.kind = "timeout";
    } else if (!assertion.empty()) {
      v.kind = "assertion";
    } else if (rep.final) {
      v.kind = json_string(*rep.final, "kind");
    } else {
      v.kind = "crash";
    }
    if (v.kind == "assertion") {
      v.message = assertion;
    } else if (rep.final && json_string(*rep.final, "event") == "fail") {
      v.message = trim_message(json_string(*rep.final, "message"));
    } else {
      v.message = fmt::format("the test program was {} {}", r.describe(limits), doing(rep, true));
    }
  }
  v.run = std::move(r);
  return v;
}

CheckVerdict Checker::spec(const graph::Item& item) {
  return spec(item, SIZE_MAX);
}

CheckVerdict Checker::spec(const graph::Item& item, std::size_t candidate) {
  CheckVerdict v;
  v.check = Check::Spec;
  const auto* proof = item.find<facets::ProofFacet>();
  if (!proof) {
    v.status = Status::Skipped;
    v.message = "no `proof` facet (constrain.z3 did not run before validate.async)";
    return v;
  }
  // The candidate's own proof, else (no such candidate) the item's summary.
  const facets::ProofFacet::Summary proved = proof->summary(candidate);
  const std::string& verdict = proved.verdict;
  const std::string& message = proved.message;
  if (verdict == "verified") {
    v.status = Status::Pass;
  } else if (verdict == "refuted") {
    v.status = Status::Fail;
    v.kind = "refuted";
    v.message = "the spec is refuted";
    if (!message.empty()) v.message += ": " + message;
    if (proved.counterexample) {
      // Quoted and escaped as JSON: one line, whatever the values print as.
      v.message += "\ncounterexample: " +
                   trim_message(nlohmann::json(*proved.counterexample).dump(), 5, 400);
    }
  } else if (verdict == "spec_error") {
    v.status = Status::Skipped;
    v.message = "the spec was not checked: " + message;
  } else {
    v.status = Status::Skipped;
    v.message = "the proof is undecided (" + (verdict.empty() ? "no verdict" : verdict) + ")";
    if (!message.empty()) v.message += ": " + message;
  }
  return v;
}

}  // namespace vsynth::stages::validation
