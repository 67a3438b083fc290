// Speculative decoding in the loop (kernels/sampler/generator.h) and the n-gram drafter
// (kernels/sampler/drafter.h), on the scripted fake sequence: every case runs the same
// generation with and without speculation and checks they agree token for token, text, finish,
// streaming, hooks and the sequence left behind, and that speculation did save forward passes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/sampler/drafter.h"
#include "kernels/sampler/generator.h"
#include "tests/generation/gen_test_util.h"

using namespace vsynth::kernels;
using vsynth::gentest::FakeSequence;

namespace {

struct Fixture {
  Tokenizer tok{vsynth::gentest::spm_vocab({"a", "b", "c", "d", "e", "x", "\n"})};
  TokenId id(std::string_view piece) const { return *tok.find(piece); }
  std::size_t vocab() const { return tok.size(); }
};

// One run: BOS + `prompt` prefilled, then the loop.
struct Run {
  Generation g;
  std::string streamed;
  int32_t position = 0;     // the sequence's position afterwards
  int forward_passes = 0;   // decode + prefill_all calls during the loop
  std::vector<TokenId> kv;  // the sequence's tokens afterwards
};

Run run(const Fixture& f, const FakeSequence::Prefer& prefer, const std::vector<TokenId>& prompt,
        GenerateOptions o, std::vector<MaskHook*> hooks = {}) {
  FakeSequence seq(f.vocab(), prefer);
  std::vector<TokenId> p{f.tok.bos()};
  p.insert(p.end(), prompt.begin(), prompt.end());
  const auto first = seq.prefill(p);
  const std::vector<float> logits(first.begin(), first.end());
  Run r;
  o.on_text = [&](std::string_view s) { r.streamed += s; };
  r.g = generate(seq, f.tok, logits, o, hooks);
  r.position = seq.position();
  r.forward_passes = seq.decodes + seq.prefill_alls;
  r.kv.assign(seq.tokens().begin(), seq.tokens().end());
  return r;
}

GenerateOptions greedy(int n, DrafterKind d = DrafterKind::None, int max_draft = 4) {
  GenerateOptions o;
  o.sampler.temperature = 0.0f;
  o.max_new_tokens = n;
  o.speculation.drafter = d;
  o.speculation.max_draft = max_draft;
  return o;
}

void check_same(const Run& plain, const Run& spec) {
  CHECK(spec.g.tokens == plain.g.tokens);
  CHECK(spec.g.text == plain.g.text);
  CHECK(spec.g.token_ends == plain.g.token_ends);
  CHECK(spec.g.finish == plain.g.finish);
  CHECK(spec.g.finish_detail == plain.g.finish_detail);
  CHECK(spec.streamed == plain.streamed);
  CHECK(spec.position == plain.position);
  CHECK(spec.kv == plain.kv);
  CHECK(spec.g.logprobs.size() == plain.g.logprobs.size());
}

// A drafter built from a lambda (and counting what the loop told it).
struct ScriptDrafter : Drafter {
  std::function<std::vector<TokenId>(std::span<const TokenId>, int32_t)> guess;
  std::vector<TokenId> out;
  std::vector<std::pair<int32_t, int32_t>> observed;
  std::vector<std::size_t> rewinds;
  std::span<const TokenId> propose(std::span<const TokenId> ctx, int32_t max) override {
    out = guess(ctx, max);
    return out;
  }
  void observe(int32_t d, int32_t a) override { observed.emplace_back(d, a); }
  void rewind(std::size_t n) override { rewinds.push_back(n); }
};

struct LambdaHook : MaskHook {
  std::function<void(const DecodeView&, TokenMask&)> before;
  std::function<HookVerdict(const DecodeView&, TokenId)> after;
  void before_sample(const DecodeView& v, TokenMask& m) override {
    if (before) before(v, m);
  }
  HookVerdict after_sample(const DecodeView& v, TokenId t, std::string_view) override {
    return after ? after(v, t) : HookVerdict::accept();
  }
};

}  // namespace

