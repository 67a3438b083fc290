// Inputs for testing a spec (spec_test.h): generated from the signature's parameter types,
// deterministic for a seed, kept only when they satisfy the requires (evaluated here, in C++,
// with solvers/evaluate, before anything runs).
//
// Per parameter type, boundaries first, every combination over the parameters in shells (all
// parameters at their first boundary value, then every combination of the first two, ...), so
// ties and small values such as f(0, 0, 1) come early whatever the parameter count; then random
// values (std::mt19937_64 from the seed):
//   int        boundaries 0, 1, -1, 2, -2; random: 30% a boundary, 40% in [-10, 10], 22% in
//              [-1000, 1000], 8% large (near +-2^31, +-10^9, +-2^62, or within +-10^6)
//   bool       False, True
//   list[int]  [], [0], [1, 2], [2, 1], [-1, -1]; random: length 0..5, small elements
//   str        "", "a", "ab", "aa", "ba"; random: length 0..5 over a small alphabet
// A str is passed to the candidate but has no value in the evaluator (the IR does not model
// strings): a requires or ensures that reads one is not evaluable. Other types (float, dict...)
// cannot be generated: `untestable` names the parameter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "solvers/evaluate.h"
#include "solvers/function_contract.h"

namespace vsynth::stages::validation {

// One argument: a modelled value (Bool, Int, IntSeq) or, with sort Opaque, a str.
struct ArgValue {
  solvers::Sort sort = solvers::Sort::Int;
  solvers::Concrete value;  // Bool, Int, IntSeq
  std::string text;         // str

  std::string python() const;       // Python's repr: True, -3, [1, 2], 'ab'
  solvers::Value value_of() const;  // as a counterexample's input
};

// One call's arguments, in signature order.
using TestInput = std::vector<ArgValue>;

// The evaluator's environment of an input: each modelled argument by its parameter's name.
solvers::Env env_of(const solvers::Signature& sig, const TestInput& input);

// f(a=0, b=0, c=1): the call as a counterexample prints it.
std::string call_text(const solvers::Signature& sig, const TestInput& input);

struct InputOptions {
  std::size_t count = 200;    // inputs wanted
  std::size_t max_tries = 0;  // inputs generated at most, kept or not (0: 20 per wanted one)
};

struct GeneratedInputs {
  std::vector<TestInput> inputs;  // distinct, each satisfying every requires clause
  std::size_t tries = 0;          // inputs generated (duplicates included)
  std::size_t rejected = 0;       // a requires clause was False or raised
  // No input can be generated: the parameter (or result) type that cannot be.
  std::optional<std::string> untestable;
  // A requires clause could not be evaluated on some input (that input is dropped): why.
  std::optional<std::string> unevaluable;
};

GeneratedInputs generate_inputs(const solvers::FunctionContract& contract, uint64_t seed,
                                const InputOptions& options = {});

// True when every requires clause evaluates to True on `input`; `why` says otherwise what
// failed (False, raised, or not evaluable).
bool satisfies_requires(const solvers::FunctionContract& contract, const TestInput& input,
                        std::string* why = nullptr);

}  // namespace vsynth::stages::validation
