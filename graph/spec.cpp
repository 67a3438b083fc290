#include "graph/spec.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace vsynth::graph {

namespace {

const std::vector<std::string> kTopKeys = {"pipeline",  "description", "resources",     "stages",
                                           "edges",     "queues",      "max_in_flight", "ordered",
                                           "fail_fast", "source",      "sink"};
const std::vector<std::string> kNodeKeys = {"use", "with", "concurrency"};
const std::vector<std::string> kEdgeKeys = {"from",         "to",       "back_edge",
                                            "max_attempts", "capacity", "policy"};

// Walks the document once, through aliases, and stops at the first limit it crosses: aliases
// are shared nodes, so a "billion laughs" file loads instantly but expands without bound.
class BombGuard {
 public:
  explicit BombGuard(const LoadLimits& l) : limits_(l) {}

  // Returns false (with a diagnostic) when the document crosses a limit.
  bool check(const YAML::Node& root, Diagnostics& diags) {
    walk(root, 1);
    if (depth_hit_) {
      diags.error("yaml.depth", at_,
                  fmt::format("YAML nesting deeper than {} levels (through aliases); pipeline "
                              "files are shallow — is an alias referring to itself?",
                              limits_.max_depth));
      return false;
    }
    if (nodes_hit_) {
      diags.error("yaml.alias_bomb", at_,
                  fmt::format("YAML document expands to more than {} nodes through aliases "
                              "(an alias bomb?); pipeline files are small",
                              limits_.max_nodes));
      return false;
    }
    return true;
  }

 private:
  void walk(const YAML::Node& n, int depth) {
    if (depth_hit_ || nodes_hit_) return;
    if (++visited_ > limits_.max_nodes) {
      nodes_hit_ = true;
      at_ = mark_of(n);
      return;
    }
    if (depth > limits_.max_depth) {
      depth_hit_ = true;
      at_ = mark_of(n);
      return;
    }
    if (n.IsSequence()) {
      for (const auto& c : n) walk(c, depth + 1);
    } else if (n.IsMap()) {
      for (const auto& kv : n) {
        walk(kv.first, depth + 1);
        walk(kv.second, depth + 1);
      }
    }
  }

  LoadLimits limits_;
  std::size_t visited_ = 0;
  bool depth_hit_ = false, nodes_hit_ = false;
  Mark at_;
};

std::string kind_of(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
      return "nothing";
    case YAML::NodeType::Scalar:
      return fmt::format("the scalar `{}`", n.Scalar());
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    default:
      return "an undefined node";
  }
}

bool as_bool(const YAML::Node& n, const std::string& what, Diagnostics& diags, bool& out) {
  if (n.IsScalar()) {
    const std::string& s = n.Scalar();
    if (s == "true" || s == "false") {
      out = s == "true";
      return true;
    }
  }
  diags.error("type", mark_of(n),
              fmt::format("`{}` must be true or false, got {}", what, kind_of(n)));
  return false;
}

bool as_int(const YAML::Node& n, const std::string& what, int64_t lo, int64_t hi,
            Diagnostics& diags, int64_t& out) {
  if (n.IsScalar()) {
    const std::string& s = n.Scalar();
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (!s.empty() && end && *end == '\0' && errno == 0) {
      if (v < lo || v > hi) {
        diags.error("range", mark_of(n),
                    fmt::format("`{}` is {}, outside the valid range [{}, {}]", what, v, lo, hi));
        return false;
      }
      out = v;
      return true;
    }
  }
  diags.error("type", mark_of(n), fmt::format("`{}` must be an integer, got {}", what, kind_of(n)));
  return false;
}

std::optional<QueuePolicy> as_policy(const YAML::Node& n, const std::string& what,
                                     Diagnostics& diags) {
  if (n.IsScalar() && n.Scalar() == "block") return QueuePolicy::Block;
  if (n.IsScalar() && n.Scalar() == "reject") return QueuePolicy::Reject;
  diags.error("enum", mark_of(n),
              fmt::format("`{}` must be one of: block, reject; got {}{}", what, kind_of(n),
                          n.IsScalar() ? suggestion(n.Scalar(), {"block", "reject"}) : ""));
  return std::nullopt;
}

