#include "stages/validation/spec_test.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "base/hash.h"
#include "base/mix.h"
#include "stages/facets/proof.h"
#include "stages/validation/spec_inputs.h"
#include "stages/validation/spec_runner.h"

namespace vsynth::stages::validation {

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;
using solvers::Concrete;
using solvers::Sort;

// Sandbox set-up, interpreter start and the candidate's load, on top of the calls' budget: the
// wall limit that cuts a call that hangs, keeping the results of the calls before it.
constexpr int64_t kStartupMs = 2000;
// Each call's share of the budget, CPU ms: a call that cannot finish (a loop over a large n)
// costs this much, and the calls after it still run.
constexpr int64_t kCallsPerBudget = 40;
constexpr int64_t kMinCallMs = 5;

// --- The runner's side: arguments in, reports out -------------------------------------------

json arg_json(const ArgValue& a) {
  switch (a.sort) {
    case Sort::Bool:
      return {{"t", "bool"}, {"v", a.value.boolean}};
    case Sort::IntSeq: {
      json xs = json::array();
      for (solvers::Int128 x : a.value.elements) xs.push_back(solvers::int128_to_string(x));
      return {{"t", "list"}, {"v", xs}};
    }
    case Sort::Opaque:
      return {{"t", "str"}, {"v", a.text}};
    default:
      return {{"t", "int"}, {"v", solvers::int128_to_string(a.value.integer)}};
  }
}

json args_json(const TestInput& input) {
  json args = json::array();
  for (const ArgValue& a : input) args.push_back(arg_json(a));
  return args;
}

struct RunReport {
  std::vector<json> outcomes;  // by input: its result / raised / timeout event, or null
  std::string failure;         // the candidate could not be called at all
  std::string stopped;         // why the calls ended before the last input ("" if they did not)
};

void read_events(const std::string& text, std::size_t count, RunReport& rep, bool& loaded,
                 bool& done, std::optional<std::size_t>& last_call) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    const json e = json::parse(text.begin() + static_cast<std::ptrdiff_t>(pos),
                               text.begin() + static_cast<std::ptrdiff_t>(eol), nullptr, false);
    pos = eol + 1;
    if (!e.is_object() || !e.contains("event") || !e["event"].is_string()) continue;
    const std::string& ev = e["event"].get_ref<const std::string&>();
    const std::size_t i = e.value("i", count);
    if ((ev == "result" || ev == "raised" || ev == "timeout") && i < count) rep.outcomes[i] = e;
    if (ev == "call" && i < count) last_call = i;
    if (ev == "loaded") loaded = true;
    if (ev == "done") done = true;
    if (ev == "fail") rep.failure = e.value("message", std::string("the runner failed"));
    if (ev == "stopped")
      rep.stopped = fmt::format("the time budget ran out after {} calls", e.value("at", 0));
  }
}

// One sandboxed run: the candidate loaded once, called on every input in order.
RunReport run_candidate(const Checker& checker, const Program& program, const std::string& entry,
                        const std::vector<TestInput>& inputs, const SpecTestSettings& s,
                        const SandboxLimits& base) {
  RunReport rep;
  rep.outcomes.assign(inputs.size(), json());
  if (checker.python().empty()) {
    rep.failure = "python is not available to the sandbox";
    return rep;
  }
  json spec = {{"entry_point", entry},
               {"budget_ms", s.budget_ms},
               {"call_ms", std::max(kMinCallMs, s.budget_ms / kCallsPerBudget)},
               {"inputs", json::array()}};
  for (const TestInput& in : inputs) spec["inputs"].push_back(args_json(in));
  const std::string text = spec.dump(-1, ' ', false, json::error_handler_t::replace);

  SandboxRequest req;
  req.limits = base;
  req.limits.wall_ms = s.budget_ms + kStartupMs;
  req.limits.cpu_ms = std::max(base.cpu_ms, req.limits.wall_ms);
  req.limits.output = std::max<uint64_t>(base.output, kMiB);  // one report line per input
  req.report_fd = true;
  req.argv = {checker.python(), "-I", "-S", "-B", "spec_runner.py"};
  req.files.push_back({"spec_runner.py", {spec_runner_script()}});
  req.files.push_back({"candidate.py", program.pieces});
  req.files.push_back({"inputs.json", {text}});
  const SandboxResult r = checker.sandbox().run(req);
  if (!r.started) {
    rep.failure = "the sandbox did not start: " + r.describe(req.limits);
    return rep;
  }
  bool loaded = false, done = false;
  std::optional<std::size_t> last_call;
  read_events(r.report.data, inputs.size(), rep, loaded, done, last_call);
  if (!rep.failure.empty() || done || !rep.stopped.empty()) return rep;
  if (r.report.truncated && last_call) {
    rep.stopped = fmt::format("the report passed the {} bytes kept at input {}", req.limits.output,
                              *last_call + 1);
    return rep;
  }
  if (!loaded) {
    rep.failure = "the candidate did not load: the run was " + r.describe(req.limits);
  } else {
    rep.stopped = last_call ? fmt::format("the run was {} while calling input {}",
                                          r.describe(req.limits), *last_call + 1)
                            : "the run was " + r.describe(req.limits) + " before the first call";
  }
  return rep;
}