TEST_CASE("the n-gram drafter proposes what followed the match that reaches furthest back",
          "[speculation][drafter]") {
  NgramDrafter d(1.0);  // a prior keep rate of 1: drafts as long as allowed
  // 1 2 3 4 5 | 9 2 3 7 | 1 2 3: the trigram 1 2 3 occurred at the start (then 4 5), the bigram
  // 2 3 more recently (then 7): the longest n wins.
  const std::vector<TokenId> ctx{1, 2, 3, 4, 5, 9, 2, 3, 7, 1, 2, 3};
  const auto draft = d.propose(ctx, 3);
  CHECK(std::vector<TokenId>(draft.begin(), draft.end()) == std::vector<TokenId>{4, 5, 9});
  CHECK(d.last_match() == 3);
  // Appending 8: only the unigram "8"... never seen: no draft at all.
  std::vector<TokenId> more = ctx;
  more.push_back(8);
  CHECK(d.propose(more, 3).empty());
  // Appending 3 after "8": the bigram "8 3" is new, the unigram "3" last occurred at index 11
  // (followed by 8): every occurrence matches one token back, so the newest wins.
  more.push_back(3);
  const auto d2 = d.propose(more, 2);
  CHECK(std::vector<TokenId>(d2.begin(), d2.end()) == std::vector<TokenId>{8, 3});
  CHECK(d.last_match() == 1);

  // Among occurrences of the same trigram, the one whose match extends further back wins over
  // a newer one: "5 1 2 3" -> 4 at the start, "6 1 2 3" -> 7 later, the context ends "5 1 2 3".
  NgramDrafter e(1.0);
  const std::vector<TokenId> c2{5, 1, 2, 3, 4, 6, 1, 2, 3, 7, 5, 1, 2, 3};
  const auto d3 = e.propose(c2, 1);
  CHECK(std::vector<TokenId>(d3.begin(), d3.end()) == std::vector<TokenId>{4});
  CHECK(e.last_match() == 4);
}

TEST_CASE("a periodic tail extends itself past the context's end", "[speculation][drafter]") {
  NgramDrafter d(1.0);
  const std::vector<TokenId> ctx{5, 1, 2, 1, 2, 1};
  const auto draft = d.propose(ctx, 5);
  CHECK(std::vector<TokenId>(draft.begin(), draft.end()) == std::vector<TokenId>{2, 1, 2, 1, 2});
}

TEST_CASE("rewind unindexes the removed tokens, and a shrinking context without it is refused",
          "[speculation][drafter]") {
  NgramDrafter d(1.0);
  std::vector<TokenId> ctx{1, 2, 3, 1, 2, 6, 4, 5, 1, 2};
  auto draft = d.propose(ctx, 2);
  CHECK(std::vector<TokenId>(draft.begin(), draft.end()) == std::vector<TokenId>{6, 4});
  // Cut back to 1 2 3 1 2 (the "1 2 -> 6" occurrence is gone) and continue differently.
  d.rewind(5);
  ctx.resize(5);
  draft = d.propose(ctx, 2);
  CHECK(std::vector<TokenId>(draft.begin(), draft.end()) == std::vector<TokenId>{3, 1});
  ctx.push_back(7);
  ctx.push_back(1);
  ctx.push_back(2);
  draft = d.propose(ctx, 1);  // "1 2" last at index 3..4 (then 7), not the removed 6
  CHECK(std::vector<TokenId>(draft.begin(), draft.end()) == std::vector<TokenId>{7});
  CHECK_THROWS_WITH(d.propose(std::vector<TokenId>{1, 2}, 1), Catch::Contains("without rewind"));
  d.rewind(0);
  CHECK(d.propose(std::vector<TokenId>{1, 2}, 1).empty());
}

