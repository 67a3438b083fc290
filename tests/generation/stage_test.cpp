// generate.llm and model.gguf through a real Pipeline on a tiny random llama GGUF written by the
// GGUF writer: candidates land in the record, runs are reproducible, the retry prompt carries
// feedback and a higher temperature, completion tasks get prefix + completion as their code,
// hooks act inside the loop, and bad models or tasks fail with clear messages.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "graph/pipeline.h"
#include "stages/facets/hook.h"
#include "stages/generation/generate_stage.h"
#include "stages/generation/model_resource.h"
#include "tests/generation/gen_test_util.h"
#include "tests/graph/test_kinds.h"

namespace fs = std::filesystem;
namespace graph = vsynth::graph;
namespace gen = vsynth::stages::generation;
using vsynth::kernels::TokenId;

namespace {

const std::vector<std::string> kPieces{"def",
                                       "\xE2\x96\x81",
                                       "\xE2\x96\x81return",
                                       "(",
                                       ")",
                                       ":",
                                       "\n",
                                       "a",
                                       "b",
                                       "+",
                                       "x",
                                       "y",
                                       "=",
                                       "1",
                                       "2",
                                       "```",
                                       "python"};

// The tiny models, written once per test process: a chat-tuned one (its GGUF has a chat
// template) and a base one (none).
const fs::path& tiny_model(bool chat = true) {
  static const fs::path dir = [] {
    fs::path d = fs::path(VSYNTH_BINARY_DIR) / "generation_test";
    fs::create_directories(d);
    const auto vocab = vsynth::gentest::spm_vocab(kPieces, {"<start_of_turn>", "<end_of_turn>"});
    vsynth::gentest::write_tiny_model(d / "tiny_chat.gguf", vocab, 1, 2048,
                                      "{{ '<start_of_turn>user\\n' }}...");
    vsynth::gentest::write_tiny_model(d / "tiny_base.gguf", vocab, 1, 2048);
    return d;
  }();
  static const fs::path chat_path = dir / "tiny_chat.gguf", base_path = dir / "tiny_base.gguf";
  return chat ? chat_path : base_path;
}

nlohmann::json humaneval_task(int i) {
  return {{"task_id", "he/" + std::to_string(i)},
          {"prompt", "def add" + std::to_string(i) + "(a, b):\n    \"\"\"Add.\"\"\"\n"},
          {"entry_point", "add" + std::to_string(i)}};
}

std::string model_yaml(const std::string& extra_resources = "", bool chat = true,
                       int kv_pool_mb = 0) {
  return "resources:\n  m: { use: model.gguf, with: { path: \"" + tiny_model(chat).string() +
         "\", threads: 1, context_length: 1024, kv_pool_mb: " + std::to_string(kv_pool_mb) +
         " } }\n" + extra_resources;
}

struct Run {
  graph::RunResult result;
  std::vector<nlohmann::json> records;             // in id order
  std::vector<graph::ResourceSnapshot> resources;  // the run summary's resource counters
  // Counter `name` of resource `res`; nullopt when that resource does not report it.
  std::optional<double> counter(const std::string& res, const std::string& name) const {
    for (const auto& r : resources) {
      if (r.name != res) continue;
      for (const auto& c : r.counters) {
        if (c.name == name) return c.value;
      }
    }
    return std::nullopt;
  }
};

Run run(const std::string& yaml, std::vector<nlohmann::json> tasks, const graph::Registry& reg) {
  graph::Pipeline p(vsynth::test::load_text(yaml, reg), reg);
  vsynth::test::JsonTaskSource src(std::move(tasks));
  vsynth::test::VectorSink sink;
  graph::RunControl control;
  Run r;
  r.result = p.run(src, sink, control);
  r.records = sink.records;
  r.resources = p.resource_counters();
  std::sort(r.records.begin(), r.records.end(),
            [](const auto& a, const auto& b) { return a["id"] < b["id"]; });
  return r;
}

// hook.allow_pieces: a test hook that allows only the listed pieces (plus EOG) and rolls back
// once, at generated position 3, banning what it had accepted at position 1.
class AllowHook : public vsynth::gentest::AllowOnly {
 public:
  using AllowOnly::AllowOnly;
  vsynth::kernels::HookVerdict after_sample(const vsynth::kernels::DecodeView& v, TokenId,
                                            std::string_view) override {
    if (v.generated.size() == 3 && !rolled_) {
      rolled_ = true;
      return vsynth::kernels::HookVerdict::rollback(1, v.generated[1], "test rollback");
    }
    return vsynth::kernels::HookVerdict::accept();
  }

