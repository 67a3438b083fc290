// vsynth serve: who may send what, and how much waits. The serve config (YAML, `--config`;
// examples/serve/serve.yaml) maps API keys to tenants; each tenant has a priority class, a
// number of requests it may run at once, a bounded queue, a timeout and a max_tokens cap. A
// request whose tenant's queue is full is refused at once (429 + Retry-After), never queued
// without bound. Requests run in priority order (then arrival), at most `max_running` of all
// tenants together, each tenant at most its max_concurrent.
//
//   server:  { max_running: 2, max_body_bytes: 1048576, threads: 32, recent_results: 64,
//              io_threads: 2, max_connections: 512, request_read_s: 10, keep_alive_s: 30 }
//   priorities: [gold, silver, bronze]          # first: served first
//   tenants:
//     acme: { keys: ["sk-acme-1"], priority: gold, max_concurrent: 2, queue_depth: 8,
//             timeout_s: 60, max_tokens: 512 }
//   anonymous: { priority: bronze, ... }        # requests without a key; absent: key required
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace vsynth::serve {

struct TenantConfig {
  std::string name;
  std::vector<std::string> keys;
  std::string priority;  // one of ServeConfig::priorities
  int rank = 0;          // its index there: lower runs first
  int max_concurrent = 2;
  int queue_depth = 8;     // requests waiting at most (beyond those running)
  double timeout_s = 120;  // from arrival to the last byte; then the request is cancelled
  int max_tokens = 512;    // max_tokens / n_predict are cut to this
};

struct ServeConfig {
  int max_running = 2;  // requests inside the pipelines at once, every tenant together
  std::size_t max_body_bytes = 1 << 20;
  // Worker threads for the requests' blocking phases (waiting for a slot or a result, writing a
  // stream); at least the tenants' max_concurrent + queue_depth together, + 4.
  int threads = 32;
  int io_threads = 2;                 // threads reading and writing the sockets
  std::size_t max_connections = 512;  // open at once; one more is answered 503 and closed
  double request_read_s = 10;         // a request's headers and body, from its first byte
  double keep_alive_s = 30;           // idle between two requests on one connection
  std::size_t recent_results = 64;    // finished results kept for resume_from
  std::vector<std::string> priorities{"gold", "silver", "bronze"};
  std::vector<TenantConfig> tenants;
  std::optional<TenantConfig> anonymous;  // requests without a key; nullopt: 401
};

// The config when no file is given: no keys, one anonymous tenant with the defaults.
ServeConfig default_config();
// Throws std::runtime_error naming the file, the key and what would be valid.
ServeConfig load_config(const std::string& path);
ServeConfig parse_config(const std::string& yaml_text, const std::string& origin);

// Compares in time that depends only on the lengths, never on where the bytes differ.
bool constant_time_equal(std::string_view a, std::string_view b);

class Admission {
 public:
  explicit Admission(ServeConfig config);

  // The tenant a request's key names (Authorization: Bearer KEY, or X-Api-Key): every key is
  // compared, in constant time. No key: the anonymous tenant. nullptr: refused (unknown key,
  // or no key and no anonymous tenant).
  const TenantConfig* tenant_for(std::string_view key) const;

  // A running slot, released when destroyed.
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Admission* a, const TenantConfig* t)
        : a_(a), t_(t), start_(std::chrono::steady_clock::now()) {}
    Ticket(Ticket&& o) noexcept : a_(o.a_), t_(o.t_), start_(o.start_) { o.a_ = nullptr; }
    Ticket& operator=(Ticket&& o) noexcept;
    ~Ticket();
    explicit operator bool() const { return a_ != nullptr; }

   private:
    Admission* a_ = nullptr;
    const TenantConfig* t_ = nullptr;
    std::chrono::steady_clock::time_point start_;
  };

  struct Outcome {
    Ticket ticket;        // set: admitted
    int status = 200;     // 429 (queue full) or 504 (timed out waiting) when refused
    int retry_after = 0;  // seconds, with 429
    std::string reason;
  };
  // Waits for a slot until `deadline`, or until `gone()` says the client left (polled).
  // Refuses at once when the tenant's queue is full.
  Outcome acquire(const TenantConfig& t, std::chrono::steady_clock::time_point deadline,
                  const std::function<bool()>& gone);

  // For /metrics.
  struct Load {
    int running = 0, waiting = 0;
    std::map<std::string, int> waiting_by_tenant, running_by_tenant;
  };
  Load load() const;
  const ServeConfig& config() const { return config_; }
  // Mean seconds a slot was held, over the recent requests (Retry-After's estimate).
  double mean_hold_s() const;

 private:
  struct Waiter {
    const TenantConfig* tenant;
    uint64_t seq;
  };
  bool may_run(const Waiter& w) const;  // under mu_
  void release(const TenantConfig* t, double held_s);

  ServeConfig config_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Waiter> waiting_;
  std::map<const TenantConfig*, int> running_, queued_;
  int running_total_ = 0;
  uint64_t next_seq_ = 0;
  double mean_hold_s_ = 1.0;  // exponential average
};

}  // namespace vsynth::serve
