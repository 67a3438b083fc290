#include "tools/vsynth/report/vega_bundle.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace vsynth::cli::report {

namespace {

// The modules a chart of marks, scales, axes, legends and data transforms needs, each after
// those it requires (their define() lists).
constexpr std::array kModules = {
    "vega-util",           "vega-canvas",          "vega-time",      "vega-format",
    "vega-loader",         "vega-dataflow",        "vega-scale",     "vega-scenegraph",
    "vega-statistics",     "vega-expression",      "vega-selection", "vega-functions",
    "vega-event-selector", "vega-parser",          "vega-runtime",   "vega-view",
    "vega-transforms",     "vega-view-transforms", "vega-encode",
};

// An AMD define() that runs each module's factory with the modules it names, and keeps its
// exports under the name set just before it (the UMD builds define anonymously).
// vega-functions asks for `vega-selections`, which Debian ships as vega-selection.
constexpr const char* kLoader = R"JS(
var vsynthVega = {mods: {}, current: null};
function define(deps, factory) {
  var exports = {};
  var args = deps.map(function (d) {
    if (d === 'exports') return exports;
    var m = vsynthVega.mods[d === 'vega-selections' ? 'vega-selection' : d];
    if (!m) throw new Error('vega module ' + d + ' is needed before it is loaded');
    return m;
  });
  factory.apply(null, args);
  vsynthVega.mods[vsynthVega.current] = exports;
}
define.amd = true;
)JS";

// What vega's index.js does: one namespace, and the transforms known to the parser.
constexpr const char* kJoin = R"JS(
var vega = {};
Object.keys(vsynthVega.mods).forEach(function (k) { Object.assign(vega, vsynthVega.mods[k]); });
['vega-transforms', 'vega-view-transforms', 'vega-encode'].forEach(function (k) {
  Object.assign(vega.transforms, vsynthVega.mods[k]);
});
define = undefined;
)JS";

// Inlined script text must not close its element early: `</script` (any case) becomes
// `<\/script`, the same text in a JS string or regular expression. Nothing else is touched
// (a bare `</` may be a regular expression, `/</g`, which `<\/` would break).
std::string script_safe(std::string js) {
  static const std::string kEnd = "</script";
  for (std::size_t at = 0; (at = js.find("</", at)) != std::string::npos; at += 2) {
    if (js.size() - at < kEnd.size()) break;
    bool match = true;
    for (std::size_t k = 2; k < kEnd.size() && match; ++k) {
      match = std::tolower(static_cast<unsigned char>(js[at + k])) == kEnd[k];
    }
    if (match) js.replace(at, 2, "<\\/");
  }
  return js;
}

}  // namespace

std::string vega_scripts(const std::string& dir_arg, std::string& error) {
  std::string dir = dir_arg;
  if (dir.empty()) {
    const char* env = std::getenv("VSYNTH_VEGA_DIR");
    dir = env && *env ? env : "/usr/share/javascript/vega";
  }
  std::string out = fmt::format("<script>{}</script>\n", kLoader);
  for (const char* m : kModules) {
    const std::string path = fmt::format("{}/{}.min.js", dir, m);
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      error = fmt::format(
          "cannot read `{}`: the charts need Vega from Debian's libjs-vega (apt-get install "
          "libjs-vega; or set VSYNTH_VEGA_DIR to a folder with its modules)",
          path);
      return "";
    }
    std::stringstream js;
    js << in.rdbuf();
    out += fmt::format("<script>vsynthVega.current = '{}';</script>\n<script>{}</script>\n", m,
                       script_safe(js.str()));
  }
  return out + fmt::format("<script>{}</script>\n", kJoin);
}

}  // namespace vsynth::cli::report
