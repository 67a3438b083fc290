// Speculative decoding through the real engine: greedy output token-identical to plain decoding
// on the synthetic golden models (llama with GQA, qwen2 with biases; .cache/golden-models, from
// scripts/setup.sh) and the default model; with temperature > 0, the same output distribution
// (a two-sample test over thousands of seeds) and the same output for the same seed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kernels/engine.h"
#include "kernels/sampler/drafter.h"
#include "kernels/sampler/generator.h"
#include "tests/test_skip.h"

using namespace vsynth::kernels;

namespace {

std::filesystem::path synth_model(const std::string& arch) {
  const auto p = std::filesystem::path(VSYNTH_SOURCE_DIR) / ".cache/golden-models" /
                 ("model_" + arch + "_synth.gguf");
  if (!std::filesystem::exists(p)) {
    FAIL(p.string() << " is absent: run scripts/setup.sh (scripts/golden/setup-models.sh)");
  }
  return p;
}

std::shared_ptr<Model> load(const std::filesystem::path& p, int32_t ctx = 1024, int threads = 2) {
  ModelOptions o;
  o.threads = threads;
  o.context_length = ctx;
  return Model::load(p, o);
}

Generation run(Model& m, const std::vector<TokenId>& prompt, const GenerateOptions& o) {
  auto seq = m.new_sequence();
  const auto first = seq->prefill(prompt);
  const std::vector<float> logits(first.begin(), first.end());
  Generation g = generate(*seq, m.tokenizer(), logits, o);
  // The sequence holds what plain decoding leaves: the prompt and the evaluated tokens.
  const auto held = static_cast<std::size_t>(seq->position());
  CHECK(held >= prompt.size() + g.tokens.size() - (g.tokens.empty() ? 0 : 1));
  CHECK(held <= prompt.size() + g.tokens.size());
  return g;
}

// Prompts that repeat themselves: BOS, then random segments each seen two or three times with
// random tokens between them (ids from the model's normal range).
std::vector<std::vector<TokenId>> repetitive_prompts(const Model& m, int count, uint32_t seed) {
  const auto vocab = static_cast<TokenId>(m.config().vocab_size);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<TokenId> id(3, std::min<TokenId>(vocab - 1, 300));
  std::vector<std::vector<TokenId>> out;
  for (int i = 0; i < count; ++i) {
    std::vector<TokenId> p{m.tokenizer().bos()};
    std::vector<TokenId> seg(4 + i % 6);
    for (TokenId& t : seg) t = id(rng);
    for (int r = 0; r < 2 + i % 2; ++r) {
      p.insert(p.end(), seg.begin(), seg.end());
      for (int k = 0; k < 1 + i % 3; ++k) p.push_back(id(rng));
    }
    out.push_back(std::move(p));
  }
  return out;
}

GenerateOptions greedy(int n) {
  GenerateOptions o;
  o.sampler.temperature = 0.0f;
  o.max_new_tokens = n;
  o.stop_at_eog = false;  // random weights emit EOS anywhere; keep the runs long
  return o;
}

// A deterministic drafter that always guesses a fixed continuation (here: the greedy output),
// so that under sampling it is right often and wrong often.
struct FixedDrafter : Drafter {
  std::vector<TokenId> script;  // the guessed generated tokens, from generated position 0
  std::size_t prompt_len = 0;
  std::vector<TokenId> out;
  std::span<const TokenId> propose(std::span<const TokenId> ctx, int32_t max) override {
    out.clear();
    for (std::size_t i = ctx.size() - prompt_len;
         i < script.size() && out.size() < std::size_t(max); ++i) {
      out.push_back(script[i]);
    }
    return out;
  }
  void observe(int32_t, int32_t) override {}
  void rewind(std::size_t) override {}
};

}  // namespace

