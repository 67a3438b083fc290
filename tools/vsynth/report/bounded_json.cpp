#include "tools/vsynth/report/bounded_json.h"

#include <fmt/format.h>

#include <string>

namespace vsynth::cli::report {

namespace {

std::string cut_string(const std::string& s, std::size_t max) {
  if (s.size() <= max) return s;
  std::size_t end = max;
  // Back up to the start of a UTF-8 sequence.
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
  return s.substr(0, end) +
         fmt::format("\n... ({} more bytes cut by vsynth report)", s.size() - end);
}

nlohmann::json copy(const nlohmann::json& v, const JsonBudget& b, std::size_t& left) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    const std::string out = cut_string(s, std::min(b.max_string, std::max<std::size_t>(left, 64)));
    left -= std::min(left, out.size());
    return out;
  }
  if (v.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    std::size_t n = 0;
    for (const auto& e : v) {
      if (n == b.max_items || left == 0) {
        out.push_back(fmt::format("... {} more elements cut by vsynth report", v.size() - n));
        break;
      }
      out.push_back(copy(e, b, left));
      ++n;
    }
    return out;
  }
  if (v.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [k, e] : v.items()) {
      if (left == 0) {
        out["..."] = "more fields cut by vsynth report";
        break;
      }
      left -= std::min(left, k.size());
      out[k] = copy(e, b, left);
    }
    return out;
  }
  return v;  // numbers, booleans, null
}

}  // namespace

nlohmann::json bounded_copy(const nlohmann::json& v, const JsonBudget& budget) {
  std::size_t left = budget.max_total;
  return copy(v, budget, left);
}

}  // namespace vsynth::cli::report
