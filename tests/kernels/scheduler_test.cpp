// kernels/sched/scheduler.h: generations from several threads through one scheduler equal the
// same generations run alone on the engine (greedy and seeded sampling, with and without
// n-gram speculation, window 0 and 5 ms); chunked prefills; a sequence destroyed while queued;
// shutdown with work queued; bad requests. Orderings are forced with pause()/resume(), never
// with sleeps.
#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "kernels/sampler/generator.h"
#include "kernels/sched/scheduler.h"
#include "tests/kernels/engine_test_util.h"

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

std::vector<float> copy(std::span<const float> s) {
  return {s.begin(), s.end()};
}

std::shared_ptr<Model> tiny(const std::string& arch = "gemma3", KvType kv = KvType::F16) {
  TinySpec spec;
  spec.arch = arch;
  ModelOptions o;
  o.kv_type = kv;
  o.threads = 2;
  o.context_length = 2048;
  return Model::load(write_tiny_model(spec, "tiny_sched_" + arch + ".gguf"), o);
}

// Request i of a workload: a prompt, greedy or seeded sampling, speculation on every third.
GenerateOptions options_for(size_t i) {
  GenerateOptions g;
  g.max_new_tokens = 24;
  g.stop_at_eog = false;
  g.sampler.temperature = i % 2 == 0 ? 0.0f : 0.9f;
  g.sampler.seed = 1000 + i;
  if (i % 3 == 0) g.speculation.drafter = DrafterKind::Ngram;
  return g;
}

std::vector<TokenId> generate_one(Sequence& seq, const Tokenizer& tok, size_t i, int vocab) {
  const std::vector<int32_t> prompt = toks(20 + 13 * i, vocab, static_cast<uint32_t>(i + 1));
  const std::span<const float> logits = seq.prefill(prompt);
  return generate(seq, tok, logits, options_for(i)).tokens;
}

// n requests, each alone on the engine.
std::vector<std::vector<TokenId>> serial(Model& m, size_t n) {
  std::vector<std::vector<TokenId>> out;
  for (size_t i = 0; i < n; ++i) {
    auto seq = m.new_sequence();
    out.push_back(generate_one(*seq, m.tokenizer(), i, m.config().vocab_size));
  }
  return out;
}

// The same requests from n threads at once through a scheduler.
std::vector<std::vector<TokenId>> concurrent(Scheduler& s, size_t n) {
  std::vector<std::vector<TokenId>> out(n);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      auto seq = s.new_sequence();
      out[i] = generate_one(*seq, s.model().tokenizer(), i, s.model().config().vocab_size);
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

}  // namespace

TEST_CASE("scheduler: concurrent generations equal the serial ones", "[scheduler]") {
  for (KvType kv : {KvType::F16, KvType::Int8}) {
    auto m = tiny("gemma3", kv);
    const auto want = serial(*m, 6);
    for (double window : {0.0, 5.0}) {
      INFO("kv " << (kv == KvType::F16 ? "f16" : "int8") << " window " << window);
      SchedulerOptions o;
      o.window_ms = window;
      Scheduler s(m, o);
      CHECK(concurrent(s, 6) == want);
      CHECK(concurrent(s, 6) == want);  // again: other step compositions, same outputs
      const SchedulerStats st = s.stats();
      CHECK(st.steps > 0);
      CHECK(st.rows >= st.steps);
      CHECK(st.wait_ms.size() == static_cast<size_t>(st.submissions));
      CHECK(st.window_wait_ms.size() == st.wait_ms.size());
    }
  }
}

TEST_CASE("scheduler: a long prefill runs in chunks beside decodes", "[scheduler]") {
  auto m = tiny("llama");
  const int vocab = m->config().vocab_size;
  const auto head = toks(5, vocab, 1), prompt = toks(300, vocab, 2), other = toks(9, vocab, 3);
  auto ref_long = m->new_sequence();
  ref_long->prefill(head);
  const auto want_long = copy(ref_long->prefill(prompt));
  auto ref_dec = m->new_sequence();
  ref_dec->prefill(other);
  const auto want_dec = copy(ref_dec->decode(7));

  SchedulerOptions o;
  o.window_ms = 0;
  o.prefill_chunk = 64;
  const auto t0 = std::chrono::steady_clock::now();
  Scheduler s(m, o);
  auto a = s.new_sequence(), b = s.new_sequence();
  a->prefill(head);
  b->prefill(other);
  const int64_t steps0 = s.stats().steps, rows0 = s.stats().rows;
  s.pause();
  auto* sa = dynamic_cast<ScheduledSequence*>(a.get());
  auto* sb = dynamic_cast<ScheduledSequence*>(b.get());
  REQUIRE(sa);
  REQUIRE(sb);
  auto fa = sa->submit(prompt, RowLogits::Last, true);
  auto fb = sb->submit(std::vector<int32_t>{7}, RowLogits::Last, false);
  s.resume();
  CHECK(copy(fb.get()) == want_dec);
  CHECK(copy(fa.get()) == want_long);
  // Positions 5..305 cut at 64, 128, 192, 256: 5 chunks; the decode joins the first step.
  const SchedulerStats st = s.stats();
  CHECK(st.steps - steps0 == 5);
  CHECK(st.rows - rows0 == 6);
  // Steps' time is counted (the last step's may land just after its result), and never more
  // than the scheduler has existed.
  const double elapsed =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  CHECK(st.busy_ms > 0.0);
  CHECK(st.busy_ms <= elapsed);
  CHECK(a->position() == ref_long->position());
  CHECK(copy(a->decode(11)) == copy(ref_long->decode(11)));
}