// What exactness rests on: a row of a batched pass is bit for bit the logits a decode step
// gives at that position, wherever the batch starts and ends relative to the KV blocks (32
// positions) and after rollbacks. A difference in the last bit of an attention sum is enough:
// these int8-activation models amplify it to a logit change of ~1 within a few layers.
TEST_CASE("prefill_all rows equal decode logits bit for bit, across KV block boundaries",
          "[speculation][engine]") {
  // 8 threads: attention splits each head's keys over threads (as on a big machine), which is
  // where a batch used to sum the key ranges in other groups than decode.
  for (const std::string arch : {"llama", "qwen2"}) {
    auto m = load(synth_model(arch), 1024, 8);
    std::mt19937 rng(11);
    std::uniform_int_distribution<TokenId> id(3,
                                              std::min<TokenId>(m->config().vocab_size - 1, 300));
    std::vector<TokenId> text{m->tokenizer().bos()};
    for (int i = 0; i < 400; ++i) text.push_back(id(rng));
    for (int plen : {29, 31, 60, 63, 126, 254, 286, 287, 316, 319, 350}) {
      for (int k : {2, 3, 5, 9}) {
        const std::vector<TokenId> prompt(text.begin(), text.begin() + plen);
        const std::span<const TokenId> batch = std::span(text).subspan(plen, k);
        auto by_decode = m->new_sequence();
        by_decode->prefill(prompt);
        auto batched = m->new_sequence();
        batched->prefill(prompt);
        // A rolled-back draft first: the cache must not remember it.
        batched->prefill_all(std::span(text).subspan(plen + 20, 7));
        batched->rollback(plen);
        const std::span<const float> rows = batched->prefill_all(batch);
        const std::size_t V = rows.size() / batch.size();
        for (int j = 0; j < k; ++j) {
          const std::span<const float> d = by_decode->decode(batch[j]);
          const std::span<const float> r = rows.subspan(j * V, V);
          INFO(arch << ": prompt " << plen << ", batch of " << k << ", row " << j);
          REQUIRE(std::equal(d.begin(), d.end(), r.begin()));
        }
      }
    }
  }
}

// The same on the default model (one KV head, so attention splits every head's keys over the
// threads): before attention summed P V in fixed groups of blocks, a batch that crossed a block
// boundary (318 + 3 tokens crosses 320) summed row 0's keys in other groups than decode did,
// and its logits moved by up to 0.9.
TEST_CASE("prefill_all rows equal decode logits bit for bit on the default model",
          "[speculation][engine][slow]") {
  if (!vsynth::test::have_default_model()) return;
  auto m = load(vsynth::test::default_model(), 2048);
  std::mt19937 rng(5);
  std::uniform_int_distribution<TokenId> id(1000, 20000);
  std::vector<TokenId> text{m->tokenizer().bos()};
  for (int i = 0; i < 560; ++i) text.push_back(id(rng));
  auto base = m->new_sequence();
  for (int plen : {300, 318, 319, 350, 509, 510}) {
    base->prefill(std::span(text).subspan(static_cast<std::size_t>(base->position()),
                                          static_cast<std::size_t>(plen - base->position())));
    for (int k : {2, 3, 5}) {
      const std::span<const TokenId> batch = std::span(text).subspan(plen, k);
      auto by_decode = base->fork();
      auto batched = base->fork();
      const std::span<const float> rows = batched->prefill_all(batch);
      const std::size_t V = rows.size() / batch.size();
      for (int j = 0; j < k; ++j) {
        const std::span<const float> d = by_decode->decode(batch[j]);
        INFO("prompt " << plen << ", batch of " << k << ", row " << j);
        REQUIRE(std::equal(d.begin(), d.end(), rows.begin() + j * V));
      }
    }
  }
}

TEST_CASE("greedy speculation is token-identical to plain decoding on the synthetic models",
          "[speculation][engine]") {
  for (const std::string arch : {"llama", "qwen2"}) {
    auto m = load(synth_model(arch));
    int32_t accepted = 0, drafted = 0, steps = 0;
    for (const auto& prompt : repetitive_prompts(*m, 24, 7)) {
      const Generation plain = run(*m, prompt, greedy(40));
      for (int max_draft : {2, 5, 8}) {
        GenerateOptions o = greedy(40);
        o.speculation = {.drafter = DrafterKind::Ngram, .max_draft = max_draft};
        const Generation spec = run(*m, prompt, o);
        INFO(arch << " max_draft " << max_draft << " prompt of " << prompt.size());
        REQUIRE(spec.tokens == plain.tokens);
        CHECK(spec.text == plain.text);
        CHECK(spec.finish == plain.finish);
        for (std::size_t i = 0; i < spec.logprobs.size(); ++i) {
          CHECK(spec.logprobs[i] == Approx(plain.logprobs[i]).margin(1e-3));
        }
        accepted += spec.accepted;
        drafted += spec.drafted;
        steps += spec.verify_steps;
      }
    }
    WARN(arch << "_synth greedy: " << accepted << " of " << drafted << " drafted tokens kept in "
              << steps << " verify steps");
    CHECK(accepted > 0);
    CHECK(accepted < drafted);  // both branches ran
  }
}

