#include "stages/facets/retrieved.h"

namespace vsynth::stages::facets {

nlohmann::json RetrievedFacet::to_json() const {
  nlohmann::json list = nlohmann::json::array();
  for (const Hit& h : hits) {
    nlohmann::json j = {
        {"path", h.path},
        {"name", h.name},
        {"kind", to_string(h.kind)},
        {"lines", {h.first_line, h.last_line}},
        {"score", h.score},
        {"ranks",
         {{"lexical", h.lexical_rank},
          {"dense", h.dense_rank},
          {"structural", h.structural_rank},
          {"usage", h.usage_rank},
          {"local", h.local_rank}}},
    };
    // The text itself stays out of the record (the unit is in the repository at those lines);
    // the flag says that context.deps showed it from the hit rather than the task's files.
    if (!h.text.empty()) j["outside_task"] = true;
    list.push_back(std::move(j));
  }
  nlohmann::json out = {{"served_by", served_by}};
  if (!degraded_reason.empty()) out["degraded_reason"] = degraded_reason;
  out["min_score"] = min_score;
  out["searched_chunks"] = searched_chunks;
  out["searched_files"] = searched_files;
  // Not `ms`: a record is a function of its task (timings are in the trace).
  out["hits"] = std::move(list);
  return out;
}

}  // namespace vsynth::stages::facets
