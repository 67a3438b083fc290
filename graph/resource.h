// Resources: named, long-lived objects shared by stages (a loaded model, a vector index, a
// sandbox pool, decoding hooks that run inside another stage's decoding loop).
//
// Declared once under `resources:` in the YAML, each with a kind whose ResourceContract checks
// its parameters; stages name them (`model: coder`) and the validator checks the name exists
// and the kind has the interface the stage asks for. Built once per run, before the graph
// starts, in declaration order; destroyed after it, in reverse order.
#pragma once

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "graph/contract.h"
#include "graph/params.h"

namespace vsynth::graph {

// One figure a resource reports for the run's summary (`vsynth run`'s table, --metrics-json),
// e.g. a model's prefix-cache hit rate. Cumulative since the resource was built.
struct ResourceCounter {
  std::string name;  // snake_case, e.g. "kv_pool_hit_rate"
  double value = 0.0;
  bool ratio = false;  // a fraction in [0, 1]: shown as a percentage
};

class Resource {
 public:
  virtual ~Resource() = default;
  // The figures this resource wants in the run summary; none by default. Called from the
  // runner's thread while stages may still be using the resource: keep it cheap and safe.
  virtual std::vector<ResourceCounter> counters() const { return {}; }
};

// A resource's counters at one moment.
struct ResourceSnapshot {
  std::string name;
  std::string kind;
  std::vector<ResourceCounter> counters;
};

class ResourceSet {
 public:
  void add(std::string name, std::string kind, std::shared_ptr<Resource> r) {
    entries_[std::move(name)] = Entry{std::move(kind), std::move(r)};
  }
  // The resource `name` as type R; throws naming the resource when absent or of another type.
  template <class R>
  R& get(std::string_view name) const {
    auto it = entries_.find(name);
    if (it == entries_.end()) {
      throw std::logic_error("no resource named `" + std::string(name) + "`");
    }
    if (auto* r = dynamic_cast<R*>(it->second.resource.get())) return *r;
    throw std::logic_error("resource `" + std::string(name) + "` (" + it->second.kind +
                           ") does not provide the interface this stage needs");
  }
  template <class R>
  std::shared_ptr<R> share(std::string_view name) const {
    get<R>(name);  // checks
    return std::dynamic_pointer_cast<R>(entries_.find(name)->second.resource);
  }
  bool contains(std::string_view name) const { return entries_.find(name) != entries_.end(); }
  // The counters of each resource in `order` that reports any.
  std::vector<ResourceSnapshot> snapshot(const std::vector<std::string>& order) const {
    std::vector<ResourceSnapshot> out;
    for (const std::string& name : order) {
      auto it = entries_.find(name);
      if (it == entries_.end() || !it->second.resource) continue;
      std::vector<ResourceCounter> c = it->second.resource->counters();
      if (!c.empty()) out.push_back({name, it->second.kind, std::move(c)});
    }
    return out;
  }
  void clear_in_reverse(const std::vector<std::string>& order) {
    for (auto it = order.rbegin(); it != order.rend(); ++it) entries_.erase(*it);
  }

 private:
  struct Entry {
    std::string kind;
    std::shared_ptr<Resource> resource;
  };
  std::map<std::string, Entry, std::less<>> entries_;
};

struct ResourceContext {
  std::string name;  // as declared under resources:
  const ResourceContract& contract;
  Params params;
  const ResourceSet& resources;  // those declared before this one
};

}  // namespace vsynth::graph