TEST_CASE("scheduler: a sequence destroyed while queued is removed", "[scheduler]") {
  auto m = tiny("llama");
  const int vocab = m->config().vocab_size;
  Scheduler s(m);
  auto a = s.new_sequence(), b = s.new_sequence();
  const auto p = toks(12, vocab, 4);
  auto ref = m->new_sequence();
  const auto want = copy(ref->prefill(p));
  s.pause();
  auto fa = dynamic_cast<ScheduledSequence&>(*a).submit(p, RowLogits::Last, true);
  auto fb = dynamic_cast<ScheduledSequence&>(*b).submit(p, RowLogits::Last, true);
  a.reset();
  s.resume();
  CHECK(copy(fb.get()) == want);
  const SchedulerStats st = s.stats();
  CHECK(st.cancelled == 1);
  CHECK(st.steps == 1);
  CHECK(st.rows == 1);
  CHECK(st.tokens == 12);
}

TEST_CASE("scheduler: a step waits for the sequences the last one served", "[scheduler]") {
  // Two streams must not fall into lockstep apart (A's step while B queues, B's alone while A
  // samples): after a step, the gather waits within the window for A's next row. The window
  // is long (1 s) so that the test does not depend on how fast this thread is. (The steady
  // lockstep itself needs streams that sample between steps: tests/serve "concurrent requests
  // to a batching model share its steps" catches it.)
  auto m = tiny("llama");
  const int vocab = m->config().vocab_size;
  SchedulerOptions o;
  o.window_ms = 1000;
  Scheduler s(m, o);
  auto a = s.new_sequence(), b = s.new_sequence(), c = s.new_sequence();
  auto* sa = dynamic_cast<ScheduledSequence*>(a.get());
  auto* sb = dynamic_cast<ScheduledSequence*>(b.get());
  REQUIRE(sa);
  REQUIRE(sb);
  a->prefill(toks(7, vocab, 1));  // step 1: A alone
  // B queues while A has not come back: B must wait for A's next row and share its step.
  auto fb = sb->submit(toks(6, vocab, 2), RowLogits::Last, true);
  auto fa = sa->submit(std::vector<int32_t>{9}, RowLogits::Last, false);
  fb.get();
  fa.get();
  SchedulerStats st = s.stats();
  CHECK(st.steps == 2);
  CHECK(st.rows == 3);
  // Sequences that go away are not waited for (they leave the served set): C's row runs alone
  // in the next step.
  auto* sc = dynamic_cast<ScheduledSequence*>(c.get());
  REQUIRE(sc);
  a.reset();
  b.reset();
  sc->submit(toks(5, vocab, 3), RowLogits::Last, true).get();
  st = s.stats();
  CHECK(st.steps == 3);
  CHECK(st.rows == 4);
}

TEST_CASE("scheduler: shutdown fails queued work, later calls run directly", "[scheduler]") {
  auto m = tiny("gemma3");
  const int vocab = m->config().vocab_size;
  const auto p = toks(40, vocab, 5);
  auto ref = m->new_sequence();
  const auto want = copy(ref->prefill(p));
  std::unique_ptr<Sequence> a, b;
  std::future<std::span<const float>> fa;
  {
    Scheduler s(m);
    a = s.new_sequence();
    b = s.new_sequence();
    s.pause();
    fa = dynamic_cast<ScheduledSequence&>(*a).submit(p, RowLogits::Last, true);
  }
  CHECK_THROWS_WITH(fa.get(), Catch::Contains("scheduler stopped"));
  CHECK(a->position() == 0);
  CHECK(copy(b->prefill(p)) == want);
  auto f = b->fork();
  CHECK(copy(f->decode(9)) == copy(ref->decode(9)));
}

