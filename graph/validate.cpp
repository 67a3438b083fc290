#include "graph/validate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>

#include "graph/plugin_loader.h"

namespace vsynth::graph {

namespace {

std::string describe(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
      return "nothing";
    case YAML::NodeType::Scalar:
      return fmt::format("`{}`", n.Scalar());
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    default:
      return "an undefined node";
  }
}

std::vector<std::string> resource_names_with(const std::vector<ResolvedResource>& resources,
                                             const std::string& interface) {
  std::vector<std::string> out;
  for (const auto& r : resources) {
    if (r.kind && r.kind->contract.interface == interface) out.push_back(r.name);
  }
  return out;
}

// Converts one YAML value to the parameter's type; reports and returns nullopt on mismatch.
std::optional<Value> convert(const ParamSpec& p, const YAML::Node& n, const std::string& owner,
                             const std::vector<ResolvedResource>& resources, Diagnostics& diags) {
  const Mark at = mark_of(n);
  auto bad_type = [&](const char* expected) {
    diags.error("param.type", at,
                fmt::format("parameter `{}` of {} must be {}, got {}", p.name, owner, expected,
                            describe(n)));
    return std::nullopt;
  };
  auto check_resource = [&](const std::string& name) -> bool {
    for (const auto& r : resources) {
      if (r.name != name) continue;
      if (r.kind && r.kind->contract.interface != p.resource_interface) {
        diags.error(
            "resource.kind", at,
            fmt::format("parameter `{}` of {} needs a `{}` resource, but `{}` is a {} "
                        "({}); {} resources: {}",
                        p.name, owner, p.resource_interface, name, r.kind->contract.interface,
                        r.kind->contract.kind, p.resource_interface,
                        join_names(resource_names_with(resources, p.resource_interface))));
        return false;
      }
      return true;
    }
    std::vector<std::string> all;
    for (const auto& r : resources) all.push_back(r.name);
    diags.error("resource.unknown", at,
                fmt::format("parameter `{}` of {} names resource `{}`, which is not declared "
                            "under `resources:`;{} declared {} resources: {}",
                            p.name, owner, name, suggestion(name, all), p.resource_interface,
                            join_names(resource_names_with(resources, p.resource_interface))));
    return false;
  };

  switch (p.type) {
    case ParamType::Bool:
      if (n.IsScalar() && (n.Scalar() == "true" || n.Scalar() == "false")) {
        return Value{n.Scalar() == "true"};
      }
      return bad_type("true or false");
    case ParamType::Int: {
      if (!n.IsScalar()) return bad_type("an integer");
      const std::string& s = n.Scalar();
      char* end = nullptr;
      errno = 0;
      long long v = std::strtoll(s.c_str(), &end, 10);
      if (s.empty() || *end != '\0' || errno == ERANGE) return bad_type("an integer");
      const auto d = static_cast<double>(v);
      if ((p.min && d < *p.min) || (p.max && d > *p.max)) {
        diags.error("param.range", at,
                    fmt::format("parameter `{}` of {} is {}, outside its range {}", p.name, owner,
                                v, range_text(p)));
        return std::nullopt;
      }
      return Value{static_cast<int64_t>(v)};
    }
    case ParamType::Float: {
      if (!n.IsScalar()) return bad_type("a number");
      const std::string& s = n.Scalar();
      char* end = nullptr;
      double v = std::strtod(s.c_str(), &end);
      if (s.empty() || *end != '\0' || !std::isfinite(v)) return bad_type("a number");
      if ((p.min && v < *p.min) || (p.max && v > *p.max)) {
        diags.error("param.range", at,
                    fmt::format("parameter `{}` of {} is {}, outside its range {}", p.name, owner,
                                s, range_text(p)));
        return std::nullopt;
      }
      return Value{v};
    }
    case ParamType::String:
      if (!n.IsScalar()) return bad_type("a string");
      return Value{n.Scalar()};
    case ParamType::Enum:
      if (!n.IsScalar()) return bad_type("one of the listed choices");
      if (std::find(p.choices.begin(), p.choices.end(), n.Scalar()) == p.choices.end()) {
        diags.error("param.enum", at,
                    fmt::format("parameter `{}` of {} is `{}`, not one of the choices;{} valid: {}",
                                p.name, owner, n.Scalar(), suggestion(n.Scalar(), p.choices),
                                join_names(p.choices)));
        return std::nullopt;
      }
      return Value{n.Scalar()};
    case ParamType::StringList:
    case ParamType::ResourceList: {
      if (!n.IsSequence()) return bad_type("a list, like [a, b]");
      std::vector<std::string> out;
      bool ok = true;
      for (const auto& e : n) {
        if (!e.IsScalar()) {
          diags.error("param.type", mark_of(e),
                      fmt::format("elements of `{}` in {} must be strings, got {}", p.name, owner,
                                  describe(e)));
          ok = false;
          continue;
        }
        if (p.type == ParamType::StringList && !p.choices.empty() &&
            std::find(p.choices.begin(), p.choices.end(), e.Scalar()) == p.choices.end()) {
          diags.error("param.enum", mark_of(e),
                      fmt::format("`{}` in parameter `{}` of {} is not a valid choice;{} valid: {}",
                                  e.Scalar(), p.name, owner, suggestion(e.Scalar(), p.choices),
                                  join_names(p.choices)));
          ok = false;
          continue;
        }
        if (p.type == ParamType::ResourceList && !check_resource(e.Scalar())) {
          ok = false;
          continue;
        }
        out.push_back(e.Scalar());
      }
      if (!ok) return std::nullopt;
      return Value{std::move(out)};
    }
    case ParamType::Pointer: {
      if (!n.IsScalar()) return bad_type("a JSON pointer such as /language");
      const std::string& text = n.Scalar();
      if (auto why = json_pointer_error(text)) {
        diags.error("param.pointer", at,
                    fmt::format("parameter `{}` of {} must be a JSON pointer (RFC 6901), got `{}`: "
                                "{}",
                                p.name, owner, text, *why));
        return std::nullopt;
      }
      return Value{JsonPointer(text)};
    }
    case ParamType::Resource:
      if (!n.IsScalar()) return bad_type("the name of a resource");
      if (!check_resource(n.Scalar())) return std::nullopt;
      return Value{n.Scalar()};
  }
  return std::nullopt;
}

std::vector<std::string> kinds_with_role(const Registry& registry, Role role) {
  std::vector<std::string> out;
  for (const auto& k : registry.stage_kinds()) {
    if (registry.find_stage(k)->contract.role == role) out.push_back(k);
  }
  return out;
}

std::string stage_label(const NodeSpec& s) {
  return fmt::format("stage `{}` ({})", s.name, s.use);
}

}  // namespace