 private:
  bool rolled_ = false;
};

class AllowHookResource : public gen::DecodingHook {
 public:
  std::unique_ptr<vsynth::kernels::MaskHook> make(graph::Item&,
                                                  const gen::HookContext& ctx) override {
    std::vector<TokenId> ids;
    for (const char* p : {"a", "b", "+", "\xE2\x96\x81"}) ids.push_back(*ctx.tokenizer.find(p));
    ++made;
    return std::make_unique<AllowHook>(ids);
  }
  std::atomic<int> made{0};
};

// Records what generate.llm tells a hook about the program each candidate becomes.
class ShapeHookResource : public gen::DecodingHook {
 public:
  struct Seen {
    std::string mode, prefix, given_code, entry_point, extracted;
  };
  std::unique_ptr<vsynth::kernels::MaskHook> make(graph::Item&,
                                                  const gen::HookContext& ctx) override {
    Seen s{std::string(ctx.mode), std::string(ctx.prefix), std::string(ctx.given_code),
           std::string(ctx.entry_point), ""};
    if (ctx.extract_code) s.extracted = ctx.extract_code("Here:\n```py\nx = 1\n```\n", "python");
    std::lock_guard l(mu);
    seen.push_back(std::move(s));
    return nullptr;  // watches, never acts
  }
  std::mutex mu;
  std::vector<Seen> seen;
};

graph::Registry registry_with_hook(std::shared_ptr<ShapeHookResource> shape = nullptr) {
  graph::Registry reg = vsynth::test::full_registry();
  reg.add_resource(
      {"hook.allow_pieces", "hook", "test: allow a few pieces", {}},
      [](const graph::ResourceContext&) { return std::make_shared<AllowHookResource>(); });
  reg.add_resource({"hook.shape", "hook", "test: records the program's shape", {}},
                   [shape](const graph::ResourceContext&) { return shape; });
  return reg;
}

}  // namespace

TEST_CASE("generate.llm writes n candidates per item into the record", "[generation][stage]") {
  const auto reg = vsynth::test::full_registry();
  const std::string yaml = model_yaml() + R"(
stages:
  gen: { use: generate.llm, with: { model: m, max_new_tokens: 8, n_candidates: 3,
                                    temperature: 1.0, top_k: 0, min_p: 0.0, seed: 5 } }
edges: [ gen -> out ]
)";
  std::vector<nlohmann::json> tasks;
  for (int i = 0; i < 4; ++i) tasks.push_back(humaneval_task(i));
  const Run a = run(yaml, tasks, reg);
  REQUIRE(a.result.written == 4);
  CHECK(a.result.errors == 0);
  std::set<std::string> texts;
  for (const auto& rec : a.records) {
    INFO(rec.dump(2));
    CHECK(rec["passed"] == true);
    const auto& c = rec["facets"]["candidates"];
    CHECK(c["mode"] == "instruct");
    CHECK(c["format"] == "gemma");  // the vocabulary has <start_of_turn>
    CHECK(c["attempt"] == 1);
    CHECK(c["prompt_tokens"].get<int>() > 20);
    REQUIRE(c["candidates"].size() == 3);
    std::set<uint64_t> seeds;
    for (const auto& k : c["candidates"]) {
      CHECK(k["tokens"].get<int>() <= 8);
      CHECK(std::set<std::string>{"length", "eog"}.count(k["finish"].get<std::string>()) == 1);
      CHECK(k["logprob_sum"].get<double>() <= 0.0);
      CHECK(k["temperature"] == Approx(1.0));
      seeds.insert(k["seed"].get<uint64_t>());
      texts.insert(k["text"].get<std::string>());
      // No fence and an answer without `def addN`: the code is the prompt plus the answer.
      CHECK(k["code"].get<std::string>().starts_with(
          tasks[0]["prompt"].get<std::string>().substr(0, 7)));
    }
    CHECK(seeds.size() == 3);
  }
  CHECK(texts.size() > 4);  // independent seeds give different samples

  const Run b = run(yaml, tasks, reg);  // same seeds: the same records
  REQUIRE(b.records.size() == a.records.size());
  for (std::size_t i = 0; i < a.records.size(); ++i) {
    auto ca = a.records[i]["facets"]["candidates"]["candidates"];
    auto cb = b.records[i]["facets"]["candidates"]["candidates"];
    for (std::size_t k = 0; k < ca.size(); ++k) {
      CHECK(ca[k]["text"] == cb[k]["text"]);
      CHECK(ca[k]["logprob_sum"] == cb[k]["logprob_sum"]);
    }
  }
}

TEST_CASE("a retry prompt carries the feedback and a higher temperature", "[generation][stage]") {
  const auto reg = vsynth::test::full_registry();
  const Run r = run(model_yaml() + R"(
stages:
  gen: { use: generate.llm, with: { model: m, max_new_tokens: 4, record_prompt: true,
                                    temperature: 0.2, retry_temperature_step: 0.3 } }
  check: { use: test.check, with: { pass_on: 3 } }
edges:
  - gen -> check
  - check.pass -> out
  - { from: check.retry, to: gen, back_edge: true, max_attempts: 5 }
)",
                    {humaneval_task(1)}, reg);
  REQUIRE(r.records.size() == 1);
  const auto& rec = r.records[0];
  INFO(rec.dump(2));
  CHECK(rec["attempts"] == 3);
  const auto& c = rec["facets"]["candidates"];
  CHECK(c["attempt"] == 3);
  const std::string prompt = c["prompt"];
  CHECK(prompt.find("attempt 1 failed") != std::string::npos);
  CHECK(prompt.find("attempt 2 failed") != std::string::npos);
  CHECK(prompt.find("A previous answer was wrong") != std::string::npos);
  CHECK(prompt.find("<start_of_turn>user\n") != std::string::npos);
  CHECK(prompt.ends_with("<start_of_turn>model\n"));
  CHECK(c["candidates"][0]["temperature"] == Approx(0.8));
}

