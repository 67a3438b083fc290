#include "stages/facets/task_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>

namespace vsynth::stages::facets {

nlohmann::json TaskFileFacet::to_json() const {
  return {{"path", path},
          {"named", named},
          {"language", language.empty() ? nlohmann::json() : nlohmann::json(language)},
          {"language_from", language_from}};
}

bool anonymous_buffer(const graph::Item& item) {
  const auto* f = item.find<TaskFileFacet>();
  return f && f->anonymous();
}

namespace {

struct Chunks {
  std::string path;
  std::vector<std::string_view> texts;
  std::string joined() const {
    std::string j;
    for (std::string_view c : texts) {
      if (!j.empty() && j.back() != '\n') j += '\n';
      j += c;
    }
    return j;
  }
};

std::vector<Chunks> collect(const graph::Item& item, const nlohmann::json::json_pointer& field,
                            std::size_t max_paths) {
  std::vector<Chunks> out;
  const nlohmann::json& data = item.task().data;
  if (!data.contains(field)) return out;
  const nlohmann::json& files = data.at(field);
  if (files.is_null()) return out;
  if (!files.is_array()) {
    throw std::invalid_argument(
        fmt::format("task `{}`: field {} must be a list of {{\"path\", \"source\"}} (got {})",
                    item.id(), field.to_string(), files.type_name()));
  }
  std::map<std::string_view, std::size_t> slot;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const nlohmann::json& f = files[i];
    if (!f.is_object() || !f.contains("path") || !f["path"].is_string() || !f.contains("source") ||
        !f["source"].is_string()) {
      throw std::invalid_argument(
          fmt::format("task `{}`: field {}/{} must be {{\"path\": string, \"source\": string}} "
                      "(got {})",
                      item.id(), field.to_string(), i, f.dump().substr(0, 120)));
    }
    const std::string& path = f["path"].get_ref<const std::string&>();
    const std::string_view text = f["source"].get_ref<const std::string&>();
    const auto [it, fresh] = slot.emplace(path, out.size());
    if (fresh) {
      if (out.size() >= max_paths) {
        throw std::invalid_argument(
            fmt::format("task `{}`: field {} holds more than {} files, the stage's max_files; "
                        "raise it or send fewer (file {}/{}: {})",
                        item.id(), field.to_string(), max_paths, field.to_string(), i, path));
      }
      out.push_back({path, {text}});
      continue;
    }
    auto& list = out[it->second].texts;
    if (std::find(list.begin(), list.end(), text) == list.end()) list.push_back(text);
  }
  return out;
}

}  // namespace

std::vector<TaskFileText> task_files(graph::Item& item, const nlohmann::json::json_pointer& field,
                                     std::size_t max_paths) {
  std::vector<TaskFileText> out;
  for (const Chunks& c : collect(item, field, max_paths)) {
    out.push_back({c.path, c.texts.size() == 1 ? c.texts[0] : item.arena().store(c.joined())});
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> task_file_texts(
    const graph::Item& item, const nlohmann::json::json_pointer& field) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Chunks& c : collect(item, field, static_cast<std::size_t>(-1))) {
    out.emplace_back(c.path, c.joined());
  }
  return out;
}

}  // namespace vsynth::stages::facets
