// vsynth serve under overload (docs/performance.md, "Serving under overload"): the server
// in-process on 127.0.0.1 (an ephemeral port) over a generate pipeline on the default model,
// two tenants (serve config below), real HTTP clients.
//
// 1. Unloaded: --probe sequential streamed requests of the `probe` tenant: time to first
//    token (TTFT: request sent -> first SSE chunk with text) and request time. Capacity = the
//    flooding tenant's max_concurrent / the mean request time (requests/s).
// 2. Overload: the `flood` tenant's requests arrive open-loop at --factor x capacity for
//    --seconds (non-streamed; at most --clients in flight on the client side, an arrival with
//    none free waits and counts as late), while the probe tenant keeps sending sequential
//    streamed requests. Every flood request ends as served (200, a finished generation),
//    rejected (429), cancelled (504, or a generation that finished `cancelled`) or failed
//    (anything else, connection errors included), and submitted = served + rejected +
//    cancelled + failed is checked on both sides (the server's requests_total). Reported: the
//    429s' latency (p50 / p99), the probe's TTFT p95 loaded / unloaded, and the process's
//    resident memory (VmRSS of /proc/self/status every 100 ms: before, at most, after).
//
//   ninja -C build bench_serve
//   ./build/tests/bench/bench_serve [--model GGUF] [--threads 2] [--seconds 20] [--factor 10]
//       [--tokens 16] [--probe 6] [--clients 64] [--batching on|off] [out.json]
#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "graph/registry.h"
#include "stages/generation/register.h"
#include "tests/bench/bench_json.h"
#include "tests/serve/http_client.h"
#include "tools/vsynth/serve/server.h"

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

double ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[i];
}

double to_number(const std::string& option, const std::string& value) {
  double v = 0;
  const char* end = value.data() + value.size();
  const auto r = std::from_chars(value.data(), end, v);
  if (r.ec != std::errc() || r.ptr != end || !(v > 0))
    throw std::invalid_argument(option + " wants a positive number, got `" + value + "`");
  return v;
}

// VmRSS of this process (KiB); 0 when /proc is not there.
long rss_kib() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

const char* kServeConfig = R"(
server: { max_running: 2, threads: 64 }
priorities: [gold, bronze]
tenants:
  probe: { keys: ["sk-probe"], priority: gold, max_concurrent: 1, queue_depth: 2,
           timeout_s: 120, max_tokens: 256 }
  flood: { keys: ["sk-flood"], priority: bronze, max_concurrent: 1, queue_depth: 4,
           timeout_s: 30, max_tokens: 256 }
)";

// Prompt i of a tenant: a few code openings, each made distinct by its number.
std::string prompt(const char* who, int i) {
  static const char* kBodies[] = {"def fibonacci(n):\n", "class Stack:\n    def push(self, x):\n",
                                  "def parse_csv_line(line, sep=','):\n",
                                  "def binary_search(xs, target):\n"};
  return "# " + std::string(who) + " " + std::to_string(i) + "\n" + kBodies[i % 4];
}

struct Probe {
  double ttft_ms = -1;  // -1: no text came
  double total_ms = 0;
  int status = 0;
};