TEST_CASE("draft length follows the keep rate through the cost curve", "[speculation][drafter]") {
  // The cost curve's verdicts: two tokens at an even chance, four when nearly all are kept,
  // nothing at 20% (a rejected draft costs more than the kept tokens save).
  double gain = 0;
  CHECK(NgramDrafter::best_length(0.5, 8, &gain) == 2);
  CHECK(gain == Approx(1.75 / 1.45));
  CHECK(NgramDrafter::best_length(0.95, 8, &gain) == 4);
  CHECK(gain > 2.3);
  CHECK(NgramDrafter::best_length(0.95, 2, &gain) == 2);  // capped by the caller
  NgramDrafter::best_length(0.2, 8, &gain);
  CHECK(gain < 1.0);
  CHECK(NgramDrafter::verify_cost(9) == Approx(2.85 + 0.3));

  // A text that repeats 1..9: every draft is kept, so the rate climbs and the drafts grow.
  NgramDrafter d;
  std::vector<TokenId> ctx{1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3};
  std::vector<std::size_t> lengths;
  for (int i = 0; i < 8; ++i) {
    const auto draft = d.propose(ctx, 8);
    REQUIRE(!draft.empty());
    CHECK(draft[0] == ctx[ctx.size() - 9]);  // the continuation of the period
    lengths.push_back(draft.size());
    d.observe(static_cast<int32_t>(draft.size()), static_cast<int32_t>(draft.size()));
    ctx.insert(ctx.end(), draft.begin(), draft.end());
  }
  // The prompt held two kept trials (2 after 1, 3 after 1 2): a keep rate of ~0.78, three tokens.
  CHECK(lengths.front() == 3);
  std::string shown;
  for (std::size_t l : lengths) shown += std::to_string(l) + " ";
  INFO("lengths " << shown);
  CHECK(std::is_sorted(lengths.begin(), lengths.end()));
  CHECK(lengths.back() >= 3);
  CHECK(d.rate(16) > 0.9);                // the long matches the drafts ran along
  CHECK(d.rate(1) == Approx(2.0 / 3.0));  // one unigram trial (2 after 1), a hit, + the prior
}

TEST_CASE("the keep rates are learnt from the context, drafted or not", "[speculation][drafter]") {
  // A prompt that repeats 1..9 five times: its own repetitions are the trials, so the first
  // proposal already drafts as long as the cost curve pays for at a high keep rate.
  NgramDrafter d;
  std::vector<TokenId> ctx;
  for (int r = 0; r < 5; ++r)
    for (TokenId t = 1; t <= 9; ++t) ctx.push_back(t);
  ctx.push_back(1);
  const auto draft = d.propose(ctx, 8);
  CHECK(draft.size() >= 4);
  CHECK(d.rate(16) > 0.9);

  // "1" recurs, never followed by the same token: the unigram's rate falls with every token
  // appended (no draft needed to learn it), and drafting stops after at most the prior's first
  // few tries.
  NgramDrafter u;
  std::vector<TokenId> c{1, 2};
  int drafts = 0;
  for (int i = 0; i < 64; ++i) {
    c.push_back(i % 2 == 0 ? 1 : 100 + i);
    if (!u.propose(c, 4).empty()) ++drafts;
  }
  CHECK(drafts <= 3);
  CHECK(u.rate(1) < 0.1);  // the prior weighs two trials against ~10 decayed ones
}

TEST_CASE("greedy speculation on a repeating script equals plain decoding with fewer passes",
          "[speculation]") {
  Fixture f;
  const std::vector<TokenId> cycle{f.id("a"), f.id("b"), f.id("c"), f.id("d"), f.id("\n")};
  // The model repeats the cycle, except that every 7th position it says "x".
  auto prefer = [&](int32_t n, TokenId) { return n % 7 == 0 ? f.id("x") : cycle[n % 5]; };
  const std::vector<TokenId> prompt{cycle[1], cycle[2], cycle[3], cycle[4], cycle[0], cycle[1]};
  for (int max_draft : {1, 3, 8}) {
    const Run plain = run(f, prefer, prompt, greedy(40));
    const Run spec = run(f, prefer, prompt, greedy(40, DrafterKind::Ngram, max_draft));
    INFO("max_draft " << max_draft);
    check_same(plain, spec);
    CHECK(plain.g.verify_steps == 0);
    CHECK(plain.g.decode_steps == 39);
    CHECK(spec.g.accepted > 0);
    CHECK(spec.g.accepted <= spec.g.drafted);
    CHECK(spec.g.drafted <= max_draft * spec.g.verify_steps);
    CHECK(spec.forward_passes == spec.g.verify_steps + spec.g.decode_steps);
    // Every accepted draft token is a forward pass saved.
    CHECK(spec.forward_passes == plain.forward_passes - spec.g.accepted);
    CHECK(spec.forward_passes < plain.forward_passes);
  }
}

