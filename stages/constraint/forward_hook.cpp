#include "stages/constraint/forward_hook.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "base/stats.h"
#include "base/strings.h"
#include "solvers/error.h"
#include "stages/constraint/error.h"
#include "stages/constraint/prove.h"
#include "stages/constraint/task_spec.h"

namespace vsynth::stages::constraint {

using Clock = std::chrono::steady_clock;

namespace {

// The first character of the header line (if / elif / else / for / while ...) whose block holds
// the Python statement at `at` in `text`: the nearest line above with less indentation. None
// when that line is not in `text` (it is in the prompt) or is not a block header.
std::optional<std::size_t> enclosing_header(const std::string& text, std::size_t at) {
  const std::size_t ls = at == 0 ? 0 : text.rfind('\n', at - 1) + 1;  // npos + 1 == 0
  const std::size_t indent = at - ls;
  std::size_t end = ls;  // end of the previous line (exclusive, at its '\n')
  while (end > 0) {
    const std::size_t line_end = end - 1;  // the '\n'
    const std::size_t a = line_end == 0 ? 0 : text.rfind('\n', line_end - 1) + 1;
    const std::size_t first = text.find_first_not_of(" \t", a);
    if (first < line_end) {
      if (first - a < indent) {
        std::size_t last = text.find_last_not_of(" \t\r", line_end - 1);
        if (last != std::string::npos && last >= first && text[last] == ':') return first;
        return std::nullopt;
      }
    }
    end = a;
  }
  return std::nullopt;
}

double us_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

// Braces a C prefix leaves open (strings, character literals and comments skipped).
int open_braces(std::string_view s) {
  int depth = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '"' || c == '\'') {
      for (++i; i < s.size() && s[i] != c; ++i) {
        if (s[i] == '\\') ++i;
      }
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      const std::size_t end = s.find("*/", i + 2);
      i = end == std::string_view::npos ? s.size() : end + 1;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}') {
      depth = std::max(0, depth - 1);
    }
  }
  return depth;
}

}  // namespace

nlohmann::json ForwardStats::to_json() const {
  nlohmann::json j;
  j["candidate"] = candidate;
  j["attempt"] = attempt;
  j["tokens"] = token_us.size();
  j["p50_token_us"] = base::round1(base::percentile(token_us, 50));
  j["p99_token_us"] = base::round1(base::percentile(token_us, 99));
  double total = 0;
  for (float t : token_us) total += t;
  j["hook_us"] = base::round1(total);
  j["boundaries"] = boundaries;
  j["parses_skipped"] = parses_skipped;
  j["checks"] = checks;
  j["violations"] = violations;
  j["rollbacks"] = rollbacks;
  j["rejections"] = rejections;
  j["gave_up"] = gave_up;
  j["setup_us"] = base::round1(setup_us);
  j["translate_us"] = base::round1(translate_us);
  j["z3_us"] = base::round1(z3_us);
  j["wall_us"] = base::round1(wall_us);
  j["z3_share"] = wall_us > 0 ? std::round(1e4 * z3_us / wall_us) / 1e4 : 0.0;
  if (!events.empty()) j["events"] = events;
  return j;
}

nlohmann::json ConstraintStatsFacet::to_json() const {
  nlohmann::json j;
  std::vector<float> all;
  int checks = 0, rollbacks = 0, rejections = 0;
  double z3 = 0, wall = 0;
  j["candidates"] = nlohmann::json::array();
  for (const ForwardStats& s : candidates) {
    all.insert(all.end(), s.token_us.begin(), s.token_us.end());
    checks += s.checks;
    rollbacks += s.rollbacks;
    rejections += s.rejections;
    z3 += s.z3_us + s.setup_us;
    wall += s.wall_us;
    j["candidates"].push_back(s.to_json());
  }
  j["tokens"] = all.size();
  j["p50_token_us"] = base::round1(base::percentile(all, 50));
  j["p99_token_us"] = base::round1(base::percentile(all, 99));
  j["checks"] = checks;
  j["rollbacks"] = rollbacks;
  j["rejections"] = rejections;
  j["z3_us"] = base::round1(z3);
  j["z3_share"] = wall > 0 ? std::round(1e4 * z3 / wall) / 1e4 : 0.0;
  return j;
}

struct ForwardHook::Impl {
  ForwardSettings settings;
  TaskSpec spec;
  ProgramShape shape;
  solvers::ContractChecker checker;
  std::set<std::size_t> checked;  // text offsets of statements already checked
  // Refutations per statement offset in the text, for the candidate's life (cleared past a
  // branch header this hook rolled back to).
  std::map<std::size_t, int> refuted;
  Clock::time_point created;

  Impl(const ForwardSettings& s, const solvers::FunctionContract& contract, std::string language,
       ProgramShape sh)
      : settings(s),
        spec{std::move(language), contract, {}},
        shape(std::move(sh)),
        checker(contract, options(s)),
        created(Clock::now()) {
    // Z3's first check in a fresh session costs milliseconds (solver set-up); pay it here,
    // before decoding, rather than at the first statement boundary. It also tells whether the
    // requires are satisfiable.
    checker.check_paths({});
  }

