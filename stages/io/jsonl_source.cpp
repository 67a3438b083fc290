#include "stages/io/jsonl_source.h"

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <stdexcept>

namespace vsynth::stages::io {

JsonlSource::JsonlSource(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("cannot read input file `{}`", path));
  std::vector<std::string> errors;
  std::map<std::string, std::size_t> seen;
  std::string line;
  std::size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      errors.push_back(fmt::format("{}:{}: not a JSON object", path, lineno));
      continue;
    }
    std::string id;
    for (const char* key : {"id", "task_id"}) {
      auto it = j.find(key);
      if (it != j.end() && it->is_string() && !it->get<std::string>().empty()) {
        id = it->get<std::string>();
        break;
      }
    }
    if (id.empty()) {
      errors.push_back(
          fmt::format("{}:{}: task has no non-empty string `id` (or `task_id`)", path, lineno));
      continue;
    }
    if (auto [it, fresh] = seen.emplace(id, lineno); !fresh) {
      errors.push_back(
          fmt::format("{}:{}: task id `{}` already used on line {}", path, lineno, id, it->second));
      continue;
    }
    tasks_.push_back({std::move(id), std::move(j)});
  }
  if (!errors.empty()) {
    std::string msg = fmt::format("{} bad line(s) in `{}`:", errors.size(), path);
    const std::size_t shown = std::min<std::size_t>(errors.size(), 20);
    for (std::size_t i = 0; i < shown; ++i) msg += "\n  " + errors[i];
    if (shown < errors.size()) msg += fmt::format("\n  ... and {} more", errors.size() - shown);
    throw std::runtime_error(msg);
  }
}

std::optional<graph::Task> JsonlSource::next() {
  if (next_ >= tasks_.size()) return std::nullopt;
  return std::move(tasks_[next_++]);
}

graph::Contract jsonl_source_contract() {
  graph::Contract c;
  c.kind = "io.jsonl_source";
  c.summary = "Reads tasks from a JSON Lines file (one object per line, with `id` or `task_id`)";
  c.role = graph::Role::Source;
  c.params = {graph::P::string("path", std::nullopt, "input file; `vsynth run --input` sets it")};
  return c;
}

}  // namespace vsynth::stages::io
