#include "graph/contract.h"

#include <fmt/format.h>

#include <stdexcept>

namespace vsynth::graph {

const char* to_string(ParamType t) {
  switch (t) {
    case ParamType::Bool:
      return "bool";
    case ParamType::Int:
      return "int";
    case ParamType::Float:
      return "float";
    case ParamType::String:
      return "string";
    case ParamType::Enum:
      return "enum";
    case ParamType::StringList:
      return "list of strings";
    case ParamType::Resource:
      return "resource";
    case ParamType::ResourceList:
      return "list of resources";
    case ParamType::Pointer:
      return "JSON pointer";
  }
  return "?";
}

const char* to_string(Role r) {
  switch (r) {
    case Role::Transform:
      return "transform";
    case Role::Source:
      return "source";
    case Role::Sink:
      return "sink";
  }
  return "?";
}

std::string range_text(const ParamSpec& p) {
  auto num = [&](double d) {
    return p.type == ParamType::Int ? fmt::format("{}", static_cast<int64_t>(d))
                                    : fmt::format("{}", d);
  };
  return fmt::format("[{}, {}]", p.min ? num(*p.min) : "-inf", p.max ? num(*p.max) : "inf");
}

std::string to_string(const Value& v) {
  struct Visitor {
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return fmt::format("{}", d); }
    std::string operator()(const std::string& s) const { return s; }
    std::string operator()(const std::vector<std::string>& l) const {
      return fmt::format("[{}]", fmt::join(l, ", "));
    }
    std::string operator()(const JsonPointer& p) const { return p.to_string(); }
  };
  return std::visit(Visitor{}, v);
}

namespace P {
ParamSpec boolean(std::string name, bool def, std::string help) {
  return {std::move(name), ParamType::Bool, Value{def}, {}, {}, {}, {}, std::move(help)};
}
ParamSpec integer(std::string name, std::optional<int64_t> def, std::optional<int64_t> min,
                  std::optional<int64_t> max, std::string help) {
  ParamSpec p{std::move(name), ParamType::Int, {}, {}, {}, {}, {}, std::move(help)};
  if (def) p.default_value = Value{*def};
  if (min) p.min = static_cast<double>(*min);
  if (max) p.max = static_cast<double>(*max);
  return p;
}
ParamSpec number(std::string name, std::optional<double> def, std::optional<double> min,
                 std::optional<double> max, std::string help) {
  ParamSpec p{std::move(name), ParamType::Float, {}, min, max, {}, {}, std::move(help)};
  if (def) p.default_value = Value{*def};
  return p;
}
ParamSpec string(std::string name, std::optional<std::string> def, std::string help) {
  ParamSpec p{std::move(name), ParamType::String, {}, {}, {}, {}, {}, std::move(help)};
  if (def) p.default_value = Value{std::move(*def)};
  return p;
}
ParamSpec choice(std::string name, std::string def, std::vector<std::string> choices,
                 std::string help) {
  return {std::move(name), ParamType::Enum, Value{std::move(def)}, {}, {}, std::move(choices), {},
          std::move(help)};
}
ParamSpec strings(std::string name, std::optional<std::vector<std::string>> def, std::string help,
                  std::vector<std::string> allowed) {
  ParamSpec p{std::move(name), ParamType::StringList, {}, {}, {}, std::move(allowed), {},
              std::move(help)};
  if (def) p.default_value = Value{std::move(*def)};
  return p;
}
ParamSpec pointer(std::string name, std::optional<std::string> def, std::string help) {
  ParamSpec p{std::move(name), ParamType::Pointer, {}, {}, {}, {}, {}, std::move(help)};
  if (def) {
    if (auto why = json_pointer_error(*def)) {
      throw std::logic_error("default of `" + p.name + "` is not a JSON pointer: " + *why);
    }
    p.default_value = Value{JsonPointer(*def)};
  }
  return p;
}
ParamSpec resource(std::string name, std::string interface, std::string help, bool required) {
  ParamSpec p{std::move(name),      ParamType::Resource, {}, {}, {}, {},
              std::move(interface), std::move(help)};
  if (!required) p.default_value = Value{std::string()};
  return p;
}
ParamSpec resources(std::string name, std::string interface, std::string help) {
  return {
      std::move(name),      ParamType::ResourceList, Value{std::vector<std::string>{}}, {}, {}, {},
      std::move(interface), std::move(help)};
}
}  // namespace P

std::optional<std::string> json_pointer_error(std::string_view text) {
  if (!text.empty() && text[0] != '/') {
    return fmt::format("it must be empty (the whole task) or start with `/`, as in /{}", text);
  }
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '~') continue;
    if (i + 1 < text.size() && (text[i + 1] == '0' || text[i + 1] == '1')) {
      ++i;
      continue;
    }
    return fmt::format("`~` at offset {} must be written `~0` (a `~`) or `~1` (a `/`)", i);
  }
  return std::nullopt;
}

const ParamSpec* Contract::find_param(std::string_view name) const {
  for (const auto& p : params) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::optional<uint32_t> Contract::port_index(std::string_view name) const {
  for (uint32_t i = 0; i < ports.size(); ++i) {
    if (ports[i].name == name) return i;
  }
  return std::nullopt;
}

const ParamSpec* ResourceContract::find_param(std::string_view name) const {
  for (const auto& p : params) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

}  // namespace vsynth::graph
