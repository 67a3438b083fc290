// Writing a plugin: a shared library that adds stage and resource kinds to vsynth without
// changing it. It registers them exactly as a built-in capability does (graph/registry.h)
// and names its registration function once with VSYNTH_PLUGIN:
//
//   #include "graph/plugin.h"
//   void register_mine(vsynth::graph::Registry& registry) {
//     registry.add_stage(MyStage::contract(), [](const vsynth::graph::StageContext& ctx) {
//       return std::make_unique<MyStage>(ctx);
//     });
//   }
//   VSYNTH_PLUGIN(register_mine);
//
// Build it against the installed package (`find_package(vsynth)`, target vsynth::vsynth) and
// load it with `plugins: [path]` in a pipeline, `--plugin PATH` or VSYNTH_PLUGIN_PATH
// (graph/plugin_loader.h). examples/plugin/ is a whole one.
//
// VSYNTH_PLUGIN exports two C symbols: `vsynth_plugin_abi`, the version and C++ library ABI
// the plugin was compiled against (VSYNTH_PLUGIN_ABI, taken from these headers when the
// plugin is compiled), and `vsynth_plugin_register`, called once with a registry of the
// plugin's own. The loader compares the ABI string with its own before it calls anything
// else: the types a plugin shares with vsynth (Contract, Item, facets) have no stable layout
// across versions, so a plugin built against another version is refused, both named.
#pragma once

#include <string>  // defines the standard library's ABI macros tested below

#include "graph/registry.h"
#include "graph/version.h"

#define VSYNTH_PLUGIN_STR2(x) #x
#define VSYNTH_PLUGIN_STR(x) VSYNTH_PLUGIN_STR2(x)
// std::string and std::list change layout with libstdc++'s dual ABI; libc++ is another
// library altogether. Both sides must agree on these types, which cross the plugin boundary.
#if defined(_LIBCPP_VERSION)
#define VSYNTH_PLUGIN_STDLIB "libc++ ABI " VSYNTH_PLUGIN_STR(_LIBCPP_ABI_VERSION)
#elif defined(_GLIBCXX_USE_CXX11_ABI)
#define VSYNTH_PLUGIN_STDLIB "libstdc++ cxx11 ABI " VSYNTH_PLUGIN_STR(_GLIBCXX_USE_CXX11_ABI)
#else
#define VSYNTH_PLUGIN_STDLIB "unknown C++ library"
#endif
// "vsynth 0.1.0 (libstdc++ cxx11 ABI 1)"
#define VSYNTH_PLUGIN_ABI "vsynth " VSYNTH_VERSION_STRING " (" VSYNTH_PLUGIN_STDLIB ")"

namespace vsynth::graph {

inline constexpr const char* kPluginAbiSymbol = "vsynth_plugin_abi";
inline constexpr const char* kPluginRegisterSymbol = "vsynth_plugin_register";
// The signatures behind the two symbols.
using PluginAbiFn = const char* (*)();
using PluginRegisterFn = void (*)(Registry&);

}  // namespace vsynth::graph

// Exports the plugin's entry points; `register_fn` is a `void(vsynth::graph::Registry&)`.
// Use once per plugin, at namespace scope, followed by `;`. An exception from register_fn
// refuses the plugin (with its message), never the program.
#define VSYNTH_PLUGIN(register_fn)                                                    \
  extern "C" __attribute__((visibility("default"))) const char* vsynth_plugin_abi() { \
    return VSYNTH_PLUGIN_ABI;                                                         \
  }                                                                                   \
  extern "C" __attribute__((visibility("default"))) void vsynth_plugin_register(      \
      ::vsynth::graph::Registry& registry) {                                          \
    register_fn(registry);                                                            \
  }                                                                                   \
  static_assert(true, "VSYNTH_PLUGIN takes a `;`")
