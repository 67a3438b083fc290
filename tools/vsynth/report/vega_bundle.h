// Vega 5 for the page, from Debian's libjs-vega (/usr/share/javascript/vega), inlined so the
// report needs no network when viewed. Debian ships Vega as its separate modules (vega-util,
// vega-dataflow, ... each a UMD build) and not the `vega` bundle that joins them, so the page
// loads them through a small AMD `define` and joins them as vega's own index does: every
// module's exports in one `vega` object, the transforms registered with the dataflow.
#pragma once

#include <string>

namespace vsynth::cli::report {

// The <script> elements defining `window.vega`; "" and `error` set when a module is missing.
// `dir`: the modules' folder ("" : $VSYNTH_VEGA_DIR, else /usr/share/javascript/vega).
std::string vega_scripts(const std::string& dir, std::string& error);

}  // namespace vsynth::cli::report