TEST_CASE("a draft stops at EOG, a stop string and the token budget exactly as plain decoding",
          "[speculation]") {
  Fixture f;
  const std::vector<TokenId> cycle{f.id("a"), f.id("b"), f.id("c"), f.id("d")};
  auto repeat = [&](int32_t n, TokenId) { return cycle[n % 4]; };
  const std::vector<TokenId> prompt{cycle[1], cycle[2], cycle[3], cycle[0], cycle[1], cycle[2]};
  SECTION("EOG inside a draft") {
    auto eog_at = [&](int32_t n, TokenId t) { return n == 15 ? f.tok.eos() : repeat(n, t); };
    const Run plain = run(f, eog_at, prompt, greedy(30));
    const Run spec = run(f, eog_at, prompt, greedy(30, DrafterKind::Ngram, 8));
    check_same(plain, spec);
    CHECK(spec.g.finish == FinishReason::Eog);
    CHECK(spec.g.accepted > 0);
  }
  SECTION("a stop string completed inside a draft") {
    GenerateOptions o = greedy(30);
    o.stop = {"dab"};
    const Run plain = run(f, repeat, prompt, o);
    o.speculation = {.drafter = DrafterKind::Ngram, .max_draft = 8};
    const Run spec = run(f, repeat, prompt, o);
    check_same(plain, spec);
    CHECK(spec.g.finish == FinishReason::Stop);
  }
  SECTION("max_new_tokens and context_limit cap the draft") {
    for (int n : {1, 2, 5, 9}) {
      const Run plain = run(f, repeat, prompt, greedy(n));
      const Run spec = run(f, repeat, prompt, greedy(n, DrafterKind::Ngram, 8));
      check_same(plain, spec);
      CHECK(spec.g.drafted <= std::max(0, n - 2));  // never past the last token committed
    }
    GenerateOptions o = greedy(30);
    o.context_limit = 12;
    const Run plain = run(f, repeat, prompt, o);
    o.speculation = {.drafter = DrafterKind::Ngram, .max_draft = 8};
    const Run spec = run(f, repeat, prompt, o);
    check_same(plain, spec);
    CHECK(spec.g.finish == FinishReason::Context);
  }
}

