// A task's own decoding settings (/decode, stages/generation/task_decode.h) and its observer
// (graph/observer.h) through generate.llm on the tiny random model: overrides, id-independent
// seeds, streamed text, stage events, cancellation within one step.
#include <catch2/catch.hpp>

#include <deque>
#include <fstream>
#include <map>
#include <mutex>

#include "graph/pipeline.h"
#include "graph/validate.h"
#include "stages/facets/decode_fields.h"
#include "stages/generation/generate_stage.h"
#include "stages/generation/line_stops.h"
#include "stages/generation/register.h"
#include "stages/generation/task_decode.h"
#include "tests/generation/gen_test_util.h"

namespace fs = std::filesystem;
namespace graph = vsynth::graph;
namespace gen = vsynth::stages::generation;
using nlohmann::json;

namespace {

const graph::Registry& registry() {
  static const graph::Registry r = [] {
    graph::Registry reg;
    gen::register_stages(reg);
    return reg;
  }();
  return r;
}

std::string pipeline_file() {
  static const std::string path = [] {
    const fs::path dir = fs::path(VSYNTH_BINARY_DIR) / "task_decode_test";
    fs::create_directories(dir);
    const auto vocab = vsynth::gentest::spm_vocab({"def", "(", ")", ":", "\n", "a", "b", "x"});
    vsynth::gentest::write_tiny_model(dir / "tiny.gguf", vocab, 3, 2048);
    std::ofstream out(dir / "p.yaml");
    out << "resources:\n  m: { use: model.gguf, with: { path: \"" << (dir / "tiny.gguf").string()
        << "\", threads: 1, context_length: 1024 } }\nstages:\n  gen: { use: generate.llm, "
           "with: { model: m, max_new_tokens: 40, temperature: 0.0, mode: complete, seed: 5 } "
           "}\nedges: [ gen -> out ]\n";
    return (dir / "p.yaml").string();
  }();
  return path;
}

// Records what the observer is told; cancels once `cancel_after` bytes were streamed.
class Recorder : public graph::Observer {
 public:
  explicit Recorder(std::size_t cancel_after = 0) : cancel_after_(cancel_after) {}
  void on_stage(std::string_view stage, graph::StageEvent e) override {
    std::lock_guard l(mu);
    events.push_back(std::string(stage) + (e == graph::StageEvent::Begin ? ":begin" : ":end"));
  }
  void on_text(std::string_view t) override {
    std::lock_guard l(mu);
    text += t;
    if (cancel_after_ && text.size() >= cancel_after_) cancel();
  }
  std::mutex mu;
  std::vector<std::string> events;
  std::string text;

 private:
  std::size_t cancel_after_;
};

class Source : public graph::Source {
 public:
  explicit Source(std::vector<graph::Task> t) : tasks_(t.begin(), t.end()) {}
  std::optional<graph::Task> next() override {
    if (tasks_.empty()) return std::nullopt;
    graph::Task t = std::move(tasks_.front());
    tasks_.pop_front();
    return t;
  }

