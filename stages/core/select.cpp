#include "stages/core/select.h"

#include <algorithm>
#include <stdexcept>

namespace vsynth::stages::core {

Select::Select(const graph::StageContext& ctx)
    : field_(ctx.params.pointer("field")),
      values_(ctx.params.strings("values")),
      match_(ctx.port("match")),
      other_(ctx.port("other")) {}

graph::Port Select::process(graph::Item& item) {
  const nlohmann::json& data = item.task().data;
  if (!data.contains(field_)) return other_;
  const nlohmann::json& v = data.at(field_);
  std::string text;
  if (v.is_string())
    text = v.get<std::string>();
  else if (v.is_number() || v.is_boolean())
    text = v.dump();
  else
    return other_;
  return std::find(values_.begin(), values_.end(), text) != values_.end() ? match_ : other_;
}

graph::Contract select_contract() {
  graph::Contract c;
  c.kind = "core.select";
  c.summary = "Routes items by a task field: `match` when its value is listed, else `other`";
  c.concurrency = graph::Concurrency::unlimited();
  c.ports = {{"match", "the field's value is one of `values`", false},
             {"other", "anything else, including a missing field", false}};
  c.params = {
      graph::P::pointer("field", std::nullopt, "JSON pointer into the task, e.g. /language"),
      graph::P::strings("values", std::nullopt, "values that select `match`"),
  };
  return c;
}

}  // namespace vsynth::stages::core
