// Model::forward_batch: a step over several sequences gives every row the bits that evaluating
// its sequence alone with the same call gives (decode / prefill / prefill_all), for mixed rows,
// FP16 and INT8 KV, a sliding-window model (gemma3) and a plain one (llama), 1 and 2 threads;
// chunked prefills equal one prefill; bad rows are refused before anything is evaluated.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "tests/kernels/engine_test_util.h"
#include "tests/test_skip.h"

using namespace vsynth::kernels;
using namespace vsynth::kernels::test;

namespace {

std::vector<int32_t> toks(size_t n, int vocab, uint32_t seed) {
  std::vector<int32_t> t(n);
  uint32_t x = seed;
  for (auto& v : t) {
    x = x * 1664525u + 1013904223u;
    v = 4 + static_cast<int32_t>((x >> 8) % static_cast<uint32_t>(vocab - 4));
  }
  return t;
}

BatchRow row(Sequence* s, std::span<const int32_t> t, RowLogits logits = RowLogits::Last,
             bool publish = false) {
  BatchRow r;
  r.sequence = s;
  r.tokens = t;
  r.logits = logits;
  r.publish = publish;
  return r;
}

std::vector<float> copy(std::span<const float> s) {
  return {s.begin(), s.end()};
}

std::shared_ptr<Model> tiny(const std::string& arch, KvType kv, int threads) {
  TinySpec spec;
  spec.arch = arch;
  ModelOptions o;
  o.kv_type = kv;
  o.threads = threads;
  o.context_length = 2048;
  return Model::load(write_tiny_model(spec, "tiny_batch_" + arch + ".gguf"), o);
}

// One row of the matrix: a sequence holding `history`, then evaluating `step` as `kind`.
struct Case {
  std::vector<int32_t> history;
  std::vector<int32_t> step;
  RowLogits logits;
  bool publish;
};

// Alone: the Sequence call that the row stands for.
std::vector<float> alone(Sequence& s, const Case& c) {
  if (c.logits == RowLogits::All) return copy(s.prefill_all(c.step));
  if (!c.publish && c.step.size() == 1) return copy(s.decode(c.step[0]));
  return copy(s.prefill(c.step));
}

std::vector<Case> mixed_cases(int vocab) {
  return {
      {toks(40, vocab, 1), toks(1, vocab, 2), RowLogits::Last, false},   // decode
      {toks(70, vocab, 3), toks(1, vocab, 4), RowLogits::Last, false},   // decode, sliding
      {{}, toks(100, vocab, 5), RowLogits::Last, true},                  // prefill, 3+ blocks
      {toks(33, vocab, 6), toks(5, vocab, 7), RowLogits::All, false},    // verify
      {toks(10, vocab, 8), toks(600, vocab, 9), RowLogits::Last, true},  // > one 512 chunk
      {toks(31, vocab, 10), toks(2, vocab, 11), RowLogits::All, false},  // verify over a seal
  };
}

// Runs the cases alone and batched (then one decode step more for every row, batched against
// alone), comparing logits bit for bit.
void check_matrix(Model& m, const std::vector<Case>& cases) {
  const int vocab = m.config().vocab_size;
  std::vector<std::unique_ptr<Sequence>> ref, bat;
  std::vector<std::vector<float>> want;
  for (const Case& c : cases) {
    ref.push_back(m.new_sequence());
    bat.push_back(m.new_sequence());
    if (!c.history.empty()) {
      ref.back()->prefill(c.history);
      bat.back()->prefill(c.history);
    }
    want.push_back(alone(*ref.back(), c));
  }
  std::vector<BatchRow> rows;
  for (size_t i = 0; i < cases.size(); ++i) {
    rows.push_back(row(bat[i].get(), cases[i].step, cases[i].logits, cases[i].publish));
  }
  m.forward_batch(rows);
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO("row " << i);
    REQUIRE(rows[i].result.size() == want[i].size());
    CHECK(copy(rows[i].result) == want[i]);
    CHECK(bat[i]->position() == ref[i]->position());
    CHECK(copy(bat[i]->last_logits()) == copy(ref[i]->last_logits()));
  }
  // Next step: every row decodes one more token.
  const std::vector<int32_t> next = toks(cases.size(), vocab, 99);
  std::vector<BatchRow> dec;
  for (size_t i = 0; i < cases.size(); ++i) {
    dec.push_back(row(bat[i].get(), {&next[i], 1}));
  }
  m.forward_batch(dec);
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO("decode after row " << i);
    CHECK(copy(dec[i].result) == copy(ref[i]->decode(next[i])));
  }
}

}  // namespace

