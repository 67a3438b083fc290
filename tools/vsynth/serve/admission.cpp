#include "tools/vsynth/serve/admission.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

namespace vsynth::serve {

ServeConfig default_config() {
  ServeConfig c;
  TenantConfig anon;
  anon.name = "anonymous";
  anon.priority = c.priorities.back();
  anon.rank = static_cast<int>(c.priorities.size()) - 1;
  c.anonymous = anon;
  return c;
}

namespace {

[[noreturn]] void bad(const std::string& origin, const YAML::Node& n, const std::string& what) {
  const YAML::Mark m = n.Mark();
  throw std::runtime_error(
      m.is_null() ? fmt::format("{}: {}", origin, what)
                  : fmt::format("{}:{}:{}: {}", origin, m.line + 1, m.column + 1, what));
}

template <class T>
T scalar(const std::string& origin, const YAML::Node& n, const std::string& key, T lo, T hi) {
  T v{};
  try {
    v = n.as<T>();
  } catch (const YAML::Exception&) {
    bad(origin, n, fmt::format("`{}` must be a number in [{}, {}]", key, lo, hi));
  }
  if (v < lo || v > hi) bad(origin, n, fmt::format("`{}` must be in [{}, {}]", key, lo, hi));
  return v;
}

void check_keys(const std::string& origin, const YAML::Node& n, const std::string& where,
                const std::set<std::string>& valid) {
  for (const auto& kv : n) {
    const auto k = kv.first.as<std::string>();
    if (!valid.count(k)) {
      std::string list;
      for (const auto& v : valid) list += (list.empty() ? "" : ", ") + v;
      bad(origin, kv.first, fmt::format("unknown key `{}` in {} (valid: {})", k, where, list));
    }
  }
}

TenantConfig tenant(const std::string& origin, const std::string& name, const YAML::Node& n,
                    const ServeConfig& c, bool with_keys) {
  if (!n.IsMap()) bad(origin, n, fmt::format("tenant `{}` must be a mapping", name));
  std::set<std::string> valid{"priority", "max_concurrent", "queue_depth", "timeout_s",
                              "max_tokens"};
  if (with_keys) valid.insert("keys");
  check_keys(origin, n, fmt::format("tenant `{}`", name), valid);
  TenantConfig t;
  t.name = name;
  t.priority = c.priorities.back();
  if (n["priority"]) {
    t.priority = n["priority"].as<std::string>();
    if (std::find(c.priorities.begin(), c.priorities.end(), t.priority) == c.priorities.end()) {
      bad(origin, n["priority"],
          fmt::format("tenant `{}`: priority `{}` is not one of `priorities`", name, t.priority));
    }
  }
  t.rank = static_cast<int>(std::find(c.priorities.begin(), c.priorities.end(), t.priority) -
                            c.priorities.begin());
  if (n["max_concurrent"])
    t.max_concurrent = scalar<int>(origin, n["max_concurrent"], "max_concurrent", 1, 4096);
  if (n["queue_depth"])
    t.queue_depth = scalar<int>(origin, n["queue_depth"], "queue_depth", 0, 1 << 20);
  if (n["timeout_s"]) t.timeout_s = scalar<double>(origin, n["timeout_s"], "timeout_s", 0.1, 86400);
  if (n["max_tokens"]) t.max_tokens = scalar<int>(origin, n["max_tokens"], "max_tokens", 1, 32768);
  if (with_keys) {
    const YAML::Node keys = n["keys"];
    if (!keys || !keys.IsSequence() || keys.size() == 0) {
      bad(origin, keys ? keys : n,
          fmt::format("tenant `{}` needs `keys`: a list of API keys", name));
    }
    for (const auto& k : keys) {
      const auto s = k.as<std::string>();
      if (s.size() < 8)
        bad(origin, k, fmt::format("tenant `{}`: a key shorter than 8 bytes", name));
      t.keys.push_back(s);
    }
  }
  return t;
}

}  // namespace

ServeConfig parse_config(const std::string& text, const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw std::runtime_error(fmt::format("{}: not valid YAML: {}", origin, e.what()));
  }
  ServeConfig c;
  if (!root.IsMap()) bad(origin, root, "the serve config must be a mapping");
  check_keys(origin, root, "the serve config", {"server", "priorities", "tenants", "anonymous"});
  if (const YAML::Node s = root["server"]) {
    check_keys(origin, s, "server",
               {"max_running", "max_body_bytes", "threads", "recent_results", "io_threads",
                "max_connections", "request_read_s", "keep_alive_s"});
    if (s["io_threads"]) c.io_threads = scalar<int>(origin, s["io_threads"], "io_threads", 1, 64);
    if (s["max_connections"])
      c.max_connections = scalar<std::size_t>(origin, s["max_connections"], "max_connections", 1,
                                              std::size_t{1} << 20);
    if (s["request_read_s"])
      c.request_read_s = scalar<double>(origin, s["request_read_s"], "request_read_s", 0.05, 3600);
    if (s["keep_alive_s"])
      c.keep_alive_s = scalar<double>(origin, s["keep_alive_s"], "keep_alive_s", 0.05, 3600);
    if (s["max_running"])
      c.max_running = scalar<int>(origin, s["max_running"], "max_running", 1, 4096);
    if (s["max_body_bytes"])
      c.max_body_bytes = scalar<std::size_t>(origin, s["max_body_bytes"], "max_body_bytes", 1024,
                                             std::size_t{1} << 30);
    if (s["threads"]) c.threads = scalar<int>(origin, s["threads"], "threads", 2, 4096);
    if (s["recent_results"])
      c.recent_results =
          scalar<std::size_t>(origin, s["recent_results"], "recent_results", 0, 1 << 20);
  }
  if (const YAML::Node p = root["priorities"]) {
    if (!p.IsSequence() || p.size() == 0) bad(origin, p, "`priorities` must be a non-empty list");
    c.priorities.clear();
    for (const auto& v : p) c.priorities.push_back(v.as<std::string>());
  }
  std::set<std::string> seen_keys;
  if (const YAML::Node ts = root["tenants"]) {
    if (!ts.IsMap()) bad(origin, ts, "`tenants` must be a mapping of name -> settings");
    for (const auto& kv : ts) {
      TenantConfig t = tenant(origin, kv.first.as<std::string>(), kv.second, c, true);
      for (const auto& k : t.keys) {
        if (!seen_keys.insert(k).second) {
          bad(origin, kv.second["keys"], fmt::format("tenant `{}`: a key given twice", t.name));
        }
      }
      c.tenants.push_back(std::move(t));
    }
  }
  if (const YAML::Node a = root["anonymous"])
    c.anonymous = tenant(origin, "anonymous", a, c, false);
  if (c.tenants.empty() && !c.anonymous) {
    bad(origin, root, "no tenants and no `anonymous`: nobody could send a request");
  }
  return c;
}