TEST_CASE("hooks see every token: a banned draft token ends the draft, rollbacks still work",
          "[speculation][hook]") {
  Fixture f;
  const std::vector<TokenId> cycle{f.id("a"), f.id("b"), f.id("c"), f.id("d")};
  auto repeat = [&](int32_t n, TokenId) { return cycle[n % 4]; };
  const std::vector<TokenId> prompt{cycle[1], cycle[2], cycle[3], cycle[0], cycle[1], cycle[2]};
  SECTION("a before_sample ban") {
    std::vector<std::size_t> seen_plain, seen_spec;
    auto make = [&](std::vector<std::size_t>& seen) {
      auto h = std::make_unique<LambdaHook>();
      h->before = [&seen, &f](const DecodeView& v, TokenMask& m) {
        seen.push_back(v.generated.size());
        if (v.generated.size() % 5 == 3) m.ban(f.id("c"));
      };
      return h;
    };
    auto hp = make(seen_plain), hs = make(seen_spec);
    const Run plain = run(f, repeat, prompt, greedy(24), {hp.get()});
    const Run spec = run(f, repeat, prompt, greedy(24, DrafterKind::Ngram, 8), {hs.get()});
    check_same(plain, spec);
    CHECK(seen_spec == seen_plain);  // one call per position, in order
    CHECK(spec.g.accepted > 0);
    CHECK(spec.g.accepted < spec.g.drafted);  // the bans cut drafts short
  }
  SECTION("reject and rollback verdicts") {
    auto make = [&] {
      auto h = std::make_unique<LambdaHook>();
      h->after = [&f, banned = kNoToken, done = false](const DecodeView& v, TokenId t) mutable {
        if (v.generated.size() == 9 && (banned == kNoToken || banned == t)) {
          banned = t;
          return HookVerdict::reject("not that at 9");
        }
        if (v.generated.size() == 14 && !done) {
          done = true;
          return HookVerdict::rollback(6, f.id("d"), "not d at 6");
        }
        return HookVerdict::accept();
      };
      return h;
    };
    auto hp = make(), hs = make();
    GenerateOptions o = greedy(24);
    std::size_t retracted_plain = 0, retracted_spec = 0;
    o.on_retract = [&](std::size_t n) { retracted_plain += n; };
    Run plain = run(f, repeat, prompt, o, {hp.get()});
    o.speculation = {.drafter = DrafterKind::Ngram, .max_draft = 8};
    o.on_retract = [&](std::size_t n) { retracted_spec += n; };
    Run spec = run(f, repeat, prompt, o, {hs.get()});
    // Streams differ only by what was retracted; compare the final texts and counts.
    CHECK(spec.g.tokens == plain.g.tokens);
    CHECK(spec.g.text == plain.g.text);
    CHECK(spec.g.rejections >= 1);
    CHECK(spec.g.rejections == plain.g.rejections);
    CHECK(spec.g.rollbacks == 1);
    CHECK(spec.g.rollbacks == plain.g.rollbacks);
    CHECK(spec.position == plain.position);
    CHECK(spec.kv == plain.kv);
    CHECK(retracted_spec == retracted_plain);
    CHECK(spec.g.accepted > 0);
  }
}

TEST_CASE("wrong drafts cost no output change, and a failing drafter falls back to plain decoding",
          "[speculation]") {
  Fixture f;
  const std::vector<TokenId> cycle{f.id("a"), f.id("b"), f.id("c"), f.id("d")};
  auto repeat = [&](int32_t n, TokenId) { return cycle[n % 4]; };
  const std::vector<TokenId> prompt{cycle[1], cycle[2]};
  const Run plain = run(f, repeat, prompt, greedy(20));

  ScriptDrafter wrong;  // always "x x x", never right
  wrong.guess = [&](std::span<const TokenId>, int32_t max) {
    return std::vector<TokenId>(static_cast<std::size_t>(max), f.id("x"));
  };
  GenerateOptions o = greedy(20);
  o.speculation = {.max_draft = 3, .custom = &wrong};
  const Run spec = run(f, repeat, prompt, o);
  check_same(plain, spec);
  CHECK(spec.g.accepted == 0);
  // A draft after tokens 1..18; the 19th is the last but one: nothing may follow the 20th.
  CHECK(spec.g.verify_steps == 18);
  CHECK(spec.g.decode_steps == 1);
  CHECK(wrong.rewinds == std::vector<std::size_t>{0});
  REQUIRE(wrong.observed.size() == 18);
  CHECK(wrong.observed[0] == std::pair<int32_t, int32_t>{3, 0});

  ScriptDrafter broken;
  int calls = 0;
  broken.guess = [&](std::span<const TokenId>, int32_t) -> std::vector<TokenId> {
    if (++calls == 3) throw std::runtime_error("index corrupt");
    return {};
  };
  o.speculation.custom = &broken;
  const Run fb = run(f, repeat, prompt, o);
  check_same(plain, fb);
  CHECK_THAT(fb.g.speculation_fallback, Catch::Contains("from token 3: index corrupt"));
  CHECK(calls == 3);

  ScriptDrafter bad_id;
  bad_id.guess = [](std::span<const TokenId>, int32_t) { return std::vector<TokenId>{1 << 30}; };
  o.speculation.custom = &bad_id;
  const Run fb2 = run(f, repeat, prompt, o);
  check_same(plain, fb2);
  CHECK_THAT(fb2.g.speculation_fallback, Catch::Contains("outside the vocabulary"));

  o.speculation = {.drafter = DrafterKind::Ngram, .max_draft = 0};
  CHECK_THROWS_WITH(run(f, repeat, prompt, o), Catch::Contains("max_draft = 0 is invalid"));
}