TEST_CASE("completion tasks continue the prefix, and the code is prefix + completion + suffix",
          "[generation][stage]") {
  const auto reg = vsynth::test::full_registry();
  const Run r = run(model_yaml() + R"(
stages:
  gen: { use: generate.llm, with: { model: m, max_new_tokens: 6, stop: ["\n\n"] } }
edges: [ gen -> out ]
)",
                    {{{"task_id", "c1"}, {"prefix", "def f(x):\n    return "}, {"suffix", "\n"}},
                     {{"task_id", "c2"}, {"prompt", "x = 1\n"}, {"language", "python"}}},
                    reg);
  REQUIRE(r.records.size() == 1 + 1);
  const auto& c1 = r.records[0]["facets"]["candidates"];
  INFO(r.records[0].dump(2));
  CHECK(c1["mode"] == "complete");
  CHECK(c1["format"] == "prefix");  // no FIM tokens in this vocabulary
  const auto& k = c1["candidates"][0];
  CHECK(k["code"] == "def f(x):\n    return " + k["text"].get<std::string>() + "\n");
  CHECK(k["text"].get<std::string>().find("\n\n") == std::string::npos);
  // A task with only /prompt is an instruct task under mode auto (for a chat model).
  CHECK(r.records[1]["facets"]["candidates"]["mode"] == "instruct");
}

TEST_CASE("a base model (no chat template) gets HumanEval prompts as code to continue",
          "[generation][stage]") {
  const auto reg = vsynth::test::full_registry();
  const Run r =
      run(model_yaml("", false) + R"(
stages:
  gen: { use: generate.llm, with: { model: m, max_new_tokens: 5, record_prompt: true } }
edges: [ gen -> out ]
)",
          {humaneval_task(3), {{"task_id", "i"}, {"instruction", "Add two numbers."}}}, reg);
  REQUIRE(r.records.size() == 2);
  const auto& he = r.records[0]["facets"]["candidates"];
  INFO(r.records[0].dump(2));
  CHECK(he["mode"] == "complete");
  CHECK(he["format"] == "prefix");
  const std::string prompt = humaneval_task(3)["prompt"];
  CHECK(he["prompt"] == "<s>" + prompt);
  CHECK(he["candidates"][0]["code"] == prompt + he["candidates"][0]["text"].get<std::string>());
  const auto& in = r.records[1]["facets"]["candidates"];
  CHECK(in["prompt"] == "<s># Add two numbers.\n");
}

TEST_CASE("decoding hooks named in `hooks` run inside the loop", "[generation][stage][hook]") {
  const auto reg = registry_with_hook();
  const Run r = run(model_yaml("  only: { use: hook.allow_pieces }\n") + R"(
stages:
  gen: { use: generate.llm, with: { model: m, hooks: [only], max_new_tokens: 6,
                                    n_candidates: 2, temperature: 1.0 } }
edges: [ gen -> out ]
)",
                    {humaneval_task(7), humaneval_task(8)}, reg);
  REQUIRE(r.records.size() == 2);
  for (const auto& rec : r.records) {
    INFO(rec.dump(2));
    for (const auto& k : rec["facets"]["candidates"]["candidates"]) {
      const std::string text = k["text"];
      CHECK(text.find_first_not_of("ab+ ") == std::string::npos);
      CHECK(k["tokens"] == 6);
      CHECK(k["rollbacks"] == 1);
    }
  }
}

TEST_CASE("a hook learns the program its candidate becomes from the HookContext",
          "[generation][stage][hook]") {
  const auto shape = std::make_shared<ShapeHookResource>();
  const auto reg = registry_with_hook(shape);
  const Run r =
      run(model_yaml("  shape: { use: hook.shape }\n") + R"(
stages:
  gen: { use: generate.llm, with: { model: m, hooks: [shape], max_new_tokens: 2 } }
edges: [ gen -> out ]
)",
          {humaneval_task(4), {{"task_id", "c"}, {"prefix", "x = "}, {"suffix", "\n"}}}, reg);
  REQUIRE(r.records.size() == 2);
  REQUIRE(shape->seen.size() == 2);
  std::map<std::string, ShapeHookResource::Seen> by_mode;
  for (const auto& s : shape->seen) by_mode[s.mode] = s;
  REQUIRE(by_mode.count("instruct") == 1);
  REQUIRE(by_mode.count("complete") == 1);
  const auto& in = by_mode["instruct"];
  CHECK(in.given_code == humaneval_task(4)["prompt"].get<std::string>());
  CHECK(in.entry_point == "add4");
  CHECK(in.extracted == "x = 1\n");  // generate.llm's own extractor
  const auto& co = by_mode["complete"];
  CHECK(co.prefix == "x = ");
  CHECK(co.given_code.empty());
}