ServeConfig load_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("cannot read the serve config `{}`", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_config(ss.str(), path);
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  // Every byte of the longer string is visited whatever the contents.
  const std::size_t n = std::max(a.size(), b.size());
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (std::size_t i = 0; i < n; ++i) {
    const auto x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0u;
    const auto y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0u;
    diff |= x ^ y;
  }
  return diff == 0;
}

Admission::Admission(ServeConfig config) : config_(std::move(config)) {}

const TenantConfig* Admission::tenant_for(std::string_view key) const {
  if (key.empty()) return config_.anonymous ? &*config_.anonymous : nullptr;
  const TenantConfig* found = nullptr;
  for (const TenantConfig& t : config_.tenants) {
    for (const std::string& k : t.keys) {
      if (constant_time_equal(k, key)) found = &t;  // no early exit: every key is compared
    }
  }
  return found;
}

Admission::Ticket::~Ticket() {
  if (a_) {
    a_->release(t_,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  }
}

Admission::Ticket& Admission::Ticket::operator=(Ticket&& o) noexcept {
  if (this != &o) {
    Ticket gone(std::move(*this));  // releases the slot held, if any
    a_ = o.a_;
    t_ = o.t_;
    start_ = o.start_;
    o.a_ = nullptr;
  }
  return *this;
}

bool Admission::may_run(const Waiter& w) const {
  if (running_total_ >= config_.max_running) return false;
  const auto r = running_.find(w.tenant);
  if (r != running_.end() && r->second >= w.tenant->max_concurrent) return false;
  // First among the waiters that could run now, by (priority, arrival).
  for (const Waiter& o : waiting_) {
    if (o.seq == w.seq) continue;
    const auto ro = running_.find(o.tenant);
    if (ro != running_.end() && ro->second >= o.tenant->max_concurrent) continue;
    if (std::pair(o.tenant->rank, o.seq) < std::pair(w.tenant->rank, w.seq)) return false;
  }
  return true;
}

Admission::Outcome Admission::acquire(const TenantConfig& t,
                                      std::chrono::steady_clock::time_point deadline,
                                      const std::function<bool()>& gone) {
  Outcome out;
  std::unique_lock lock(mu_);
  // Phase: a place in the tenant's bounded queue, or 429 at once.
  int& queued = queued_[&t];
  const int running = running_[&t];
  // Running + waiting is bounded by max_concurrent + queue_depth, whatever the other tenants do.
  if (running + queued >= t.max_concurrent + t.queue_depth) {
    out.status = 429;
    const double per_slot = mean_hold_s_ / std::max(1, t.max_concurrent);
    out.retry_after = std::max(1, static_cast<int>(std::ceil(per_slot * (queued + 1))));
    out.reason = fmt::format(
        "tenant `{}` has {} requests running and {} waiting (max_concurrent {}, queue_depth {})",
        t.name, running, queued, t.max_concurrent, t.queue_depth);
    return out;
  }
  // Phase: wait for a running slot, in priority order.
  const Waiter me{&t, next_seq_++};
  waiting_.push_back(me);
  ++queued;
  bool ok = false;
  while (true) {
    if (may_run(me)) {
      ok = true;
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    if (gone && gone()) break;
    cv_.wait_for(lock, std::chrono::milliseconds(20));
  }
  waiting_.erase(std::find_if(waiting_.begin(), waiting_.end(),
                              [&](const Waiter& w) { return w.seq == me.seq; }));
  --queued_[&t];
  if (!ok) {
    out.status = 504;
    out.reason = fmt::format("tenant `{}`: no slot within its timeout_s {} (or the client left)",
                             t.name, t.timeout_s);
    cv_.notify_all();  // the next waiter may be first now
    return out;
  }
  ++running_[&t];
  ++running_total_;
  out.ticket = Ticket(this, &t);
  return out;
}

void Admission::release(const TenantConfig* t, double held_s) {
  {
    std::lock_guard lock(mu_);
    --running_[t];
    --running_total_;
    mean_hold_s_ = 0.8 * mean_hold_s_ + 0.2 * held_s;
  }
  cv_.notify_all();
}

Admission::Load Admission::load() const {
  std::lock_guard lock(mu_);
  Load l;
  l.running = running_total_;
  l.waiting = static_cast<int>(waiting_.size());
  for (const auto& [t, n] : queued_) l.waiting_by_tenant[t->name] = n;
  for (const auto& [t, n] : running_) l.running_by_tenant[t->name] = n;
  return l;
}

double Admission::mean_hold_s() const {
  std::lock_guard lock(mu_);
  return mean_hold_s_;
}

}  // namespace vsynth::serve