TEST_CASE("a draft limit shrinks drafts and turns speculation off, the output unchanged",
          "[speculation]") {
  Fixture f;
  const std::vector<TokenId> cycle{f.id("a"), f.id("b"), f.id("c"), f.id("d")};
  auto repeat = [&](int32_t n, TokenId) { return cycle[n % 4]; };
  const std::vector<TokenId> prompt{cycle[1], cycle[2]};
  const Run plain = run(f, repeat, prompt, greedy(30));

  // A drafter that always knows the continuation and drafts as much as it is let.
  ScriptDrafter oracle;
  std::vector<int32_t> asked;  // the max_tokens of each proposal
  oracle.guess = [&](std::span<const TokenId> ctx, int32_t max) {
    asked.push_back(max);
    std::vector<TokenId> d;
    for (int32_t i = 0; i < max; ++i)
      d.push_back(cycle[(ctx.size() + static_cast<std::size_t>(i)) % 4]);
    return d;
  };
  // The limit as a loaded scheduler would move it: full, halved, off, full again.
  std::vector<int32_t> limits;  // what each call returned
  int call = 0;
  GenerateOptions o = greedy(30);
  o.speculation = {.max_draft = 4, .custom = &oracle};
  o.speculation.draft_limit = [&](int32_t requested) {
    CHECK(requested == 4);
    const int k = call++;
    const int32_t l = k < 2 ? requested : k < 4 ? requested / 2 : k < 9 ? 0 : requested;
    limits.push_back(l);
    return l;
  };
  const Run spec = run(f, repeat, prompt, o);
  check_same(plain, spec);
  CHECK(spec.g.accepted == spec.g.drafted);  // the oracle is always right
  const auto offs = std::count(limits.begin(), limits.end(), 0);
  CHECK(offs == 5);
  CHECK(spec.g.undrafted_steps == offs);
  // Every proposal was asked for at most what the limit allowed at that call.
  std::vector<int32_t> allowed;
  for (int32_t l : limits) {
    if (l > 0) allowed.push_back(l);
  }
  REQUIRE(asked.size() == allowed.size());
  for (std::size_t i = 0; i < asked.size(); ++i) CHECK(asked[i] <= allowed[i]);
  CHECK(asked[2] == 2);
  CHECK(spec.g.verify_steps == static_cast<int32_t>(asked.size()));
  // The calls that turned drafting off were plain decodes.
  CHECK(spec.g.decode_steps >= offs);
  CHECK(spec.forward_passes == spec.g.verify_steps + spec.g.decode_steps);

  // A limit above max_draft or below 0 is clamped into [0, max_draft].
  asked.clear();
  o.speculation.draft_limit = [](int32_t) { return 99; };
  const Run over = run(f, repeat, prompt, o);
  check_same(plain, over);
  CHECK(*std::max_element(asked.begin(), asked.end()) == 4);
  o.speculation.draft_limit = [](int32_t) { return -3; };
  const Run under = run(f, repeat, prompt, o);
  check_same(plain, under);
  CHECK(under.g.verify_steps == 0);
  CHECK(under.g.undrafted_steps == 29);
}

TEST_CASE("drafter kinds parse from their names", "[speculation][drafter]") {
  CHECK(parse_drafter_kind("ngram") == DrafterKind::Ngram);
  CHECK(parse_drafter_kind("none") == DrafterKind::None);
  CHECK(parse_drafter_kind("model") == DrafterKind::Model);
  CHECK(parse_drafter_kind("self") == DrafterKind::Self);
  CHECK_FALSE(parse_drafter_kind("fast").has_value());
  for (DrafterKind k :
       {DrafterKind::None, DrafterKind::Ngram, DrafterKind::Model, DrafterKind::Self}) {
    CHECK(parse_drafter_kind(to_string(k)) == k);
  }
  CHECK(std::string(to_string(DrafterKind::Ngram)) == "ngram");
  CHECK(make_drafter(DrafterKind::None) == nullptr);
  CHECK(make_drafter(DrafterKind::Ngram) != nullptr);
}
