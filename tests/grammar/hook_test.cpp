// The grammar hook driven directly with scripted token streams (what the decoding loop shows
// it): a token no program continues with is rejected and the resample at that position gets the
// full mask; the end of generation waits for a complete program; instruct answers are free
// outside the code block; rollbacks and another hook's rejections are followed; a language it
// does not constrain stops the candidate with a verdict; the same stream gives the same masks.
#include <catch2/catch.hpp>

#include <algorithm>

#include "stages/grammar/grammar_hook.h"
#include "tests/generation/gen_test_util.h"
#include "tests/grammar/util.h"

namespace g = vsynth::stages::grammar;
namespace k = vsynth::kernels;
namespace graph = vsynth::graph;
namespace facets = vsynth::stages::facets;
using Kind = k::HookVerdict::Kind;

namespace {

const std::string kSp = "\xE2\x96\x81";  // SPM's space

const k::Tokenizer& tokenizer() {
  static const k::Tokenizer tok(vsynth::gentest::spm_vocab({"def",
                                                            kSp + "f",
                                                            "(x)",
                                                            ":",
                                                            "\n",
                                                            kSp + kSp + kSp + kSp + "return",
                                                            kSp + "x",
                                                            "(",
                                                            ")",
                                                            "]",
                                                            "'",
                                                            "```python\n",
                                                            "```",
                                                            "Here" + kSp + "is",
                                                            kSp + "1",
                                                            "}",
                                                            "+",
                                                            "```c\n",
                                                            "int" + kSp + "f()",
                                                            kSp + "{",
                                                            kSp + "}",
                                                            kSp + "no",
                                                            "t"}));
  return tok;
}

k::TokenId id(const std::string& piece) {
  std::string spm;
  for (char c : piece) spm += c == ' ' ? kSp : std::string(1, c);
  const auto t = tokenizer().find(spm);
  REQUIRE(t);
  return *t;
}

// A sequence as the decoding loop holds it.
struct Stream {
  std::vector<k::TokenId> tokens;
  std::string text;
  std::vector<std::size_t> ends;

  k::DecodeView view() const { return {{}, tokens, text, ends, &tokenizer()}; }
  // The loop's step: the hook's mask, then its verdict on `t`; commits `t` on accept.
  k::HookVerdict offer(k::MaskHook& h, k::TokenId t, k::TokenMask* mask = nullptr) {
    k::TokenMask m;
    h.before_sample(view(), m);
    if (mask) *mask = m;
    const std::string piece = tokenizer().is_eog(t) ? "" : tokenizer().piece(t);
    const k::HookVerdict v = h.after_sample(view(), t, piece);
    if (v.kind == Kind::Accept && !tokenizer().is_eog(t)) {
      tokens.push_back(t);
      text += piece;
      ends.push_back(text.size());
    }
    return v;
  }
  void rollback(k::MaskHook& h, std::size_t kept) {
    tokens.resize(kept);
    ends.resize(kept);
    text.resize(kept == 0 ? 0 : ends.back());
    h.on_rollback(kept);
  }
};

std::shared_ptr<const g::VocabTable> table() {
  static const auto t = std::make_shared<const g::VocabTable>(tokenizer());
  return t;
}

std::unique_ptr<g::GrammarMask> hook(g::Program::Shape shape, g::GrammarStats* out = nullptr) {
  return std::make_unique<g::GrammarMask>(table(), std::move(shape), g::GrammarStats{},
                                          [out](g::GrammarStats&& s) {
                                            if (out) *out = std::move(s);
                                          });
}

g::Program::Shape complete_py(std::string prefix) {
  g::Program::Shape s;
  s.prefix = std::move(prefix);
  return s;
}

bool banned(const k::TokenMask& m, k::TokenId t) {
  if (m.allowed && std::find(m.allowed->begin(), m.allowed->end(), t) == m.allowed->end()) {
    return true;
  }
  return std::find(m.banned.begin(), m.banned.end(), t) != m.banned.end();
}

}  // namespace

TEST_CASE("grammar hook: a bad token is rejected, the resample is masked", "[grammar][hook]") {
  g::GrammarStats stats;
  auto h = hook(complete_py("def f(x):\n"), &stats);
  Stream s;
  k::TokenMask m;
  CHECK(s.offer(*h, id("    return"), &m).kind == Kind::Accept);
  CHECK(m.unconstrained());  // no mask until a token was refused
  CHECK(s.offer(*h, id("(")).kind == Kind::Accept);
  CHECK(s.offer(*h, id(" x")).kind == Kind::Accept);
  // The end of generation with `(` open, then `}` closing the wrong bracket: both refused.
  CHECK(s.offer(*h, tokenizer().eos()).kind == Kind::Reject);
  const k::HookVerdict v = s.offer(*h, id("}"), &m);
  CHECK(v.kind == Kind::Reject);
  CHECK(v.reason.find("grammar") != std::string::npos);
  // The next try at this position carries the full mask: `}`, `]` and the end are out, `)`
  // and `+` are in.
  CHECK(s.offer(*h, id(")"), &m).kind == Kind::Accept);
  CHECK_FALSE(m.unconstrained());
  CHECK(banned(m, id("}")));
  CHECK(banned(m, id("]")));
  CHECK(banned(m, tokenizer().eos()));
  CHECK_FALSE(banned(m, id(")")));
  CHECK_FALSE(banned(m, id("+")));
  CHECK(s.offer(*h, tokenizer().eos()).kind == Kind::Accept);  // complete now
  CHECK(s.text == "    return( x)");
  h.reset();
  CHECK(stats.rejections == 1);
  CHECK(stats.eog_rejections == 1);
  CHECK(stats.full_masks == 2);       // the script offered `}` against the first one
  CHECK(stats.token_us.size() == 5);  // four tokens and the end
  CHECK(stats.stood_aside.empty());
}