// One streamed completion of the probe tenant.
Probe probe_once(int port, int i, int tokens) {
  const std::string body = json{
      {"prompt", prompt("probe", i)},
      {"max_tokens", tokens},
      {"temperature", 0.0},
      {"stream", true}}.dump();
  Probe p;
  std::string buf;
  const Clock::time_point t0 = Clock::now();
  vsynth::servetest::Connection c(port, std::chrono::seconds(120));
  const bool sent = c.send_raw(
      "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer sk-probe\r\n"
      "Content-Type: application/json\r\nConnection: close\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body);
  if (!sent) {
    p.status = -1;
    p.total_ms = ms(t0, Clock::now());
    return p;
  }
  const std::string all = c.read_raw([&](std::string_view data) {
    buf.append(data);
    if (p.ttft_ms >= 0) return true;
    for (size_t at = buf.find("data: "); at != std::string::npos; at = buf.find("data: ", at + 1)) {
      const size_t end = buf.find('\n', at);
      if (end == std::string::npos) break;
      const json ev = json::parse(buf.substr(at + 6, end - at - 6), nullptr, false);
      if (ev.is_object() && ev.contains("choices") && !ev["choices"].empty() &&
          !ev["choices"][0].value("text", std::string()).empty()) {
        p.ttft_ms = ms(t0, Clock::now());
        break;
      }
    }
    return true;
  });
  p.total_ms = ms(t0, Clock::now());
  // "HTTP/1.1 200 OK": the status, -1 when nothing came back.
  p.status = all.size() > 12 && all.rfind("HTTP/1.1 ", 0) == 0 ? std::stoi(all.substr(9, 3)) : -1;
  return p;
}

// How a flood request ended.
enum class End { Served, Rejected, Cancelled, Failed };

struct FloodResult {
  End end = End::Failed;
  double ms = 0;
};

FloodResult flood_once(int port, int i, int tokens) {
  const json body{{"prompt", prompt("flood", i)}, {"max_tokens", tokens}, {"temperature", 0.0}};
  const Clock::time_point t0 = Clock::now();
  const auto r = vsynth::servetest::http_request(port, "POST", "/v1/completions", body.dump(),
                                                 {{"Authorization", "Bearer sk-flood"}},
                                                 std::chrono::seconds(120));
  FloodResult out;
  out.ms = ms(t0, Clock::now());
  if (!r) return out;
  if (r->status == 429) {
    out.end = End::Rejected;
  } else if (r->status == 504) {
    out.end = End::Cancelled;
  } else if (r->status == 200) {
    const json b = json::parse(r->body, nullptr, false);
    const bool cancelled =
        b.is_object() && b.contains("vsynth") && b["vsynth"].value("finish", "") == "cancelled";
    out.end = cancelled ? End::Cancelled : End::Served;
  }
  return out;
}

// The server's own count of answered /v1/completions requests (every status).
long served_by_server(int port) {
  const auto r = vsynth::servetest::http_request(port, "GET", "/metrics");
  if (!r) return -1;
  long n = 0;
  const std::string key = "vsynth_serve_requests_total{endpoint=\"/v1/completions\"";
  for (size_t at = r->body.find(key); at != std::string::npos; at = r->body.find(key, at + 1)) {
    const size_t sp = r->body.find(' ', at);
    n += std::stol(r->body.substr(sp + 1));
  }
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  fs::path model = fs::path(VSYNTH_SOURCE_DIR) / "models/gemma-3-270m-q4_k_m.gguf";
  double seconds = 20, factor = 10;
  int threads = 2, tokens = 16, probes = 6, clients = 64;
  bool batching = true;
  std::string out_path = "bench_serve.json";
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      const auto next = [&] {
        if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
        return std::string(argv[++i]);
      };
      if (a == "--model") {
        model = next();
      } else if (a == "--seconds") {
        seconds = to_number(a, next());
      } else if (a == "--factor") {
        factor = to_number(a, next());
      } else if (a == "--threads") {
        threads = static_cast<int>(to_number(a, next()));
      } else if (a == "--tokens") {
        tokens = static_cast<int>(to_number(a, next()));
      } else if (a == "--probe") {
        probes = static_cast<int>(to_number(a, next()));
      } else if (a == "--clients") {
        clients = static_cast<int>(to_number(a, next()));
      } else if (a == "--batching") {
        const std::string v = next();
        if (v != "on" && v != "off") throw std::invalid_argument("--batching wants on or off");
        batching = v == "on";
      } else if (a.starts_with("-")) {
        throw std::invalid_argument("unknown option " + a);
      } else {
        out_path = a;
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);

  // The pipeline: generate.yaml's shape, greedy, no stop strings (every request decodes its
  // max_tokens unless the model ends its text).
  const fs::path dir = fs::temp_directory_path() / "vsynth_bench_serve";
  fs::create_directories(dir);
  const fs::path yaml = dir / "gen.yaml";
  {
    std::ofstream y(yaml);
    y << "resources:\n  m: { use: model.gguf, with: { path: \"" << model.string()
      << "\", threads: " << threads << ", context_length: 1024"
      << (batching ? ", batching: { enabled: true }" : "") << " } }\n"
      << "stages:\n  gen: { use: generate.llm, with: { model: m, max_new_tokens: 256, "
         "temperature: 0.0, mode: complete } }\nedges: [ gen -> out ]\n";
  }
  vsynth::graph::Registry registry;
  vsynth::stages::generation::register_stages(registry);
  vsynth::serve::ServerOptions o;
  o.port = 0;
  o.pipelines = {{"gen", yaml.string()}};
  o.config = vsynth::serve::parse_config(kServeConfig, "bench_serve");
  o.access_log = nullptr;
  vsynth::serve::Server server(o, registry);
  const int port = server.start();
  std::printf("server on 127.0.0.1:%d, model %s, %d threads, batching %s\n", port,
              model.filename().c_str(), threads, batching ? "on" : "off");

  // Phase 1: unloaded.
  probe_once(port, 1000, 2);  // warm-up (page in the weights)
  std::vector<double> ttft0, req0;
  for (int i = 0; i < probes; ++i) {
    const Probe p = probe_once(port, i, tokens);
    if (p.ttft_ms >= 0) ttft0.push_back(p.ttft_ms);
    req0.push_back(p.total_ms);
  }
  double mean_req = 0;
  for (double v : req0) mean_req += v;
  mean_req /= static_cast<double>(std::max<size_t>(1, req0.size()));
  const double capacity = 1000.0 / mean_req;  // flood: max_concurrent 1
  const double rate = factor * capacity;
  std::printf("unloaded: TTFT p50 %.1f ms p95 %.1f ms, request %.0f ms: capacity %.2f req/s\n",
              pct(ttft0, 0.5), pct(ttft0, 0.95), mean_req, capacity);
  std::printf("overload: %.2f req/s (%.0fx) for %.0f s, %d client threads at most\n", rate, factor,
              seconds, clients);

  // Phase 2: overload. RSS sampler, probe loop, open-loop flood.
  const long rss_before = rss_kib();
  std::atomic<bool> done{false};
  std::atomic<long> rss_max{rss_before};
  std::thread sampler([&] {
    while (!done) {
      const long r = rss_kib();
      long m = rss_max.load();
      while (r > m && !rss_max.compare_exchange_weak(m, r)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  std::vector<double> ttft1;
  std::vector<int> probe_status;
  std::thread prober([&] {
    for (int i = 0; !done; ++i) {
      const Probe p = probe_once(port, 100 + i, tokens);
      if (p.ttft_ms >= 0) ttft1.push_back(p.ttft_ms);
      probe_status.push_back(p.status);
    }
  });

  // Arrival times (Poisson at `rate`) for the whole run; `clients` threads each take the next
  // arrival, wait for its time and send it, so at most `clients` are in flight and an arrival
  // taken after its time (every thread was busy) counts as late.
  std::vector<Clock::time_point> arrivals;
  {
    std::mt19937_64 rng(1);
    std::exponential_distribution<double> gap(rate / 1000.0);  // per ms
    const double total_ms = seconds * 1000.0;
    const Clock::time_point base = Clock::now() + std::chrono::milliseconds(50);
    for (double t = 0; t < total_ms; t += gap(rng)) {
      arrivals.push_back(base + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double, std::milli>(t)));
    }
  }
  const int submitted = static_cast<int>(arrivals.size());
  std::mutex mu;
  std::atomic<int> next_arrival{0};
  std::atomic<long> late{0};
  std::vector<FloodResult> results;
  std::vector<std::thread> workers;
  for (int w = 0; w < clients; ++w) {
    workers.emplace_back([&] {
      for (int i = next_arrival++; i < submitted; i = next_arrival++) {
        const Clock::time_point at = arrivals[static_cast<size_t>(i)];
        if (Clock::now() > at + std::chrono::milliseconds(1)) ++late;
        std::this_thread::sleep_until(at);
        const FloodResult r = flood_once(port, i, tokens);
        std::lock_guard l(mu);
        results.push_back(r);
      }
    });
  }
  const Clock::time_point stop_at = arrivals.empty() ? Clock::now() : arrivals.back();
  for (auto& w : workers) w.join();
  const double drain_s = std::chrono::duration<double>(Clock::now() - stop_at).count();
  done = true;
  prober.join();
  sampler.join();
  const long rss_after = rss_kib();
  const long server_count = served_by_server(port);
  server.stop();

  // Report.
  long n[4] = {0, 0, 0, 0};
  std::vector<double> rejected_ms, served_ms;
  for (const FloodResult& r : results) {
    ++n[static_cast<int>(r.end)];
    if (r.end == End::Rejected) rejected_ms.push_back(r.ms);
    if (r.end == End::Served) served_ms.push_back(r.ms);
  }
  const long total = n[0] + n[1] + n[2] + n[3];
  // The server answered every request the clients sent: the flood's, the probes' and the warm-up.
  const long client_count = total + static_cast<long>(probes + 1 + probe_status.size());
  const bool balanced = total == submitted && server_count == client_count;
  const double p95_0 = pct(ttft0, 0.95), p95_1 = pct(ttft1, 0.95);
  std::printf("\n%9s %7s %8s %9s %6s %8s %8s %9s %9s\n", "submitted", "served", "rejected",
              "cancelled", "failed", "balanced", "late", "429_p50", "429_p99");
  std::printf("%9d %7ld %8ld %9ld %6ld %8s %8ld %9.2f %9.2f\n", submitted, n[0], n[1], n[2], n[3],
              balanced ? "yes" : "NO", late.load(), pct(rejected_ms, 0.5), pct(rejected_ms, 0.99));
  std::printf("(server answered %ld /v1/completions, clients sent %ld; drain %.1f s)\n",
              server_count, client_count, drain_s);
  std::printf("\n%10s %12s %12s %12s %7s\n", "probe", "ttft_p50", "ttft_p95", "requests", "x");
  std::printf("%10s %12.1f %12.1f %12zu %7s\n", "unloaded", pct(ttft0, 0.5), p95_0, ttft0.size(),
              "");
  std::printf("%10s %12.1f %12.1f %12zu %7.2f\n", "flooded", pct(ttft1, 0.5), p95_1, ttft1.size(),
              p95_0 > 0 ? p95_1 / p95_0 : 0.0);
  std::printf("\nRSS (MiB): before %.1f, max %.1f, after %.1f\n", rss_before / 1024.0,
              rss_max.load() / 1024.0, rss_after / 1024.0);

  json out{{"model", model.filename().string()},
           {"threads", threads},
           {"batching", batching},
           {"seconds", seconds},
           {"factor", factor},
           {"tokens", tokens},
           {"capacity_req_s", capacity},
           {"rate_req_s", rate},
           {"submitted", submitted},
           {"served", n[0]},
           {"rejected", n[1]},
           {"cancelled", n[2]},
           {"failed", n[3]},
           {"balanced", balanced},
           {"server_answered", server_count},
           {"client_sent", client_count},
           {"late_arrivals", late.load()},
           {"rejected_p50_ms", pct(rejected_ms, 0.5)},
           {"rejected_p99_ms", pct(rejected_ms, 0.99)},
           {"served_p50_ms", pct(served_ms, 0.5)},
           {"probe_ttft_p95_unloaded_ms", p95_0},
           {"probe_ttft_p95_flooded_ms", p95_1},
           {"probe_ttft_ratio", p95_0 > 0 ? p95_1 / p95_0 : 0.0},
           {"probe_requests_flooded", ttft1.size()},
           {"rss_mib_before", rss_before / 1024.0},
           {"rss_mib_max", rss_max.load() / 1024.0},
           {"rss_mib_after", rss_after / 1024.0}};
  if (!vsynth::bench::write_json(out_path, out)) return 1;
  return balanced ? 0 : 1;
}
