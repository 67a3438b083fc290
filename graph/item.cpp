#include "graph/item.h"

#include <stdexcept>

namespace vsynth::graph {

void Item::throw_missing_facet(std::string_view name) {
  throw std::logic_error("item has no facet `" + std::string(name) +
                         "` (a stage read it without declaring it in `requires`)");
}

nlohmann::json Item::to_record() const {
  nlohmann::json r;
  r["id"] = task_.id;
  r["status"] = outcome_.status;
  r["passed"] = outcome_.passed;
  r["attempts"] = attempt_;
  if (!outcome_.stage.empty()) {
    r["exit"] = outcome_.port.empty() ? outcome_.stage : outcome_.stage + "." + outcome_.port;
  }
  if (!outcome_.error.empty()) r["error"] = outcome_.error;
  if (!task_.bypass.empty()) r["skipped_stages"] = task_.bypass;
  if (!feedback_.empty()) {
    auto& fb = r["feedback"] = nlohmann::json::array();
    for (const auto& f : feedback_) {
      fb.push_back(
          {{"attempt", f.attempt}, {"from", f.stage + "." + f.port}, {"message", f.message}});
    }
  }
  auto& facets = r["facets"] = nlohmann::json::object();
  for (const auto& [name, facet] : facets_) {
    nlohmann::json j = facet->to_json();
    if (!j.is_null()) facets[name] = std::move(j);
  }
  if (!history_.empty()) {
    auto& h = r["history"] = nlohmann::json::array();
    for (const nlohmann::json& earlier : history_) {
      nlohmann::json e = {{"attempt", earlier["attempt"]}, {"status", earlier["status"]}};
      auto& changed = e["facets"] = nlohmann::json::object();
      for (const auto& [name, j] : earlier["facets"].items()) {
        if (!facets.contains(name) || facets[name] != j) changed[name] = j;
      }
      h.push_back(std::move(e));
    }
  }
  return r;
}

}  // namespace vsynth::graph
