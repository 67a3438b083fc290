#include "tools/vsynth/commands.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>

#include "graph/dot.h"
#include "graph/plugin_loader.h"
#include "graph/validate.h"
#include "tools/vsynth/exit_codes.h"

namespace vsynth::cli {

namespace {

std::string param_line(const graph::ParamSpec& p) {
  std::string type = graph::to_string(p.type);
  if (p.type == graph::ParamType::Enum) type = fmt::format("one of {}", fmt::join(p.choices, "|"));
  if (p.type == graph::ParamType::StringList && !p.choices.empty()) {
    type = fmt::format("list of {}", fmt::join(p.choices, "|"));
  }
  if (p.type == graph::ParamType::Resource || p.type == graph::ParamType::ResourceList) {
    type += fmt::format(" ({})", p.resource_interface);
  }
  const std::string range = (p.min || p.max) ? " in " + graph::range_text(p) : "";
  const std::string def =
      p.required() ? "required" : "default " + graph::to_string(*p.default_value);
  return fmt::format("    {:<18} {}{}, {}\n      {}\n", p.name, type, range, def, p.help);
}

// "  plugin: /abs/libx.so" under a kind a plugin registered; nothing for a built-in one.
std::string source_line(const std::string& source) {
  return source.empty() ? std::string() : fmt::format("  plugin: {}\n", source);
}

void print_stage(const graph::Contract& c, const std::string& source) {
  const char* role = c.role == graph::Role::Source ? "source"
                     : c.role == graph::Role::Sink
                         ? "sink"
                         : (c.execution == graph::Execution::Async ? "async stage" : "stage");
  std::cout << fmt::format("{}  ({})\n  {}\n{}", c.kind, role, c.summary, source_line(source));
  if (c.role == graph::Role::Transform) {
    const auto conc = c.concurrency.limit == 0   ? std::string("unlimited")
                      : c.concurrency.limit == 1 ? std::string("serial")
                                                 : std::to_string(c.concurrency.limit);
    std::cout << fmt::format("  concurrency: {} (default)\n", conc);
    std::cout << fmt::format(
        "  requires: {}\n  provides: {}\n",
        c.requires_facets.empty() ? "-" : fmt::format("{}", fmt::join(c.requires_facets, ", ")),
        c.provides_facets.empty() ? "-" : fmt::format("{}", fmt::join(c.provides_facets, ", ")));
    std::cout << "  ports:\n";
    for (const auto& p : c.ports) {
      std::cout << fmt::format("    {:<18} {}{}\n", p.name, p.help, p.failure ? " [failure]" : "");
    }
  }
  std::cout << "  parameters:\n";
  if (c.params.empty()) std::cout << "    (none)\n";
  for (const auto& p : c.params) std::cout << param_line(p);
  std::cout << "\n";
}

void print_resource(const graph::ResourceContract& c, const std::string& source) {
  std::cout << fmt::format("{}  (resource, interface `{}`)\n  {}\n{}  parameters:\n", c.kind,
                           c.interface, c.summary, source_line(source));
  if (c.params.empty()) std::cout << "    (none)\n";
  for (const auto& p : c.params) std::cout << param_line(p);
  std::cout << "\n";
}

}  // namespace

void add_plugin_option(CLI::App& command, std::vector<std::string>& files) {
  command.add_option("--plugin", files,
                     "a plugin (shared library) adding stage and resource kinds; repeatable. "
                     "Also loaded: every file or directory's *.so in $VSYNTH_PLUGIN_PATH "
                     "(colon-separated)");
}

bool load_plugins(graph::Registry& registry, const std::vector<std::string>& files) {
  std::vector<graph::PluginError> errors;
  const char* env = std::getenv("VSYNTH_PLUGIN_PATH");
  const auto from_env = graph::plugin_search_path(env ? env : "", errors);
  for (const auto& f : from_env) {
    if (auto e = graph::load_plugin(registry, f)) errors.push_back(*e);
  }
  for (const auto& e : errors) std::cerr << "error: VSYNTH_PLUGIN_PATH: " << e.message << "\n";
  bool ok = errors.empty();
  for (const auto& f : files) {
    if (auto e = graph::load_plugin(registry, f)) {
      std::cerr << "error: --plugin " << f << ": " << e->message << "\n";
      ok = false;
    }
  }
  return ok;
}

int cmd_validate(graph::Registry& registry, const std::vector<std::string>& files) {
  int bad = 0;
  for (const auto& f : files) {
    try {
      const auto p = graph::load_pipeline_with_plugins(f, registry);
      std::cout << fmt::format("{}: ok ({} stages, {} edges, {} resources)\n", f, p.stages.size(),
                               p.edges.size(), p.resources.size());
    } catch (const graph::SpecError& e) {
      std::cerr << e.what();
      std::cerr << fmt::format("{}: {} error(s)\n", f, e.diagnostics().size());
      ++bad;
    }
  }
  return bad ? kExitUsage : kExitOk;
}

int cmd_stages(const graph::Registry& registry, const std::string& only) {
  bool found = false;
  for (const auto& k : registry.stage_kinds()) {
    if (!only.empty() && k != only) continue;
    const auto* kind = registry.find_stage(k);
    print_stage(kind->contract, kind->source);
    found = true;
  }
  for (const auto& k : registry.resource_kinds()) {
    if (!only.empty() && k != only) continue;
    const auto* kind = registry.find_resource(k);
    print_resource(kind->contract, kind->source);
    found = true;
  }
  if (!found) {
    auto all = registry.stage_kinds();
    for (const auto& k : registry.resource_kinds()) all.push_back(k);
    std::cerr << fmt::format("error: no stage or resource kind `{}`;{} valid: {}\n", only,
                             graph::suggestion(only, all), graph::join_names(all));
    return kExitUsage;
  }
  return kExitOk;
}

int cmd_dot(graph::Registry& registry, const std::string& file) {
  try {
    std::cout << graph::to_dot(graph::load_pipeline_with_plugins(file, registry));
    return kExitOk;
  } catch (const graph::SpecError& e) {
    std::cerr << e.what();
    return kExitUsage;
  }
}

}  // namespace vsynth::cli