TEST_CASE("scheduler: bad requests and options are refused with the reason", "[scheduler]") {
  auto m = tiny("llama");
  Scheduler s(m);
  auto a = s.new_sequence();
  CHECK_THROWS_WITH(a->prefill(std::vector<int32_t>{3, 64}),
                    Catch::Contains("token id 64 at index 1 is outside the vocabulary [0, 64)"));
  CHECK_THROWS_WITH(a->prefill(std::vector<int32_t>{}), Catch::Contains("no tokens"));
  CHECK_THROWS_WITH(a->prefill(std::vector<int32_t>(2049, 5)),
                    Catch::Contains("past the context length 2048"));
  CHECK(a->position() == 0);
  auto& sa = dynamic_cast<ScheduledSequence&>(*a);
  s.pause();
  auto f = sa.submit(std::vector<int32_t>{5}, RowLogits::Last, false);
  CHECK_THROWS_WITH(sa.submit(std::vector<int32_t>{6}, RowLogits::Last, false),
                    Catch::Contains("already pending"));
  s.resume();
  CHECK(f.get().size() == 64);

  SchedulerOptions bad;
  bad.prefill_chunk = 100;
  CHECK_THROWS_WITH(Scheduler(m, bad), Catch::Contains("prefill_chunk = 100"));
  bad = {};
  bad.window_ms = -1;
  CHECK_THROWS_WITH(Scheduler(m, bad), Catch::Contains("window_ms"));
}

TEST_CASE("scheduler: speculation is turned down when steps hold many rows", "[scheduler]") {
  auto m = tiny("llama");
  Scheduler s(m);
  CHECK(s.suggested_max_draft(6) == 6);  // idle: no steps yet
  std::vector<std::unique_ptr<Sequence>> seqs;
  std::vector<std::future<std::span<const float>>> fs;
  s.pause();
  for (int i = 0; i < 6; ++i) {
    seqs.push_back(s.new_sequence());
    fs.push_back(dynamic_cast<ScheduledSequence&>(*seqs.back())
                     .submit(std::vector<int32_t>{5 + i}, RowLogits::Last, false));
  }
  s.resume();
  for (auto& f : fs) f.get();
  CHECK(s.stats().steps == 1);
  CHECK(s.suggested_max_draft(6) == 0);  // 6 rows per step >= draft_off_rows (4)
}

TEST_CASE("scheduler: the gather wakes early by the recent wake-up lateness", "[scheduler]") {
  detail::WakeSlack w;
  CHECK(w.slack_ms(5.0) == 0.0);  // nothing observed: wake at the window's end
  w.observe(2.0);
  CHECK(w.slack_ms(5.0) == Approx(2.0));
  w.observe(0.5);  // a punctual wake-up: the estimate decays, it does not drop to the last one
  CHECK(w.slack_ms(5.0) == Approx(1.8));
  w.observe(2.4);  // a later one takes over at once
  CHECK(w.slack_ms(5.0) == Approx(2.4));
  CHECK(w.slack_ms(4.0) == Approx(2.0));  // never more than half the window
  for (int i = 0; i < 100; ++i) w.observe(0.0);
  CHECK(w.slack_ms(5.0) < 0.01);  // a quiet machine goes back to the full window
}

TEST_CASE("scheduler: streams in lockstep do not wait out the window", "[scheduler]") {
  // Four streams decoding together: a step runs once each has queued its next row. Their own
  // resubmissions are not new requests, so the gather expects no more rows than the streams
  // (counting them as arrivals expected more, and every step waited out the window). The
  // window is long (1 s) so that a wait to its end is the policy's doing, not this machine's
  // speed; the start's burst of prefills may be gathered for up to two windows.
  auto m = tiny("llama");
  const int vocab = m->config().vocab_size;
  SchedulerOptions o;
  o.window_ms = 1000;
  Scheduler s(m, o);
  constexpr int kStreams = 4, kTokens = 16;
  std::vector<std::thread> threads;
  for (int i = 0; i < kStreams; ++i) {
    threads.emplace_back([&, i] {
      auto seq = s.new_sequence();
      const std::span<const float> logits =
          seq->prefill(toks(12, vocab, static_cast<uint32_t>(i + 1)));
      GenerateOptions g;
      g.max_new_tokens = kTokens;
      g.stop_at_eog = false;
      generate(*seq, s.model().tokenizer(), logits, g);
    });
  }
  for (auto& t : threads) t.join();
  const SchedulerStats st = s.stats();
  INFO("steps " << st.steps << " rows " << st.rows << " full windows " << st.full_windows);
  CHECK(st.full_windows <= 2);
  CHECK(st.rows == kStreams * kTokens);  // a prefill and kTokens - 1 decodes each
  CHECK(st.steps < st.rows);             // and they shared steps
}