TEST_CASE("async: many items, several workers, every one completed", "[generation][stage]") {
  const auto reg = vsynth::test::full_registry();
  std::vector<nlohmann::json> tasks;
  for (int i = 0; i < 12; ++i) tasks.push_back(humaneval_task(i));
  const Run r = run(model_yaml() + R"(
stages:
  gen: { use: generate.llm, with: { model: m, max_new_tokens: 3, workers: 3 } }
edges: [ gen -> out ]
)",
                    tasks, reg);
  CHECK(r.result.written == 12);
  CHECK(r.result.passed == 12);
  const auto* kind = reg.find_stage("generate.llm");
  REQUIRE(kind);
  CHECK(kind->contract.execution == graph::Execution::Async);
}

TEST_CASE("tasks without anything to prompt with fail with the fields named",
          "[generation][stage]") {
  const auto reg = vsynth::test::full_registry();
  const Run r = run(model_yaml() + R"(
stages:
  gen: { use: generate.llm, with: { model: m, max_new_tokens: 3, mode: complete } }
edges: [ gen -> out ]
)",
                    {{{"task_id", "empty"}, {"title", "write code"}}}, reg);
  REQUIRE(r.records.size() == 1);
  CHECK(r.records[0]["passed"] == false);
  const std::string err = r.records[0]["error"];
  CHECK(err.find("/prefix") != std::string::npos);
  CHECK(err.find("empty") != std::string::npos);
}