// --- Judging one (input, outcome) ------------------------------------------------------------

struct Judgement {
  enum class Kind { Holds, Violated, NotEvaluable };
  Kind kind = Kind::NotEvaluable;
  std::string failed;      // Violated: the ensures clause, or isinstance(result, T) for a bad type
  std::string error;       // Violated by an exception: the candidate's or the ensures'
  std::string returned;    // repr of the return value ("" when the call raised)
  std::string type_error;  // "a str where the signature says int"
  std::optional<solvers::Value> value;  // the return value, for the counterexample
  std::string why;                      // NotEvaluable: why
};

std::string expected_type(const solvers::Signature& sig) {
  if (!sig.result_annotation.empty()) return sig.result_annotation;
  return sig.result ? std::string(solvers::sort_name(*sig.result)) : "None";
}

// "a str", "an int".
std::string with_article(const std::string& type) {
  const bool vowel =
      !type.empty() && std::string_view("aeiou").find(type[0]) != std::string_view::npos;
  return (vowel ? "an " : "a ") + type;
}

// The builtin types an Opaque result annotation can be checked against by name.
bool checkable_by_name(const std::string& annotation) {
  return annotation == "str" || annotation == "bytes" || annotation == "dict" ||
         annotation == "set" || annotation == "frozenset";
}

// What the runner's tagged `value` holds.
struct Returned {
  std::string tag;   // int | bool | list | other
  std::string type;  // its Python type
  std::string repr;
  std::optional<Concrete> value;  // int, bool, list; nullopt otherwise or past 128 bits
};

Returned read_returned(const json& v) {
  Returned r;
  r.tag = r.type = v.value("t", std::string());
  if (r.tag == "bool") {
    r.value = Concrete::of_bool(v.value("v", false));
  } else if (r.tag == "int") {
    if (const auto n = solvers::parse_int128(v.value("v", std::string())))
      r.value = Concrete::of_int(*n);
  } else if (r.tag == "list") {
    std::vector<solvers::Int128> xs;
    const json elements = v.value("v", json());  // "?" when too long to report
    for (const json& x : elements.is_array() ? elements : json::array()) {
      const auto n = solvers::parse_int128(x.is_string() ? x.get<std::string>() : "");
      if (!n) break;
      xs.push_back(*n);
    }
    if (elements.is_array() && xs.size() == elements.size())
      r.value = Concrete::of_list(std::move(xs));
  } else {
    r.tag = "other";
    r.type = v.value("type", std::string("?"));
    r.repr = v.value("repr", std::string("?"));
    return r;
  }
  r.repr = r.value ? r.value->python() : "<too large to report>";
  return r;
}