Params check_params(const std::vector<ParamSpec>& specs, const std::vector<RawParam>& raw,
                    const std::string& owner, Mark owner_mark,
                    const std::vector<ResolvedResource>& resources, const Registry& /*registry*/,
                    Diagnostics& diags) {
  std::map<std::string, Value, std::less<>> values;
  std::vector<std::string> names;
  for (const auto& s : specs) names.push_back(s.name);
  // A mapping groups dotted parameters: `speculative: { drafter: ngram }` gives
  // `speculative.drafter`. Only names the contract declares with that prefix form a group.
  std::vector<RawParam> flat;
  for (const auto& r : raw) {
    const std::string prefix = r.name + ".";
    const bool group = std::any_of(specs.begin(), specs.end(),
                                   [&](const ParamSpec& s) { return s.name.starts_with(prefix); });
    if (!group) {
      flat.push_back(r);
    } else if (r.value.IsMap()) {
      for (const auto& kv : r.value) {
        flat.push_back({prefix + kv.first.as<std::string>(""), mark_of(kv.first), kv.second});
      }
    } else {
      std::vector<std::string> members;
      for (const auto& s : specs) {
        if (s.name.starts_with(prefix)) members.push_back(s.name.substr(prefix.size()));
      }
      diags.error("param.type", r.mark,
                  fmt::format("parameter `{}` in {} must be a mapping with keys {}, got {}", r.name,
                              owner, join_names(members), describe(r.value)));
    }
  }
  std::set<std::string> given;
  for (const auto& r : flat) {
    if (!given.insert(r.name).second) {
      diags.error("duplicate", r.mark,
                  fmt::format("parameter `{}` appears twice in {}", r.name, owner));
      continue;
    }
    const ParamSpec* spec = nullptr;
    for (const auto& s : specs) {
      if (s.name == r.name) spec = &s;
    }
    if (!spec) {
      diags.error("param.unknown", r.mark,
                  fmt::format("unknown parameter `{}` in {};{} valid: {}", r.name, owner,
                              suggestion(r.name, names), join_names(names)));
      continue;
    }
    if (auto v = convert(*spec, r.value, owner, resources, diags)) values[r.name] = std::move(*v);
  }
  for (const auto& s : specs) {
    if (values.count(s.name)) continue;
    if (given.count(s.name)) continue;  // given but invalid: already reported
    if (s.required()) {
      diags.error("param.missing", owner_mark,
                  fmt::format("{} is missing required parameter `{}` ({}: {})", owner, s.name,
                              to_string(s.type), s.help));
      continue;
    }
    values[s.name] = *s.default_value;
  }
  return Params(std::move(values));
}

