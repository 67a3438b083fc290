// core.select: routes each item by a field of its task, e.g. Python tasks one way and C tasks
// another, so one pipeline can hold per-language branches.
//
//   stages:
//     by_lang: { use: core.select, with: { field: /language, values: [python] } }
//   edges:
//     - by_lang.match -> py_checks
//     - by_lang.other -> c_checks
//
// Ports: `match` (the field is a string or number whose text is one of `values`), `other`
// (anything else, including a missing field).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "graph/stage.h"

namespace vsynth::stages::core {

class Select : public graph::SyncStage {
 public:
  explicit Select(const graph::StageContext& ctx);
  graph::Port process(graph::Item& item) override;

 private:
  nlohmann::json::json_pointer field_;
  std::vector<std::string> values_;
  graph::Port match_, other_;
};

graph::Contract select_contract();

}  // namespace vsynth::stages::core