 private:
  std::deque<graph::Task> tasks_;
};

class Sink : public graph::Sink {
 public:
  void write(const graph::Item& item) override { records[item.id()] = item.to_record(); }
  bool contains(std::string_view) const override { return false; }
  std::map<std::string, json> records;
};

std::map<std::string, json> run(std::vector<graph::Task> tasks) {
  graph::Pipeline p(graph::load_pipeline(pipeline_file(), registry()), registry());
  Source src(std::move(tasks));
  Sink sink;
  graph::RunControl control;
  p.run(src, sink, control);
  return sink.records;
}

// Candidate 0 of a record, or null (with the record shown) when it has none.
json first_candidate(const json& record) {
  const json::json_pointer p("/facets/candidates/candidates/0");
  if (!record.contains(p)) {
    UNSCOPED_INFO("record without candidates: " << record.dump());
    return nullptr;
  }
  return record.at(p);
}

std::string decode_error(const json& decode) {
  graph::Item item(graph::Task{"t", {{"prefix", "a"}, {"decode", decode}}}, 0);
  try {
    gen::task_decode(item, {});
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "<accepted>";
}

}  // namespace

TEST_CASE("/decode lays a task's settings over the stage's and names a bad field",
          "[generation][decode]") {
  vsynth::kernels::GenerateOptions stage;
  stage.max_new_tokens = 40;
  stage.stop = {"\n\n"};
  graph::Item item(graph::Task{"t",
                               {{"prefix", "a"},
                                {"decode",
                                 {{"max_new_tokens", 3},
                                  {"temperature", 0.7},
                                  {"top_p", 0.5},
                                  {"stop", {"x"}},
                                  {"seed", 9}}}}},
                   0);
  const gen::TaskDecode d = gen::task_decode(item, stage);
  CHECK(d.decode.max_new_tokens == 3);
  CHECK(d.decode.sampler.temperature == Approx(0.7));
  CHECK(d.decode.sampler.top_p == Approx(0.5));
  CHECK(d.decode.stop == std::vector<std::string>{"\n\n", "x"});
  REQUIRE(d.seed);
  CHECK(*d.seed == 9);
  CHECK_FALSE(d.warmup);

  CHECK_THAT(decode_error({{"max_new_tokens", 0}}), Catch::Contains("/decode/max_new_tokens"));
  CHECK_THAT(decode_error({{"temperature", "hot"}}), Catch::Contains("/decode/temperature"));
  CHECK_THAT(decode_error({{"stop", {1}}}), Catch::Contains("/decode/stop"));
  CHECK_THAT(decode_error({{"seed", -1}}), Catch::Contains("/decode/seed"));
  CHECK_THAT(decode_error({{"temprature", 1}}),
             Catch::Contains("/decode/temprature") && Catch::Contains("valid: max_new_tokens"));
  CHECK_THAT(decode_error(3), Catch::Contains("/decode must be an object"));
}

TEST_CASE("a task's seed makes its text independent of its id", "[generation][decode]") {
  const json decode{{"temperature", 0.9}, {"seed", 11}, {"max_new_tokens", 6}};
  auto r = run({graph::Task{"first", {{"prefix", "def a("}, {"decode", decode}}},
                graph::Task{"second", {{"prefix", "def a("}, {"decode", decode}}},
                graph::Task{"stage-seed", {{"prefix", "def a("}}}});
  REQUIRE(r.size() == 3);
  REQUIRE(first_candidate(r["first"]).is_object());
  CHECK(first_candidate(r["first"])["text"] == first_candidate(r["second"])["text"]);
  CHECK(first_candidate(r["first"])["tokens"].get<int>() <= 6);
  CHECK(first_candidate(r["first"])["temperature"].get<double>() == Approx(0.9));
  CHECK(first_candidate(r["stage-seed"])["temperature"].get<double>() == Approx(0.0));
}

TEST_CASE("the observer sees the stage and candidate 0's text and can cancel mid-generation",
          "[generation][decode]") {
  auto watch = std::make_shared<Recorder>();
  auto quitter = std::make_shared<Recorder>(2);  // leaves after 2 bytes
  graph::Task a{"watched", {{"prefix", "def a("}, {"decode", {{"max_new_tokens", 30}}}}};
  a.observer = watch;
  graph::Task b{"cancelled", {{"prefix", "def a("}, {"decode", {{"max_new_tokens", 30}}}}};
  b.observer = quitter;
  auto r = run({std::move(a), std::move(b)});
  REQUIRE(r.size() == 2);
  const json w = first_candidate(r["watched"]);
  REQUIRE(w.is_object());
  // The record's text is made valid UTF-8; the stream carries the raw bytes (the tiny random
  // model emits stray byte tokens), so compare them as a JSON writer would send them.
  CHECK(json(watch->text).dump(-1, ' ', false, json::error_handler_t::replace) == w["text"].dump());
  CHECK(watch->events == std::vector<std::string>{"gen:begin", "gen:end"});
  const json c = first_candidate(r["cancelled"]);
  REQUIRE(c.is_object());
  CHECK(c["finish"] == "cancelled");
  CHECK(c["tokens"].get<int>() < 30);
  CHECK(quitter->text.size() >= 2);
}

TEST_CASE("/decode's line stops and the table both the task and the stage read",
          "[generation][decode][stops]") {
  graph::Item item(
      graph::Task{"t",
                  {{"prefix", "a"},
                   {"decode", {{"n_indent", 4}, {"single_line", true}, {"max_predict_ms", 250}}}}},
      0);
  const gen::TaskDecode d = gen::task_decode(item, {}, {.n_indent = 2});
  CHECK(d.lines.n_indent == 4);
  CHECK(d.task_n_indent);
  CHECK(d.lines.single_line);
  CHECK(d.lines.max_predict_ms == 250);
  graph::Item plain(graph::Task{"t", {{"prefix", "a"}}}, 0);
  const gen::TaskDecode s = gen::task_decode(plain, {}, {.n_indent = 2});
  CHECK(s.lines.n_indent == 2);
  CHECK_FALSE(s.task_n_indent);

  CHECK_THAT(decode_error({{"n_indent", -1}}),
             Catch::Contains("/decode/n_indent") && Catch::Contains("an integer in [0, 1024]"));
  CHECK_THAT(decode_error({{"max_predict_ms", 1.5}}), Catch::Contains("/decode/max_predict_ms"));
  CHECK_THAT(decode_error({{"single_line", 1}}), Catch::Contains("/decode/single_line"));
  CHECK_THAT(decode_error({{"nindent", 1}}), Catch::Contains("n_indent, single_line"));
  CHECK(decode_error({{"seed", 18446744073709551615ULL}}) == "<accepted>");

  // generate.llm's parameters of the same names have the table's limits.
  const vsynth::graph::Contract c = gen::generate_contract();
  for (const auto& f : vsynth::stages::facets::decode_fields()) {
    INFO(f.name);
    if (f.name == "seed") continue;  // the stage's seed is any int64 (its own parameter)
    for (const auto& p : c.params) {
      if (p.name != f.name) continue;
      if (f.type == vsynth::stages::facets::DecodeType::Integer ||
          f.type == vsynth::stages::facets::DecodeType::Number) {
        REQUIRE(p.min);
        REQUIRE(p.max);
        CHECK(*p.min == f.min);
        CHECK(*p.max == f.max);
      }
    }
  }
}

TEST_CASE("n_indent through generate.llm: the plain output up to its first unindented line",
          "[generation][decode][stops]") {
  // The tiny model's vocabulary has no spaces: every line after the first has indentation 0,
  // so n_indent 1 ends the suggestion at its first line break (greedy: the same tokens). Its
  // random weights rarely write a line break, so this checks that the stop changes nothing
  // else; the cut itself is checked on the default model (ide_pipelines_test.cpp).
  const json plain{{"max_new_tokens", 40}};
  const json cut{{"max_new_tokens", 40}, {"n_indent", 1}};
  std::vector<graph::Task> tasks;
  const std::vector<std::string> prefixes{"def a(", "x", "b(a):\n", "def"};
  for (std::size_t i = 0; i < prefixes.size(); ++i) {
    tasks.push_back(
        graph::Task{"p" + std::to_string(i), {{"prefix", prefixes[i]}, {"decode", plain}}});
    tasks.push_back(
        graph::Task{"c" + std::to_string(i), {{"prefix", prefixes[i]}, {"decode", cut}}});
  }
  auto r = run(std::move(tasks));
  for (std::size_t i = 0; i < prefixes.size(); ++i) {
    const json p = first_candidate(r["p" + std::to_string(i)]);
    const json c = first_candidate(r["c" + std::to_string(i)]);
    REQUIRE(p.is_object());
    REQUIRE(c.is_object());
    const std::string pt = p["text"], ct = c["text"];
    INFO(json(pt).dump() << " / " << json(ct).dump());
    const auto at = gen::indent_cut(pt, 1);
    if (at) {
      CHECK(ct == pt.substr(0, *at));
      CHECK(c["finish"] == "stop");
      CHECK(c["finish_detail"] == "n_indent 1");
    } else {
      CHECK(ct == pt);
    }
    CHECK(r["c" + std::to_string(i)]["facets"]["candidates"]["n_indent"] == 1);
  }
}