// Whether the value has the signature's result type.
bool fits_result(const solvers::Signature& sig, const Returned& r) {
  if (!sig.result) return true;  // -> None: not checked
  switch (*sig.result) {
    case Sort::Int:
      return r.tag == "int" || r.tag == "bool";  // Python's bool is an int
    case Sort::Bool:
      return r.tag == "bool";
    case Sort::IntSeq:
      return r.tag == "list";
    default:  // str, dict...: only the type's name can be checked
      return !checkable_by_name(sig.result_annotation) || r.type == sig.result_annotation;
  }
}

// The return value as a counterexample shows it.
solvers::Value shown(const Returned& r) {
  if (r.value) return ArgValue{r.value->sort, *r.value, {}}.value_of();
  solvers::Value v;
  v.sort = Sort::Opaque;
  v.number = r.repr;  // Value::python() prints `number` for what it does not model
  return v;
}

// Evaluates every ensures conjunct on `env` into `j`: one False or raising breaks the spec
// whatever the others give; else one not evaluable leaves it undecided.
void check_ensures(const solvers::FunctionContract& contract, const solvers::Env& env,
                   Judgement& j) {
  for (const solvers::Expr& clause : contract.ensures_clauses) {
    for (const solvers::Expr& c : solvers::conjuncts(clause)) {
      const solvers::Evaluated r = solvers::evaluate(c, env);
      if (r.kind == solvers::Evaluated::Kind::Value && r.value.boolean) continue;
      if (r.kind == solvers::Evaluated::Kind::NotEvaluable) {
        if (j.why.empty()) j.why = r.error;
        continue;
      }
      j.kind = Judgement::Kind::Violated;
      j.failed = solvers::to_python(c);
      if (r.kind == solvers::Evaluated::Kind::Raised) j.error = r.error;
      return;
    }
  }
  j.kind = j.why.empty() ? Judgement::Kind::Holds : Judgement::Kind::NotEvaluable;
}

Judgement judge(const solvers::FunctionContract& contract, const TestInput& input,
                const json& outcome) {
  Judgement j;
  const std::string event = outcome.value("event", std::string());
  if (event == "timeout") {
    j.why = "a call ran past its time limit";
    return j;  // NotEvaluable
  }
  if (event == "raised") {
    j.error = outcome.value("error", std::string("an exception"));
    // Memory, recursion depth or index width running out on a huge input is a limit of this
    // run, which the spec's unbounded ints do not have (nor a proof): no verdict.
    for (const char* limit : {"MemoryError", "RecursionError", "OverflowError"}) {
      if (j.error.starts_with(limit)) {
        j.why = std::string(limit) + " on a large input";
        return j;  // NotEvaluable
      }
    }
    j.kind = Judgement::Kind::Violated;  // any other exception on a valid input breaks the spec
    return j;
  }
  const solvers::Signature& sig = contract.signature;
  const Returned ret = read_returned(outcome.value("value", json::object()));
  j.returned = ret.repr;
  j.value = shown(ret);
  if (!fits_result(sig, ret)) {
    j.kind = Judgement::Kind::Violated;
    j.type_error = with_article(ret.type) + " where the signature says " + expected_type(sig);
    j.failed = "isinstance(result, " + expected_type(sig) + ")";
    return j;
  }
  std::optional<Concrete> result;  // the spec's `result`, for the sorts it models
  if (sig.result == Sort::Int || sig.result == Sort::Bool || sig.result == Sort::IntSeq) {
    if (!ret.value) {
      j.why = "a returned int beyond 128 bits or list over 256 elements is not evaluated";
      return j;  // NotEvaluable
    }
    result = ret.value;
    if (sig.result == Sort::Int && result->sort == Sort::Bool)
      result = Concrete::of_int(result->boolean ? 1 : 0);
  }
  solvers::Env env = env_of(sig, input);
  if (result) env.emplace_back("result", *result);
  check_ensures(contract, env, j);
  return j;
}

// Soundness: a violation is believed only when it holds up once more on its own, outside the
// loop that found it: the runner echoed exactly the arguments generated for this input (the
// report belongs to it), the input satisfies the requires, and judging the raw report again
// breaks the same clause.
bool recheck(const solvers::FunctionContract& contract, const TestInput& input, const json& outcome,
             const Judgement& found) {
  if (outcome.value("args", json()) != args_json(input)) return false;
  if (!satisfies_requires(contract, input)) return false;
  const Judgement again = judge(contract, input, outcome);
  return again.kind == Judgement::Kind::Violated && again.failed == found.failed &&
         again.error == found.error;
}