TEST_CASE("model.gguf: bad paths, devices and budgets are clear errors", "[generation][model]") {
  const auto reg = vsynth::test::full_registry();
  auto build_error = [&](const std::string& yaml) -> std::string {
    try {
      graph::Pipeline p(vsynth::test::load_text(yaml, reg), reg);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  };
  CHECK_THAT(build_error(R"(
resources: { m: { use: model.gguf, with: { path: /nonexistent/model.gguf } } }
stages: { gen: { use: generate.llm, with: { model: m } } }
edges: [ gen -> out ]
)"),
             Catch::Contains("/nonexistent/model.gguf"));
  // device: cuda fails with the reason on a build without the CUDA backend and on a machine
  // without a GPU; on a GPU machine with a CUDA build it loads (tests/cuda covers that path).
  const std::string cuda_error =
      build_error("resources: { m: { use: model.gguf, with: { path: \"" + tiny_model().string() +
                  "\", device: cuda } } }\n" + R"(
stages: { gen: { use: generate.llm, with: { model: m } } }
edges: [ gen -> out ]
)");
  if (cuda_error.empty()) {
    WARN("device: cuda loaded: this machine has a GPU and the build has the CUDA backend");
  } else {
    CHECK_THAT(cuda_error, Catch::Contains("this build has no CUDA backend") ||
                               Catch::Contains("no CUDA device"));
    CHECK_THAT(cuda_error, Catch::Contains("device: cpu"));
  }
  CHECK_THAT(build_error(model_yaml() + R"(
stages: { gen: { use: generate.llm, with: { model: m, max_new_tokens: 1100 } } }
edges: [ gen -> out ]
)"),
             Catch::Contains("context_length 1024"));
  // A file that is not a model.
  const fs::path junk = tiny_model().parent_path() / "junk.gguf";
  { std::ofstream(junk) << "not a gguf file"; }
  CHECK_THAT(build_error("resources: { m: { use: model.gguf, with: { path: \"" + junk.string() +
                         "\" } } }\nstages: { gen: { use: generate.llm, with: { model: m } } }\n"
                         "edges: [ gen -> out ]\n"),
             Catch::Contains("junk.gguf"));
}

TEST_CASE("the model path falls back to $VSYNTH_MODEL, then the default file",
          "[generation][model]") {
  ::setenv("VSYNTH_MODEL", tiny_model().c_str(), 1);
  CHECK(gen::resolve_model_path("") == tiny_model());
  ::setenv("VSYNTH_MODEL", "/nowhere/m.gguf", 1);
  CHECK_THROWS_WITH(gen::resolve_model_path(""), Catch::Contains("$VSYNTH_MODEL"));
  ::unsetenv("VSYNTH_MODEL");
  CHECK(gen::resolve_model_path(tiny_model().string()) == tiny_model());
  const fs::path here = fs::current_path();
  fs::current_path(tiny_model().parent_path());  // no models/ here
  try {
    const fs::path p = gen::resolve_model_path("");
    // The source tree's default model, when scripts/setup-model.sh fetched it.
    CHECK(p.string().find(gen::kDefaultModelFile) != std::string::npos);
  } catch (const std::runtime_error& e) {
    CHECK_THAT(e.what(), Catch::Contains(gen::kDefaultModelFile));
    CHECK_THAT(e.what(), Catch::Contains("setup-model.sh"));
  }
  fs::current_path(here);
}

TEST_CASE(
    "kv_pool_mb: retries and tasks on the same file reuse the prompt's prefix, and the "
    "text is the same as with the pool off",
    "[generation][stage][kv_pool]") {
  const auto reg = vsynth::test::full_registry();
  const std::string stages = R"(
stages:
  gen: { use: generate.llm, with: { model: m, max_new_tokens: 4, temperature: 0.2 } }
  check: { use: test.check, with: { pass_on: 3 } }
edges:
  - gen -> check
  - check.pass -> out
  - { from: check.retry, to: gen, back_edge: true, max_attempts: 5 }
)";
  const std::string file = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return ";
  const std::vector<nlohmann::json> tasks{humaneval_task(1),
                                          {{"task_id", "same/1"}, {"prefix", file}},
                                          {{"task_id", "same/2"}, {"prefix", file}}};
  const Run on = run(model_yaml("", true, 1) + stages, tasks, reg);
  const Run off = run(model_yaml("", true, 0) + stages, tasks, reg);
  REQUIRE(on.records.size() == 3);
  REQUIRE(off.records.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    INFO(on.records[i].dump(2));
    const auto& c_on = on.records[i]["facets"]["candidates"];
    const auto& c_off = off.records[i]["facets"]["candidates"];
    CHECK(c_on["candidates"][0]["text"] == c_off["candidates"][0]["text"]);
    CHECK(c_on["kv_pool"]["prompt_tokens"] == c_on["prompt_tokens"]);
    CHECK_FALSE(c_on["kv_pool"].contains("fallback"));
    CHECK_FALSE(c_off.contains("kv_pool"));
  }
  // he/1's third attempt shares the first two's prompt up to their feedback.
  const auto& he = on.records[0]["facets"]["candidates"];
  CHECK(he["attempt"] == 3);
  CHECK(he["kv_pool"]["hit"] == true);
  CHECK(he["kv_pool"]["cached_tokens"].get<int>() >= 32);
  // The two tasks on the same file: each attempt 3 reuses the blocks before `def sub`, where
  // the feedback goes (published by the other task's attempts or its own).
  for (size_t i = 1; i < 3; ++i) {
    const auto& k = on.records[i]["facets"]["candidates"]["kv_pool"];
    CHECK(k["hit"] == true);
    CHECK(k["cached_tokens"].get<int>() > 0);
    CHECK(k["cached_tokens"].get<int>() % 32 == 0);
  }
  // The run summary: every attempt of every task looked the pool up (3 + 3 + 3), most hit.
  int hits = 0, cached = 0;
  for (const auto& rec : on.records) {
    const auto& k = rec["facets"]["candidates"]["kv_pool"];
    hits += k["hit"].get<bool>() ? 1 : 0;
    cached += k["cached_tokens"].get<int>();
  }
  CHECK(on.counter("m", "kv_pool_lookups") == 9.0);
  REQUIRE(on.counter("m", "kv_pool_hit_rate"));
  CHECK(*on.counter("m", "kv_pool_hit_rate") >= hits / 9.0);  // earlier attempts may hit too
  CHECK(*on.counter("m", "kv_pool_cached_tokens") >= cached);
  CHECK(on.counter("m", "kv_pool_evictions") == 0.0);
  CHECK(on.counter("m", "kv_pool_fallbacks") == 0.0);
  CHECK(on.counter("m", "generations") == 9.0);
  CHECK_FALSE(off.counter("m", "kv_pool_lookups"));  // pool off: nothing to report
}

TEST_CASE("warmup: the prompt is prefilled, nothing generated, the record says so",
          "[generation][stage][kv_pool]") {
  const auto reg = vsynth::test::full_registry();
  const Run r =
      run(model_yaml("", true, 1) + R"(
stages:
  gen: { use: generate.llm, with: { model: m, warmup: true } }
edges: [ gen -> out ]
)",
          {{{"task_id", "w"}, {"prefix", "def f(x):\n    return x + 1\n\n\ndef g(y):\n"}}}, reg);
  REQUIRE(r.records.size() == 1);
  const auto& c = r.records[0]["facets"]["candidates"];
  INFO(c.dump(2));
  CHECK(c["warmed_tokens"] == c["prompt_tokens"]);
  CHECK(c["warmed_tokens"].get<int>() > 32);
  CHECK(c["candidates"].empty());
  CHECK(c["kv_pool"]["hit"] == false);
}

