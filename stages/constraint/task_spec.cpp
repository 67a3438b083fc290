#include "stages/constraint/task_spec.h"

#include "solvers/error.h"
#include "solvers/spec_parser.h"
#include "stages/constraint/error.h"
#include "stages/constraint/translate_c.h"

namespace vsynth::stages::constraint {

namespace {

std::string string_field(const nlohmann::json& j, const char* name) {
  const auto it = j.find(name);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The prompt line that declares `entry` (`def entry(` in Python, `entry(` in C).
std::string declaration_in_prompt(const std::string& prompt, const std::string& entry,
                                  bool python) {
  if (entry.empty()) return {};
  std::size_t pos = 0;
  while (pos < prompt.size()) {
    std::size_t eol = prompt.find('\n', pos);
    if (eol == std::string::npos) eol = prompt.size();
    std::string line = prompt.substr(pos, eol - pos);
    const std::size_t at = line.find(python ? "def " + entry + "(" : entry + "(");
    if (at != std::string::npos && (python || line.find("/*") == std::string::npos)) {
      while (!line.empty() && (line.back() == ';' || line.back() == '{' || line.back() == ' ' ||
                               line.back() == '\r'))
        line.pop_back();
      return python ? line.substr(at) : line;
    }
    pos = eol + 1;
  }
  return {};
}

std::vector<std::string> texts(const graph::Task& task, const nlohmann::json& spec,
                               const char* key) {
  std::vector<std::string> out;
  const auto it = spec.find(key);
  if (it == spec.end() || it->is_null()) return out;
  if (it->is_string()) {
    out.push_back(it->get<std::string>());
    return out;
  }
  if (!it->is_array())
    throw ConstraintError("task `" + task.id + "`: spec." + key +
                          " must be a string or a list of strings");
  for (std::size_t i = 0; i < it->size(); ++i) {
    if (!(*it)[i].is_string())
      throw ConstraintError("task `" + task.id + "`: spec." + key + "[" + std::to_string(i) +
                            "] must be a string (a Python-style boolean expression)");
    out.push_back((*it)[i].get<std::string>());
  }
  return out;
}

}  // namespace

std::string task_language(const graph::Task& task, std::string_view fallback) {
  std::string lang = string_field(task.data, "language");
  if (lang.empty()) lang = fallback;
  if (lang.empty()) lang = "python";
  return lang;
}

std::optional<TaskSpec> task_spec(const graph::Task& task, std::string_view language) {
  const auto it = task.data.find("spec");
  if (it == task.data.end() || it->is_null()) return std::nullopt;
  if (!it->is_object())
    throw ConstraintError("task `" + task.id +
                          "`: `spec` must be an object {\"requires\": [...], \"ensures\": [...]}");
  for (const auto& [key, value] : it->items()) {
    (void)value;
    if (key != "requires" && key != "ensures")
      throw ConstraintError("task `" + task.id + "`: unknown key `spec." + key +
                            "` (valid: requires, ensures)");
  }
  const std::vector<std::string> req = texts(task, *it, "requires");
  const std::vector<std::string> ens = texts(task, *it, "ensures");
  if (req.empty() && ens.empty()) return std::nullopt;

  TaskSpec spec;
  spec.language = task_language(task, language);
  if (spec.language != "python" && spec.language != "c")
    throw ConstraintError("task `" + task.id + "`: specs are checked for python and c code, not " +
                          spec.language);
  const bool python = spec.language == "python";
  spec.signature_line = string_field(task.data, "signature");
  if (spec.signature_line.empty()) {
    std::string entry = string_field(task.data, "entry_point");
    spec.signature_line = declaration_in_prompt(string_field(task.data, "prompt"), entry, python);
  }
  if (spec.signature_line.empty())
    throw ConstraintError("task `" + task.id +
                          "`: has a spec but no `signature`, and its `prompt` declares no "
                          "`entry_point` function to take one from");
  try {
    if (python) {
      spec.contract = solvers::parse_contract(spec.signature_line, req, ens);
    } else {
      CSignature c = parse_c_signature(spec.signature_line);
      spec.contract.signature = c.signature;
      spec.contract.requires_clauses = c.ranges;
      for (const auto& r : req)
        spec.contract.requires_clauses.push_back(
            solvers::parse_spec(r, c.signature, solvers::SpecKind::Requires));
      for (const auto& e : ens)
        spec.contract.ensures_clauses.push_back(
            solvers::parse_spec(e, c.signature, solvers::SpecKind::Ensures));
    }
  } catch (const solvers::SolverError& e) {
    throw ConstraintError("task `" + task.id + "`: " + e.what());
  }
  return spec;
}

}  // namespace vsynth::stages::constraint