TEST_CASE("sampled speculation keeps the output distribution and is reproducible per seed",
          "[speculation][engine]") {
  auto m = load(synth_model("llama"));
  const std::vector<TokenId> prompt = repetitive_prompts(*m, 1, 3)[0];
  constexpr int kPositions = 4;  // the first generated positions compared
  constexpr int kSeeds = 3000;   // per side

  GenerateOptions base;
  base.max_new_tokens = kPositions;
  base.stop_at_eog = false;
  // The whole sampler pipeline defines p: penalties, temperature, top-k, top-p, min-p.
  base.sampler = {.temperature = 0.7f,
                  .top_k = 20,
                  .top_p = 0.9f,
                  .min_p = 0.02f,
                  .repeat_penalty = 1.2f,
                  .repeat_last_n = 16};

  FixedDrafter drafter;  // guesses the greedy continuation
  drafter.script = run(*m, prompt, greedy(kPositions)).tokens;
  drafter.prompt_len = prompt.size();
  GenerateOptions spec_opt = base;
  spec_opt.speculation = {.max_draft = kPositions, .custom = &drafter};

  // counts[position][token], for each side; disjoint seeds make the samples independent.
  std::vector<std::map<TokenId, int>> plain_counts(kPositions), spec_counts(kPositions);
  int64_t accepted = 0, drafted = 0, same_seed_same = 0;
  for (int s = 0; s < kSeeds; ++s) {
    GenerateOptions p = base;
    p.sampler.seed = static_cast<uint64_t>(kSeeds + s);
    const Generation gp = run(*m, prompt, p);
    spec_opt.sampler.seed = static_cast<uint64_t>(s);
    const Generation gs = run(*m, prompt, spec_opt);
    REQUIRE(gp.tokens.size() == kPositions);
    REQUIRE(gs.tokens.size() == kPositions);
    for (int i = 0; i < kPositions; ++i) {
      ++plain_counts[i][gp.tokens[i]];
      ++spec_counts[i][gs.tokens[i]];
    }
    accepted += gs.accepted;
    drafted += gs.drafted;
    if (s < 200) {  // same seed: speculation draws the same random stream
      const Generation again = run(*m, prompt, spec_opt);
      CHECK(again.tokens == gs.tokens);
      p.sampler.seed = static_cast<uint64_t>(s);
      same_seed_same += run(*m, prompt, p).tokens == gs.tokens;
    }
  }
  // Both outcomes of the acceptance rule must be common for the test to mean anything.
  WARN("kept " << accepted << " of " << drafted << " drafted tokens; same seed, same output as "
               << "plain decoding in " << same_seed_same << "/200");
  CHECK(accepted > drafted / 10);
  CHECK(accepted < drafted * 9 / 10);

  // Per (position, token): |f_spec - f_plain| against 5 standard deviations of the difference of
  // two independent frequencies, sqrt(2 p (1 - p) / N) at the pooled p, plus 1/N for the
  // discreteness of rare tokens. With ~100 cells a false alarm has odds < 1e-4.
  double worst = 0.0;
  for (int i = 0; i < kPositions; ++i) {
    std::map<TokenId, std::pair<int, int>> cells;
    for (auto [t, c] : plain_counts[i]) cells[t].first = c;
    for (auto [t, c] : spec_counts[i]) cells[t].second = c;
    for (auto [t, c] : cells) {
      const double fp = static_cast<double>(c.first) / kSeeds;
      const double fs = static_cast<double>(c.second) / kSeeds;
      const double pooled = (fp + fs) / 2;
      const double bound = 5.0 * std::sqrt(2.0 * pooled * (1.0 - pooled) / kSeeds) + 1.0 / kSeeds;
      worst = std::max(worst, std::fabs(fs - fp) / bound);
      INFO("position " << i << " token " << t << ": plain " << fp << " spec " << fs << " bound "
                       << bound);
      CHECK(std::fabs(fs - fp) <= bound);
    }
  }
  WARN("largest |f_spec - f_plain| / bound: " << worst);
}

TEST_CASE("greedy speculation is token-identical on the default model (code with repetition)",
          "[speculation][engine][slow]") {
  if (!vsynth::test::have_default_model()) return;
  auto m = load(vsynth::test::default_model(), 2048);
  const Tokenizer& tok = m->tokenizer();
  const std::vector<std::string> prompts = {
      "def add_one(x):\n    return x + 1\n\ndef add_two(x):\n    return x + 2\n\ndef "
      "add_three(x):\n",
      "struct Point { int x; int y; };\nstruct Size { int w; int h; };\nstruct Rect { Point "
      "origin; Size size; };\nint area(const Rect& r) { return r.size.w * r.size.h; }\nint "
      "perimeter(const Rect& r) {",
      "The quick brown fox jumps over the lazy dog. The quick brown fox",
  };
  int32_t accepted = 0;
  for (const std::string& text : prompts) {
    const std::vector<TokenId> prompt = tok.encode(text, {.add_special = true});
    GenerateOptions o = greedy(48);
    o.stop_at_eog = true;
    const Generation plain = run(*m, prompt, o);
    o.speculation = {.drafter = DrafterKind::Ngram, .max_draft = 4};
    const Generation spec = run(*m, prompt, o);
    INFO(text);
    CHECK(spec.tokens == plain.tokens);
    CHECK(spec.text == plain.text);
    accepted += spec.accepted;
  }
  CHECK(accepted > 0);
}