bool valid_name(const std::string& s) {
  static const std::regex re("[A-Za-z_][A-Za-z0-9_-]*");
  return std::regex_match(s, re);
}

// `name: { use: kind, with: {...}, concurrency: N }`
std::optional<NodeSpec> read_node(const std::string& name, const YAML::Node& key,
                                  const YAML::Node& body, const char* what, bool is_stage,
                                  Diagnostics& diags) {
  NodeSpec spec;
  spec.name = name;
  spec.mark = mark_of(key);
  if (!body.IsMap()) {
    diags.error("shape", mark_of(body.IsDefined() && !body.IsNull() ? body : key),
                fmt::format("{} `{}` must be a mapping like `{{ use: <kind>, with: {{...}} }}`, "
                            "got {}",
                            what, name, kind_of(body)));
    return std::nullopt;
  }
  std::set<std::string> seen;
  std::vector<std::string> allowed = is_stage ? kNodeKeys : std::vector<std::string>{"use", "with"};
  for (const auto& kv : body) {
    const std::string k = kv.first.as<std::string>("");
    if (!seen.insert(k).second) {
      diags.error("duplicate", mark_of(kv.first),
                  fmt::format("key `{}` appears twice in {} `{}`", k, what, name));
      continue;
    }
    if (k == "use") {
      if (!kv.second.IsScalar() || kv.second.Scalar().empty()) {
        diags.error("type", mark_of(kv.second),
                    fmt::format("`use` of {} `{}` must name a kind, got {}", what, name,
                                kind_of(kv.second)));
      } else {
        spec.use = kv.second.Scalar();
        spec.use_mark = mark_of(kv.second);
      }
    } else if (k == "with") {
      if (kv.second.IsNull()) continue;
      if (!kv.second.IsMap()) {
        diags.error("shape", mark_of(kv.second),
                    fmt::format("`with` of {} `{}` must be a mapping of parameters, got {}", what,
                                name, kind_of(kv.second)));
        continue;
      }
      std::set<std::string> pseen;
      for (const auto& p : kv.second) {
        const std::string pk = p.first.as<std::string>("");
        if (!pseen.insert(pk).second) {
          diags.error("duplicate", mark_of(p.first),
                      fmt::format("parameter `{}` appears twice in {} `{}`", pk, what, name));
          continue;
        }
        spec.with.push_back({pk, mark_of(p.first), p.second});
      }
    } else if (k == "concurrency" && is_stage) {
      spec.concurrency = kv.second;
      spec.concurrency_mark = mark_of(kv.second);
    } else {
      diags.error("key.unknown", mark_of(kv.first),
                  fmt::format("unknown key `{}` in {} `{}`;{} valid: {}", k, what, name,
                              suggestion(k, allowed), join_names(allowed)));
    }
  }
  if (spec.use.empty() && !seen.count("use")) {
    diags.error("key.missing", spec.mark,
                fmt::format("{} `{}` has no `use:` naming its kind", what, name));
  }
  return spec;
}

void read_nodes(const YAML::Node& map, const char* what, bool is_stage, std::vector<NodeSpec>& out,
                Diagnostics& diags) {
  if (map.IsNull()) return;
  if (!map.IsMap()) {
    diags.error(
        "shape", mark_of(map),
        fmt::format("`{}s` must be a mapping of name: {{ use: ... }}, got {}", what, kind_of(map)));
    return;
  }
  std::set<std::string> seen;
  for (const auto& kv : map) {
    const std::string name = kv.first.as<std::string>("");
    if (!valid_name(name) || name == "in" || name == "out") {
      diags.error("name", mark_of(kv.first),
                  fmt::format("`{}` is not a valid {} name: use letters, digits, `_` and `-`, "
                              "starting with a letter (`in` and `out` are reserved)",
                              name, what));
      continue;
    }
    if (!seen.insert(name).second) {
      diags.error(
          "duplicate", mark_of(kv.first),
          fmt::format("duplicate {} name `{}`: each {} needs its own name", what, name, what));
      continue;
    }
    if (auto spec = read_node(name, kv.first, kv.second, what, is_stage, diags)) {
      out.push_back(std::move(*spec));
    }
  }
}

