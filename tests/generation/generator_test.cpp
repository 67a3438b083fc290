// The decoding loop (kernels/sampler/generator.h) on a scripted fake sequence: budgets, EOG,
// stop strings across tokens, streaming hold-back, and every hook verdict including rollback.
#include <catch2/catch.hpp>

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "kernels/sampler/generator.h"
#include "tests/generation/gen_test_util.h"

using namespace vsynth::kernels;
using vsynth::gentest::byte_token;
using vsynth::gentest::FakeSequence;

namespace {

struct Fixture {
  Tokenizer tok{vsynth::gentest::spm_vocab({"a", "b", "ab", "cd", "ef", "x"})};
  TokenId id(std::string_view piece) const { return *tok.find(piece); }
  std::size_t vocab() const { return tok.size(); }

  GenerateOptions greedy(int n) const {
    GenerateOptions o;
    o.sampler.temperature = 0.0f;
    o.max_new_tokens = n;
    return o;
  }
  // Prefills BOS and runs the loop.
  Generation run(FakeSequence& seq, const GenerateOptions& o,
                 std::vector<MaskHook*> hooks = {}) const {
    const std::vector<TokenId> prompt{tok.bos()};
    const auto logits = seq.prefill(prompt);
    const std::vector<float> copy(logits.begin(), logits.end());
    return generate(seq, tok, copy, o, hooks);
  }
};

// A hook built from lambdas.
struct LambdaHook : MaskHook {
  std::function<void(const DecodeView&, TokenMask&)> before;
  std::function<HookVerdict(const DecodeView&, TokenId)> after;
  std::vector<std::size_t> rolled_back_to;
  void before_sample(const DecodeView& v, TokenMask& m) override {
    if (before) before(v, m);
  }
  HookVerdict after_sample(const DecodeView& v, TokenId t, std::string_view) override {
    return after ? after(v, t) : HookVerdict::accept();
  }
  void on_rollback(std::size_t kept) override { rolled_back_to.push_back(kept); }
  std::function<std::optional<PrefixKeep>(const DecodeView&)> keep;
  std::optional<PrefixKeep> complete_prefix(const DecodeView& v) override {
    return keep ? keep(v) : std::nullopt;
  }
};

}  // namespace

TEST_CASE("the loop stops at max_new_tokens without decoding the last token", "[generator]") {
  Fixture f;
  const TokenId a = f.id("a");
  FakeSequence seq(f.vocab(), [&](int32_t, TokenId) { return a; });
  const Generation g = f.run(seq, f.greedy(5));
  CHECK(g.tokens == std::vector<TokenId>(5, a));
  CHECK(g.text == "aaaaa");
  CHECK(g.finish == FinishReason::Length);
  CHECK(seq.decodes == 4);
  CHECK(g.token_ends == std::vector<std::size_t>{1, 2, 3, 4, 5});
  REQUIRE(g.logprobs.size() == 5);
  CHECK(g.logprob_sum == Approx(5 * g.logprobs[0]));
  CHECK(g.logprobs[0] < 0.0f);
  CHECK(g.logprobs[0] > -0.1f);  // 10 vs 5 vs 0s: the favourite holds ~99% of the mass
}

TEST_CASE("an EOG token ends the generation and is not part of it", "[generator]") {
  Fixture f;
  const TokenId a = f.id("a");
  // Sequence length 3 (BOS + 2 generated) -> EOS next.
  FakeSequence seq(f.vocab(), [&](int32_t n, TokenId) { return n >= 3 ? f.tok.eos() : a; });
  const Generation g = f.run(seq, f.greedy(10));
  CHECK(g.finish == FinishReason::Eog);
  CHECK(g.tokens.size() == 2);
  CHECK(g.text == "aa");
  GenerateOptions o = f.greedy(4);
  o.stop_at_eog = false;  // then it is a plain token (rendering as nothing)
  FakeSequence seq2(f.vocab(), [&](int32_t n, TokenId) { return n >= 3 ? f.tok.eos() : a; });
  const Generation g2 = f.run(seq2, o);
  CHECK(g2.finish == FinishReason::Length);
  CHECK(g2.tokens.size() == 4);
}