TEST_CASE(
    "kv_pool: a prompt the pool cannot take falls back to a plain prefill, the record "
    "says why",
    "[generation][stage][kv_pool]") {
  // The engine's budget in bytes (model.gguf's kv_pool_mb is whole MiB, far above this tiny
  // model's prompts): one cached block of every layer.
  const auto load = [](int64_t cache_bytes) {
    vsynth::kernels::ModelOptions o;
    o.threads = 1;
    o.context_length = 1024;
    o.prefix_cache_bytes = cache_bytes;
    return vsynth::kernels::Model::load(tiny_model(false), o);
  };
  const vsynth::kernels::KvStats st = load(0)->kv_stats();
  const int64_t entry = st.bytes_capacity / st.blocks_capacity * 2;  // 2 layers
  const auto generate = [&](int64_t cache_bytes) {
    auto res = std::make_shared<gen::ModelResource>(load(cache_bytes), tiny_model(false));
    gen::GenerateSettings s;
    s.decode.max_new_tokens = 4;
    gen::GenerateStage stage(res, {}, s, 1, 0);
    std::string file;  // 3 x 40 tokens: 3 blocks, over a budget of one
    for (int i = 0; i < 3; ++i) file += "def f(x):\n    return x + 1\n\n\ndef g(y):\n";
    graph::Item item(graph::Task{"t", {{"prefix", file}}}, 0);
    stage.generate(item);
    return item.find<gen::CandidatesFacet>()->to_json();
  };
  const nlohmann::json fell = generate(entry), plain = generate(0);
  INFO(fell.dump(2));
  REQUIRE(fell.contains("kv_pool"));
  CHECK(fell["kv_pool"]["hit"] == false);
  CHECK(fell["kv_pool"]["fallback"].get<std::string>().find(
            "over its budget of " + std::to_string(entry) + " bytes") != std::string::npos);
  REQUIRE(fell["candidates"].size() == 1);
  CHECK(fell["candidates"][0]["text"] == plain["candidates"][0]["text"]);
  CHECK_FALSE(plain.contains("kv_pool"));
}

TEST_CASE(
    "kv_pool: at a cursor, a retry's feedback goes above the enclosing function and the "
    "file before it is reused",
    "[generation][stage][kv_pool]") {
  const auto reg = vsynth::test::full_registry();
  const std::string source =
      "import os\n\n\ndef helper(a, b):\n    return a + b\n\n\ndef other(x):\n    return x\n\n\n"
      "def target(x):\n    doc = \"\"\"\nat column 0 inside the function\n\"\"\"\n    y = "
      "helper(x, 1)\n    return \n";
  const std::size_t cursor = source.rfind("y = ") + 4;  // inside target's span
  const Run r = run(model_yaml("", true, 1) + R"(
stages:
  anchor: { use: ast.anchor }
  gen: { use: generate.llm, with: { model: m, max_new_tokens: 3, record_prompt: true } }
  check: { use: test.check, with: { pass_on: 2 } }
edges:
  - anchor -> gen -> check
  - check.pass -> out
  - { from: check.retry, to: gen, back_edge: true, max_attempts: 3 }
)",
                    {{{"task_id", "cur"},
                      {"path", "m.py"},
                      {"source", source},
                      {"cursor", {{"offset", cursor}}}}},
                    reg);
  REQUIRE(r.records.size() == 1);
  const auto& c = r.records[0]["facets"]["candidates"];
  INFO(c.dump(2));
  CHECK(c["attempt"] == 2);
  const std::string prompt = c["prompt"];
  const std::size_t fb = prompt.find("# A previous attempt at the code below failed:\n");
  REQUIRE(fb != std::string::npos);
  CHECK(prompt.find("def other(x)") < fb);
  // Right above the function the anchor found (not the last column-0 line, which is inside it):
  // nothing but feedback comments between them.
  const std::size_t unit = prompt.find("\ndef target(x):", fb);
  REQUIRE(unit != std::string::npos);
  for (std::size_t at = fb; at <= unit; at = prompt.find('\n', at) + 1) {
    CHECK(prompt.compare(at, 2, "# ") == 0);
  }
  CHECK(prompt.ends_with("    y = "));
  CHECK(c["kv_pool"]["hit"] == true);
  CHECK(c["kv_pool"]["cached_tokens"].get<int>() >= 64);
}

