#include "stages/facets/context.h"

namespace vsynth::stages::facets {

const char* to_string(UnitKind kind) {
  switch (kind) {
    case UnitKind::Function:
      return "function";
    case UnitKind::Method:
      return "method";
    case UnitKind::Constructor:
      return "constructor";
    case UnitKind::Class:
      return "class";
    case UnitKind::Namespace:
      return "namespace";
    case UnitKind::Field:
      return "field";
    case UnitKind::Import:
      return "import";
    case UnitKind::Global:
      return "global";
    case UnitKind::Statement:
      return "statement";
  }
  return "unit";
}

const char* to_string(Form form) {
  switch (form) {
    case Form::Name:
      return "name";
    case Form::Signature:
      return "signature";
    case Form::Full:
      return "full";
  }
  return "form";
}

std::string_view ContextFacet::prefix() const {
  if (cursor_offset_ < 0) return text_;
  return text_.substr(0, static_cast<std::size_t>(cursor_offset_));
}

std::string_view ContextFacet::suffix() const {
  if (cursor_offset_ < 0) return {};
  return text_.substr(static_cast<std::size_t>(cursor_offset_));
}

nlohmann::json ContextFacet::to_json() const {
  nlohmann::json j;
  j["budget_tokens"] = budget_tokens;
  j["used_tokens"] = used_tokens;
  j["tokenizer"] = tokenizer;
  j["over_budget"] = over_budget;
  j["file_rows"] = file_rows;
  j["shown_rows"] = shown_rows;
  j["markers"] = markers;
  j["cursor_offset"] = cursor_offset_;
  j["units"] = nlohmann::json::array();
  for (const Selected& s : units) {
    j["units"].push_back({{"kind", to_string(s.kind)},
                          {"name", s.name},
                          {"form", to_string(s.form)},
                          {"tokens", s.tokens},
                          {"value", s.value},
                          {"reason", s.reason},
                          {"path", s.path},
                          {"lines", {s.first_line, s.last_line}}});
  }
  j["text"] = std::string(text_);
  return j;
}

}  // namespace vsynth::stages::facets