TEST_CASE("a stop string spanning tokens cuts the text and is never streamed", "[generator]") {
  Fixture f;
  const std::vector<TokenId> script{f.id("ab"), f.id("cd"), f.id("ef")};
  FakeSequence seq(f.vocab(), [&](int32_t n, TokenId) { return script[(n - 1) % 3]; });
  GenerateOptions o = f.greedy(10);
  o.stop = {"bc"};
  std::string streamed;
  o.on_text = [&](std::string_view s) { streamed += s; };
  const Generation g = f.run(seq, o);
  CHECK(g.finish == FinishReason::Stop);
  CHECK(g.finish_detail == "bc");
  CHECK(g.text == "a");
  CHECK(g.tokens.size() == 2);  // the token that completed the match stays
  CHECK(g.token_ends == std::vector<std::size_t>{1, 1});
  CHECK(streamed == "a");
}

TEST_CASE("streaming holds back half a UTF-8 character", "[generator]") {
  Fixture f;
  const std::vector<TokenId> script{byte_token(0xE2), byte_token(0x82), byte_token(0xAC),
                                    f.id("x")};
  FakeSequence seq(f.vocab(), [&](int32_t n, TokenId) { return script[(n - 1) % 4]; });
  GenerateOptions o = f.greedy(4);
  std::vector<std::string> chunks;
  o.on_text = [&](std::string_view s) { chunks.emplace_back(s); };
  const Generation g = f.run(seq, o);
  CHECK(g.text ==
        "\xE2\x82\xAC"
        "x");
  CHECK(chunks == std::vector<std::string>{"\xE2\x82\xAC", "x"});
}

TEST_CASE("before_sample bans steer every step", "[generator][hook]") {
  Fixture f;
  const TokenId a = f.id("a");
  FakeSequence seq(f.vocab(), [&](int32_t, TokenId) { return a; });
  LambdaHook ban_a;
  ban_a.before = [&](const DecodeView&, TokenMask& m) { m.ban(a); };
  const Generation g = f.run(seq, f.greedy(3), {&ban_a});
  CHECK(g.tokens == std::vector<TokenId>(3, a + 1));  // the runner-up
  CHECK(g.text == "bbb");

  LambdaHook none;
  none.before = [&](const DecodeView&, TokenMask& m) { m.allow_only({}); };
  FakeSequence seq2(f.vocab(), [&](int32_t, TokenId) { return a; });
  const Generation g2 = f.run(seq2, f.greedy(3), {&none});
  CHECK(g2.finish == FinishReason::Masked);
  CHECK(g2.tokens.empty());
}

TEST_CASE("a rejected token is banned at its position and resampled", "[generator][hook]") {
  Fixture f;
  const TokenId a = f.id("a");
  FakeSequence seq(f.vocab(), [&](int32_t, TokenId) { return a; });
  LambdaHook h;
  h.after = [&](const DecodeView& v, TokenId t) {
    return v.generated.size() == 2 && t == a ? HookVerdict::reject("no a at 2")
                                             : HookVerdict::accept();
  };
  const Generation g = f.run(seq, f.greedy(4), {&h});
  CHECK(g.text == "aaba");
  CHECK(g.rejections == 1);
  CHECK(g.steps == 5);
  CHECK(g.finish == FinishReason::Length);
}

TEST_CASE("a rollback truncates the sequence, re-derives the logits and bans the token",
          "[generator][hook]") {
  Fixture f;
  const TokenId a = f.id("a");
  FakeSequence seq(f.vocab(), [&](int32_t, TokenId) { return a; });
  LambdaHook h;
  bool done = false;
  h.after = [&](const DecodeView& v, TokenId) {
    if (v.generated.size() == 4 && !done) {
      done = true;
      CHECK(v.text == "aaaa");
      return HookVerdict::rollback(1, a, "position 1 must not be a");
    }
    return HookVerdict::accept();
  };
  std::string streamed;
  std::size_t retracted = 0;
  GenerateOptions o = f.greedy(5);
  o.on_text = [&](std::string_view s) { streamed += s; };
  o.on_retract = [&](std::size_t n) {
    retracted += n;
    streamed.resize(streamed.size() - n);
  };
  const Generation g = f.run(seq, o, {&h});
  CHECK(g.text == "abaaa");
  CHECK(streamed == "abaaa");
  CHECK(retracted == 3);
  CHECK(g.rollbacks == 1);
  CHECK(h.rolled_back_to == std::vector<std::size_t>{1});
  // The engine kept BOS, re-evaluated generated token 0 to get position 1's logits.
  CHECK(seq.rollbacks == std::vector<int32_t>{1});
  CHECK(g.logprobs.size() == 5);
  CHECK(g.token_ends.back() == 5);
  // The sequence holds BOS and the first four kept tokens (the fifth is never evaluated).
  CHECK(seq.position() == 5);

  // Rolling back to the current position is just a ban, no engine work.
  FakeSequence seq2(f.vocab(), [&](int32_t, TokenId) { return a; });
  LambdaHook here;
  here.after = [&](const DecodeView& v, TokenId t) {
    return v.generated.size() == 1 && t == a ? HookVerdict::rollback(1, a, "")
                                             : HookVerdict::accept();
  };
  const Generation g2 = f.run(seq2, f.greedy(3), {&here});
  CHECK(g2.text == "aba");
  CHECK(seq2.rollbacks.empty());
}

