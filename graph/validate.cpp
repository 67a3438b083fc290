#include "graph/validate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>

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

std::string range_text(const ParamSpec& p) {
  auto num = [&](double d) {
    return p.type == ParamType::Int ? fmt::format("{}", static_cast<int64_t>(d))
                                    : fmt::format("{}", d);
  };
  return fmt::format("[{}, {}]", p.min ? num(*p.min) : "-inf", p.max ? num(*p.max) : "inf");
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
    case ParamType::Resource:
      if (!n.IsScalar()) return bad_type("the name of a resource");
      if (!check_resource(n.Scalar())) return std::nullopt;
      return Value{n.Scalar()};
  }
  return std::nullopt;
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
  for (const auto& r : raw) {
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
    bool given =
        std::any_of(raw.begin(), raw.end(), [&](const RawParam& r) { return r.name == s.name; });
    if (given) continue;  // given but invalid: already reported
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
  const char* what = role == Role::Source ? "source" : "sink";
  const StageKind* kind = registry.find_stage(n.use);
  std::vector<std::string> valid;
  for (const auto& k : registry.stage_kinds()) {
    if (registry.find_stage(k)->contract.role == role) valid.push_back(k);
  }
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

}  // namespace

std::optional<ValidatedPipeline> validate(const PipelineSpec& spec, const Registry& registry,
                                          Diagnostics& diags) {
  const std::size_t errors_before = diags.size();
  ValidatedPipeline vp;
  vp.file = spec.file;
  vp.name = spec.name.empty() ? spec.file : spec.name;
  vp.max_in_flight = spec.max_in_flight.value_or(spec.queue_capacity);
  vp.ordered = spec.ordered;
  vp.fail_fast = spec.fail_fast;

  // Resources first: stage parameters refer to them. A resource may use earlier ones.
  const auto resource_kinds = registry.resource_kinds();
  for (const auto& r : spec.resources) {
    const ResourceKind* kind = registry.find_resource(r.use);
    if (!kind) {
      if (!r.use.empty()) {
        diags.error(
            "kind.unknown", r.use_mark,
            fmt::format("unknown resource kind `{}` for resource `{}`;{} valid: {}", r.use, r.name,
                        suggestion(r.use, resource_kinds), join_names(resource_kinds)));
      }
      vp.resources.push_back({r.name, nullptr, {}});
      continue;
    }
    Params p = check_params(kind->contract.params, r.with,
                            fmt::format("resource `{}` ({})", r.name, r.use), r.mark, vp.resources,
                            registry, diags);
    vp.resources.push_back({r.name, kind, std::move(p)});
  }

  // Stages.
  std::map<std::string, int> index;
  std::vector<std::string> stage_names;
  std::vector<std::string> transform_kinds;
  for (const auto& k : registry.stage_kinds()) {
    if (registry.find_stage(k)->contract.role == Role::Transform) transform_kinds.push_back(k);
  }
  std::vector<const NodeSpec*> stage_specs;
  for (const auto& s : spec.stages) {
    const StageKind* kind = registry.find_stage(s.use);
    if (kind && kind->contract.role != Role::Transform) {
      diags.error("kind.role", s.use_mark,
                  fmt::format("`{}` is a {} kind; declare it under `{}:` instead of `stages:`",
                              s.use, kind->contract.role == Role::Source ? "source" : "sink",
                              kind->contract.role == Role::Source ? "source" : "sink"));
      kind = nullptr;
    } else if (!kind && !s.use.empty()) {
      diags.error("kind.unknown", s.use_mark,
                  fmt::format("unknown stage kind `{}` for stage `{}`;{} valid: {}", s.use, s.name,
                              suggestion(s.use, transform_kinds), join_names(transform_kinds)));
    }
    ResolvedStage rs;
    rs.name = s.name;
    rs.kind = kind;
    if (kind) {
      rs.params = check_params(kind->contract.params, s.with, stage_label(s), s.mark, vp.resources,
                               registry, diags);
      rs.concurrency = kind->contract.concurrency;
      rs.port_edges.assign(kind->contract.ports.size(), -1);
    }
    if (s.concurrency) {
      if (auto c = read_concurrency(s, diags)) rs.concurrency = *c;
    }
    index[s.name] = static_cast<int>(vp.stages.size());
    stage_names.push_back(s.name);
    stage_specs.push_back(&s);
    vp.stages.push_back(std::move(rs));
  }
  if (spec.stages.empty() && diags.size() == errors_before) {
    diags.error("graph.empty", {}, "the pipeline declares no stages");
  }
  if (spec.source)
    vp.source = resolve_node_endpoint(*spec.source, Role::Source, registry, vp.resources, diags);
  if (spec.sink)
    vp.sink = resolve_node_endpoint(*spec.sink, Role::Sink, registry, vp.resources, diags);

  // Edges.
  std::vector<std::string> names_with_out = stage_names;
  names_with_out.push_back("out");
  std::vector<int> explicit_entries;
  std::map<std::pair<int, Port>, Mark> bound;
  for (const auto& e : spec.edges) {
    if (e.from == "out") {
      diags.error("edge.endpoint", e.mark, "`out` is the pipeline's output; no edge leaves it");
      continue;
    }
    if (e.to == "in") {
      diags.error("edge.endpoint", e.mark, "`in` is the pipeline's input; no edge enters it");
      continue;
    }
    const std::string from_text = e.from_port.empty() ? e.from : e.from + "." + e.from_port;
    auto find_to = [&]() -> std::optional<int> {
      if (e.to == "out") return kOut;
      auto it = index.find(e.to);
      if (it != index.end()) return it->second;
      diags.error("edge.endpoint", e.mark,
                  fmt::format("edge {} -> {}: no stage named `{}`;{} valid: {}", from_text, e.to,
                              e.to, suggestion(e.to, names_with_out), join_names(names_with_out)));
      return std::nullopt;
    };
    if (e.from == "in") {
      auto to = find_to();
      if (!to) continue;
      if (*to == kOut) {
        diags.error("edge.endpoint", e.mark, "edge in -> out connects nothing");
        continue;
      }
      explicit_entries.push_back(*to);
      continue;
    }
    auto it = index.find(e.from);
    if (it == index.end()) {
      diags.error("edge.endpoint", e.mark,
                  fmt::format("edge {} -> {}: no stage named `{}`;{} valid: {}", from_text, e.to,
                              e.from, suggestion(e.from, stage_names), join_names(stage_names)));
      find_to();
      continue;
    }
    const int from = it->second;
    ResolvedStage& fs = vp.stages[from];
    if (!fs.kind) continue;  // unknown kind: already reported
    const Contract& c = fs.kind->contract;
    Port port = 0;
    if (!e.from_port.empty()) {
      auto p = c.port_index(e.from_port);
      if (!p) {
        std::vector<std::string> ports;
        for (const auto& ps : c.ports) ports.push_back(ps.name);
        diags.error("port.unknown", e.mark,
                    fmt::format("stage `{}` ({}) has no port `{}`;{} valid: {}", fs.name, c.kind,
                                e.from_port, suggestion(e.from_port, ports), join_names(ports)));
        continue;
      }
      port = *p;
    }
    auto to_found = find_to();
    if (!to_found) {
      fs.port_edges[port] = -2;  // wired to a bad target: reported above, not "unbound"
      continue;
    }
    const int to = *to_found;
    if (auto b = bound.find({from, port}); b != bound.end()) {
      diags.error("port.bound", e.mark,
                  fmt::format("port `{}.{}` is already connected (at line {}); a port feeds "
                              "exactly one edge",
                              fs.name, c.ports[port].name, b->second.line));
      continue;
    }
    if (e.back_edge && !e.max_attempts) {
      diags.error("edge.back", e.mark,
                  fmt::format("back edge {}.{} -> {} needs `max_attempts` (1-1000) to bound the "
                              "loop",
                              fs.name, c.ports[port].name, e.to));
      continue;
    }
    if (e.back_edge && to == kOut) {
      diags.error("edge.back", e.mark, "a back edge must lead to a stage, not `out`");
      continue;
    }
    if (!e.back_edge && e.max_attempts) {
      diags.error("edge.back", e.mark,
                  fmt::format("edge {}.{} -> {} sets `max_attempts` but is not a back edge; add "
                              "`back_edge: true` or remove it",
                              fs.name, c.ports[port].name, e.to));
      continue;
    }
    bound[{from, port}] = e.mark;
    ResolvedEdge re;
    re.from = from;
    re.port = port;
    re.to = to;
    re.back_edge = e.back_edge;
    re.max_attempts = static_cast<int>(e.max_attempts.value_or(0));
    re.capacity = e.capacity.value_or(spec.queue_capacity);
    re.policy = e.policy.value_or(spec.queue_policy);
    re.mark = e.mark;
    fs.port_edges[port] = static_cast<int>(vp.edges.size());
    vp.edges.push_back(re);
  }

  // Every port must go somewhere: an item never disappears silently.
  for (std::size_t i = 0; i < vp.stages.size(); ++i) {
    const ResolvedStage& s = vp.stages[i];
    if (!s.kind) continue;
    for (std::size_t p = 0; p < s.port_edges.size(); ++p) {
      if (s.port_edges[p] != -1) continue;
      const auto& port = s.kind->contract.ports[p];
      diags.error("port.unbound", stage_specs[i]->mark,
                  fmt::format("port `{}.{}` of stage `{}` ({}) is not connected; connect it, e.g. "
                              "`{}.{} -> out` ({})",
                              s.name, port.name, s.name, s.kind->contract.kind, s.name, port.name,
                              port.help));
    }
  }

  const int n = static_cast<int>(vp.stages.size());
  std::vector<std::vector<int>> fwd(n);  // forward (non-back) adjacency
  std::vector<int> indeg(n, 0);
  for (const auto& e : vp.edges) {
    if (e.to == kOut || e.back_edge) continue;
    fwd[e.from].push_back(e.to);
    ++indeg[e.to];
  }

  // Cycles among forward edges: each needs a back edge with max_attempts.
  std::vector<int> state(n, 0);  // 0 new, 1 on stack, 2 done
  std::vector<int> stack;
  bool cycle_reported = false;
  std::function<void(int)> dfs = [&](int u) {
    state[u] = 1;
    stack.push_back(u);
    for (int v : fwd[u]) {
      if (state[v] == 1 && !cycle_reported) {
        std::string path;
        auto start = std::find(stack.begin(), stack.end(), v);
        for (auto it = start; it != stack.end(); ++it) path += vp.stages[*it].name + " -> ";
        path += vp.stages[v].name;
        diags.error("graph.cycle", stage_specs[v]->mark,
                    fmt::format("cycle {} has no back edge: mark the edge that closes it with "
                                "`back_edge: true` and `max_attempts: N`",
                                path));
        cycle_reported = true;
      } else if (state[v] == 0) {
        dfs(v);
      }
    }
    stack.pop_back();
    state[u] = 2;
  };
  for (int i = 0; i < n; ++i) {
    if (state[i] == 0) dfs(i);
  }

  // The entry stage.
  if (n > 0) {
    std::vector<int> entries = explicit_entries;
    if (entries.empty()) {
      for (int i = 0; i < n; ++i) {
        if (indeg[i] == 0) entries.push_back(i);
      }
    }
    std::sort(entries.begin(), entries.end());
    entries.erase(std::unique(entries.begin(), entries.end()), entries.end());
    if (entries.size() != 1 && !cycle_reported) {
      std::vector<std::string> names;
      for (int i : entries) names.push_back(vp.stages[i].name);
      diags.error("graph.entry", {},
                  entries.empty()
                      ? std::string("no stage is free of incoming edges, so items have nowhere to "
                                    "enter; add `in -> <stage>`")
                      : fmt::format("items would enter at several stages ({}); a pipeline has one "
                                    "entry: connect them, or add `in -> <stage>` for the entry",
                                    join_names(names)));
    } else if (entries.size() == 1) {
      vp.entry = entries[0];
    }
  }

  // Reachability from the entry (through any edge) and facet availability (forward edges only:
  // an item on a back edge already carries what it had).
  if (n > 0 && !cycle_reported && diags.size() == errors_before) {
    std::vector<bool> seen(n, false);
    std::vector<int> todo{vp.entry};
    seen[vp.entry] = true;
    while (!todo.empty()) {
      int u = todo.back();
      todo.pop_back();
      for (const auto& e : vp.edges) {
        if (e.from == u && e.to != kOut && !seen[e.to]) {
          seen[e.to] = true;
          todo.push_back(e.to);
        }
      }
    }
    for (int i = 0; i < n; ++i) {
      if (!seen[i]) {
        diags.error("graph.unreachable", stage_specs[i]->mark,
                    fmt::format("stage `{}` ({}) is never reached from the entry stage `{}`",
                                vp.stages[i].name, vp.stages[i].kind->contract.kind,
                                vp.stages[vp.entry].name));
      }
    }
    // Topological order over forward edges; available(v) = ∩ over forward predecessors u of
    // (available(u) ∪ provides(u)).
    std::vector<std::optional<std::set<std::string>>> avail(n);
    avail[vp.entry] = std::set<std::string>{};
    std::vector<int> deg = indeg, order, q;
    for (int i = 0; i < n; ++i) {
      if (deg[i] == 0) q.push_back(i);
    }
    while (!q.empty()) {
      int u = q.back();
      q.pop_back();
      order.push_back(u);
      for (int v : fwd[u]) {
        if (--deg[v] == 0) q.push_back(v);
      }
    }
    for (int u : order) {
      if (!avail[u]) avail[u] = std::set<std::string>{};
      std::set<std::string> out = *avail[u];
      for (const auto& f : vp.stages[u].kind->contract.provides_facets) out.insert(f);
      for (int v : fwd[u]) {
        if (!avail[v]) {
          avail[v] = out;
        } else {
          std::set<std::string> inter;
          std::set_intersection(avail[v]->begin(), avail[v]->end(), out.begin(), out.end(),
                                std::inserter(inter, inter.begin()));
          avail[v] = std::move(inter);
        }
      }
    }
    for (int i = 0; i < n; ++i) {
      const Contract& c = vp.stages[i].kind->contract;
      for (const auto& f : c.requires_facets) {
        if (avail[i] && avail[i]->count(f)) continue;
        const auto providers = registry.providers_of(f);
        std::string via;  // a forward predecessor whose items lack the facet
        for (const auto& e : vp.edges) {
          if (e.to != i || e.back_edge) continue;
          const auto& pc = vp.stages[e.from].kind->contract;
          const bool has = (avail[e.from] && avail[e.from]->count(f)) ||
                           std::find(pc.provides_facets.begin(), pc.provides_facets.end(), f) !=
                               pc.provides_facets.end();
          if (!has) {
            via = vp.stages[e.from].name;
            break;
          }
        }
        diags.error("facet.missing", stage_specs[i]->mark,
                    fmt::format("stage `{}` ({}) requires facet `{}`, but it is not provided "
                                "upstream on every path{}; stage kinds that provide it: {}",
                                vp.stages[i].name, c.kind, f,
                                via.empty() ? std::string() : fmt::format(" (not via `{}`)", via),
                                join_names(providers)));
      }
    }
  }

  diags.sort();
  if (diags.size() != errors_before) return std::nullopt;
  return vp;
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
  n.name = role == Role::Source ? "source" : "sink";
  n.use = kind;
  for (const auto& [k, v] : params) n.with.push_back({k, {}, YAML::Node(v)});
  auto e = resolve_node_endpoint(n, role, registry, {}, diags);
  if (!e) throw SpecError(std::move(diags));
  return *e;
}

}  // namespace vsynth::graph
