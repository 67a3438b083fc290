#include "graph/plugin_loader.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "graph/plugin.h"

namespace vsynth::graph {

namespace fs = std::filesystem;

namespace {

// "`build/libp.so`", plus the canonical path when it reads differently.
std::string plugin_name(const std::string& given, const std::string& key) {
  return given == key ? fmt::format("`{}`", given) : fmt::format("`{}` ({})", given, key);
}

// dlsym's answer for a symbol the plugin must export, or nullptr (dlerror cleared first, as
// dlsym's contract asks).
void* entry_point(void* handle, const char* symbol) {
  dlerror();
  return dlsym(handle, symbol);
}

// Phases 2-4 of load_plugin, once the file is open: the ABI check, the plugin's registration
// into a registry of its own, the merge into `registry`.
std::optional<PluginError> register_plugin(Registry& registry, void* handle,
                                           const std::string& name, const std::string& key) {
  void* abi_sym = entry_point(handle, kPluginAbiSymbol);
  if (!abi_sym) {
    return PluginError{"plugin.symbol",
                       fmt::format("plugin {} is not a vsynth plugin: it exports no `{}` (declare "
                                   "its registration function with VSYNTH_PLUGIN(fn), "
                                   "graph/plugin.h)",
                                   name, kPluginAbiSymbol)};
  }
  const char* theirs = reinterpret_cast<PluginAbiFn>(abi_sym)();
  if (!theirs || std::strcmp(theirs, VSYNTH_PLUGIN_ABI) != 0) {
    return PluginError{
        "plugin.abi", fmt::format("plugin {} was built against {}; this is {}: rebuild it "
                                  "against this vsynth's headers",
                                  name, theirs ? theirs : "an unnamed version", VSYNTH_PLUGIN_ABI)};
  }
  void* register_sym = entry_point(handle, kPluginRegisterSymbol);
  if (!register_sym) {
    return PluginError{"plugin.symbol",
                       fmt::format("plugin {} exports no `{}` (declare its registration function "
                                   "with VSYNTH_PLUGIN(fn), graph/plugin.h)",
                                   name, kPluginRegisterSymbol)};
  }
  Registry own;
  try {
    reinterpret_cast<PluginRegisterFn>(register_sym)(own);
  } catch (const std::exception& e) {
    return PluginError{"plugin.register",
                       fmt::format("plugin {} failed to register its kinds: {}", name, e.what())};
  } catch (...) {
    return PluginError{"plugin.register",
                       fmt::format("plugin {} failed to register its kinds: it threw something "
                                   "that is not a std::exception",
                                   name)};
  }
  try {
    registry.add_plugin(key, std::move(own));
  } catch (const std::invalid_argument& e) {
    return PluginError{
        "plugin.duplicate",
        fmt::format("plugin {} registers a kind that exists already: {}", name, e.what())};
  }
  return std::nullopt;
}

}  // namespace

std::string canonical_plugin_path(const std::string& path) {
  std::error_code ec;
  const fs::path p = fs::canonical(path, ec);
  return ec ? path : p.string();
}

std::optional<PluginError> load_plugin(Registry& registry, const std::string& path) {
  // Phase 1: the file, opened once per registry.
  const std::string key = canonical_plugin_path(path);
  if (registry.has_plugin(key)) return std::nullopt;
  const std::string name = plugin_name(path, key);
  std::error_code ec;
  const auto status = fs::status(key, ec);
  if (!fs::exists(status)) {
    return PluginError{"plugin.missing", fmt::format("plugin {}: no such file", name)};
  }
  if (fs::is_directory(status)) {
    return PluginError{"plugin.missing",
                       fmt::format("plugin {} is a directory; name the plugin's file (a directory "
                                   "is searched only in VSYNTH_PLUGIN_PATH)",
                                   name)};
  }
  // RTLD_NOW: a symbol the plugin needs and this vsynth lacks fails here, with the loader's
  // message, instead of at its first call. RTLD_LOCAL: plugins do not see each other's symbols.
  // The handle is never closed (see plugin_loader.h).
  void* handle = dlopen(key.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    return PluginError{"plugin.open", fmt::format("plugin {} could not be loaded: {}", name,
                                                  why ? why : "unknown dlopen error")};
  }
  return register_plugin(registry, handle, name, key);
}

std::vector<std::string> plugin_search_path(const std::string& list,
                                            std::vector<PluginError>& errors) {
  std::vector<std::string> files;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t colon = std::min(list.find(':', start), list.size());
    const std::string entry = list.substr(start, colon - start);
    start = colon + 1;
    if (entry.empty()) continue;
    std::error_code ec;
    if (fs::is_directory(entry, ec)) {
      // Stepped with error codes: an unreadable directory is reported, never thrown.
      std::vector<std::string> found;
      fs::directory_iterator it(entry, ec);
      for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
        std::error_code type_ec;
        if (it->path().extension() == ".so" && it->is_regular_file(type_ec)) {
          found.push_back(it->path().string());
        }
      }
      if (ec) {
        errors.push_back({"plugin.open",
                          fmt::format("`{}`: cannot read the directory: {}", entry, ec.message())});
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::exists(entry, ec)) {
      files.push_back(entry);
    } else {
      errors.push_back({"plugin.missing", fmt::format("`{}`: no such file or directory", entry)});
    }
  }
  return files;
}

void load_plugins(const PipelineSpec& spec, Registry& registry, Diagnostics& diags) {
  for (const auto& p : spec.plugins) {
    if (auto error = load_plugin(registry, p.resolved)) {
      diags.error(error->code, p.mark, error->message);
    }
  }
}

ValidatedPipeline load_pipeline_with_plugins(const std::string& path, Registry& registry) {
  Diagnostics diags(path);
  PipelineSpec spec = load_spec_file(path, diags);
  if (!diags.empty()) throw SpecError(std::move(diags));
  load_plugins(spec, registry, diags);
  if (!diags.empty()) throw SpecError(std::move(diags));
  auto vp = validate(spec, registry, diags);
  if (!vp) throw SpecError(std::move(diags));
  return std::move(*vp);
}

void load_pipeline_plugins(const std::string& path, Registry& registry) {
  Diagnostics diags(path);
  PipelineSpec spec = load_spec_file(path, diags);
  if (diags.empty()) load_plugins(spec, registry, diags);
  if (!diags.empty()) throw SpecError(std::move(diags));
}

}  // namespace vsynth::graph
