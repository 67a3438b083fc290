// Vega specs (https://vega.github.io/schema/vega/v5.json) of the report's charts, built as JSON
// with their data inline. Two shapes serve every chart: bars (a label, a value, optionally a
// series that colours and groups them) and lines (a series of x, y points on a log x axis).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace vsynth::cli::report {

struct Axes {
  std::string title;
  std::string value_title;  // the value axis
  std::string format = "";  // d3-format of values, e.g. ".0%"; "" : Vega's default
};

// rows: [{label, value, [series]}]: horizontal bars, one row per label, bars of a label's
// series side by side with a legend.
nlohmann::json bar_chart(const nlohmann::json& rows, const Axes& axes);

// points: [{series, x, y}]: one line per series, x on a log scale.
nlohmann::json log_line_chart(const nlohmann::json& points, const Axes& axes,
                              const std::string& x_title);

}  // namespace vsynth::cli::report
