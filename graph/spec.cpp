#include "graph/spec.h"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace vsynth::graph {

namespace {

const std::vector<std::string> kTopKeys = {"pipeline", "description", "plugins", "resources",
                                           "stages",   "edges",       "queues",  "max_in_flight",
                                           "ordered",  "fail_fast",   "source",  "sink"};
const std::vector<std::string> kNodeKeys = {"use", "with", "concurrency"};
const std::vector<std::string> kEdgeKeys = {"from",         "to",       "back_edge",
                                            "max_attempts", "capacity", "policy"};

// Counts the document's nodes from the parser's events, before any node is built: a built node
// costs ~470 bytes and ~1.3 us (a 4 MB file of 2M one-digit items took 2.6 s of CPU and 0.94 GB
// before any check could run). Real nodes and nodes reached through aliases have
// budgets of their own; an alias adds its anchor's whole expanded size (its own aliases
// included) without walking it, so a "billion laughs" file is refused in time linear in its
// text. Stops at the first limit crossed.
class NodeBudget : public YAML::EventHandler {
 public:
  struct Exceeded {
    std::string code;  // yaml.nodes, yaml.alias_bomb, yaml.depth
    Mark at;
    std::string message;
  };

  explicit NodeBudget(const LoadLimits& l) : limits_(l) {}

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t a) override { leaf(m, a); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t a,
                const std::string&) override {
    leaf(m, a);
  }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t a) override {
    for (const Open& o : open_) {
      if (o.anchor == a) {
        throw Exceeded{"yaml.depth", mark(m),
                       fmt::format("YAML nesting deeper than {} levels (through aliases): this "
                                   "alias refers to a node that contains it",
                                   limits_.max_depth)};
      }
    }
    const auto it = anchors_.find(a);
    if (it == anchors_.end()) return;  // the parser reports an unknown anchor itself
    const Size s = it->second;
    alias_nodes_ = std::min(alias_nodes_ + s.nodes, limits_.max_alias_nodes + 1);
    if (alias_nodes_ > limits_.max_alias_nodes) {
      throw Exceeded{"yaml.alias_bomb", mark(m),
                     fmt::format("YAML document expands to more than {} nodes through aliases "
                                 "(an alias bomb?); pipeline files are small",
                                 limits_.max_alias_nodes)};
    }
    check_depth(m, depth() + s.height);
    add_to_parent(s);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t a,
                       YAML::EmitterStyle::value) override {
    open(m, a);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t a,
                  YAML::EmitterStyle::value) override {
    open(m, a);
  }
  void OnMapEnd() override { close(); }

 private:
  // Expanded size of a node: nodes including everything its aliases reach, and levels.
  struct Size {
    std::size_t nodes = 0;
    int height = 0;
  };
  struct Open {  // a sequence or mapping whose end has not been seen
    YAML::anchor_t anchor;
    Size children;
  };

  static Mark mark(const YAML::Mark& m) { return {m.line + 1, m.column + 1}; }
  int depth() const { return static_cast<int>(open_.size()); }

  void count_real(const YAML::Mark& m) {
    if (++real_nodes_ > limits_.max_nodes) {
      throw Exceeded{"yaml.nodes", mark(m),
                     fmt::format("too many YAML nodes (more than {0}; the limit is {0}): a "
                                 "pipeline file holds hundreds",
                                 limits_.max_nodes)};
    }
  }
  void check_depth(const YAML::Mark& m, int levels) {
    if (levels > limits_.max_depth) {
      throw Exceeded{"yaml.depth", mark(m),
                     fmt::format("YAML nesting deeper than {} levels (through aliases); pipeline "
                                 "files are shallow — is an alias referring to itself?",
                                 limits_.max_depth)};
    }
  }
  void add_to_parent(Size s) {
    if (open_.empty()) return;
    Size& c = open_.back().children;
    c.nodes = std::min(c.nodes + s.nodes, limits_.max_alias_nodes + 1);  // saturates: no wrap
    c.height = std::max(c.height, s.height);
  }
  void finish(YAML::anchor_t a, Size s) {
    if (a != YAML::NullAnchor) anchors_[a] = s;
    add_to_parent(s);
  }
  void leaf(const YAML::Mark& m, YAML::anchor_t a) {
    count_real(m);
    check_depth(m, depth() + 1);
    finish(a, {1, 1});
  }
  void open(const YAML::Mark& m, YAML::anchor_t a) {
    count_real(m);
    check_depth(m, depth() + 1);
    open_.push_back({a, {}});
  }
  void close() {
    const Open o = open_.back();
    open_.pop_back();
    finish(o.anchor,
           {std::min(o.children.nodes + 1, limits_.max_alias_nodes + 1), o.children.height + 1});
  }

  LoadLimits limits_;
  std::size_t real_nodes_ = 0, alias_nodes_ = 0;
  std::vector<Open> open_;
  std::map<YAML::anchor_t, Size> anchors_;
};

