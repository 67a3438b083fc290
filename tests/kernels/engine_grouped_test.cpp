// The engine regroups its Q8_0 and Q5_0 matrices at load (kernels/cpu/grouped.h) for speed
// only: logits from prefill, prefill_all and decode on the default model (a tied q8_0
// embedding, q8_0 and q5_0 attn_v, q5_0 q / k / gate / up) must be bit-identical with the
// regrouping turned off (VSYNTH_GROUPED=0), for 1 and 2 threads, and with the regrouped copies
// on small pages (VSYNTH_HUGE_PAGES=0).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/cpu/grouped.h"
#include "tests/kernels/engine_test_util.h"
#include "tests/test_skip.h"

using namespace vsynth::kernels;

namespace {

struct Logits {
  std::vector<float> all;  // prefill_all over the prompt, then each decode step's row
};

// The logits with VSYNTH_GROUPED and VSYNTH_HUGE_PAGES set as given (nullptr: unset).
Logits run(const char* grouped_env, const char* huge_env, int threads) {
  const auto set = [](const char* name, const char* value) {
    if (value == nullptr) {
      unsetenv(name);
    } else {
      setenv(name, value, 1);
    }
  };
  set("VSYNTH_GROUPED", grouped_env);
  set("VSYNTH_HUGE_PAGES", huge_env);
  ModelOptions o;
  o.threads = threads;
  o.context_length = 256;
  auto m = Model::load(vsynth::test::default_model(), o);
  unsetenv("VSYNTH_GROUPED");
  unsetenv("VSYNTH_HUGE_PAGES");
  auto seq = m->new_sequence();
  const std::vector<TokenId> prompt = m->tokenizer().encode("def fibonacci(n):\n    \"\"\"Return");
  Logits out;
  const auto first = seq->prefill_all(prompt);
  out.all.assign(first.begin(), first.end());
  TokenId next = 1000;
  for (int step = 0; step < 4; ++step) {
    const auto row = seq->decode(next);
    out.all.insert(out.all.end(), row.begin(), row.end());
    next = static_cast<TokenId>(std::max_element(row.begin(), row.end()) - row.begin());
  }
  return out;
}

}  // namespace

TEST_CASE("engine: grouped q8_0 and q5_0 weights give the plain weights' logits",
          "[engine][grouped]") {
  if (!vsynth::test::have_default_model()) VSYNTH_SKIP("the default model is not installed");
  if (!grouping_available(DType::Q8_0)) VSYNTH_SKIP("this CPU path has no grouped kernels");
  for (int threads : {1, 2}) {
    INFO("threads " << threads);
    const Logits plain = run("0", nullptr, threads), grouped = run(nullptr, nullptr, threads);
    REQUIRE(plain.all.size() == grouped.all.size());
    CHECK(std::memcmp(plain.all.data(), grouped.all.data(), sizeof(float) * plain.all.size()) == 0);
  }
}

TEST_CASE("engine: the regrouped weights on small pages give the same logits as on huge pages",
          "[engine][grouped]") {
  if (!vsynth::test::have_default_model()) VSYNTH_SKIP("the default model is not installed");
  if (!grouping_available(DType::Q8_0)) VSYNTH_SKIP("this CPU path has no grouped kernels");
  const Logits small = run(nullptr, "0", 2), huge = run(nullptr, nullptr, 2);
  REQUIRE(small.all.size() == huge.all.size());
  CHECK(std::memcmp(small.all.data(), huge.all.data(), sizeof(float) * small.all.size()) == 0);
}

TEST_CASE("engine: a VSYNTH_HUGE_PAGES value other than 0 or 1 fails the load, naming both",
          "[engine][grouped]") {
  if (!vsynth::test::have_default_model()) VSYNTH_SKIP("the default model is not installed");
  if (!grouping_available(DType::Q8_0)) VSYNTH_SKIP("this CPU path has no grouped kernels");
  setenv("VSYNTH_HUGE_PAGES", "yes", 1);
  ModelOptions o;
  o.context_length = 256;
  CHECK_THROWS_WITH(Model::load(vsynth::test::default_model(), o),
                    Catch::Contains("VSYNTH_HUGE_PAGES='yes'") && Catch::Contains("use 1") &&
                        Catch::Contains("or 0"));
  unsetenv("VSYNTH_HUGE_PAGES");
}