TEST_CASE("speculative: { drafter: ngram } keeps the output, counts drafts in the record",
          "[generation][stage][speculation]") {
  const auto reg = vsynth::test::full_registry();
  auto yaml = [&](const std::string& spec) {
    return model_yaml() + R"(
stages:
  gen: { use: generate.llm, with: { model: m, max_new_tokens: 40, temperature: 0, )" +
           spec + R"( } }
edges: [ gen -> out ]
)";
  };
  std::vector<nlohmann::json> tasks;
  for (int i = 0; i < 3; ++i) tasks.push_back(humaneval_task(i));
  const Run plain = run(yaml("speculative: { drafter: none }"), tasks, reg);
  const Run spec = run(yaml("speculative: { drafter: ngram, max_draft: 6 }"), tasks, reg);
  REQUIRE(plain.records.size() == 3);
  REQUIRE(spec.records.size() == 3);
  int verify_steps = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& p = plain.records[i]["facets"]["candidates"]["candidates"][0];
    const auto& s = spec.records[i]["facets"]["candidates"]["candidates"][0];
    INFO(spec.records[i].dump(2));
    CHECK(s["text"] == p["text"]);
    CHECK(s["tokens"] == p["tokens"]);
    CHECK_FALSE(p.contains("speculation"));
    REQUIRE(s.contains("speculation"));
    CHECK(s["speculation"]["drafter"] == "ngram");
    CHECK(s["speculation"]["accepted"].get<int>() <= s["speculation"]["drafted"].get<int>());
    CHECK_FALSE(s["speculation"].contains("fallback"));
    verify_steps += s["speculation"]["verify_steps"].get<int>();
  }
  CHECK(verify_steps > 0);  // the prompts repeat themselves: something matched
  // The run summary adds up the records' counts.
  int drafted = 0, accepted = 0;
  for (const auto& rec : spec.records) {
    const auto& sp = rec["facets"]["candidates"]["candidates"][0]["speculation"];
    drafted += sp["drafted"].get<int>();
    accepted += sp["accepted"].get<int>();
  }
  CHECK(spec.counter("m", "draft_tokens") == static_cast<double>(drafted));
  CHECK(spec.counter("m", "draft_accepted") == static_cast<double>(accepted));
  CHECK(spec.counter("m", "verify_steps") == static_cast<double>(verify_steps));
  CHECK(spec.counter("m", "speculation_fallbacks") == 0.0);
  CHECK(spec.counter("m", "generations") == 3.0);
  CHECK(plain.resources.empty());  // no pool, no speculation: no counters

  auto build_error = [&](const std::string& with) -> std::string {
    try {
      graph::Pipeline p(vsynth::test::load_text(yaml(with), reg), reg);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  };
  // A model drafter needs its draft model named.
  const std::string model_drafter = build_error("speculative: { drafter: model }");
  CHECK_THAT(model_drafter, Catch::Contains("speculative.draft_model"));
  CHECK_THAT(build_error("speculative: { drafter: fast }"), Catch::Contains("ngram, model, self"));
  CHECK_THAT(build_error("speculative: { drafter: ngram, max_draft: 0 }"),
             Catch::Contains("speculative.max_draft"));
  CHECK_THAT(build_error("speculative: { drafter: ngram, length: 3 }"),
             Catch::Contains("unknown parameter `speculative.length`"));
  CHECK_THAT(build_error("speculative: ngram"),
             Catch::Contains("must be a mapping with keys drafter, max_draft"));
  CHECK_THAT(build_error("speculative: { drafter: ngram }, speculative.drafter: none"),
             Catch::Contains("parameter `speculative.drafter` appears twice"));
}

TEST_CASE("batching: { enabled: true } gives the records of unbatched runs",
          "[generation][batching]") {
  const auto reg = vsynth::test::full_registry();
  const auto yaml = [&](const std::string& batching) {
    return "resources:\n  m: { use: model.gguf, with: { path: \"" + tiny_model(true).string() +
           "\", threads: 1, context_length: 1024, batching: " + batching + " } }\n" + R"(
stages:
  gen: { use: generate.llm, with: { model: m, max_new_tokens: 12, workers: 4, n_candidates: 2,
                                     temperature: 0.7, speculative: { drafter: ngram } } }
edges: [ gen -> out ]
)";
  };
  std::vector<nlohmann::json> tasks;
  for (int i = 0; i < 8; ++i) tasks.push_back(humaneval_task(i));
  const Run off = run(yaml("{ enabled: false }"), tasks, reg);
  REQUIRE(off.records.size() == 8);
  for (const std::string on : {"{ enabled: true }", "{ enabled: true, window_ms: 0 }",
                               "{ enabled: true, window_ms: 20, max_batch_tokens: 64 }",
                               "{ enabled: true, window_ms: 20, max_rows: 2 }"}) {
    INFO(on);
    const Run r = run(yaml(on), tasks, reg);
    REQUIRE(r.records.size() == 8);
    for (std::size_t i = 0; i < 8; ++i) {
      const auto& a = off.records[i]["facets"]["candidates"]["candidates"];
      const auto& b = r.records[i]["facets"]["candidates"]["candidates"];
      REQUIRE(a.size() == 2);
      REQUIRE(b.size() == 2);
      for (std::size_t c = 0; c < 2; ++c) {
        CHECK(b[c]["tokens"] == a[c]["tokens"]);
        CHECK(b[c]["text"] == a[c]["text"]);
      }
    }
    // The run summary counts the scheduler's steps; at least one evaluated several rows.
    REQUIRE(r.counter("m", "batch_steps"));
    CHECK(*r.counter("m", "batch_steps") > 0);
    CHECK(*r.counter("m", "batch_rows_per_step") >= 1.0);
    CHECK(*r.counter("m", "batch_tokens") > *r.counter("m", "batch_steps"));
    if (on.find("max_rows: 2") != std::string::npos) {
      CHECK(*r.counter("m", "batch_rows_per_step") <= 2.0);  // every step capped
    }
  }
  CHECK_FALSE(off.counter("m", "batch_steps"));
  graph::Registry r2 = vsynth::test::full_registry();
  try {
    graph::Pipeline p(vsynth::test::load_text(yaml("{ enabled: true, window_ms: -1 }"), r2), r2);
    FAIL("a negative window was accepted");
  } catch (const std::exception& e) {
    CHECK_THAT(e.what(), Catch::Contains("batching.window_ms"));
  }
  try {
    graph::Pipeline p(vsynth::test::load_text(yaml("{ enabled: true, max_rows: 0 }"), r2), r2);
    FAIL("max_rows 0 was accepted");
  } catch (const std::exception& e) {
    CHECK_THAT(e.what(), Catch::Contains("batching.max_rows"));
  }
  // The settings reach the scheduler the resource starts.
  gen::ModelSettings s;
  s.path = tiny_model(true).string();
  s.threads = 1;
  s.context_length = 256;
  s.batching = true;
  s.batch_max_rows = 3;
  s.batch_max_tokens = 96;
  s.batch_window_ms = 2.5;
  const auto res = gen::load_model(s);
  REQUIRE(res->scheduler() != nullptr);
  CHECK(res->scheduler()->options().max_rows == 3);
  CHECK(res->scheduler()->options().max_batch_tokens == 96);
  CHECK(res->scheduler()->options().window_ms == 2.5);
}