// "stage" or "stage.port" of a chain element.
void split_endpoint(const std::string& s, std::string& stage, std::string& port) {
  auto dot = s.find('.');
  if (dot == std::string::npos) {
    stage = s;
    port.clear();
  } else {
    stage = s.substr(0, dot);
    port = s.substr(dot + 1);
  }
}

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t");
  auto e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

void read_chain(const YAML::Node& n, std::vector<EdgeSpec>& out, Diagnostics& diags) {
  const std::string text = n.Scalar();
  std::vector<std::string> parts;
  std::size_t pos = 0;
  while (true) {
    auto arrow = text.find("->", pos);
    parts.push_back(
        trim(text.substr(pos, arrow == std::string::npos ? std::string::npos : arrow - pos)));
    if (arrow == std::string::npos) break;
    pos = arrow + 2;
  }
  if (parts.size() < 2) {
    diags.error("edge.syntax", mark_of(n),
                fmt::format("edge `{}` needs at least two ends: `a -> b`, `a.port -> b` or "
                            "`a -> b -> out`",
                            text));
    return;
  }
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    EdgeSpec e;
    e.mark = mark_of(n);
    split_endpoint(parts[i], e.from, e.from_port);
    std::string to_port;
    split_endpoint(parts[i + 1], e.to, to_port);
    if (e.from.empty() || e.to.empty()) {
      diags.error("edge.syntax", e.mark, fmt::format("edge `{}` has an empty end", text));
      return;
    }
    // A port written on a middle element (`a -> b.fail -> c`) selects which of b's ports
    // continues the chain; on the last element it would name an input port, which do not exist.
    if (!to_port.empty() && i + 2 == parts.size()) {
      diags.error("edge.syntax", e.mark,
                  fmt::format("`{}` in edge `{}` names a port on the receiving end; ports are "
                              "outputs: write `{}`",
                              parts[i + 1], text, e.to));
      return;
    }
    out.push_back(e);
  }
}

void read_edge_map(const YAML::Node& n, std::vector<EdgeSpec>& out, Diagnostics& diags) {
  EdgeSpec e;
  e.mark = mark_of(n);
  std::set<std::string> seen;
  for (const auto& kv : n) {
    const std::string k = kv.first.as<std::string>("");
    const YAML::Node& v = kv.second;
    if (!seen.insert(k).second) {
      diags.error("duplicate", mark_of(kv.first),
                  fmt::format("key `{}` appears twice in an edge", k));
      continue;
    }
    if (k == "from" || k == "to") {
      if (!v.IsScalar() || v.Scalar().empty()) {
        diags.error("type", mark_of(v),
                    fmt::format("edge `{}` must name a stage, got {}", k, kind_of(v)));
        continue;
      }
      std::string port;
      if (k == "from") {
        split_endpoint(v.Scalar(), e.from, e.from_port);
      } else {
        split_endpoint(v.Scalar(), e.to, port);
        if (!port.empty()) {
          diags.error("edge.syntax", mark_of(v),
                      fmt::format("`to: {}` names a port on the receiving end; ports are outputs: "
                                  "write `to: {}`",
                                  v.Scalar(), e.to));
        }
      }
    } else if (k == "back_edge") {
      as_bool(v, "back_edge", diags, e.back_edge);
    } else if (k == "max_attempts") {
      int64_t x;
      if (as_int(v, "max_attempts", 1, 1000, diags, x)) e.max_attempts = x;
    } else if (k == "capacity") {
      int64_t x;
      if (as_int(v, "capacity", 1, 1 << 20, diags, x)) e.capacity = x;
    } else if (k == "policy") {
      e.policy = as_policy(v, "policy", diags);
    } else {
      diags.error("key.unknown", mark_of(kv.first),
                  fmt::format("unknown key `{}` in edge;{} valid: {}", k, suggestion(k, kEdgeKeys),
                              join_names(kEdgeKeys)));
    }
  }
  if (e.from.empty()) diags.error("key.missing", e.mark, "edge has no `from:`");
  if (e.to.empty()) diags.error("key.missing", e.mark, "edge has no `to:`");
  if (!e.from.empty() && !e.to.empty()) out.push_back(e);
}

