#include "stages/context/edits.h"

#include <fmt/format.h>

#include "stages/context/error.h"

namespace vsynth::stages::context {

namespace {

uint32_t line_of(const graph::Item& item, const nlohmann::json& entry, std::size_t i,
                 const char* key, const std::string& pointer) {
  const nlohmann::json& v = entry.at(key);
  if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > UINT32_MAX) {
    throw ContextError(
        fmt::format("task `{}`: field {}/{}/{} must be a 1-based line number (got {})", item.id(),
                    pointer, i, key, v.dump()));
  }
  return static_cast<uint32_t>(v.get<int64_t>() - 1);
}

}  // namespace

std::vector<Edit> read_edits(const graph::Item& item, const std::string& pointer) {
  std::vector<Edit> edits;
  const nlohmann::json& data = item.task().data;
  const nlohmann::json::json_pointer ptr(pointer);
  if (!data.contains(ptr) || data.at(ptr).is_null()) return edits;
  const nlohmann::json& list = data.at(ptr);
  if (!list.is_array()) {
    throw ContextError(fmt::format(
        "task `{}`: field {} must be a list of {{\"path\", \"start_line\", \"end_line\"}} "
        "(got {})",
        item.id(), pointer, list.type_name()));
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json& e = list[i];
    if (!e.is_object() || !e.contains("start_line")) {
      throw ContextError(
          fmt::format("task `{}`: field {}/{} must be an object with \"start_line\" (and optional "
                      "\"end_line\", \"path\"); got {}",
                      item.id(), pointer, i, e.dump()));
    }
    Edit edit;
    if (e.contains("path")) {
      if (!e["path"].is_string()) {
        throw ContextError(fmt::format("task `{}`: field {}/{}/path must be a string (got {})",
                                       item.id(), pointer, i, e["path"].dump()));
      }
      edit.path = e["path"].get<std::string>();
    }
    edit.first_row = line_of(item, e, i, "start_line", pointer);
    edit.last_row =
        e.contains("end_line") ? line_of(item, e, i, "end_line", pointer) : edit.first_row;
    if (edit.last_row < edit.first_row) {
      throw ContextError(fmt::format("task `{}`: field {}/{}: end_line {} is before start_line {}",
                                     item.id(), pointer, i, edit.last_row + 1, edit.first_row + 1));
    }
    edits.push_back(std::move(edit));
  }
  return edits;
}

void mark_edits(ContextUnitsFacet& candidates, const std::vector<Edit>& edits) {
  const int n = static_cast<int>(edits.size());
  for (int i = 0; i < n; ++i) {
    const Edit& e = edits[static_cast<std::size_t>(i)];
    const int rank = n - 1 - i;
    for (Unit& u : candidates.units) {
      const std::string& path = candidates.files[u.file].path;
      const bool same_file = e.path.empty() ? u.file == 0 : path == e.path;
      if (!same_file || u.last_row < e.first_row || u.first_row > e.last_row) continue;
      if (u.reasons.edit_rank < 0 || rank < u.reasons.edit_rank) u.reasons.edit_rank = rank;
    }
  }
}

}  // namespace vsynth::stages::context
