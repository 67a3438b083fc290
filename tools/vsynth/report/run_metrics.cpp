#include "tools/vsynth/report/run_metrics.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace vsynth::cli::report {

namespace {

// A scaled-out job's document (scale/job_summary.cpp): {ranks: [{rank, pipeline, stages,
// resources}]}: every rank's rows, each named `NAME (rank K)`.
RunMetrics join_ranks(const std::string& path, const nlohmann::json& doc) {
  RunMetrics m;
  m.path = path;
  for (const auto& rank : doc["ranks"]) {
    if (!rank.is_object()) continue;
    const std::string suffix = fmt::format(" (rank {})", rank.value("rank", -1));
    if (m.pipeline.empty()) m.pipeline = rank.value("pipeline", "");
    for (const char* list : {"stages", "resources"}) {
      if (!rank.contains(list) || !rank[list].is_array()) continue;
      const char* key = list == std::string("stages") ? "stage" : "resource";
      for (nlohmann::json row : rank[list]) {
        if (row.is_object() && row.contains(key) && row[key].is_string()) {
          row[key] = row[key].get<std::string>() + suffix;
        }
        (list == std::string("stages") ? m.stages : m.resources).push_back(std::move(row));
      }
    }
  }
  return m;
}

}  // namespace

RunMetrics read_metrics(const std::string& path) {
  // Phase 1: the bytes, refusing a file far larger than any run's metrics.
  constexpr std::uintmax_t kMaxBytes = std::uintmax_t{64} << 20;
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) throw std::runtime_error(fmt::format("cannot read `{}`: {}", path, ec.message()));
  if (size > kMaxBytes) {
    throw std::runtime_error(fmt::format(
        "`{}` holds {} bytes: not a --metrics-json file (those are a few KiB)", path, size));
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in)
    throw std::runtime_error(fmt::format("cannot read `{}`: {}", path, std::strerror(errno)));

  // Phase 2: the document and its shape.
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw std::runtime_error(
        fmt::format("`{}`: not JSON at byte {}: not a --metrics-json file", path, e.byte));
  }
  if (doc.is_object() && doc.contains("ranks") && doc["ranks"].is_array())
    return join_ranks(path, doc);
  if (!doc.is_object() || !doc.contains("stages") || !doc["stages"].is_array() ||
      !doc.contains("resources") || !doc["resources"].is_array()) {
    throw std::runtime_error(fmt::format(
        "`{}`: JSON, but not what `vsynth run --metrics-json` writes (an object with `stages` "
        "and `resources` arrays)",
        path));
  }
  RunMetrics m;
  m.path = path;
  m.pipeline = doc.value("pipeline", "");
  m.stages = std::move(doc["stages"]);
  m.resources = std::move(doc["resources"]);
  return m;
}

}  // namespace vsynth::cli::report
