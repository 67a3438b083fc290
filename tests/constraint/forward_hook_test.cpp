// The forward hook driven directly with a scripted token stream (what the decoding loop would
// show it): a return that breaks the spec is rolled back to the token where its statement
// starts, with that token banned; a good statement is accepted; a statement that starts in the
// token being judged is rejected; the backtrack bound is respected; rollbacks by anyone
// forget the statements checked past the kept text.
#include <catch2/catch.hpp>

#include "stages/constraint/forward_hook.h"
#include "stages/generation/answer_program.h"
#include "tests/constraint/util.h"

namespace cs = vsynth::stages::constraint;
namespace k = vsynth::kernels;

namespace {

const vsynth::solvers::FunctionContract& clamp_contract() {
  static const auto c =
      vsynth::solvers::parse_contract("def clamp(x: int, lo: int, hi: int) -> int:", {"lo <= hi"},
                                      {"lo <= result <= hi", "x < lo or x > hi or result == x"});
  return c;
}

// A sequence as the decoding loop holds it: token ids are the positions' 1000 + index.
struct Stream {
  std::vector<k::TokenId> tokens;
  std::string text;
  std::vector<std::size_t> ends;

  k::DecodeView view() const { return {{}, tokens, text, ends, nullptr}; }
  k::TokenId next_id() const { return static_cast<k::TokenId>(1000 + tokens.size()); }
  // Offers `piece` to the hook; commits it on accept.
  k::HookVerdict offer(cs::ForwardHook& h, const std::string& piece) {
    k::HookVerdict v = h.after_sample(view(), next_id(), piece);
    if (v.kind == k::HookVerdict::Kind::Accept) {
      tokens.push_back(next_id());
      text += piece;
      ends.push_back(text.size());
    }
    return v;
  }
  void rollback(std::size_t kept) {
    tokens.resize(kept);
    ends.resize(kept);
    text.resize(kept == 0 ? 0 : ends.back());
  }
};

cs::ProgramShape complete_shape() {
  cs::ProgramShape s;
  s.prefix = "def clamp(x: int, lo: int, hi: int) -> int:\n    \"\"\"Clamp.\"\"\"\n";
  return s;
}

cs::ForwardSettings settings(int max_backtracks = 4) {
  cs::ForwardSettings s;
  s.max_backtracks = max_backtracks;
  s.timeout_ms = 20000;  // verdicts, not timeouts, even on a loaded machine
  return s;
}

}  // namespace

TEST_CASE("forward hook: a bad return is rolled back to its first token, which is banned") {
  cs::ForwardHook hook(settings(), clamp_contract(), "python", complete_shape());
  Stream s;
  for (const char* p : {"    if", " x", " > hi", ":", "\n"}) {
    REQUIRE(s.offer(hook, p).kind == k::HookVerdict::Kind::Accept);
  }
  REQUIRE(s.offer(hook, "        return").kind == k::HookVerdict::Kind::Accept);
  REQUIRE(s.offer(hook, " x").kind == k::HookVerdict::Kind::Accept);
  const k::HookVerdict v = s.offer(hook, "\n");
  REQUIRE(v.kind == k::HookVerdict::Kind::Rollback);
  CHECK(v.position == 5);  // "        return" is token 5
  CHECK(v.ban == 1005);
  CHECK_THAT(v.reason, Catch::Contains("returned") && Catch::Contains("result <= hi"));
  CHECK(hook.stats().rollbacks == 1);
  CHECK(hook.stats().violations == 1);

  // The loop rolls back and the model writes a good statement instead: accepted.
  s.rollback(v.position);
  hook.on_rollback(v.position);
  for (const char* p : {"        return", " hi", "\n", "    return", " max(lo, x)", "\n"}) {
    CHECK(s.offer(hook, p).kind == k::HookVerdict::Kind::Accept);
  }
  CHECK(hook.stats().rollbacks == 1);
  // One check per return: the refuted `return x`, then `return hi` and `return max(lo, x)`
  // (the `if` condition is total: nothing to check).
  CHECK(hook.stats().checks == 3);
  CHECK(hook.stats().boundaries == 4);
  CHECK(hook.stats().token_us.size() == 14);  // one timing per call
}

TEST_CASE("forward hook: refuted again under a branch, the rollback goes back to its header") {
  // The counterexample's path runs through `if x > hi:`. When the statement in that branch is
  // refuted a second time, the branch itself is suspect: roll back to the header and ban it.
  cs::ForwardHook hook(settings(), clamp_contract(), "python", complete_shape());
  Stream s;
  for (const char* p : {"    if", " x", " > hi", ":", "\n"}) {
    REQUIRE(s.offer(hook, p).kind == k::HookVerdict::Kind::Accept);
  }
  REQUIRE(s.offer(hook, "        return").kind == k::HookVerdict::Kind::Accept);
  const k::HookVerdict first = s.offer(hook, " x\n");
  REQUIRE(first.kind == k::HookVerdict::Kind::Rollback);
  CHECK(first.position == 5);
  s.rollback(first.position);
  hook.on_rollback(first.position);
  REQUIRE(s.offer(hook, "        return ").kind == k::HookVerdict::Kind::Accept);
  const k::HookVerdict second = s.offer(hook, "x + 1\n");
  REQUIRE(second.kind == k::HookVerdict::Kind::Rollback);
  CHECK(second.position == 0);  // "    if" is token 0
  CHECK(second.ban == 1000);
  CHECK(hook.stats().rollbacks == 2);
  bool escalated = false;
  for (const std::string& e : hook.stats().events) {
    escalated |= e.find("enclosing branch at line") != std::string::npos;
  }
  CHECK(escalated);
  // A header outside the generated text (in the prompt) cannot be rolled back to: the
  // statement itself is, as before.
  cs::ForwardHook top(settings(), clamp_contract(), "python", complete_shape());
  Stream t;
  for (int round = 0; round < 2; ++round) {
    REQUIRE(t.offer(top, "    return").kind == k::HookVerdict::Kind::Accept);
    const k::HookVerdict v = t.offer(top, " x\n");
    REQUIRE(v.kind == k::HookVerdict::Kind::Rollback);
    CHECK(v.position == 0);
    t.rollback(v.position);
    top.on_rollback(v.position);
  }
}

