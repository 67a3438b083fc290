#include "stages/validation/spec_inputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <random>
#include <string_view>
#include <unordered_set>

namespace vsynth::stages::validation {

namespace {

using solvers::Concrete;
using solvers::Int128;
using solvers::Sort;

enum class Domain { Int, Bool, IntList, Str };

const std::vector<Int128> kIntBoundaries = {0, 1, -1, 2, -2};
const std::vector<std::vector<Int128>> kListBoundaries = {{}, {0}, {1, 2}, {2, 1}, {-1, -1}};
const std::vector<std::string> kStrBoundaries = {"", "a", "ab", "aa", "ba"};
constexpr std::string_view kStrAlphabet = "abAB 0";
constexpr std::size_t kMaxRandomLength = 5;
constexpr std::size_t kTriesPerInput = 20;

std::optional<Domain> domain_of(const solvers::Param& p) {
  switch (p.sort) {
    case Sort::Int:
      return Domain::Int;
    case Sort::Bool:
      return Domain::Bool;
    case Sort::IntSeq:
      return Domain::IntList;
    case Sort::Opaque:
      if (p.annotation == "str") return Domain::Str;
      return std::nullopt;
    case Sort::Real:
      return std::nullopt;
  }
  return std::nullopt;
}

std::size_t boundary_count(Domain d) {
  return d == Domain::Bool ? 2 : kIntBoundaries.size();
}

ArgValue of_concrete(Concrete c) {
  ArgValue a;
  a.sort = c.sort;
  a.value = std::move(c);
  return a;
}

ArgValue of_str(std::string s) {
  ArgValue a;
  a.sort = Sort::Opaque;
  a.text = std::move(s);
  return a;
}

ArgValue boundary(Domain d, std::size_t k) {
  switch (d) {
    case Domain::Int:
      return of_concrete(Concrete::of_int(kIntBoundaries[k]));
    case Domain::Bool:
      return of_concrete(Concrete::of_bool(k == 1));
    case Domain::IntList:
      return of_concrete(Concrete::of_list(kListBoundaries[k]));
    case Domain::Str:
      return of_str(kStrBoundaries[k]);
  }
  return {};
}

// rng() % n rather than std::uniform_int_distribution: mt19937_64's output is fixed by the
// standard, the distributions' are not, so a seed gives the same inputs with any library.
uint64_t below(std::mt19937_64& rng, uint64_t n) {
  return rng() % n;
}
Int128 in_range(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return Int128(lo) + Int128(below(rng, static_cast<uint64_t>(hi - lo) + 1));
}

// Mostly small values and boundaries (where specs break), now and then a large one (sign
// handling at scale, code written for fixed-width ints). Rarely: a loop over a large n cannot
// finish, and costs its call's time limit (spec_test.h).
Int128 random_int(std::mt19937_64& rng) {
  const uint64_t pick = below(rng, 100);
  if (pick < 30) return kIntBoundaries[below(rng, kIntBoundaries.size())];
  if (pick < 70) return in_range(rng, -10, 10);
  // Few distinct small values exist: with one or two parameters the distinct inputs would
  // otherwise be mostly large ones.
  if (pick < 92) return in_range(rng, -1000, 1000);
  const Int128 sign = below(rng, 2) == 0 ? 1 : -1;
  switch (below(rng, 4)) {
    case 0:
      return sign * ((Int128(1) << 31) - 1 + in_range(rng, 0, 2));
    case 1:
      return sign * in_range(rng, 1000000000, 1000000009);
    case 2:
      return sign * ((Int128(1) << 62) + in_range(rng, -1000, 1000));
    default:
      return in_range(rng, -1000000, 1000000);
  }
}

ArgValue random_value(Domain d, std::mt19937_64& rng) {
  switch (d) {
    case Domain::Int:
      return of_concrete(Concrete::of_int(random_int(rng)));
    case Domain::Bool:
      return of_concrete(Concrete::of_bool(below(rng, 2) == 1));
    case Domain::IntList: {
      std::vector<Int128> xs(below(rng, kMaxRandomLength + 1));
      for (Int128& x : xs) x = below(rng, 4) == 0 ? random_int(rng) : in_range(rng, -5, 5);
      return of_concrete(Concrete::of_list(std::move(xs)));
    }
    case Domain::Str: {
      std::string s(below(rng, kMaxRandomLength + 1), ' ');
      for (char& c : s) c = kStrAlphabet[below(rng, kStrAlphabet.size())];
      return of_str(std::move(s));
    }
  }
  return {};
}

// Calls `emit` with the boundary indices of every combination, shell by shell: shell s holds
// the combinations whose largest index is s (each index below its domain's count). Stops when
// `emit` returns false.
void boundary_shells(const std::vector<Domain>& ds,
                     const std::function<bool(const std::vector<std::size_t>&)>& emit) {
  std::size_t shells = 1;
  for (Domain d : ds) shells = std::max(shells, boundary_count(d));
  for (std::size_t s = 0; s < shells; ++s) {
    std::vector<std::size_t> digit(ds.size(), 0);
    while (true) {
      const bool on_shell = ds.empty() || std::find(digit.begin(), digit.end(), s) != digit.end();
      if (on_shell && !emit(digit)) return;
      std::size_t j = 0;  // odometer step, the first parameter fastest
      for (; j < ds.size(); ++j) {
        if (digit[j] < std::min(s, boundary_count(ds[j]) - 1)) {
          ++digit[j];
          break;
        }
        digit[j] = 0;
      }
      if (j == ds.size()) break;
    }
  }
}

enum class Admission { Kept, Rejected, NotEvaluable };

Admission admit(const solvers::FunctionContract& contract, const TestInput& input,
                std::string* why) {
  const solvers::Env env = env_of(contract.signature, input);
  Admission verdict = Admission::Kept;
  for (const solvers::Expr& clause : contract.requires_clauses) {
    const solvers::Evaluated r = solvers::evaluate(clause, env);
    if (r.kind == solvers::Evaluated::Kind::Value && r.value.boolean) continue;
    if (r.kind == solvers::Evaluated::Kind::NotEvaluable) {
      // A later clause may still be False: that rejects the input outright.
      if (verdict == Admission::Kept && why) *why = r.error;
      verdict = Admission::NotEvaluable;
      continue;
    }
    if (why) {
      *why = "requires " + solvers::to_python(clause) +
             (r.kind == solvers::Evaluated::Kind::Raised ? " raised " + r.error : " is False");
    }
    return Admission::Rejected;
  }
  return verdict;
}

std::optional<std::string> untestable(const solvers::Signature& sig, std::vector<Domain>& domains) {
  for (const solvers::Param& p : sig.params) {
    const std::optional<Domain> d = domain_of(p);
    if (!d) {
      return fmt::format(
          "parameter `{}: {}` has a type inputs cannot be generated for (int, "
          "bool, list[int] and str can)",
          p.name, p.annotation.empty() ? solvers::sort_name(p.sort) : p.annotation);
    }
    domains.push_back(*d);
  }
  if (sig.result == Sort::Real) return std::string("float results are not evaluated");
  return std::nullopt;
}

}  // namespace

std::string ArgValue::python() const {
  if (sort != Sort::Opaque) return value.python();
  std::string s = "'";
  for (char c : text) {
    if (c == '\\' || c == '\'') s += '\\';
    s += c;
  }
  return s + "'";
}

solvers::Value ArgValue::value_of() const {
  solvers::Value v;
  v.sort = sort;
  v.boolean = value.boolean;
  if (sort == Sort::Int) {
    v.number = solvers::int128_to_string(value.integer);
    if (value.integer >= INT64_MIN && value.integer <= INT64_MAX)
      v.integer = static_cast<int64_t>(value.integer);
  } else if (sort == Sort::IntSeq) {
    for (Int128 x : value.elements)
      v.elements.push_back(of_concrete(Concrete::of_int(x)).value_of());
  } else if (sort == Sort::Opaque) {
    v.number = python();  // Value::python() prints `number` for sorts it does not model
  }
  return v;
}

solvers::Env env_of(const solvers::Signature& sig, const TestInput& input) {
  solvers::Env env;
  for (std::size_t i = 0; i < sig.params.size() && i < input.size(); ++i) {
    if (input[i].sort != Sort::Opaque) env.emplace_back(sig.params[i].name, input[i].value);
  }
  return env;
}

std::string call_text(const solvers::Signature& sig, const TestInput& input) {
  std::string s = sig.function + "(";
  for (std::size_t i = 0; i < sig.params.size() && i < input.size(); ++i) {
    if (i) s += ", ";
    s += sig.params[i].name + "=" + input[i].python();
  }
  return s + ")";
}

bool satisfies_requires(const solvers::FunctionContract& contract, const TestInput& input,
                        std::string* why) {
  return admit(contract, input, why) == Admission::Kept;
}

GeneratedInputs generate_inputs(const solvers::FunctionContract& contract, uint64_t seed,
                                const InputOptions& options) {
  GeneratedInputs out;
  std::vector<Domain> domains;
  out.untestable = untestable(contract.signature, domains);
  if (out.untestable) return out;

  // Offers one input: kept when new and within the requires. False once enough were made.
  const std::size_t max_tries = options.max_tries
                                    ? options.max_tries
                                    : kTriesPerInput * std::max<std::size_t>(1, options.count);
  std::unordered_set<std::string> seen;
  auto offer = [&](TestInput input) {
    ++out.tries;
    if (seen.insert(call_text(contract.signature, input)).second) {
      std::string why;
      switch (admit(contract, input, &why)) {
        case Admission::Kept:
          out.inputs.push_back(std::move(input));
          break;
        case Admission::Rejected:
          ++out.rejected;
          break;
        case Admission::NotEvaluable:
          if (!out.unevaluable) out.unevaluable = why;
          break;
      }
    }
    return out.inputs.size() < options.count && out.tries < max_tries;
  };

  // Phase 1: boundary combinations, up to three quarters of the inputs (random ones follow).
  const std::size_t boundary_share = std::max<std::size_t>(1, options.count * 3 / 4);
  bool more = options.count > 0;
  if (more) {
    boundary_shells(domains, [&](const std::vector<std::size_t>& digits) {
      TestInput input;
      for (std::size_t j = 0; j < domains.size(); ++j)
        input.push_back(boundary(domains[j], digits[j]));
      more = offer(std::move(input));
      return more && out.inputs.size() < boundary_share;
    });
  }
  // Phase 2: random values (a function without parameters has only the one input).
  std::mt19937_64 rng(seed);
  while (more && !domains.empty()) {
    TestInput input;
    for (Domain d : domains) input.push_back(random_value(d, rng));
    more = offer(std::move(input));
  }
  return out;
}

}  // namespace vsynth::stages::validation
