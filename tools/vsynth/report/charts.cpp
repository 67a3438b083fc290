#include "tools/vsynth/report/charts.h"

#include <set>

namespace vsynth::cli::report {

namespace {

using nlohmann::json;

json base(const Axes& axes, int width, int height) {
  return {{"$schema", "https://vega.github.io/schema/vega/v5.json"},
          {"title", axes.title},
          {"width", width},
          {"height", height},
          {"padding", 5},
          {"autosize", "pad"}};
}

json value_axis(const Axes& axes, const char* orient, const char* scale) {
  json a = {{"orient", orient}, {"scale", scale}, {"title", axes.value_title}, {"grid", true}};
  if (!axes.format.empty()) a["format"] = axes.format;
  return a;
}

json tooltip(const Axes& axes) {
  const std::string value =
      axes.format.empty() ? "datum.value" : "format(datum.value, '" + axes.format + "')";
  return {{"signal", "{'label': datum.label, 'series': datum.series, 'value': " + value + "}"}};
}

}  // namespace

json bar_chart(const json& rows, const Axes& axes) {
  std::set<std::string> labels, series;
  for (const auto& r : rows) {
    labels.insert(r.value("label", ""));
    series.insert(r.value("series", ""));
  }
  const bool grouped = series.size() > 1;
  const int band = grouped ? 14 * static_cast<int>(series.size()) + 6 : 20;
  json spec = base(axes, 520, std::max(40, band * static_cast<int>(labels.size())));
  json data = rows;
  for (auto& r : data) {
    if (!r.contains("series")) r["series"] = "";
  }
  spec["data"] = json::array({{{"name", "rows"}, {"values", data}}});
  spec["scales"] = json::array({{{"name", "y"},
                                 {"type", "band"},
                                 {"domain", {{"data", "rows"}, {"field", "label"}}},
                                 {"range", "height"},
                                 {"padding", 0.15}},
                                {{"name", "x"},
                                 {"type", "linear"},
                                 {"domain", {{"data", "rows"}, {"field", "value"}}},
                                 {"range", "width"},
                                 {"nice", true},
                                 {"zero", true}},
                                {{"name", "color"},
                                 {"type", "ordinal"},
                                 {"domain", {{"data", "rows"}, {"field", "series"}}},
                                 {"range", "category"}}});
  spec["axes"] = json::array(
      {value_axis(axes, "bottom", "x"), {{"orient", "left"}, {"scale", "y"}, {"labelLimit", 260}}});
  const json enter = {
      {"y", {{"scale", grouped ? "pos" : "y"}, {"field", grouped ? "series" : "label"}}},
      {"height", {{"scale", grouped ? "pos" : "y"}, {"band", 1}}},
      {"x", {{"scale", "x"}, {"field", "value"}}},
      {"x2", {{"scale", "x"}, {"value", 0}}},
      {"fill", {{"scale", "color"}, {"field", "series"}}},
      {"tooltip", tooltip(axes)}};
  const json rect = {{"type", "rect"},
                     {"from", {{"data", grouped ? "facet" : "rows"}}},
                     {"encode", {{"enter", enter}}}};
  if (!grouped) {
    spec["marks"] = json::array({rect});
    return spec;
  }
  // One group per label, its series side by side inside the label's band.
  spec["legends"] = json::array({{{"fill", "color"}, {"orient", "right"}}});
  spec["marks"] = json::array(
      {{{"type", "group"},
        {"from", {{"facet", {{"data", "rows"}, {"name", "facet"}, {"groupby", "label"}}}}},
        {"encode",
         {{"enter",
           {{"y", {{"scale", "y"}, {"field", "label"}}},
            {"height", {{"scale", "y"}, {"band", 1}}}}}}},
        {"signals", json::array({{{"name", "band"}, {"update", "bandwidth('y')"}}})},
        {"scales", json::array({{{"name", "pos"},
                                 {"type", "band"},
                                 {"range", {0, {{"signal", "band"}}}},
                                 {"domain", {{"data", "facet"}, {"field", "series"}}}}})},
        {"marks", json::array({rect})}}});
  return spec;
}

json log_line_chart(const json& points, const Axes& axes, const std::string& x_title) {
  json spec = base(axes, 520, 220);
  spec["data"] = json::array({{{"name", "points"}, {"values", points}}});
  spec["scales"] = json::array({{{"name", "x"},
                                 {"type", "log"},
                                 {"domain", {{"data", "points"}, {"field", "x"}}},
                                 {"range", "width"},
                                 {"nice", true}},
                                {{"name", "y"},
                                 {"type", "linear"},
                                 {"domain", {{"data", "points"}, {"field", "y"}}},
                                 {"range", "height"},
                                 {"nice", true},
                                 {"zero", true}},
                                {{"name", "color"},
                                 {"type", "ordinal"},
                                 {"domain", {{"data", "points"}, {"field", "series"}}},
                                 {"range", "category"}}});
  spec["axes"] = json::array(
      {{{"orient", "bottom"}, {"scale", "x"}, {"title", x_title}}, value_axis(axes, "left", "y")});
  spec["legends"] = json::array({{{"stroke", "color"}, {"orient", "right"}}});
  spec["marks"] = json::array(
      {{{"type", "group"},
        {"from", {{"facet", {{"data", "points"}, {"name", "series"}, {"groupby", "series"}}}}},
        {"marks", json::array({{{"type", "line"},
                                {"from", {{"data", "series"}}},
                                {"encode",
                                 {{"enter",
                                   {{"x", {{"scale", "x"}, {"field", "x"}}},
                                    {"y", {{"scale", "y"}, {"field", "y"}}},
                                    {"stroke", {{"scale", "color"}, {"field", "series"}}},
                                    {"strokeWidth", {{"value", 2}}},
                                    {"interpolate", {{"value", "step-after"}}}}}}}},
                               {{"type", "symbol"},
                                {"from", {{"data", "series"}}},
                                {"encode",
                                 {{"enter",
                                   {{"x", {{"scale", "x"}, {"field", "x"}}},
                                    {"y", {{"scale", "y"}, {"field", "y"}}},
                                    {"fill", {{"scale", "color"}, {"field", "series"}}},
                                    {"size", {{"value", 18}}},
                                    {"tooltip",
                                     {{"signal",
                                       "{'series': datum.series, 'from ms': "
                                       "datum.x, 'spans': datum.y}"}}}}}}}}})}}});
  return spec;
}

}  // namespace vsynth::cli::report