TEST_CASE("hook verdicts are bounded and invalid rollbacks are refused", "[generator][hook]") {
  Fixture f;
  const TokenId a = f.id("a");
  LambdaHook never;
  never.after = [](const DecodeView&, TokenId) { return HookVerdict::reject("never"); };
  FakeSequence seq(f.vocab(), [&](int32_t, TokenId) { return a; });
  GenerateOptions o = f.greedy(5);
  o.max_hook_retries = 3;
  const Generation g = f.run(seq, o, {&never});
  CHECK(g.finish == FinishReason::HookLimit);
  CHECK(g.rejections == 4);
  CHECK(g.tokens.empty());

  LambdaHook stop;
  stop.after = [](const DecodeView& v, TokenId) {
    return v.generated.size() == 2 ? HookVerdict::stop("enough") : HookVerdict::accept();
  };
  FakeSequence seq2(f.vocab(), [&](int32_t, TokenId) { return a; });
  const Generation g2 = f.run(seq2, f.greedy(5), {&stop});
  CHECK(g2.finish == FinishReason::Hook);
  CHECK(g2.finish_detail == "enough");
  CHECK(g2.text == "aa");

  LambdaHook far;
  far.after = [](const DecodeView& v, TokenId) {
    return v.generated.size() == 3 ? HookVerdict::rollback(0, kNoToken, "") : HookVerdict::accept();
  };
  FakeSequence seq3(f.vocab(), [&](int32_t, TokenId) { return a; });
  seq3.min_rollback = 2;  // e.g. sliding-window keys already freed
  CHECK_THROWS_WITH(f.run(seq3, f.greedy(5), {&far}), Catch::Contains("can only roll back to 2"));
  LambdaHook ahead;
  ahead.after = [](const DecodeView&, TokenId) { return HookVerdict::rollback(7, 0, ""); };
  FakeSequence seq4(f.vocab(), [&](int32_t, TokenId) { return a; });
  CHECK_THROWS_WITH(f.run(seq4, f.greedy(5), {&ahead}), Catch::Contains("only 0 tokens"));
}

TEST_CASE("the context limit ends the generation", "[generator]") {
  Fixture f;
  const TokenId a = f.id("a");
  FakeSequence seq(f.vocab(), [&](int32_t, TokenId) { return a; });
  GenerateOptions o = f.greedy(10);
  o.context_limit = 4;  // BOS + 3
  const Generation g = f.run(seq, o);
  CHECK(g.finish == FinishReason::Context);
  CHECK(g.tokens.size() == 3);
  CHECK(seq.position() <= 4);
}

TEST_CASE("a cancel flag set during streaming ends the loop at the next step", "[generator]") {
  Fixture f;
  const TokenId a = f.id("a");
  FakeSequence seq(f.vocab(), [&](int32_t, TokenId) { return a; });
  std::atomic<bool> cancel{false};
  GenerateOptions o = f.greedy(50);
  o.cancel = &cancel;
  std::string shown;
  o.on_text = [&](std::string_view t) {
    shown += t;
    if (shown.size() >= 3) cancel.store(true);  // the client leaves after 3 bytes
  };
  const Generation g = f.run(seq, o);
  CHECK(g.finish == FinishReason::Cancelled);
  CHECK(g.tokens.size() == 3);
  CHECK(g.text == "aaa");
  CHECK(std::string(to_string(g.finish)) == "cancelled");
}

