// Registry: every stage kind and resource kind this binary knows, with its contract.
// Each capability folder under stages/ exposes `void register_stages(graph::Registry&)`;
// stages/register_all.cpp calls each explicitly (no static initialisers the linker could drop).
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
};

struct ResourceKind {
  ResourceContract contract;
  ResourceFactory factory;
};

class Registry {
 public:
  // Throws when the kind is already registered or the contract is inconsistent (no ports on
  // a transform stage, a default outside its own range, duplicate parameter names...).
  void add_stage(Contract contract, StageFactory factory);
  void add_resource(ResourceContract contract, ResourceFactory factory);

  const StageKind* find_stage(std::string_view kind) const;
  const ResourceKind* find_resource(std::string_view kind) const;
  std::vector<std::string> stage_kinds() const;
  std::vector<std::string> resource_kinds() const;
  // Kinds whose contract provides `facet` (for "provided by ..." hints).
  std::vector<std::string> providers_of(std::string_view facet) const;

 private:
  std::map<std::string, StageKind, std::less<>> stages_;
  std::map<std::string, ResourceKind, std::less<>> resources_;
};

}  // namespace vsynth::graph