TEST_CASE("forward hook: a statement that starts in the judged token is rejected") {
  cs::ForwardHook hook(settings(), clamp_contract(), "python", complete_shape());
  Stream s;
  const k::HookVerdict v = s.offer(hook, "    return x\n");
  CHECK(v.kind == k::HookVerdict::Kind::Reject);
  CHECK(hook.stats().rejections == 1);
  CHECK(s.offer(hook, "    return max(lo, min(x, hi))\n").kind == k::HookVerdict::Kind::Accept);
}

TEST_CASE("forward hook: the backtrack bound is respected, then the candidate continues") {
  cs::ForwardHook hook(settings(2), clamp_contract(), "python", complete_shape());
  Stream s;
  int interventions = 0;
  for (int round = 0; round < 4; ++round) {
    REQUIRE(s.offer(hook, "    return").kind == k::HookVerdict::Kind::Accept);
    const k::HookVerdict v = s.offer(hook, " lo\n");
    if (v.kind == k::HookVerdict::Kind::Rollback) {
      ++interventions;
      CHECK(v.position == 0);
      s.rollback(v.position);
      hook.on_rollback(v.position);
    } else {
      CHECK(v.kind == k::HookVerdict::Kind::Accept);
      break;
    }
  }
  CHECK(interventions == 2);
  CHECK(hook.stats().gave_up);
  CHECK(s.text == "    return lo\n");
  // Later statements are not checked any more.
  const int checks = hook.stats().checks;
  CHECK(s.offer(hook, "    return x\n").kind == k::HookVerdict::Kind::Accept);
  CHECK(hook.stats().checks == checks);
}

TEST_CASE("forward hook: instruct answers are read inside their code fence") {
  cs::ProgramShape shape;
  shape.instruct = true;
  shape.entry_point = "clamp";
  shape.extract_code = &vsynth::stages::generation::extract_code;  // what generate.llm passes
  cs::ForwardHook hook(settings(), clamp_contract(), "python", shape);
  Stream s;
  for (const char* p : {"Here", " is", " the code:\n", "```python\n",
                        "def clamp(x: int, lo: int, hi: int) -> int:\n", "    if x < lo:\n",
                        "        return", " lo\n", "    return", " hi"}) {
    REQUIRE(s.offer(hook, p).kind == k::HookVerdict::Kind::Accept);
  }
  // `return hi` is wrong when lo <= x <= hi; it is judged at its newline.
  const k::HookVerdict v = s.offer(hook, "\n");
  REQUIRE(v.kind == k::HookVerdict::Kind::Rollback);
  CHECK(v.position == 8);
}

TEST_CASE("forward hook: C statements are judged at semicolons") {
  nlohmann::json j = {{"language", "c"},
                      {"signature", "int clamp(int x, int lo, int hi)"},
                      {"spec", {{"requires", {"lo <= hi"}}, {"ensures", {"lo <= result <= hi"}}}}};
  const auto spec = cs::task_spec(vsynth::graph::Task{"c", j}, "");
  REQUIRE(spec);
  cs::ProgramShape shape;
  shape.prefix = "int clamp(int x, int lo, int hi) {\n";
  cs::ForwardHook hook(settings(), spec->contract, "c", shape);
  Stream s;
  for (const char* p : {"  if (x < lo)", " return lo", ";", "\n", "  return", " x"}) {
    REQUIRE(s.offer(hook, p).kind == k::HookVerdict::Kind::Accept);
  }
  const k::HookVerdict v = s.offer(hook, ";");
  REQUIRE(v.kind == k::HookVerdict::Kind::Rollback);
  CHECK(v.position == 4);
}

TEST_CASE("forward hook: statistics reach the facet when the hook is dropped") {
  cs::ConstraintStatsFacet facet;
  {
    cs::ForwardStats st;
    st.candidate = 0;
    cs::ForwardHook hook(settings(), clamp_contract(), "python", complete_shape(), st,
                         [&](cs::ForwardStats&& done) { facet.candidates.push_back(done); });
    Stream s;
    s.offer(hook, "    return");
    s.offer(hook, " x\n");
  }
  REQUIRE(facet.candidates.size() == 1);
  const nlohmann::json j = facet.to_json();
  CHECK(j["tokens"] == 2);
  CHECK(j["rejections"] == 0);
  CHECK(j["rollbacks"] == 1);
  CHECK(j["p99_token_us"].get<double>() >= j["p50_token_us"].get<double>());
  CHECK(j["candidates"][0]["checks"].get<int>() >= 1);
  CHECK(cs::percentile({3, 1, 2, 4}, 50) == 2);
  CHECK(cs::percentile({3, 1, 2, 4}, 99) == 4);
}
