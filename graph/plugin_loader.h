// Loading plugins (graph/plugin.h) into a registry: dlopen, the ABI check, registration into a
// registry of the plugin's own, then Registry::add_plugin (all of its kinds or none). Three ways
// name plugins, all ending here: `plugins:` in a pipeline file (load_pipeline_with_plugins;
// failures are diagnostics at the entry's file:line:col), and `vsynth --plugin PATH` and
// VSYNTH_PLUGIN_PATH (load_plugin / plugin_search_path; the CLI names the flag or variable).
//
// The framework knows nothing of what a plugin registers: this is the generic half. A plugin
// stays loaded until the process exits (never dlclose'd): the registry's factories and every
// stage they make run its code. Loading the same file again (by canonical path) into a
// registry that has it does nothing, so a plugin named by both a pipeline and the environment
// is loaded once. Not thread-safe: load plugins before runs start.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graph/diagnostics.h"
#include "graph/registry.h"
#include "graph/spec.h"
#include "graph/validate.h"

namespace vsynth::graph {

// Why a plugin was refused. `code` is a diagnostic code: plugin.missing (no such file),
// plugin.open (dlopen failed: not a shared library, an unresolved symbol), plugin.symbol (an
// entry point is not exported), plugin.abi (built against another vsynth), plugin.register
// (the registration function threw), plugin.duplicate (a kind it registers exists already).
struct PluginError {
  std::string code;
  std::string message;  // names the file; e.g. "plugin `/x/libp.so` was built against ..."
};

// The key a registry knows a plugin by: its canonical path (symbolic links and `..` resolved),
// or the path as given when it does not exist.
std::string canonical_plugin_path(const std::string& path);

// Loads the plugin at `path` (relative: to the working directory) into `registry`.
std::optional<PluginError> load_plugin(Registry& registry, const std::string& path);

// The plugin files of a VSYNTH_PLUGIN_PATH-style list: colon-separated files or directories (a
// directory stands for its `*.so` files, sorted by name); empty entries are skipped. An entry
// that does not exist is an error (plugin.missing) naming it, a directory that cannot be read
// another (plugin.open).
std::vector<std::string> plugin_search_path(const std::string& list,
                                            std::vector<PluginError>& errors);

// Loads every `plugins:` entry of `spec` into `registry`; each failure is a diagnostic at the
// entry ("<file>:<line>:<col>: error: plugin `p.so` ...").
void load_plugins(const PipelineSpec& spec, Registry& registry, Diagnostics& diags);

// load_pipeline (graph/validate.h) after loading the file's plugins into `registry`. A
// pipeline whose plugins failed to load is not checked further (its kinds would all be
// unknown): the SpecError holds the plugin failures.
ValidatedPipeline load_pipeline_with_plugins(const std::string& path, Registry& registry);

// Only the plugins of a pipeline file (the server validates its pipelines itself); throws
// SpecError on a shape error in the file or a plugin that failed to load.
void load_pipeline_plugins(const std::string& path, Registry& registry);

}  // namespace vsynth::graph
