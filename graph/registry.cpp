#include "graph/registry.h"

#include <set>
#include <stdexcept>

namespace vsynth::graph {

namespace {

void check_params(const std::string& kind, const std::vector<ParamSpec>& params) {
  std::set<std::string> seen;
  for (const auto& p : params) {
    if (!seen.insert(p.name).second) {
      throw std::logic_error(kind + ": parameter `" + p.name + "` declared twice");
    }
    if (p.type == ParamType::Enum && p.choices.empty()) {
      throw std::logic_error(kind + ": enum parameter `" + p.name + "` has no choices");
    }
    if (p.default_value && (p.type == ParamType::Int || p.type == ParamType::Float)) {
      double d = std::holds_alternative<int64_t>(*p.default_value)
                     ? static_cast<double>(std::get<int64_t>(*p.default_value))
                     : std::get<double>(*p.default_value);
      if ((p.min && d < *p.min) || (p.max && d > *p.max)) {
        throw std::logic_error(kind + ": default of `" + p.name + "` is outside its range");
      }
    }
  }
}

}  // namespace

Port StageContext::port(std::string_view port_name) const {
  if (auto i = contract.port_index(port_name)) return *i;
  throw std::logic_error(contract.kind + " has no port `" + std::string(port_name) + "`");
}

void Registry::add_stage(Contract contract, StageFactory factory) {
  const std::string kind = contract.kind;
  if (stages_.count(kind)) throw std::logic_error("stage kind `" + kind + "` registered twice");
  if (contract.role == Role::Transform && contract.ports.empty()) {
    throw std::logic_error("stage kind `" + kind + "` declares no output port");
  }
  check_params(kind, contract.params);
  stages_.emplace(kind, StageKind{std::move(contract), std::move(factory), {}});
}

void Registry::add_resource(ResourceContract contract, ResourceFactory factory) {
  const std::string kind = contract.kind;
  if (resources_.count(kind)) {
    throw std::logic_error("resource kind `" + kind + "` registered twice");
  }
  check_params(kind, contract.params);
  resources_.emplace(kind, ResourceKind{std::move(contract), std::move(factory), {}});
}

namespace {

std::string describe_source(const std::string& source) {
  return source.empty() ? std::string("built in") : "from plugin `" + source + "`";
}

}  // namespace

void Registry::add_plugin(const std::string& source, Registry&& kinds) {
  // Phase 1: every kind checked before any is added.
  for (const auto& [k, kind] : kinds.stages_) {
    if (const StageKind* here = find_stage(k)) {
      throw std::invalid_argument("stage kind `" + k + "` is already registered (" +
                                  describe_source(here->source) + ")");
    }
  }
  for (const auto& [k, kind] : kinds.resources_) {
    if (const ResourceKind* here = find_resource(k)) {
      throw std::invalid_argument("resource kind `" + k + "` is already registered (" +
                                  describe_source(here->source) + ")");
    }
  }
  // Phase 2: moved in, marked.
  for (auto& [k, kind] : kinds.stages_) {
    kind.source = source;
    stages_.emplace(k, std::move(kind));
  }
  for (auto& [k, kind] : kinds.resources_) {
    kind.source = source;
    resources_.emplace(k, std::move(kind));
  }
  kinds.stages_.clear();
  kinds.resources_.clear();
  plugins_.push_back(source);
}

bool Registry::has_plugin(std::string_view source) const {
  for (const auto& p : plugins_) {
    if (p == source) return true;
  }
  return false;
}

const StageKind* Registry::find_stage(std::string_view kind) const {
  auto it = stages_.find(kind);
  return it == stages_.end() ? nullptr : &it->second;
}

const ResourceKind* Registry::find_resource(std::string_view kind) const {
  auto it = resources_.find(kind);
  return it == resources_.end() ? nullptr : &it->second;
}

std::vector<std::string> Registry::stage_kinds() const {
  std::vector<std::string> out;
  for (const auto& [k, _] : stages_) out.push_back(k);
  return out;
}

std::vector<std::string> Registry::resource_kinds() const {
  std::vector<std::string> out;
  for (const auto& [k, _] : resources_) out.push_back(k);
  return out;
}

std::vector<std::string> Registry::providers_of(std::string_view facet) const {
  std::vector<std::string> out;
  for (const auto& [k, s] : stages_) {
    for (const auto& f : s.contract.provides_facets) {
      if (f == facet) out.push_back(k);
    }
  }
  return out;
}

}  // namespace vsynth::graph