// A second tiny model with the same vocabulary (other weights) and one with another vocabulary.
const fs::path& tiny_draft(bool same_vocab) {
  static const fs::path dir = [] {
    fs::path d = fs::path(VSYNTH_BINARY_DIR) / "generation_test";
    fs::create_directories(d);
    vsynth::gentest::write_tiny_model(
        d / "tiny_draft.gguf",
        vsynth::gentest::spm_vocab(kPieces, {"<start_of_turn>", "<end_of_turn>"}), 2, 2048,
        "{{ '<start_of_turn>user\\n' }}...");
    vsynth::gentest::write_tiny_model(d / "tiny_other_vocab.gguf",
                                      vsynth::gentest::spm_vocab({"x", "y"}), 2, 2048);
    return d;
  }();
  static const fs::path same = dir / "tiny_draft.gguf", other = dir / "tiny_other_vocab.gguf";
  return same_vocab ? same : other;
}

TEST_CASE(
    "speculative: { drafter: model | self } keeps the output, and bad drafts are clear errors",
    "[generation][stage][speculation]") {
  const auto reg = vsynth::test::full_registry();
  auto yaml = [&](const std::string& spec, bool same_vocab = true) {
    return model_yaml("  d: { use: model.gguf, with: { path: \"" + tiny_draft(same_vocab).string() +
                      "\", threads: 1, context_length: 1024 } }\n") +
           R"(
stages:
  gen: { use: generate.llm, with: { model: m, max_new_tokens: 40, temperature: 0, )" +
           spec + R"( } }
edges: [ gen -> out ]
)";
  };
  std::vector<nlohmann::json> tasks;
  for (int i = 0; i < 3; ++i) tasks.push_back(humaneval_task(i));
  const Run plain = run(yaml("speculative: { drafter: none }"), tasks, reg);
  REQUIRE(plain.records.size() == 3);
  for (const std::string drafter : {"{ drafter: model, draft_model: d, max_draft: 3 }",
                                    "{ drafter: self, self_layers: 1, self_vocab: 200 }"}) {
    const Run spec = run(yaml("speculative: " + drafter), tasks, reg);
    REQUIRE(spec.records.size() == 3);
    for (std::size_t i = 0; i < 3; ++i) {
      const auto& p = plain.records[i]["facets"]["candidates"]["candidates"][0];
      const auto& s = spec.records[i]["facets"]["candidates"]["candidates"][0];
      INFO(drafter << "\n" << spec.records[i].dump(2));
      CHECK(s["text"] == p["text"]);
      CHECK(s["tokens"] == p["tokens"]);
      REQUIRE(s.contains("speculation"));
      CHECK(s["speculation"]["drafter"] ==
            (drafter.find("self") != std::string::npos ? "self" : "model"));
      CHECK_FALSE(s["speculation"].contains("fallback"));
    }
  }

  auto build_error = [&](const std::string& with, bool same_vocab = true) -> std::string {
    try {
      graph::Pipeline p(vsynth::test::load_text(yaml(with, same_vocab), reg), reg);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  };
  const std::string unknown = build_error("speculative: { drafter: model, draft_model: dd }");
  CHECK_THAT(unknown, Catch::Contains("speculative.draft_model"));
  CHECK_THAT(unknown, Catch::Contains("dd"));
  const std::string other = build_error("speculative: { drafter: model, draft_model: d }", false);
  CHECK_THAT(other, Catch::Contains("tiny_other_vocab.gguf"));
  CHECK_THAT(other, Catch::Contains("tiny_base.gguf") || Catch::Contains("tiny_chat.gguf"));
  CHECK_THAT(build_error("speculative: { drafter: ngram, draft_model: d }"),
             Catch::Contains("speculative.drafter is ngram"));
  CHECK_THAT(build_error("speculative: { drafter: self, self_layers: 3 }"),
             Catch::Contains("layers = 3 is outside [1, 2]"));
}