namespace {

std::optional<Concurrency> read_concurrency(const NodeSpec& s, Diagnostics& diags) {
  const YAML::Node& n = *s.concurrency;
  if (n.IsScalar()) {
    const std::string& v = n.Scalar();
    if (v == "serial") return Concurrency::serial();
    if (v == "unlimited") return Concurrency::unlimited();
    char* end = nullptr;
    long long x = std::strtoll(v.c_str(), &end, 10);
    if (!v.empty() && *end == '\0') {
      if (x >= 1 && x <= 1024) return Concurrency{static_cast<uint32_t>(x)};
      diags.error("param.range", s.concurrency_mark,
                  fmt::format("concurrency of {} is {}, outside [1, 1024]; or write `serial` / "
                              "`unlimited`",
                              stage_label(s), x));
      return std::nullopt;
    }
  }
  diags.error("param.type", s.concurrency_mark,
              fmt::format("concurrency of {} must be `serial`, `unlimited` or a number 1-1024, got "
                          "{}",
                          stage_label(s), describe(n)));
  return std::nullopt;
}

std::optional<ResolvedEndpoint> resolve_node_endpoint(const NodeSpec& n, Role role,
                                                      const Registry& registry,
                                                      const std::vector<ResolvedResource>& res,
                                                      Diagnostics& diags) {
  const char* what = to_string(role);
  const StageKind* kind = registry.find_stage(n.use);
  const std::vector<std::string> valid = kinds_with_role(registry, role);
  if (!kind || kind->contract.role != role) {
    diags.error("kind.unknown", n.use_mark,
                fmt::format("`{}` is not a {} kind;{} valid: {}", n.use, what,
                            suggestion(n.use, valid), join_names(valid)));
    return std::nullopt;
  }
  ResolvedEndpoint e{n.name, kind, {}};
  e.params = check_params(kind->contract.params, n.with, fmt::format("{} ({})", what, n.use),
                          n.mark, res, registry, diags);
  return e;
}

// How far one port got while the edges were read. Every port of a valid pipeline ends
// `Wired`; `Reported` means its edge was wrong and already has a diagnostic, so the port is not
// reported again as unconnected.
enum class PortState { Unwired, Wired, Reported };

// One validate() call: the spec, the pipeline being resolved, and what the phases hand on to
// each other. Each phase below appends diagnostics and fills in its part of `vp`.
struct Validation {
  const PipelineSpec& spec;
  const Registry& registry;
  Diagnostics& diags;
  ValidatedPipeline vp;
  std::map<std::string, int> index;           // stage name -> stage index
  std::vector<const NodeSpec*> stage_specs;   // per stage: its declaration, for positions
  std::vector<std::vector<PortState>> ports;  // per stage, per contract port
  std::vector<int> explicit_entries;          // targets of `in -> x`
  std::vector<std::vector<int>> fwd;          // forward (non-back) adjacency between stages
  std::vector<int> indeg;                     // forward in-degree per stage

