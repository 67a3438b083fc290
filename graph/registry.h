// Registry: every stage kind and resource kind this binary knows, with its contract.
// Each capability folder under stages/ exposes `void register_stages(graph::Registry&)`;
// stages/register_all.cpp calls each explicitly (no static initialisers the linker could drop).
// Plugins (graph/plugin.h) register into a registry of their own, which add_plugin() then
// merges in whole, each kind marked with the plugin's path.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "graph/contract.h"
#include "graph/resource.h"
#include "graph/stage.h"

namespace vsynth::graph {

using StageFactory = std::function<std::unique_ptr<StageBase>(const StageContext&)>;
using ResourceFactory = std::function<std::shared_ptr<Resource>(const ResourceContext&)>;

struct StageKind {
  Contract contract;
  StageFactory factory;
  std::string source;  // where the kind comes from: "" built in, else the plugin's file
};

struct ResourceKind {
  ResourceContract contract;
  ResourceFactory factory;
  std::string source;  // as StageKind::source
};

class Registry {
 public:
  // Throws when the kind is already registered or the contract is inconsistent (no ports on
  // a transform stage, a default outside its own range, duplicate parameter names...).
  void add_stage(Contract contract, StageFactory factory);
  void add_resource(ResourceContract contract, ResourceFactory factory);
  // Moves every kind of `kinds` (what one plugin registered) in, each marked with `source`
  // (the plugin's canonical path), and records the plugin as loaded. All or nothing: when a
  // kind is already here, nothing is added and the std::invalid_argument names the kind and
  // both of its sources.
  void add_plugin(const std::string& source, Registry&& kinds);
  // Whether add_plugin() added the plugin at this canonical path.
  bool has_plugin(std::string_view source) const;
  const std::vector<std::string>& plugins() const { return plugins_; }

  const StageKind* find_stage(std::string_view kind) const;
  const ResourceKind* find_resource(std::string_view kind) const;
  std::vector<std::string> stage_kinds() const;
  std::vector<std::string> resource_kinds() const;
  // Kinds whose contract provides `facet` (for "provided by ..." hints).
  std::vector<std::string> providers_of(std::string_view facet) const;

 private:
  std::map<std::string, StageKind, std::less<>> stages_;
  std::map<std::string, ResourceKind, std::less<>> resources_;
  std::vector<std::string> plugins_;  // canonical paths, in load order
};

}  // namespace vsynth::graph