// The counterexample, worded as a Z3 one (solvers/function_contract.h).
solvers::Counterexample counterexample_of(const solvers::Signature& sig, const TestInput& input,
                                          const Judgement& j) {
  solvers::Counterexample cx;
  for (std::size_t i = 0; i < sig.params.size() && i < input.size(); ++i)
    cx.inputs.values.emplace_back(sig.params[i].name, input[i].value_of());
  if (!j.returned.empty()) cx.returned = j.value;
  cx.failed = j.failed;
  cx.error = j.error;
  const std::string call = call_text(sig, input);
  if (j.returned.empty()) {
    cx.text = call + " raised " + j.error;
  } else if (!j.type_error.empty()) {
    cx.text = call + " returned " + j.returned + ", " + j.type_error;
  } else {
    cx.text = call + " returned " + j.returned + "; ensures " + j.failed +
              (j.error.empty() ? "" : " raised " + j.error);
  }
  return cx;
}

std::string violation_text(const Judgement& j) {
  if (j.returned.empty()) return "the candidate raised " + j.error;
  if (!j.type_error.empty()) return "it returned " + j.type_error;
  return "`" + j.failed + "`" + (j.error.empty() ? "" : " raised " + j.error);
}

// What judging every result found.
struct Tally {
  std::size_t came_back = 0;    // results (returned, raised, timed out)
  std::size_t judged = 0;       // the spec evaluated: held or broken
  std::size_t unevaluable = 0;  // no verdict: a call past its limit, a value not evaluable...
  std::string unevaluable_why;  // the first one's reason
  // The first violation believed: it survived its re-check, and no argument of it is a str.
  std::optional<std::pair<std::size_t, Judgement>> violation;
  // The first violation on an input with a str argument: not believed, since the requires
  // cannot say which strings are valid (the IR does not model them), so the task may well
  // exclude it (a roman numeral parser given "").
  std::optional<std::size_t> on_str;
};

bool has_str(const TestInput& input) {
  return std::any_of(input.begin(), input.end(),
                     [](const ArgValue& a) { return a.sort == Sort::Opaque; });
}

Tally judge_all(const solvers::FunctionContract& contract, const std::vector<TestInput>& inputs,
                const RunReport& run) {
  Tally t;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (run.outcomes[i].is_null()) continue;
    ++t.came_back;
    const Judgement j = judge(contract, inputs[i], run.outcomes[i]);
    if (j.kind == Judgement::Kind::NotEvaluable) {
      if (t.unevaluable++ == 0) t.unevaluable_why = j.why;
      continue;
    }
    ++t.judged;
    if (j.kind != Judgement::Kind::Violated || t.violation) continue;
    if (has_str(inputs[i])) {
      if (!t.on_str) t.on_str = i;
    } else if (recheck(contract, inputs[i], run.outcomes[i], j)) {
      t.violation.emplace(i, j);
    }
  }
  return t;
}

std::string undecided_message(const solvers::FunctionContract& contract,
                              const std::vector<TestInput>& inputs, const Tally& t,
                              const std::string& stopped) {
  const std::string cut = stopped.empty() ? "" : "; " + stopped;
  if (t.judged == 0) {
    return "not tested: " + (t.unevaluable
                                 ? "the spec could not be evaluated (" + t.unevaluable_why + ")"
                                 : "no call returned" + cut);
  }
  std::string m = fmt::format("no violation in {} tested inputs", t.judged);
  if (t.on_str) {
    m = fmt::format(
        "no violation believed in {} tested inputs ({} breaks the spec, but the "
        "requires cannot restrict str arguments)",
        t.judged, call_text(contract.signature, inputs[*t.on_str]));
  }
  if (t.unevaluable)
    m += fmt::format("; {} more could not be evaluated ({})", t.unevaluable, t.unevaluable_why);
  return m + cut;
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

}  // namespace