// The nearest line at or before `line` (1-based) whose indentation holds a tab: YAML forbids
// tabs there, and yaml-cpp reports them as whatever construct the tab broke ("illegal map
// value", "end of map not found").
std::optional<Mark> tab_in_indentation(const std::string& text, int line) {
  std::optional<Mark> found;
  int row = 1;
  for (std::size_t pos = 0; pos < text.size() && row <= line; ++row) {
    std::size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    const std::size_t lead = text.find_first_not_of(" \t", pos);
    if (lead < eol && text[lead] != '#') {
      const std::size_t tab = text.find('\t', pos);
      if (tab < lead) found = Mark{row, static_cast<int>(tab - pos) + 1};
    }
    pos = eol + 1;
  }
  return found;
}

// Reports a YAML syntax error, naming a tab in the indentation when one explains it.
void syntax_error(const std::string& text, const YAML::Exception& e, Diagnostics& diags) {
  if (e.mark.line >= 0) {
    if (auto tab = tab_in_indentation(text, e.mark.line + 1)) {
      diags.error("yaml.tab", *tab,
                  fmt::format("tabs are not allowed in YAML indentation: indent with spaces "
                              "(the parser said: {})",
                              e.msg));
      return;
    }
  }
  const Mark m = e.mark.line < 0 ? Mark{} : Mark{e.mark.line + 1, e.mark.column + 1};
  diags.error("yaml.syntax", m, fmt::format("not valid YAML: {}", e.msg));
}

// Parses the text's events once against the node budget; false (with one diagnostic) when it
// is not YAML or crosses a limit.
bool within_budget(const std::string& text, const LoadLimits& limits, Diagnostics& diags) {
  std::istringstream in(text);
  NodeBudget budget(limits);
  try {
    YAML::Parser parser(in);
    parser.HandleNextDocument(budget);
  } catch (const NodeBudget::Exceeded& e) {
    diags.error(e.code, e.at, e.message);
    return false;
  } catch (const YAML::DeepRecursion& e) {
    diags.error("yaml.depth", {e.mark.line + 1, e.mark.column + 1},
                "YAML nesting is too deep for a pipeline file (the parser stopped)");
    return false;
  } catch (const YAML::Exception& e) {
    syntax_error(text, e, diags);
    return false;
  }
  return true;
}

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

// `plugins: [path, ...]`: each a plugin file; a relative path is the pipeline file's
// directory's, so that a pipeline and the plugin built beside it move together.
void read_plugins(const YAML::Node& n, PipelineSpec& spec, Diagnostics& diags) {
  if (!n.IsSequence()) {
    diags.error("shape", mark_of(n),
                fmt::format("`plugins` must be a list of plugin files like `[build/libmine.so]`, "
                            "got {}",
                            kind_of(n)));
    return;
  }
  const std::filesystem::path dir = std::filesystem::path(spec.file).parent_path();
  for (const auto& entry : n) {
    if (!entry.IsScalar() || entry.Scalar().empty()) {
      diags.error(
          "type", mark_of(entry),
          fmt::format("a `plugins` entry is the path of a plugin file, got {}", kind_of(entry)));
      continue;
    }
    const std::filesystem::path p(entry.Scalar());
    spec.plugins.push_back({entry.Scalar(),
                            (p.is_absolute() ? p : dir / p).lexically_normal().string(),
                            mark_of(entry)});
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
  if (!within_budget(text, limits, diags)) return spec;
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {  // the budget's pass parsed it already: not expected
    syntax_error(text, e, diags);
    return spec;
  }
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
    } else if (k == "plugins") {
      read_plugins(v, spec, diags);
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
