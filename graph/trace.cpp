#include "graph/trace.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

namespace vsynth::graph {

TraceWriter::TraceWriter(const std::string& path, const std::string& pipeline,
                         const std::string& name) {
  f_ = std::fopen(path.c_str(), "w");
  if (!f_) throw std::runtime_error("cannot create trace file `" + path + "`");
  std::fputs("[\n", f_);
  if (pipeline.empty() && name.empty()) return;
  const nlohmann::json meta = {
      {"name", "process_name"},
      {"ph", "M"},
      {"pid", 1},
      {"args", {{"name", "vsynth " + name}, {"pipeline", pipeline}}},
  };
  std::fputs(meta.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str(), f_);
  first_ = false;
}

TraceWriter::~TraceWriter() {
  close();
}

void TraceWriter::write(const Item& item, const std::vector<std::string>& stage_names) {
  std::lock_guard lock(mu_);
  if (!f_) return;
  for (const Span& s : item.trace()) {
    nlohmann::json e = {
        {"name", s.stage < stage_names.size() ? stage_names[s.stage] : "?"},
        {"cat", "stage"},
        {"ph", "X"},
        {"ts", static_cast<double>(s.start_ns) / 1000.0},
        {"dur", static_cast<double>(s.end_ns - s.start_ns) / 1000.0},
        {"pid", 1},
        {"tid", s.thread},
        {"args", {{"item", item.id()}, {"attempt", s.attempt}}},
    };
    std::fputs(first_ ? "" : ",\n", f_);
    first_ = false;
    std::fputs(e.dump().c_str(), f_);
  }
}

void TraceWriter::close() {
  std::lock_guard lock(mu_);
  if (!f_) return;
  std::fputs("\n]\n", f_);
  std::fclose(f_);
  f_ = nullptr;
}

}  // namespace vsynth::graph