  static solvers::ContractOptions options(const ForwardSettings& s) {
    solvers::ContractOptions o;
    o.timeout_ms = s.timeout_ms;
    o.max_seq_len = s.max_seq_len;
    o.cores = false;  // only sat / unsat matters here
    o.minimize_cores = false;
    return o;
  }

  bool python() const { return spec.language != "c"; }

  // The program for `text` (the model's output cut at a boundary) and the offset in `text`
  // where the model's code starts, such that program[head + i] == text[base + i].
  struct Program {
    std::string source;
    std::size_t head = 0, base = 0;
    uint32_t open_end = 0;
  };
  Program assemble(std::string_view text) const {
    Program p;
    std::string_view code = text;
    std::string head;
    if (shape.instruct) {
      if (shape.extract_code) code = shape.extract_code(text, spec.language);
      if (python() && !shape.given_code.empty() && !shape.entry_point.empty() &&
          code.find("def " + shape.entry_point) == std::string_view::npos) {
        head = shape.given_code;  // the answer continues the given function's body
        if (!head.empty() && head.back() != '\n') head += '\n';
      }
    } else {
      head = shape.prefix;
    }
    p.base = static_cast<std::size_t>(code.data() - text.data());
    p.head = head.size();
    p.source = head;
    p.source += code;
    if (python()) {
      std::size_t last = p.source.size();
      while (last > 0 && base::is_space(p.source[last - 1])) --last;
      p.open_end = static_cast<uint32_t>(last == 0 ? 0 : last - 1);
    } else {
      p.open_end = static_cast<uint32_t>(p.source.size());
      p.source.append(static_cast<std::size_t>(open_braces(p.source)), '}');
    }
    return p;
  }
};

ForwardHook::ForwardHook(const ForwardSettings& settings, const solvers::FunctionContract& contract,
                         std::string language, ProgramShape shape, ForwardStats stats,
                         std::function<void(ForwardStats&&)> on_done)
    : stats_(std::move(stats)), on_done_(std::move(on_done)) {
  const auto t0 = Clock::now();
  impl_ = std::make_unique<Impl>(settings, contract, std::move(language), std::move(shape));
  stats_.setup_us = us_between(t0, Clock::now());
}

ForwardHook::~ForwardHook() {
  if (on_done_) on_done_(std::move(stats_));
}

kernels::HookVerdict ForwardHook::after_sample(const kernels::DecodeView& view,
                                               kernels::TokenId token, std::string_view piece) {
  const auto t0 = Clock::now();
  Impl& im = *impl_;
  auto finish = [&](kernels::HookVerdict v) {
    const auto t1 = Clock::now();
    stats_.token_us.push_back(static_cast<float>(us_between(t0, t1)));
    stats_.wall_us = us_between(im.created, t1);
    return v;
  };
  if (stats_.gave_up) return finish(kernels::HookVerdict::accept());

  // Statements past the text (rolled back, by this hook or another) are no longer checked.
  im.checked.erase(im.checked.lower_bound(view.text.size()), im.checked.end());

  const bool eog = view.tokenizer && view.tokenizer->is_eog(token);
  const bool py = im.python();
  const bool boundary = eog || (py ? piece.find('\n') != std::string_view::npos
                                   : piece.find_first_of(";}") != std::string_view::npos);
  if (!boundary) return finish(kernels::HookVerdict::accept());
  ++stats_.boundaries;

  // The text up to the boundary: the last newline (Python) or `;` / `}` (C) of text + piece.
  std::string text(view.text);
  text += piece;
  if (eog) {
    if (py) text += '\n';
  } else {
    const std::size_t cut = py ? text.rfind('\n') : text.find_last_of(";}");
    text.resize(cut + 1);
  }
  const Impl::Program prog = im.assemble(text);

  TranslateOptions topt;
  topt.partial = true;
  topt.open_end = prog.open_end;
  topt.unroll_bound = im.settings.unroll_bound;
  const auto tt = Clock::now();
  Translation tr;
  try {
    tr = translate(prog.source, im.spec.language, im.spec.contract.signature, topt);
  } catch (const std::exception&) {
    ++stats_.parses_skipped;
    return finish(kernels::HookVerdict::accept());
  }
  stats_.translate_us += us_between(tt, Clock::now());
  if (!tr.function_found) {
    ++stats_.parses_skipped;  // mid-expression, prose before the code, or not written yet
    return finish(kernels::HookVerdict::accept());
  }

  // Obligations of statements not checked yet, grouped by the statement's offset in the text.
  std::map<std::size_t, std::vector<const Obligation*>> fresh;
  for (const Obligation& o : tr.obligations) {
    if (o.kind == ObligationKind::Bound || o.stmt_start < prog.head) continue;
    const std::size_t at = o.stmt_start - prog.head + prog.base;
    if (!im.checked.count(at)) fresh[at].push_back(&o);
  }
  for (const auto& [at, obligations] : fresh) {
    for (const Obligation* o : obligations) {
      solvers::CheckOutcome r;
      try {
        r = check_obligation(im.checker, *o);
      } catch (const solvers::SolverError&) {
        continue;  // an ill-sorted partial program: nothing to say yet
      }
      ++stats_.checks;
      stats_.z3_us += r.solver_us;
      if (r.verdict != solvers::Verdict::Refuted) continue;

      ++stats_.violations;
      const std::string why = r.counterexample ? r.counterexample->text : o->where;
      // The token holding the statement's first character.
      std::size_t k = 0;
      while (k < view.token_ends.size() && view.token_ends[k] <= at) ++k;
      if (stats_.rollbacks + stats_.rejections >= im.settings.max_backtracks) {
        stats_.gave_up = true;
        stats_.events.push_back("gave up after " + std::to_string(im.settings.max_backtracks) +
                                " backtracks: " + why);
        return finish(kernels::HookVerdict::accept());
      }
      if (k >= view.generated.size()) {
        ++stats_.rejections;
        stats_.events.push_back("reject the token at " + std::to_string(k) + ": " + why);
        return finish(kernels::HookVerdict::reject("z3: " + why));
      }
      // The counterexample's path: when it runs through a branch (a path condition) and the
      // statement at this place was refuted before, the rewrite did not help and the branch
      // condition is suspect: go back to the enclosing header instead (Python).
      std::string where_to = "token " + std::to_string(k);
      if (++im.refuted[at] >= 2 && o->condition && py) {
        if (const auto h = enclosing_header(text, at)) {
          std::size_t kh = 0;
          while (kh < view.token_ends.size() && view.token_ends[kh] <= *h) ++kh;
          if (kh < k) {
            const auto lines_between = std::count(text.begin() + static_cast<long>(*h),
                                                  text.begin() + static_cast<long>(at), '\n');
            where_to = "token " + std::to_string(kh) + " (the enclosing branch at line " +
                       std::to_string(o->line - static_cast<uint32_t>(lines_between)) + ")";
            k = kh;
            im.refuted.erase(im.refuted.upper_bound(*h), im.refuted.end());
          }
        }
      }
      ++stats_.rollbacks;
      stats_.events.push_back("roll back to " + where_to + ": " + why);
      return finish(kernels::HookVerdict::rollback(k, view.generated[k], "z3: " + why));
    }
    im.checked.insert(at);
  }
  return finish(kernels::HookVerdict::accept());
}