TEST_CASE("grammar hook: known-bad Python and C continuations", "[grammar][hook]") {
  Stream a;  // `)` with no open bracket
  auto h = hook(complete_py("def f(x):\n    return 1"));
  CHECK(a.offer(*h, id(")")).kind == Kind::Reject);
  Stream b;  // `def` then not a name
  h = hook(complete_py(""));
  CHECK(b.offer(*h, id("def")).kind == Kind::Accept);
  CHECK(b.offer(*h, id(" 1")).kind == Kind::Reject);
  Stream c;  // an unterminated string, then a newline
  h = hook(complete_py("x = "));
  CHECK(c.offer(*h, id("'")).kind == Kind::Accept);
  CHECK(c.offer(*h, id(" x")).kind == Kind::Accept);
  CHECK(c.offer(*h, id("\n")).kind == Kind::Reject);
  Stream d;  // `}` at the top level of C
  g::Program::Shape cs;
  cs.language = g::Language::C;
  h = hook(cs);
  CHECK(d.offer(*h, id("int f()")).kind == Kind::Accept);
  CHECK(d.offer(*h, id(" {")).kind == Kind::Accept);
  CHECK(d.offer(*h, id(" }")).kind == Kind::Accept);
  CHECK(d.offer(*h, id(" }")).kind == Kind::Reject);
}

TEST_CASE("grammar hook: instruct answers are free outside the python block", "[grammar][hook]") {
  g::Program::Shape sh;
  sh.instruct = true;
  auto h = hook(sh);
  Stream s;
  for (const char* p : {"Here is", ")", "}", "\n"}) CHECK(s.offer(*h, id(p)).kind == Kind::Accept);
  CHECK(s.offer(*h, id("```python\n")).kind == Kind::Accept);
  CHECK(s.offer(*h, id(")")).kind == Kind::Reject);  // inside the block
  for (const char* p : {"def", " f", "(x)", ":", "\n"})
    CHECK(s.offer(*h, id(p)).kind == Kind::Accept);
  CHECK(s.offer(*h, id("```")).kind == Kind::Reject);  // the block would close on `def f(x):`
  CHECK(s.offer(*h, tokenizer().eos()).kind == Kind::Reject);  // so would the answer
  for (const char* p : {"    return", " x", "\n"}) CHECK(s.offer(*h, id(p)).kind == Kind::Accept);
  CHECK(s.offer(*h, id("```")).kind == Kind::Accept);
  CHECK(s.offer(*h, id(")")).kind == Kind::Accept);  // prose again
  CHECK(s.offer(*h, tokenizer().eos()).kind == Kind::Accept);
}

TEST_CASE("grammar hook: instruct code may continue the task's given function", "[grammar][hook]") {
  g::Program::Shape sh;
  sh.instruct = true;
  sh.given_code = "def f(x):\n    '''doc'''\n";
  auto h = hook(sh);
  Stream s;
  CHECK(s.offer(*h, id("```python\n")).kind == Kind::Accept);
  // Indented at once: only the reading after the given code stays alive.
  for (const char* p : {"    return", " x", "\n", "```"})
    CHECK(s.offer(*h, id(p)).kind == Kind::Accept);
}

TEST_CASE("grammar hook: rollbacks and other hooks' rejections are followed", "[grammar][hook]") {
  auto h = hook(complete_py("x = "));
  Stream s;
  CHECK(s.offer(*h, id("(")).kind == Kind::Accept);
  CHECK(s.offer(*h, id(" x")).kind == Kind::Accept);
  CHECK(s.offer(*h, id(")")).kind == Kind::Accept);
  s.rollback(*h, 0);  // back before `(`
  CHECK(s.offer(*h, id(")")).kind == Kind::Reject);
  // The hook accepts `(`, a later hook refuses it: the loop never commits it.
  k::TokenMask m;
  h->before_sample(s.view(), m);
  CHECK(h->after_sample(s.view(), id("("), "(").kind == Kind::Accept);
  CHECK(s.offer(*h, id(" x")).kind == Kind::Accept);
  CHECK(s.offer(*h, id(")")).kind == Kind::Reject);  // judged without the `(`
}