void read_queues(const YAML::Node& n, PipelineSpec& spec, Diagnostics& diags) {
  if (!n.IsMap()) {
    diags.error("shape", mark_of(n),
                fmt::format("`queues` must be a mapping like `{{ default: {{ capacity: 64, "
                            "policy: block }} }}`, got {}",
                            kind_of(n)));
    return;
  }
  for (const auto& kv : n) {
    const std::string k = kv.first.as<std::string>("");
    if (k != "default") {
      diags.error("key.unknown", mark_of(kv.first),
                  fmt::format("unknown queue profile `{}`; valid: default (set per-edge "
                              "`capacity`/`policy` on an edge for others)",
                              k));
      continue;
    }
    if (!kv.second.IsMap()) {
      diags.error("shape", mark_of(kv.second), "`queues.default` must be a mapping");
      continue;
    }
    for (const auto& q : kv.second) {
      const std::string qk = q.first.as<std::string>("");
      if (qk == "capacity") {
        int64_t x;
        if (as_int(q.second, "queues.default.capacity", 1, 1 << 20, diags, x))
          spec.queue_capacity = x;
      } else if (qk == "policy") {
        if (auto p = as_policy(q.second, "queues.default.policy", diags)) spec.queue_policy = *p;
      } else {
        diags.error("key.unknown", mark_of(q.first),
                    fmt::format("unknown key `{}` in queues.default;{} valid: capacity, policy", qk,
                                suggestion(qk, {"capacity", "policy"})));
      }
    }
  }
}

// Applies ${ENV} expansion to every scalar of a parsed document. Unset variables are
// reported at their position; the scalar is left as written.
void expand_all(YAML::Node n, Diagnostics& diags, int depth) {
  if (depth > 64) return;  // the bomb guard has already bounded the walk
  if (n.IsScalar()) {
    const std::string& s = n.Scalar();
    if (s.find('$') != std::string::npos) {
      if (auto v = expand_env(s, mark_of(n), diags)) {
        if (*v != s) n = *v;
      }
    }
  } else if (n.IsSequence()) {
    for (std::size_t i = 0; i < n.size(); ++i) expand_all(n[i], diags, depth + 1);
  } else if (n.IsMap()) {
    for (auto kv : n) expand_all(kv.second, diags, depth + 1);
  }
}

}  // namespace

std::optional<std::string> expand_env(const std::string& text, Mark mark, Diagnostics& diags) {
  std::string out;
  bool ok = true;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '$') {
      out += text[i];
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '$') {
      out += '$';
      ++i;
      continue;
    }
    if (i + 1 >= text.size() || text[i + 1] != '{') {
      out += '$';
      continue;
    }
    auto close = text.find('}', i + 2);
    if (close == std::string::npos) {
      diags.error("env.syntax", mark, fmt::format("unterminated `${{` in `{}`", text));
      return std::nullopt;
    }
    std::string body = text.substr(i + 2, close - i - 2);
    std::optional<std::string> fallback;
    if (auto d = body.find(":-"); d != std::string::npos) {
      fallback = body.substr(d + 2);
      body = body.substr(0, d);
    }
    static const std::regex name_re("[A-Za-z_][A-Za-z0-9_]*");
    if (!std::regex_match(body, name_re)) {
      diags.error("env.syntax", mark,
                  fmt::format("`${{{}}}` is not a variable reference: names are letters, digits "
                              "and `_`",
                              body));
      return std::nullopt;
    }
    const char* v = std::getenv(body.c_str());
    if (v && *v) {
      out += v;
    } else if (fallback) {
      out += *fallback;
    } else {
      diags.error("env.unset", mark,
                  fmt::format("environment variable `{}` is not set (referenced as `${{{}}}`); set "
                              "it or write `${{{}:-default}}`",
                              body, body, body));
      ok = false;
    }
    i = close;
  }
  if (!ok) return std::nullopt;
  return out;
}