  int stage_count() const { return static_cast<int>(vp.stages.size()); }
  std::vector<std::string> stage_names() const {
    std::vector<std::string> out;
    for (const auto& s : vp.stages) out.push_back(s.name);
    return out;
  }
};

// Phase 0: the plugins the file names must be in the registry already (load_pipeline_with_plugins
// loads them; a registry without them would report their kinds as unknown, far from the cause).
void check_plugins(Validation& v) {
  for (const auto& p : v.spec.plugins) {
    if (v.registry.has_plugin(canonical_plugin_path(p.resolved))) continue;
    v.diags.error("plugin.not_loaded", p.mark,
                  fmt::format("plugin `{}` is not loaded into this registry (load the pipeline "
                              "with graph::load_pipeline_with_plugins, graph/plugin_loader.h)",
                              p.path));
  }
}

// Phase 1: resources, in declaration order (a resource's parameters may name earlier ones).
void resolve_resources(Validation& v) {
  const auto resource_kinds = v.registry.resource_kinds();
  for (const auto& r : v.spec.resources) {
    const ResourceKind* kind = v.registry.find_resource(r.use);
    if (!kind) {
      if (!r.use.empty()) {
        v.diags.error(
            "kind.unknown", r.use_mark,
            fmt::format("unknown resource kind `{}` for resource `{}`;{} valid: {}", r.use, r.name,
                        suggestion(r.use, resource_kinds), join_names(resource_kinds)));
      }
      v.vp.resources.push_back({r.name, nullptr, {}, r.mark});
      continue;
    }
    Params p = check_params(kind->contract.params, r.with,
                            fmt::format("resource `{}` ({})", r.name, r.use), r.mark,
                            v.vp.resources, v.registry, v.diags);
    v.vp.resources.push_back({r.name, kind, std::move(p), r.mark});
  }
}

// Phase 2: stages: kind, parameters, concurrency. A stage whose kind is unknown stays (without
// a kind) so that edges naming it are not reported as naming nothing.
void resolve_stages(Validation& v) {
  const auto transform_kinds = kinds_with_role(v.registry, Role::Transform);
  for (const auto& s : v.spec.stages) {
    const StageKind* kind = v.registry.find_stage(s.use);
    if (kind && kind->contract.role != Role::Transform) {
      const char* role = to_string(kind->contract.role);
      v.diags.error("kind.role", s.use_mark,
                    fmt::format("`{}` is a {} kind; declare it under `{}:` instead of `stages:`",
                                s.use, role, role));
      kind = nullptr;
    } else if (!kind && !s.use.empty()) {
      v.diags.error(
          "kind.unknown", s.use_mark,
          fmt::format("unknown stage kind `{}` for stage `{}`;{} valid: {}", s.use, s.name,
                      suggestion(s.use, transform_kinds), join_names(transform_kinds)));
    }
    ResolvedStage rs;
    rs.name = s.name;
    rs.kind = kind;
    rs.mark = s.mark;
    std::vector<PortState> ports;
    if (kind) {
      rs.params = check_params(kind->contract.params, s.with, stage_label(s), s.mark,
                               v.vp.resources, v.registry, v.diags);
      rs.concurrency = kind->contract.concurrency;
      rs.port_edges.assign(kind->contract.ports.size(), 0);
      ports.assign(kind->contract.ports.size(), PortState::Unwired);
    }
    if (s.concurrency) {
      if (auto c = read_concurrency(s, v.diags)) rs.concurrency = *c;
    }
    v.index[s.name] = v.stage_count();
    v.stage_specs.push_back(&s);
    v.ports.push_back(std::move(ports));
    v.vp.stages.push_back(std::move(rs));
  }
}

// Phase 3: the source and sink, when the file names them.
void resolve_endpoints(Validation& v) {
  if (v.spec.source) {
    v.vp.source =
        resolve_node_endpoint(*v.spec.source, Role::Source, v.registry, v.vp.resources, v.diags);
  }
  if (v.spec.sink) {
    v.vp.sink =
        resolve_node_endpoint(*v.spec.sink, Role::Sink, v.registry, v.vp.resources, v.diags);
  }
}

// The target of edge `e`: a stage index or kOut; reports a name that is neither.
std::optional<int> edge_target(Validation& v, const EdgeSpec& e, const std::string& from_text) {
  if (e.to == "out") return kOut;
  auto it = v.index.find(e.to);
  if (it != v.index.end()) return it->second;
  std::vector<std::string> names_with_out = v.stage_names();
  names_with_out.push_back("out");
  v.diags.error("edge.endpoint", e.mark,
                fmt::format("edge {} -> {}: no stage named `{}`;{} valid: {}", from_text, e.to,
                            e.to, suggestion(e.to, names_with_out), join_names(names_with_out)));
  return std::nullopt;
}

struct EdgeProblem {
  const char* code;
  std::string message;
};

// What is wrong with an edge from a known stage port to a known target as written: its port
// already bound, or `back_edge` and `max_attempts` not given together; nullopt when nothing.
std::optional<EdgeProblem> edge_problem(const Validation& v, const EdgeSpec& e, int from, Port port,
                                        int to, const std::map<std::pair<int, Port>, Mark>& bound) {
  const ResolvedStage& fs = v.vp.stages[from];
  const std::string& port_name = fs.kind->contract.ports[port].name;
  if (auto b = bound.find({from, port}); b != bound.end()) {
    return EdgeProblem{"port.bound",
                       fmt::format("port `{}.{}` is already connected (at line {}); a port feeds "
                                   "exactly one edge",
                                   fs.name, port_name, b->second.line)};
  }
  if (e.back_edge && !e.max_attempts) {
    return EdgeProblem{"edge.back", fmt::format("back edge {}.{} -> {} needs `max_attempts` "
                                                "(1-1000) to bound the loop",
                                                fs.name, port_name, e.to)};
  }
  if (e.back_edge && to == kOut) {
    return EdgeProblem{"edge.back", "a back edge must lead to a stage, not `out`"};
  }
  if (!e.back_edge && e.max_attempts) {
    return EdgeProblem{"edge.back",
                       fmt::format("edge {}.{} -> {} sets `max_attempts` but is not a back edge; "
                                   "add `back_edge: true` or remove it",
                                   fs.name, port_name, e.to)};
  }
  return std::nullopt;
}

// Phase 4: edges: endpoints, ports, back-edge bounds, one edge per port.
void resolve_edges(Validation& v) {
  std::map<std::pair<int, Port>, Mark> bound;  // (stage, port) -> the edge that binds it
  for (const auto& e : v.spec.edges) {
    if (e.from == "out") {
      v.diags.error("edge.endpoint", e.mark, "`out` is the pipeline's output; no edge leaves it");
      continue;
    }
    if (e.to == "in") {
      v.diags.error("edge.endpoint", e.mark, "`in` is the pipeline's input; no edge enters it");
      continue;
    }
    const std::string from_text = e.from_port.empty() ? e.from : e.from + "." + e.from_port;
    if (e.from == "in") {
      auto to = edge_target(v, e, from_text);
      if (!to) continue;
      if (*to == kOut) {
        v.diags.error("edge.endpoint", e.mark, "edge in -> out connects nothing");
        continue;
      }
      v.explicit_entries.push_back(*to);
      continue;
    }
    auto it = v.index.find(e.from);
    if (it == v.index.end()) {
      const auto names = v.stage_names();
      v.diags.error("edge.endpoint", e.mark,
                    fmt::format("edge {} -> {}: no stage named `{}`;{} valid: {}", from_text, e.to,
                                e.from, suggestion(e.from, names), join_names(names)));
      edge_target(v, e, from_text);
      continue;
    }
    const int from = it->second;
    ResolvedStage& fs = v.vp.stages[from];
    if (!fs.kind) continue;  // unknown kind: already reported
    const Contract& c = fs.kind->contract;
    Port port = 0;
    if (!e.from_port.empty()) {
      auto p = c.port_index(e.from_port);
      if (!p) {
        std::vector<std::string> ports;
        for (const auto& ps : c.ports) ports.push_back(ps.name);
        v.diags.error("port.unknown", e.mark,
                      fmt::format("stage `{}` ({}) has no port `{}`;{} valid: {}", fs.name, c.kind,
                                  e.from_port, suggestion(e.from_port, ports), join_names(ports)));
        continue;
      }
      port = *p;
    }
    PortState& state = v.ports[from][port];
    const auto to = edge_target(v, e, from_text);
    const auto problem = to ? edge_problem(v, e, from, port, *to, bound) : std::nullopt;
    if (problem) v.diags.error(problem->code, e.mark, problem->message);
    if (!to || problem) {
      if (state == PortState::Unwired) state = PortState::Reported;
      continue;
    }
    bound[{from, port}] = e.mark;
    ResolvedEdge re;
    re.from = from;
    re.port = port;
    re.to = *to;
    re.back_edge = e.back_edge;
    re.max_attempts = static_cast<int>(e.max_attempts.value_or(0));
    re.capacity = e.capacity.value_or(v.spec.queue_capacity);
    re.policy = e.policy.value_or(v.spec.queue_policy);
    re.mark = e.mark;
    fs.port_edges[port] = v.vp.edges.size();
    state = PortState::Wired;
    v.vp.edges.push_back(re);
  }
}

// Phase 5: every port must go somewhere: an item never disappears silently.
void check_ports_wired(Validation& v) {
  for (int i = 0; i < v.stage_count(); ++i) {
    const ResolvedStage& s = v.vp.stages[i];
    for (std::size_t p = 0; p < v.ports[i].size(); ++p) {
      if (v.ports[i][p] != PortState::Unwired) continue;
      const auto& port = s.kind->contract.ports[p];
      v.diags.error("port.unbound", v.stage_specs[i]->mark,
                    fmt::format("port `{}.{}` of stage `{}` ({}) is not connected; connect it, "
                                "e.g. `{}.{} -> out` ({})",
                                s.name, port.name, s.name, s.kind->contract.kind, s.name, port.name,
                                port.help));
    }
  }
}

void build_forward_graph(Validation& v) {
  v.fwd.assign(v.stage_count(), {});
  v.indeg.assign(v.stage_count(), 0);
  for (const auto& e : v.vp.edges) {
    if (e.to == kOut || e.back_edge) continue;
    v.fwd[e.from].push_back(e.to);
    ++v.indeg[e.to];
  }
}

// Phase 6: cycles among forward edges: each needs a back edge with max_attempts. Reports the
// first one found; true when there is one.
bool check_cycles(Validation& v) {
  enum class Visit { New, OnStack, Done };
  std::vector<Visit> state(v.stage_count(), Visit::New);
  std::vector<int> stack;
  bool found = false;
  std::function<void(int)> dfs = [&](int u) {
    state[u] = Visit::OnStack;
    stack.push_back(u);
    for (int w : v.fwd[u]) {
      if (state[w] == Visit::OnStack && !found) {
        std::string path;
        auto start = std::find(stack.begin(), stack.end(), w);
        for (auto it = start; it != stack.end(); ++it) path += v.vp.stages[*it].name + " -> ";
        path += v.vp.stages[w].name;
        v.diags.error("graph.cycle", v.stage_specs[w]->mark,
                      fmt::format("cycle {} has no back edge: mark the edge that closes it with "
                                  "`back_edge: true` and `max_attempts: N`",
                                  path));
        found = true;
      } else if (state[w] == Visit::New) {
        dfs(w);
      }
    }
    stack.pop_back();
    state[u] = Visit::Done;
  };
  for (int i = 0; i < v.stage_count(); ++i) {
    if (state[i] == Visit::New) dfs(i);
  }
  return found;
}

// Phase 7: the one entry stage: the target of `in -> x`, else the stage without incoming
// forward edges. Not reported when a cycle was (a cycle leaves every stage with one).
void find_entry(Validation& v, bool cycle_reported) {
  if (v.stage_count() == 0) return;
  std::vector<int> entries = v.explicit_entries;
  if (entries.empty()) {
    for (int i = 0; i < v.stage_count(); ++i) {
      if (v.indeg[i] == 0) entries.push_back(i);
    }
  }
  std::sort(entries.begin(), entries.end());
  entries.erase(std::unique(entries.begin(), entries.end()), entries.end());
  if (entries.size() == 1) {
    v.vp.entry = entries[0];
    return;
  }
  if (cycle_reported) return;
  std::vector<std::string> names;
  for (int i : entries) names.push_back(v.vp.stages[i].name);
  v.diags.error("graph.entry", {},
                entries.empty()
                    ? std::string("no stage is free of incoming edges, so items have nowhere to "
                                  "enter; add `in -> <stage>`")
                    : fmt::format("items would enter at several stages ({}); a pipeline has one "
                                  "entry: connect them, or add `in -> <stage>` for the entry",
                                  join_names(names)));
}

// Phase 8: every stage is reached from the entry (through any edge).
void check_reachable(Validation& v) {
  const int n = v.stage_count();
  std::vector<bool> seen(n, false);
  std::vector<int> todo{v.vp.entry};
  seen[v.vp.entry] = true;
  while (!todo.empty()) {
    int u = todo.back();
    todo.pop_back();
    for (const auto& e : v.vp.edges) {
      if (e.from == u && e.to != kOut && !seen[e.to]) {
        seen[e.to] = true;
        todo.push_back(e.to);
      }
    }
  }
  for (int i = 0; i < n; ++i) {
    if (!seen[i]) {
      v.diags.error("graph.unreachable", v.stage_specs[i]->mark,
                    fmt::format("stage `{}` ({}) is never reached from the entry stage `{}`",
                                v.vp.stages[i].name, v.vp.stages[i].kind->contract.kind,
                                v.vp.stages[v.vp.entry].name));
    }
  }
}

// Facets on every item arriving at each stage, over forward edges in topological order (an
// item on a back edge already carries what it had): available(v) = ∩ over forward predecessors
// u of (available(u) ∪ provides(u)). Unset for a stage no forward path reaches.
std::vector<std::optional<std::set<std::string>>> available_facets(const Validation& v) {
  const int n = v.stage_count();
  std::vector<std::optional<std::set<std::string>>> avail(n);
  avail[v.vp.entry] = std::set<std::string>{};
  std::vector<int> deg = v.indeg, order, q;
  for (int i = 0; i < n; ++i) {
    if (deg[i] == 0) q.push_back(i);
  }
  while (!q.empty()) {
    int u = q.back();
    q.pop_back();
    order.push_back(u);
    for (int w : v.fwd[u]) {
      if (--deg[w] == 0) q.push_back(w);
    }
  }
  for (int u : order) {
    if (!avail[u]) avail[u] = std::set<std::string>{};
    std::set<std::string> out = *avail[u];
    for (const auto& f : v.vp.stages[u].kind->contract.provides_facets) out.insert(f);
    for (int w : v.fwd[u]) {
      if (!avail[w]) {
        avail[w] = out;
      } else {
        std::set<std::string> inter;
        std::set_intersection(avail[w]->begin(), avail[w]->end(), out.begin(), out.end(),
                              std::inserter(inter, inter.begin()));
        avail[w] = std::move(inter);
      }
    }
  }
  return avail;
}

// Phase 9: every facet a stage requires is provided upstream on every path to it.
void check_facets(Validation& v) {
  const auto avail = available_facets(v);
  for (int i = 0; i < v.stage_count(); ++i) {
    const Contract& c = v.vp.stages[i].kind->contract;
    for (const auto& f : c.requires_facets) {
      if (avail[i] && avail[i]->count(f)) continue;
      const auto providers = v.registry.providers_of(f);
      std::string via;  // a forward predecessor whose items lack the facet
      for (const auto& e : v.vp.edges) {
        if (e.to != i || e.back_edge) continue;
        const auto& pc = v.vp.stages[e.from].kind->contract;
        const bool has = (avail[e.from] && avail[e.from]->count(f)) ||
                         std::find(pc.provides_facets.begin(), pc.provides_facets.end(), f) !=
                             pc.provides_facets.end();
        if (!has) {
          via = v.vp.stages[e.from].name;
          break;
        }
      }
      v.diags.error("facet.missing", v.stage_specs[i]->mark,
                    fmt::format("stage `{}` ({}) requires facet `{}`, but it is not provided "
                                "upstream on every path{}; stage kinds that provide it: {}",
                                v.vp.stages[i].name, c.kind, f,
                                via.empty() ? std::string() : fmt::format(" (not via `{}`)", via),
                                join_names(providers)));
    }
  }
}

}  // namespace

