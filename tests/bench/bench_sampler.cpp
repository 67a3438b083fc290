// The sampler's cost per token on a full vocabulary (docs/performance.md, "A batched step's
// overheads, the sampler, ..."): Sampler::sample over N logits (normal, sd 6, seeded) for a
// few settings, on every CPU path this machine has, the paths alternated within each round so
// that load on the machine falls on all of them alike; the median of the rounds.
//
//   ninja -C build bench_sampler
//   ./build/tests/bench/bench_sampler [--vocab 262144] [--calls 200] [--rounds 5] [out.json]
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_path.h"
#include "kernels/sampler/sampler.h"
#include "tests/bench/bench_json.h"

using namespace vsynth::kernels;

namespace {

int to_int(const std::string& option, const std::string& value) {
  int v = 0;
  const char* end = value.data() + value.size();
  const auto r = std::from_chars(value.data(), end, v);
  if (r.ec != std::errc() || r.ptr != end || v < 1) {
    throw std::invalid_argument(option + " wants a positive integer, got `" + value + "`");
  }
  return v;
}

struct Setting {
  const char* name;
  SamplerParams params;
  bool history;  // pass the last 64 sampled tokens (penalties read them)
};

std::vector<Setting> settings() {
  SamplerParams greedy;
  greedy.temperature = 0.0f;
  SamplerParams top_p;
  top_p.temperature = 0.8f;
  top_p.top_p = 0.95f;
  top_p.seed = 1;
  SamplerParams penalties = greedy;
  penalties.repeat_penalty = 1.1f;
  penalties.repeat_last_n = 64;
  return {{"greedy", greedy, false},
          {"top_p 0.95, T 0.8", top_p, false},
          {"greedy + repeat penalty", penalties, true}};
}

// Mean milliseconds of one sample() over `calls` calls.
double time_calls(Sampler& s, const std::vector<float>& logits, const std::vector<TokenId>& hist,
                  int calls) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) s.sample(logits, hist);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
         calls;
}

}  // namespace

int main(int argc, char** argv) {
  int vocab = 262144, calls = 200, rounds = 5;
  std::string out_path = "bench_sampler.json";
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      const auto next = [&]() -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
        return argv[++i];
      };
      if (a == "--vocab") {
        vocab = to_int(a, next());
      } else if (a == "--calls") {
        calls = to_int(a, next());
      } else if (a == "--rounds") {
        rounds = to_int(a, next());
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

  std::mt19937 rng(1);
  std::normal_distribution<float> logit(0.0f, 6.0f);
  std::vector<float> logits(static_cast<size_t>(vocab));
  for (float& v : logits) v = logit(rng);
  std::vector<TokenId> hist;
  for (int i = 0; i < 64; ++i) hist.push_back(static_cast<TokenId>(rng() % vocab));

  const CpuPath saved = active_cpu_path();
  std::vector<CpuPath> paths = {CpuPath::Scalar};
  for (CpuPath p : {CpuPath::Avx2, CpuPath::Avx512Vnni}) {
    if (cpu_path_available(p)) paths.push_back(p);
  }
  const std::vector<Setting> set = settings();
  std::map<std::pair<size_t, size_t>, std::vector<double>> ms;  // (setting, path) -> per round
  for (int r = 0; r < rounds; ++r) {
    for (size_t k = 0; k < set.size(); ++k) {
      for (size_t p = 0; p < paths.size(); ++p) {
        set_cpu_path(paths[p]);
        Sampler s(set[k].params);
        s.sample(logits, {});  // warm: buffers sized
        ms[{k, p}].push_back(
            time_calls(s, logits, set[k].history ? hist : std::vector<TokenId>{}, calls));
      }
    }
  }
  set_cpu_path(saved);

  std::printf("vocabulary %d, %d calls per round, median of %d rounds (ms per sample)\n", vocab,
              calls, rounds);
  std::printf("%-26s", "setting");
  for (CpuPath p : paths) std::printf(" %12s", std::string(to_string(p)).c_str());
  std::printf("\n");
  nlohmann::json out;
  out["vocab"] = vocab;
  out["calls"] = calls;
  out["rounds"] = rounds;
  for (size_t k = 0; k < set.size(); ++k) {
    std::printf("%-26s", set[k].name);
    for (size_t p = 0; p < paths.size(); ++p) {
      std::vector<double> v = ms[{k, p}];
      std::sort(v.begin(), v.end());
      const double med = v[v.size() / 2];
      std::printf(" %12.3f", med);
      out["results"].push_back(
          {{"setting", set[k].name}, {"path", to_string(paths[p])}, {"ms_per_sample", med}});
    }
    std::printf("\n");
  }
  return vsynth::bench::write_json(out_path, out) ? 0 : 1;
}