PipelineSpec load_spec_string(const std::string& text, const std::string& file, Diagnostics& diags,
                              LoadLimits limits) {
  PipelineSpec spec;
  spec.file = file;
  if (text.size() > limits.max_bytes) {
    diags.error("yaml.size", {},
                fmt::format("pipeline file is {} bytes; the limit is {} bytes", text.size(),
                            limits.max_bytes));
    return spec;
  }
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    diags.error("yaml.depth", {e.mark.line + 1, e.mark.column + 1},
                "YAML nesting is too deep for a pipeline file (the parser stopped)");
    return spec;
  } catch (const YAML::Exception& e) {
    Mark m = e.mark.line < 0 ? Mark{} : Mark{e.mark.line + 1, e.mark.column + 1};
    diags.error("yaml.syntax", m, fmt::format("not valid YAML: {}", e.msg));
    return spec;
  }
  BombGuard guard(limits);
  if (!guard.check(root, diags)) return spec;
  if (!root.IsMap()) {
    diags.error("shape", mark_of(root),
                fmt::format("a pipeline file is a mapping with `stages:` and `edges:`, got {}",
                            kind_of(root)));
    return spec;
  }
  expand_all(root, diags, 0);

  std::set<std::string> seen;
  for (const auto& kv : root) {
    const std::string k = kv.first.as<std::string>("");
    const YAML::Node& v = kv.second;
    if (!seen.insert(k).second) {
      diags.error("duplicate", mark_of(kv.first),
                  fmt::format("top-level key `{}` appears twice", k));
      continue;
    }
    if (k == "pipeline") {
      if (v.IsScalar())
        spec.name = v.Scalar();
      else
        diags.error("type", mark_of(v), "`pipeline` must be a name");
    } else if (k == "description") {
      if (v.IsScalar())
        spec.description = v.Scalar();
      else
        diags.error("type", mark_of(v), "`description` must be text");
    } else if (k == "resources") {
      read_nodes(v, "resource", false, spec.resources, diags);
    } else if (k == "stages") {
      read_nodes(v, "stage", true, spec.stages, diags);
    } else if (k == "source" || k == "sink") {
      if (auto n = read_node(k, kv.first, v, k.c_str(), false, diags)) {
        (k == "source" ? spec.source : spec.sink) = std::move(*n);
      }
    } else if (k == "edges") {
      if (!v.IsSequence()) {
        diags.error("shape", mark_of(v),
                    fmt::format("`edges` must be a list of `a -> b` strings or {{from, to}} "
                                "mappings, got {}",
                                kind_of(v)));
        continue;
      }
      for (const auto& edge : v) {
        if (edge.IsScalar()) {
          read_chain(edge, spec.edges, diags);
        } else if (edge.IsMap()) {
          read_edge_map(edge, spec.edges, diags);
        } else {
          diags.error(
              "shape", mark_of(edge),
              fmt::format("an edge is `a -> b` or {{ from: a, to: b }}, got {}", kind_of(edge)));
        }
      }
    } else if (k == "queues") {
      read_queues(v, spec, diags);
    } else if (k == "max_in_flight") {
      int64_t x;
      if (as_int(v, "max_in_flight", 1, 1 << 20, diags, x)) spec.max_in_flight = x;
    } else if (k == "ordered") {
      as_bool(v, "ordered", diags, spec.ordered);
    } else if (k == "fail_fast") {
      as_bool(v, "fail_fast", diags, spec.fail_fast);
    } else {
      diags.error("key.unknown", mark_of(kv.first),
                  fmt::format("unknown top-level key `{}`;{} valid: {}", k, suggestion(k, kTopKeys),
                              join_names(kTopKeys)));
    }
  }
  if (!seen.count("stages")) diags.error("key.missing", {}, "the pipeline has no `stages:`");
  if (!seen.count("edges")) diags.error("key.missing", {}, "the pipeline has no `edges:`");
  return spec;
}

PipelineSpec load_spec_file(const std::string& path, Diagnostics& diags, LoadLimits limits) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    diags.error("io", {}, fmt::format("cannot read pipeline file `{}`", path));
    PipelineSpec s;
    s.file = path;
    return s;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return load_spec_string(ss.str(), path, diags, limits);
}

}  // namespace vsynth::graph