TEST_CASE("a cancel flag already set generates nothing", "[generator]") {
  Fixture f;
  const TokenId a = f.id("a");
  FakeSequence seq(f.vocab(), [&](int32_t, TokenId) { return a; });
  std::atomic<bool> cancel{true};
  GenerateOptions o = f.greedy(5);
  o.cancel = &cancel;
  const Generation g = f.run(seq, o);
  CHECK(g.finish == FinishReason::Cancelled);
  CHECK(g.tokens.empty());
}

TEST_CASE("a budget cut keeps the shortest complete prefix the hooks name, retracting the stream",
          "[generator][hook]") {
  Fixture f;
  const TokenId a = f.id("a"), b = f.id("b");
  // a b a b a b ...: the hooks see the text the budget cut.
  FakeSequence seq(f.vocab(), [&](int32_t pos, TokenId) { return pos % 2 ? a : b; });
  LambdaHook grammar, other, silent;
  std::string seen;
  grammar.keep = [&](const DecodeView& v) {
    seen = std::string(v.text);
    return std::optional<PrefixKeep>(PrefixKeep{4, "grammar"});
  };
  other.keep = [](const DecodeView&) { return std::optional<PrefixKeep>(PrefixKeep{3, "other"}); };
  std::string streamed;
  std::size_t retracted = 0;
  GenerateOptions o = f.greedy(6);
  o.on_text = [&](std::string_view s) { streamed += s; };
  o.on_retract = [&](std::size_t n) {
    retracted += n;
    streamed.resize(streamed.size() - n);
  };
  const Generation g = f.run(seq, o, {&silent, &grammar, &other});
  CHECK(seen == "ababab");
  CHECK(g.text == "aba");  // the shortest opinion wins
  CHECK(g.tokens == std::vector<TokenId>{a, b, a});
  CHECK(g.token_ends == std::vector<std::size_t>{1, 2, 3});
  CHECK(g.logprobs.size() == 3);
  CHECK(g.finish == FinishReason::Length);
  CHECK(g.trimmed == 3);
  CHECK(g.trimmed_by == "other");
  CHECK(g.finish_detail.find("trimmed 3 tokens") != std::string::npos);
  CHECK(streamed == "aba");  // what was streamed of the tail was retracted
  CHECK(retracted == 3);
  CHECK(grammar.rolled_back_to == std::vector<std::size_t>{3});
  CHECK(silent.rolled_back_to == std::vector<std::size_t>{3});
  CHECK(seq.position() == 4);  // BOS + the kept tokens

  SECTION("no opinion, or a keep at the full length, leaves the output as it was") {
    FakeSequence s2(f.vocab(), [&](int32_t pos, TokenId) { return pos % 2 ? a : b; });
    grammar.keep = [](const DecodeView& v) {
      return std::optional<PrefixKeep>(PrefixKeep{v.generated.size(), "grammar"});
    };
    const Generation g2 = f.run(s2, f.greedy(6), {&silent, &grammar});
    CHECK(g2.text == "ababab");
    CHECK(g2.trimmed == 0);
    CHECK(g2.finish_detail.empty());
  }
  SECTION("an end of generation is not trimmed") {
    FakeSequence s3(f.vocab(), [&](int32_t pos, TokenId) { return pos == 3 ? f.tok.eos() : a; });
    const Generation g3 = f.run(s3, f.greedy(6), {&grammar, &other});
    CHECK(g3.finish == FinishReason::Eog);
    CHECK(g3.text == "aa");
    CHECK(g3.trimmed == 0);
  }
  SECTION("a trim the KV cache cannot roll back to is not made, and the detail says so") {
    FakeSequence s4(f.vocab(), [&](int32_t pos, TokenId) { return pos % 2 ? a : b; });
    s4.min_rollback = 5;  // BOS + 3 kept tokens is position 4
    const Generation g4 = f.run(s4, f.greedy(6), {&other});
    CHECK(g4.text == "ababab");
    CHECK(g4.trimmed == 0);
    CHECK(g4.finish_detail.find("not trimmed") != std::string::npos);
  }
}
