// The fields of a task's /decode object (generate.llm's per-task decoding settings,
// stages/generation/task_decode.h): name, type, inclusive limits and a one-line help, declared
// once here. task_decode() checks a task against this table, generate.llm's contract takes the
// limits of its parameters of the same names from it, and a server that documents or checks
// /decode before submitting (vsynth serve) reads it too, so the three never disagree.
//
//   for (const DecodeField& f : decode_fields()) fmt::print("{} {}\n", f.name, f.help);
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace vsynth::stages::facets {

enum class DecodeType { Integer, Number, Boolean, Strings };
const char* to_string(DecodeType t);  // integer | number | boolean | strings

struct DecodeField {
  std::string_view name;
  DecodeType type = DecodeType::Integer;
  // Integer and Number: the inclusive range (an Integer's are whole numbers; seed's max is
  // 2^64 - 1, which a double rounds up: check unsigned values as unsigned). Unused otherwise.
  double min = 0.0, max = 0.0;
  std::string_view help;
};

// Every /decode field, in the order the docs list them.
std::span<const DecodeField> decode_fields();
// The field named `name`, or null.
const DecodeField* find_decode_field(std::string_view name);
// The same, for a name the caller knows is there (throws std::logic_error otherwise).
const DecodeField& decode_field(std::string_view name);
// "max_new_tokens, temperature, ...": the valid names, for error messages.
std::string decode_field_names();

}  // namespace vsynth::stages::facets