TEST_CASE("grammar hook: the same stream gives the same masks", "[grammar][hook]") {
  auto run = [] {
    auto h = hook(complete_py("def f(x):\n"));
    Stream s;
    std::vector<std::vector<k::TokenId>> masks;
    for (const char* p : {"    return", "}", " x", "+", "]", "(", ")"}) {
      k::TokenMask m;
      s.offer(*h, id(p), &m);
      masks.push_back(m.banned);
      if (m.allowed) masks.push_back(*m.allowed);
    }
    return masks;
  };
  const auto a = run();
  CHECK(a == run());
  std::size_t nonempty = 0;
  for (const auto& m : a) nonempty += !m.empty();
  CHECK(nonempty >= 2);
}

TEST_CASE("grammar hook: prompt code that does not parse makes it stand aside", "[grammar][hook]") {
  g::GrammarStats stats;
  auto h = hook(complete_py("x = )"), &stats);
  Stream s;
  CHECK(s.offer(*h, id(")")).kind == Kind::Accept);
  h.reset();
  CHECK(stats.stood_aside.find("does not parse") != std::string::npos);
}

TEST_CASE("hook.grammar: a language it does not constrain stops the candidate, naming them",
          "[grammar][hook]") {
  g::GrammarSettings settings;
  settings.languages = {g::Language::Python};
  g::GrammarHook resource(settings);
  graph::Item item(graph::Task{"t", nlohmann::json::object()}, 0);
  facets::HookContext ctx{.tokenizer = tokenizer(),
                          .prompt = "",
                          .language = "c",
                          .mode = "complete",
                          .prefix = "",
                          .suffix = "",
                          .given_code = "",
                          .entry_point = ""};
  auto h = resource.make(item, ctx);
  REQUIRE(h);
  Stream s;
  const k::HookVerdict v = s.offer(*h, id("int f()"));
  CHECK(v.kind == Kind::Stop);
  CHECK(v.reason == "grammar: language `c` is not supported (supported: python)");
  settings.stop_other = false;
  g::GrammarHook passing(settings);
  CHECK_FALSE(passing.make(item, ctx));  // generated without the hook
  ctx.language = "python";
  CHECK(passing.make(item, ctx));
  CHECK(item.find<g::GrammarStatsFacet>());
}

TEST_CASE("grammar hook: a budget cut keeps the longest prefix where the program was complete",
          "[grammar][hook][trim]") {
  auto keep = [](k::MaskHook& h, const Stream& s) -> std::optional<std::size_t> {
    const auto k = h.complete_prefix(s.view());
    if (k) CHECK(k->by == "grammar");
    return k ? std::optional<std::size_t>(k->keep) : std::nullopt;
  };
  SECTION("complete mode: the half-written statement goes") {
    g::GrammarStats stats;
    auto h = hook(complete_py("def f(x):\n"), &stats);
    Stream s;
    for (const char* p : {"    return", " x", "\n", "    return", "(", " x"})
      REQUIRE(s.offer(*h, id(p)).kind == Kind::Accept);
    CHECK(keep(*h, s) == 4u);  // `    return x\n    return`: the last complete point
    s.rollback(*h, 4);         // as the loop does after trimming
    CHECK_FALSE(keep(*h, s));  // complete as it is: no opinion
    h.reset();
    CHECK(stats.trimmed_tokens == 2);
  }
  SECTION("a cut inside a word is not a complete point") {
    auto h = hook(complete_py("x = "));
    Stream s;
    for (const char* p : {" no", "t"}) REQUIRE(s.offer(*h, id(p)).kind == Kind::Accept);
    CHECK(vsynth::gramtest::whole(g::Language::Python, "x = no"));
    CHECK_FALSE(keep(*h, s));  // `x = no` parses, but the budget cut the word `not`
  }
  SECTION("with trim_incomplete off it has no opinion") {
    auto h = std::make_unique<g::GrammarMask>(table(), complete_py("def f(x):\n"),
                                              g::GrammarStats{}, nullptr, false);
    Stream s;
    for (const char* p : {"    return", " x", "\n", "    return", "("})
      REQUIRE(s.offer(*h, id(p)).kind == Kind::Accept);
    CHECK_FALSE(keep(*h, s));
  }
  SECTION("instruct mode: inside the python block, with some code in it") {
    g::Program::Shape sh;
    sh.instruct = true;
    auto h = hook(sh);
    Stream s;
    for (const char* p : {"Here is", "\n", "```python\n", "def", " f"})
      REQUIRE(s.offer(*h, id(p)).kind == Kind::Accept);
    CHECK_FALSE(keep(*h, s));  // only the empty block was complete: no opinion
    for (const char* p : {"(x)", ":", "\n", "    return", " x", "\n", "def", " f", "("})
      REQUIRE(s.offer(*h, id(p)).kind == Kind::Accept);
    REQUIRE(keep(*h, s) == 11u);
    const std::string kept = s.text.substr(0, s.ends[10]);
    CHECK(kept == "Here is\n```python\ndef f(x):\n    return x\n");
    CHECK(vsynth::gramtest::whole(g::Language::Python, kept.substr(kept.find('\n', 8) + 1)));
    Stream prose;  // an answer cut in its prose is complete as it is
    auto h2 = hook(sh);
    REQUIRE(prose.offer(*h2, id("Here is")).kind == Kind::Accept);
    CHECK_FALSE(keep(*h2, prose));
  }
}
