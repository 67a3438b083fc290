#include "stages/validation/task_tests.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "stages/ast/language.h"
#include "stages/validation/error.h"

namespace vsynth::stages::validation {

namespace {

using nlohmann::json;

const char* json_type(const json& j) {
  return j.type_name();
}

// A string field as a view into the task's JSON, or empty when absent or null.
std::string_view string_field(const graph::Task& task, const char* field) {
  const auto it = task.data.find(field);
  if (it == task.data.end() || it->is_null()) return {};
  if (!it->is_string()) {
    throw ValidationError(fmt::format("task `{}`: field `{}` must be a string, got {}", task.id,
                                      field, json_type(*it)));
  }
  return it->get_ref<const std::string&>();
}

// A tests field: a list of strings (statements) or one string (a script); None when absent.
TestSuite suite_field(const graph::Task& task, const char* field, bool list_only = false) {
  TestSuite s;
  const auto it = task.data.find(field);
  if (it == task.data.end() || it->is_null()) return s;
  s.origin = field;
  if (it->is_string() && !list_only) {
    s.kind = TestsKind::Script;
    s.text = it->get_ref<const std::string&>();
    return s;
  }
  if (it->is_array()) {
    s.kind = TestsKind::Statements;
    for (std::size_t i = 0; i < it->size(); ++i) {
      const json& e = (*it)[i];
      if (!e.is_string()) {
        throw ValidationError(
            fmt::format("task `{}`: `{}[{}]` must be a string (a test statement), got {}", task.id,
                        field, i, json_type(e)));
      }
      s.statements.push_back(e.get_ref<const std::string&>());
    }
    return s;
  }
  throw ValidationError(fmt::format(
      "task `{}`: field `{}` must be {}, got {}", task.id, field,
      list_only ? "a list of assert statements" : "a list of test statements or a test script",
      json_type(*it)));
}

std::string known_languages() {
  std::string out;
  for (const auto& l : ast::Language::all())
    out += (out.empty() ? "" : ", ") + std::string(l.name());
  return out;
}

std::string canonical_language(const graph::Task& task, std::string_view given) {
  std::string name(given);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  if (name == "py" || name == "python3") name = "python";
  if (name == "c++") name = "cpp";
  if (ast::Language::find(name) == nullptr) {
    throw ValidationError(fmt::format("task `{}`: unknown language `{}`; valid: {}", task.id, given,
                                      known_languages()));
  }
  return name;
}

}  // namespace

const char* to_string(TestsKind k) {
  switch (k) {
    case TestsKind::None:
      return "none";
    case TestsKind::Statements:
      return "statements";
    case TestsKind::Script:
      return "script";
    case TestsKind::Doctest:
      return "doctest";
  }
  return "?";
}

bool has_doctest_examples(std::string_view prompt) {
  std::size_t pos = 0;
  while (pos < prompt.size()) {
    std::size_t eol = prompt.find('\n', pos);
    if (eol == std::string_view::npos) eol = prompt.size();
    std::string_view line = prompt.substr(pos, eol - pos);
    const std::size_t first = line.find_first_not_of(" \t");
    if (first != std::string_view::npos && line.substr(first, 4) == ">>> ") return true;
    if (first != std::string_view::npos && line.substr(first) == ">>>") return true;
    pos = eol + 1;
  }
  return false;
}

TaskTests read_task_tests(const graph::Task& task, std::string_view language) {
  TaskTests t;
  if (!language.empty()) {
    t.language = canonical_language(task, language);
  } else if (std::string_view given = string_field(task, "language"); !given.empty()) {
    t.language = canonical_language(task, given);
  } else if (std::string_view path = string_field(task, "path"); !path.empty()) {
    const ast::Language* l = ast::Language::find_for_path(path);
    t.language = l ? std::string(l->name()) : "python";
  } else {
    t.language = "python";
  }
  t.entry_point = string_field(task, "entry_point");
  t.prompt = string_field(task, "prompt");

  t.visible = suite_field(task, "tests");
  if (t.visible.empty() && t.language == "python" && has_doctest_examples(t.prompt)) {
    t.visible.kind = TestsKind::Doctest;
    t.visible.text = t.prompt;
    t.visible.origin = "prompt docstring";
  }
  t.hidden = suite_field(task, "hidden_tests");
  if (t.hidden.empty()) t.hidden = suite_field(task, "test");
  if (t.hidden.empty()) t.hidden = suite_field(task, "test_list", /*list_only=*/true);
  return t;
}

}  // namespace vsynth::stages::validation