SpecTestResult test_spec(const Checker& checker, const Program& program,
                         const solvers::FunctionContract& contract, uint64_t seed,
                         const SpecTestSettings& settings, const SandboxLimits& limits) {
  const auto t0 = Clock::now();
  SpecTestResult out;
  out.seed = seed;
  // Phase 1: inputs within the requires.
  InputOptions options;
  options.count = static_cast<std::size_t>(std::max<int64_t>(1, settings.max_inputs));
  const GeneratedInputs gen = generate_inputs(contract, seed, options);
  if (gen.untestable || gen.inputs.empty()) {
    out.message = gen.untestable ? "not tested: " + *gen.untestable
                  : gen.unevaluable
                      ? "not tested: the requires cannot be evaluated (" + *gen.unevaluable + ")"
                      : fmt::format(
                            "could not satisfy requires: none of {} generated inputs "
                            "satisfies them",
                            gen.tries);
    out.ms = ms_since(t0);
    return out;
  }
  // Phase 2: one sandboxed run over every input.
  const RunReport run =
      run_candidate(checker, program, contract.signature.function, gen.inputs, settings, limits);
  if (!run.failure.empty()) {
    out.message = "not tested: " + run.failure;
    out.ms = ms_since(t0);
    return out;
  }
  // Phase 3: judge every result; the first believed violation refutes.
  const Tally tally = judge_all(contract, gen.inputs, run);
  out.inputs = tally.judged;
  if (tally.violation) {
    const auto& [index, j] = *tally.violation;
    out.refuted = true;
    out.counterexample = counterexample_of(contract.signature, gen.inputs[index], j);
    out.message = fmt::format("testing input {} of {} breaks the spec: {}", index + 1,
                              tally.came_back, violation_text(j));
  } else {
    out.message = undecided_message(contract, gen.inputs, tally, run.stopped);
  }
  out.ms = ms_since(t0);
  return out;
}

uint64_t spec_test_seed(const graph::Task& task, std::size_t index) {
  uint64_t seed = 0;  // the task's decoding seed, /decode/seed, when it has one
  if (const auto d = task.data.find("decode"); d != task.data.end() && d->is_object()) {
    const auto s = d->find("seed");
    if (s != d->end() && s->is_number_integer() &&
        (s->is_number_unsigned() || s->get<int64_t>() >= 0))
      seed = s->get<uint64_t>();
  }
  const uint64_t h = base::fnv1a64(task.id);
  return base::splitmix64_finalize(base::splitmix64_finalize(seed ^ h) +
                                   static_cast<uint64_t>(index));
}

CheckVerdict check_spec(graph::Item& item, const Program& program, std::string_view language,
                        const Checker& checker, const SpecTestSettings& settings,
                        const SandboxLimits& limits) {
  auto* proof = item.find<facets::ProofFacet>();
  facets::CandidateProof* p = proof && program.index < proof->candidates.size()
                                  ? &proof->candidates[program.index]
                                  : nullptr;
  // Test only what nothing decided yet (a second validate stage reads the first's outcome).
  if (settings.enabled && p && proof->contract && language == "python" &&
      p->verdict == solvers::Verdict::Unknown && !p->testing) {
    const SpecTestResult r =
        test_spec(checker, program, *proof->contract, spec_test_seed(item.task(), program.index),
                  settings, limits);
    facets::SpecTesting t{r.inputs, r.refuted, r.message, {}, r.seed, r.ms};
    if (r.refuted) {  // from here on it reads as a refutation, counterexample and all
      t.proof_message = p->message;
      p->verdict = solvers::Verdict::Refuted;
      p->counterexample = r.counterexample;
      p->failed_line = 0;
      p->message = r.message;
    }
    p->testing = std::move(t);
  }
  CheckVerdict v = Checker::spec(item, program.index);
  if (p) {
    v.decided = p->decided();
    if (p->testing) {
      v.ms = p->testing->ms;
      if (!p->testing->refuted) v.message += "; testing: " + p->testing->message;
    }
  }
  return v;
}

}  // namespace vsynth::stages::validation
