// Contracts: what a stage kind or resource kind declares about itself, checked before any run.
//
// A contract names the kind ("context.prune"), its facets required and provided, its output
// ports, and its parameters with type, default, range or choices and a one-line description.
// `vsynth validate` checks a pipeline's YAML against every contract; `vsynth stages` prints them.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace vsynth::graph {

using JsonPointer = nlohmann::json::json_pointer;

// A parameter value after validation.
using Value =
    std::variant<bool, int64_t, double, std::string, std::vector<std::string>, JsonPointer>;

enum class ParamType {
  Bool,
  Int,
  Float,
  String,
  Enum,          // a string from `choices`
  StringList,    // a YAML sequence of strings
  Resource,      // the name of a resource whose kind has interface `resource_interface`
  ResourceList,  // a sequence of such names
  Pointer,       // a JSON pointer (RFC 6901) into the task, e.g. /language; parsed when validated
};

const char* to_string(ParamType t);

struct ParamSpec {
  std::string name;
  ParamType type = ParamType::String;
  std::optional<Value> default_value;  // none: the parameter is required
  std::optional<double> min, max;      // Int / Float bounds, inclusive
  std::vector<std::string> choices;    // Enum
  std::string resource_interface;      // Resource(List): e.g. "model", "hook"
  std::string help;

  bool required() const { return !default_value.has_value(); }
};

// Shorthands for writing contracts: P::integer("budget_tokens", 1024, 16, 65536, "...").
namespace P {
ParamSpec boolean(std::string name, bool def, std::string help);
ParamSpec integer(std::string name, std::optional<int64_t> def, std::optional<int64_t> min,
                  std::optional<int64_t> max, std::string help);
ParamSpec number(std::string name, std::optional<double> def, std::optional<double> min,
                 std::optional<double> max, std::string help);
ParamSpec string(std::string name, std::optional<std::string> def, std::string help);
ParamSpec choice(std::string name, std::string def, std::vector<std::string> choices,
                 std::string help);
ParamSpec strings(std::string name, std::optional<std::vector<std::string>> def, std::string help,
                  std::vector<std::string> allowed = {});
ParamSpec pointer(std::string name, std::optional<std::string> def, std::string help);
ParamSpec resource(std::string name, std::string interface, std::string help, bool required = true);
ParamSpec resources(std::string name, std::string interface, std::string help);
}  // namespace P

struct PortSpec {
  std::string name;
  std::string help;
  bool failure = false;  // items leaving the graph through it count as failed
};

enum class Role { Transform, Source, Sink };
enum class Execution { Sync, Async };

const char* to_string(Role r);  // "transform", "source", "sink"

// The bounds of an Int or Float parameter as messages show them: "[16, 65536]", "[0, inf]".
std::string range_text(const ParamSpec& p);

// Stage concurrency: how many items one stage processes at once; 0 means unlimited.
struct Concurrency {
  uint32_t limit = 1;
  static Concurrency serial() { return {1}; }
  static Concurrency unlimited() { return {0}; }
};

struct Contract {
  std::string kind;     // "context.prune"
  std::string summary;  // one line
  Role role = Role::Transform;
  Execution execution = Execution::Sync;
  Concurrency concurrency = Concurrency::serial();  // default, YAML may override
  std::vector<std::string> requires_facets;
  std::vector<std::string> provides_facets;
  // The stage reads the file at the task's cursor (/source + /cursor, or /path): a task that
  // carries no such file (a chat request) cannot run it. `vsynth serve` reads this, never kind
  // names, to know which stages a request without a file skips.
  bool reads_task_file = false;
  std::vector<PortSpec> ports;  // the first is the default port (`a -> b` binds it)
  std::vector<ParamSpec> params;

  const ParamSpec* find_param(std::string_view name) const;
  std::optional<uint32_t> port_index(std::string_view name) const;
};

struct ResourceContract {
  std::string kind;       // "model.gguf"
  std::string interface;  // what stages ask for: "model", "hook", "index", "sandbox"
  std::string summary;
  std::vector<ParamSpec> params;

  const ParamSpec* find_param(std::string_view name) const;
};

// Human-readable rendering of a value as YAML would spell it.
std::string to_string(const Value& v);

// Why `text` is not a JSON pointer (RFC 6901: empty, or `/`-prefixed reference tokens in which
// `~` appears only as `~0` (a `~`) or `~1` (a `/`)); nullopt when it is one.
std::optional<std::string> json_pointer_error(std::string_view text);

}  // namespace vsynth::graph
