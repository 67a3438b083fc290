// Results files as the end-to-end tests read them: every record (whole lines, each one JSON
// object), records by id (each task exactly once), and a record without what depends on the
// machine's speed, so two runs can be compared.
#pragma once

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/process.h"

namespace vsynth::test {

namespace records_detail {
namespace fs = std::filesystem;
using json = nlohmann::json;
}  // namespace records_detail
using namespace records_detail;

// Every record of a results file, which must be valid JSONL: whole lines, each one object.
inline std::vector<json> read_records(const fs::path& p) {
  const std::string text = slurp(p);
  INFO(p.string());
  REQUIRE((text.empty() || text.back() == '\n'));  // no torn last record
  std::vector<json> records;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    INFO(line);
    json j = json::parse(line, nullptr, false);
    REQUIRE(j.is_object());
    records.push_back(std::move(j));
  }
  return records;
}

// Records by id; every task exactly once, nothing else.
inline std::map<std::string, json> by_id(const std::vector<json>& records,
                                         const std::vector<json>& tasks) {
  std::map<std::string, json> m;
  for (const json& r : records) {
    const std::string id = r.at("id");
    INFO(id);
    CHECK(m.count(id) == 0);
    m[id] = r;
  }
  std::set<std::string> want;
  for (const json& t : tasks) want.insert(t.contains("id") ? t["id"] : t["task_id"]);
  std::set<std::string> got;
  for (const auto& [id, r] : m) got.insert(id);
  CHECK(got == want);
  return m;
}

// A record without what depends on the machine's speed (every `*_ms`, `ms`, `tokens_per_s`
// and the constraint hook's timing statistics).
inline json without_timings(json j) {
  if (j.is_array()) {
    for (auto& e : j) e = without_timings(std::move(e));
  } else if (j.is_object()) {
    json o = json::object();
    for (auto& [k, v] : j.items()) {
      const bool timing = k == "ms" || k == "tokens_per_s" ||
                          (k.size() > 3 && k.compare(k.size() - 3, 3, "_ms") == 0);
      if (!timing) o[k] = without_timings(v);
    }
    return o;
  }
  return j;
}

}  // namespace vsynth::test