std::optional<ValidatedPipeline> validate(const PipelineSpec& spec, const Registry& registry,
                                          Diagnostics& diags) {
  const std::size_t errors_before = diags.size();
  Validation v{spec, registry, diags, {}, {}, {}, {}, {}, {}, {}};
  v.vp.file = spec.file;
  v.vp.name = spec.name.empty() ? spec.file : spec.name;
  v.vp.max_in_flight = spec.max_in_flight.value_or(spec.queue_capacity);
  v.vp.ordered = spec.ordered;
  v.vp.fail_fast = spec.fail_fast;

  check_plugins(v);
  resolve_resources(v);
  resolve_stages(v);
  if (spec.stages.empty() && diags.size() == errors_before) {
    diags.error("graph.empty", {}, "the pipeline declares no stages");
  }
  resolve_endpoints(v);
  resolve_edges(v);
  check_ports_wired(v);
  build_forward_graph(v);
  const bool cycle = check_cycles(v);
  find_entry(v, cycle);
  // The graph-wide checks need every stage's kind and a sound graph: only when all else passed.
  if (v.stage_count() > 0 && !cycle && diags.size() == errors_before) {
    check_reachable(v);
    check_facets(v);
  }

  diags.sort();
  if (diags.size() != errors_before) return std::nullopt;
  return std::move(v.vp);
}

ValidatedPipeline load_pipeline(const std::string& path, const Registry& registry) {
  Diagnostics diags(path);
  PipelineSpec spec = load_spec_file(path, diags);
  if (!diags.empty()) throw SpecError(std::move(diags));
  auto vp = validate(spec, registry, diags);
  if (!vp) throw SpecError(std::move(diags));
  return std::move(*vp);
}

ResolvedEndpoint resolve_endpoint(const Registry& registry, const std::string& kind,
                                  const std::vector<std::pair<std::string, std::string>>& params,
                                  Role role) {
  Diagnostics diags("<command line>");
  NodeSpec n;
  n.name = to_string(role);
  n.use = kind;
  for (const auto& [k, v] : params) n.with.push_back({k, {}, YAML::Node(v)});
  auto e = resolve_node_endpoint(n, role, registry, {}, diags);
  if (!e) throw SpecError(std::move(diags));
  return *e;
}

}  // namespace vsynth::graph
