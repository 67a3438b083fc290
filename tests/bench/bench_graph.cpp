// Framework overhead per item per stage: a chain of 8 trivial stages run through vsynth's
// Pipeline (YAML -> validated spec -> flow graph with admission gate, metrics, routing, sink)
// against a hand-written oneTBB graph of the same shape in the same process: 8 function_nodes
// with the same concurrency, a limiter_node bounding items in flight the same way, and a
// serial sink. Prints a table, writes JSON.
//
//   bench_graph [--items N] [--reps R] [--threads T] [--concurrency serial|unlimited] [--json F]
#include <fmt/format.h>
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "graph/pipeline.h"
#include "graph/registry.h"
#include "graph/validate.h"

using namespace vsynth;
namespace flow = tbb::flow;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kStages = 8;

// The trivial work both graphs do per stage: touch the item.
struct Touch : graph::SyncStage {
  graph::Port process(graph::Item& item) override {
    item.set_status("t");
    return 0;
  }
};

class CountingSource : public graph::Source {
 public:
  explicit CountingSource(std::size_t n) : n_(n) {}
  std::optional<graph::Task> next() override {
    if (i_ >= n_) return std::nullopt;
    ++i_;
    return graph::Task{"x", nlohmann::json()};
  }
  std::optional<std::size_t> total() const override { return n_; }

 private:
  std::size_t n_, i_ = 0;
};

class NullSink : public graph::Sink {
 public:
  void write(const graph::Item&) override { ++written; }
  bool contains(std::string_view) const override { return false; }
  std::size_t written = 0;
};

double run_vsynth(std::size_t items, const std::string& conc, int64_t in_flight) {
  graph::Registry reg;
  graph::Contract c;
  c.kind = "bench.touch";
  c.summary = "touches the item";
  c.ports = {{"ok", "always", false}};
  reg.add_stage(c, [](const graph::StageContext&) { return std::make_unique<Touch>(); });
  std::string yaml = fmt::format("max_in_flight: {}\nstages:\n", in_flight);
  for (int i = 0; i < kStages; ++i)
    yaml += fmt::format("  s{}: {{ use: bench.touch, concurrency: {} }}\n", i, conc);
  yaml += "edges:\n  - s0";
  for (int i = 1; i < kStages; ++i) yaml += fmt::format(" -> s{}", i);
  yaml += " -> out\n";
  graph::Diagnostics d("bench.yaml");
  auto spec = graph::load_spec_string(yaml, "bench.yaml", d);
  auto vp = graph::validate(spec, reg, d);
  if (!vp) throw std::runtime_error(d.format());
  graph::Pipeline p(std::move(*vp), reg);
  CountingSource src(items);
  NullSink sink;
  graph::RunControl ctl;
  const auto t0 = Clock::now();
  auto r = p.run(src, sink, ctl);
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (r.written != items) throw std::runtime_error("vsynth run lost items");
  return s;
}

double run_tbb(std::size_t items, const std::string& conc, int64_t in_flight) {
  struct Job {
    std::string id = "x";
    nlohmann::json data;
    std::string status;
  };
  using JobPtr = std::shared_ptr<Job>;
  const std::size_t c = conc == "serial" ? flow::serial : flow::unlimited;
  flow::graph g;
  flow::limiter_node<JobPtr> limiter(g, static_cast<std::size_t>(in_flight));
  std::vector<std::unique_ptr<flow::function_node<JobPtr, JobPtr>>> nodes;
  for (int i = 0; i < kStages; ++i) {
    nodes.push_back(
        std::make_unique<flow::function_node<JobPtr, JobPtr>>(g, c, [](const JobPtr& j) {
          j->status = "t";
          return j;
        }));
  }
  std::size_t written = 0;
  flow::function_node<JobPtr, flow::continue_msg> sink(g, flow::serial, [&](const JobPtr&) {
    ++written;
    return flow::continue_msg();
  });
  flow::make_edge(limiter, *nodes[0]);
  for (int i = 1; i < kStages; ++i) flow::make_edge(*nodes[i - 1], *nodes[i]);
  flow::make_edge(*nodes.back(), sink);
  flow::make_edge(sink, limiter.decrementer());
  flow::buffer_node<JobPtr> buffer(g);  // holds what the limiter turns away until it opens
  flow::make_edge(buffer, limiter);
  const auto t0 = Clock::now();
  for (std::size_t i = 0; i < items; ++i) buffer.try_put(std::make_shared<Job>());
  g.wait_for_all();
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (written != items) throw std::runtime_error("tbb run lost items");
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t items = 200000;
  int reps = 5;
  std::string json_path = "bench_graph.json";
  std::vector<std::string> concs = {"serial", "unlimited"};
  std::size_t threads = 0;  // 0: oneTBB's default (all cores)
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--items") && i + 1 < argc)
      items = std::stoul(argv[++i]);
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = std::stoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--json") && i + 1 < argc)
      json_path = argv[++i];
    else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = std::stoul(argv[++i]);
    else if (!std::strcmp(argv[i], "--concurrency") && i + 1 < argc)
      concs = {argv[++i]};
    else {
      fmt::print(stderr,
                 "usage: bench_graph [--items N] [--reps R] [--threads T] [--concurrency "
                 "serial|unlimited] "
                 "[--json F]\n");
      return 2;
    }
  }
  const int64_t in_flight = 64;
  std::unique_ptr<tbb::global_control> limit;
  if (threads > 0) {
    limit = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                  threads);
  }
  nlohmann::json out = nlohmann::json::array();
  fmt::print(
      "chain of {} trivial stages, {} items, max in flight {}, {} threads, median of {} runs "
      "(interleaved)\n",
      kStages, items, in_flight, threads ? std::to_string(threads) : std::string("all"), reps);
  fmt::print("{:<11} {:>14} {:>14} {:>8} {:>16} {:>16}\n", "concurrency", "vsynth s", "tbb s",
             "ratio", "vsynth us/it/st", "tbb us/it/st");
  for (const auto& conc : concs) {
    std::vector<double> ours, theirs;
    run_vsynth(items / 10, conc, in_flight);  // warm up both
    run_tbb(items / 10, conc, in_flight);
    for (int r = 0; r < reps; ++r) {
      ours.push_back(run_vsynth(items, conc, in_flight));
      theirs.push_back(run_tbb(items, conc, in_flight));
    }
    const double a = median(ours), b = median(theirs);
    const double per_a = a / static_cast<double>(items) / kStages * 1e6;
    const double per_b = b / static_cast<double>(items) / kStages * 1e6;
    fmt::print("{:<11} {:>14.3f} {:>14.3f} {:>8.2f} {:>16.3f} {:>16.3f}\n", conc, a, b, a / b,
               per_a, per_b);
    out.push_back({{"concurrency", conc},
                   {"threads", threads},
                   {"items", items},
                   {"stages", kStages},
                   {"vsynth_s", a},
                   {"tbb_s", b},
                   {"ratio", a / b},
                   {"vsynth_us_per_item_stage", per_a},
                   {"tbb_us_per_item_stage", per_b},
                   {"vsynth_runs", ours},
                   {"tbb_runs", theirs}});
  }
  std::ofstream(json_path) << out.dump(2) << "\n";
  fmt::print("wrote {}\n", json_path);
  return 0;
}