TEST_CASE("engine: forward_batch rows equal the same sequences alone", "[engine][batch]") {
  for (const std::string arch : {"gemma3", "llama"}) {
    for (KvType kv : {KvType::F16, KvType::Int8}) {
      for (int threads : {1, 2}) {
        INFO(arch << " kv " << (kv == KvType::F16 ? "f16" : "int8") << " threads " << threads);
        auto m = tiny(arch, kv, threads);
        check_matrix(*m, mixed_cases(m->config().vocab_size));
      }
    }
  }
}

TEST_CASE("engine: a single-row batch and a batch of decodes equal decode", "[engine][batch]") {
  auto m = tiny("gemma3", KvType::F16, 2);
  const int vocab = m->config().vocab_size;
  check_matrix(*m, {{toks(12, vocab, 1), toks(1, vocab, 2), RowLogits::Last, false}});
  std::vector<Case> decodes;
  for (uint32_t i = 0; i < 8; ++i) {
    decodes.push_back({toks(5 + 9 * i, vocab, i), toks(1, vocab, 50 + i), RowLogits::Last, false});
  }
  check_matrix(*m, decodes);
}

TEST_CASE("engine: a prefill cut at block boundaries equals one prefill", "[engine][batch]") {
  for (KvType kv : {KvType::F16, KvType::Int8}) {
    auto m = tiny("gemma3", kv, 2);
    const int vocab = m->config().vocab_size;
    const auto head = toks(7, vocab, 1), prompt = toks(300, vocab, 2);
    auto whole = m->new_sequence();
    whole->prefill(head);
    const auto want = copy(whole->prefill(prompt));
    // Pieces ending at absolute positions 64, 160, 288 (multiples of 32), then the rest.
    auto cut = m->new_sequence();
    cut->prefill(head);
    size_t at = 0;
    for (const size_t end : {size_t{57}, size_t{153}, size_t{281}, prompt.size()}) {
      BatchRow r = row(cut.get(), std::span(prompt).subspan(at, end - at),
                       end == prompt.size() ? RowLogits::Last : RowLogits::None, true);
      m->forward_batch({&r, 1});
      CHECK(r.result.size() == (end == prompt.size() ? want.size() : 0));
      if (end == prompt.size()) CHECK(copy(r.result) == want);
      at = end;
    }
    CHECK(cut->position() == whole->position());
    const int32_t t = 5;
    CHECK(copy(cut->decode(t)) == copy(whole->decode(t)));
  }
}

TEST_CASE("engine: forward_batch refuses bad rows before evaluating any", "[engine][batch]") {
  auto m = tiny("llama", KvType::F16, 2);
  auto other = tiny("gemma3", KvType::F16, 2);
  auto a = m->new_sequence(), b = m->new_sequence(), foreign = other->new_sequence();
  const std::vector<int32_t> ok{5, 6, 7}, bad{5, 999}, none;
  const auto refused = [&](std::vector<BatchRow> rows, const std::string& what) {
    try {
      m->forward_batch(rows);
    } catch (const EngineError& e) {
      CHECK_THAT(e.what(), Catch::Contains(what));
      CHECK(a->position() == 0);
      CHECK(b->position() == 0);
      return;
    }
    FAIL("no error for " << what);
  };
  refused({row(a.get(), ok), row(b.get(), bad)},
          "row 1: token id 999 at index 1 is outside the vocabulary");
  refused({row(a.get(), ok), row(a.get(), ok)}, "row 1: the same sequence as row 0");
  refused({row(a.get(), ok), row(foreign.get(), ok)},
          "row 1: the sequence is not one of this model's");
  refused({row(b.get(), none)}, "row 0: prefill: no tokens");
  refused({row(nullptr, ok)}, "row 0: the sequence is not one of this model's");
}

TEST_CASE("engine: forward_batch on the default model equals the sequences alone",
          "[engine][batch][model]") {
  if (!vsynth::test::have_default_model()) return;
  for (KvType kv : {KvType::F16, KvType::Int8}) {
    ModelOptions o;
    o.kv_type = kv;
    o.threads = 2;
    o.context_length = 1024;
    auto m = Model::load(vsynth::test::default_model(), o);
    const int vocab = m->config().vocab_size;
    check_matrix(*m, {
                         {toks(20, vocab, 1), toks(1, vocab, 2), RowLogits::Last, false},
                         {{}, toks(45, vocab, 3), RowLogits::Last, true},
                         {toks(30, vocab, 4), toks(4, vocab, 5), RowLogits::All, false},
                         {toks(9, vocab, 6), toks(1, vocab, 7), RowLogits::Last, false},
                     });
  }
}