std::unique_ptr<kernels::MaskHook> Z3ForwardHook::make(graph::Item& item,
                                                       const facets::HookContext& ctx) {
  const std::string language = task_language(item.task(), ctx.language);
  if (language != "python" && language != "c") return nullptr;
  const std::optional<TaskSpec> spec = task_spec(item.task(), language);
  if (!spec) return nullptr;

  ProgramShape shape;
  shape.instruct = ctx.mode == "instruct";
  shape.prefix = ctx.prefix;
  shape.given_code = ctx.given_code;
  shape.entry_point = ctx.entry_point;
  shape.extract_code = ctx.extract_code;

  auto* facet = item.find<ConstraintStatsFacet>();
  if (!facet) facet = &item.emplace<ConstraintStatsFacet>();  // kept across attempts
  ForwardStats stats;
  stats.candidate = ctx.candidate;
  stats.attempt = ctx.attempt;
  return std::make_unique<ForwardHook>(
      settings_, spec->contract, language, std::move(shape), std::move(stats),
      [facet](ForwardStats&& s) { facet->candidates.push_back(std::move(s)); });
}

graph::ResourceContract forward_hook_contract() {
  namespace P = graph::P;
  graph::ResourceContract c;
  c.kind = "hook.z3_forward";
  c.interface = "hook";
  c.summary =
      "checks each completed statement against the task's spec with Z3 while generate.llm "
      "samples; rolls back and bans the statement's first token on a violation";
  c.params = {
      P::integer("max_backtracks", 4, 0, 1024,
                 "rollbacks + rejections per candidate; then the candidate finishes unchecked"),
      P::integer("timeout_ms", 50, 1, 60000, "Z3 time limit per check, ms"),
      P::integer("unroll_bound", 8, 0, 64, "for loops are unrolled this many iterations"),
      P::integer("max_seq_len", 8, 1, 64, "list[int] values are modelled up to this length"),
  };
  return c;
}

std::shared_ptr<graph::Resource> make_forward_hook_resource(const graph::ResourceContext& ctx) {
  ForwardSettings s;
  s.max_backtracks = static_cast<int>(ctx.params.integer("max_backtracks"));
  s.timeout_ms = static_cast<unsigned>(ctx.params.integer("timeout_ms"));
  s.unroll_bound = static_cast<int>(ctx.params.integer("unroll_bound"));
  s.max_seq_len = static_cast<unsigned>(ctx.params.integer("max_seq_len"));
  return std::make_shared<Z3ForwardHook>(s);
}

}  // namespace vsynth::stages::constraint
