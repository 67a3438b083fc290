// vsynth serve over HTTP on 127.0.0.1 (ephemeral port), through real pipelines on the tiny
// random model: the malformed / wrong-type / oversized matrix, OpenAI and llama.cpp shapes,
// streaming, resume_from, /v1/tasks, /health, /metrics, API keys, determinism under
// concurrency, context stages without a file; and, on the default model, 429 when a tenant's
// queue is full and a disconnect that cancels its generation.
#include <catch2/catch.hpp>

#include <atomic>
#include <regex>
#include <set>
#include <thread>

#include "tests/serve/serve_test_util.h"

using namespace vsynth;
using namespace vsynth::servetest;

namespace {

TestServer& tiny_server() {
  static TestServer s(
      {{"gen", pipeline_file("gen", tiny_model())},
       {"ctx", pipeline_file("ctx", tiny_model(), "  anchor: { use: ast.anchor }\n")}});
  return s;
}

// A POST /v1/completions as raw bytes (for tests that read the answer as it comes).
std::string stream_request(const std::string& body, const std::string& path = "/v1/completions") {
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
         "Connection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

json completion(const std::string& prompt, int max_tokens, double temperature, int seed,
                bool stream = false) {
  return {{"prompt", prompt},
          {"max_tokens", max_tokens},
          {"temperature", temperature},
          {"seed", seed},
          {"stream", stream}};
}

}  // namespace

TEST_CASE("malformed JSON and wrong types and oversized bodies get a 4xx naming the field",
          "[serve]") {
  TestServer& s = tiny_server();
  struct Case {
    const char* path;
    std::string body;
    int status;
    const char* param;  // nullptr: none
  };
  const std::vector<Case> cases{
      {"/v1/completions", "{\"prompt\": \"x\"", 400, nullptr},
      {"/v1/completions", "[1, 2]", 400, nullptr},
      {"/v1/completions", "{}", 400, "prompt"},
      {"/v1/completions", R"({"prompt": 5})", 400, "prompt"},
      {"/v1/completions", R"({"prompt": [1, 2]})", 400, "prompt"},
      {"/v1/completions", R"({"prompt": "x", "max_tokens": "8"})", 400, "max_tokens"},
      {"/v1/completions", R"({"prompt": "x", "max_tokens": -1})", 400, "max_tokens"},
      {"/v1/completions", R"({"prompt": "x", "temperature": 9})", 400, "temperature"},
      {"/v1/completions", R"({"prompt": "x", "top_p": "high"})", 400, "top_p"},
      {"/v1/completions", R"({"prompt": "x", "stop": ["a", 1]})", 400, "stop[1]"},
      {"/v1/completions", R"({"prompt": "x", "seed": 1.5})", 400, "seed"},
      {"/v1/completions", R"({"prompt": "x", "stream": "yes"})", 400, "stream"},
      {"/v1/completions", R"({"prompt": "x", "suffix": {}})", 400, "suffix"},
      {"/v1/completions", R"({"prompt": "x", "model": "nope"})", 404, "model"},
      {"/v1/completions", R"({"prompt": "x", "resume_from": {"offset": 1, "checksum": "0"}})", 400,
       "resume_from"},
      {"/v1/chat/completions", R"({"messages": "hi"})", 400, "messages"},
      {"/v1/chat/completions", R"({"messages": [{"role": "user"}]})", 400, "messages[0].content"},
      {"/infill", R"({"input_prefix": 3})", 400, "input_prefix"},
      {"/infill", R"({"input_prefix": "a", "input_extra": [{"filename": 1, "text": ""}]})", 400,
       "input_extra[0].filename"},
      {"/infill", R"({"input_prefix": "a", "n_predict": -2})", 400, "n_predict"},
      {"/completion", R"({"prompt": "a", "cache_prompt": "yes"})", 400, "cache_prompt"},
      {"/v1/tasks", R"({"id": 3, "prefix": "a"})", 400, "id"},
      {"/v1/completions", std::string(serve::default_config().max_body_bytes + 1, ' '), 413,
       "body"},
  };
  for (const Case& c : cases) {
    INFO(c.path << " " << c.body.substr(0, 120));
    const auto r = post(s, c.path, c.body);
    REQUIRE(r);
    CHECK(r->status == c.status);
    const json body = json::parse(r->body, nullptr, false);
    REQUIRE(body.is_object());
    REQUIRE(body.contains("error"));
    CHECK(body["error"]["message"].is_string());
    CHECK(body["error"]["code"] == c.status);
    if (c.param) {
      CHECK(body["error"]["param"] == c.param);
      // The message names the field too, for clients that show only the message.
      CHECK(body["error"]["message"].get<std::string>().find(c.param) != std::string::npos);
    } else {
      CHECK(body["error"]["param"].is_null());
    }
  }
  const auto none = get(s, "/no/such/endpoint");
  REQUIRE(none);
  CHECK(none->status == 404);
  CHECK(json::parse(none->body)["error"]["code"] == 404);
}

TEST_CASE("a completion answers in the OpenAI shape with the generation's counts", "[serve]") {
  TestServer& s = tiny_server();
  const auto r = post(s, "/v1/completions", completion("def f(", 4, 0.0, 0).dump());
  REQUIRE(r);
  REQUIRE(r->status == 200);
  const json b = json::parse(r->body);
  CHECK(b["object"] == "text_completion");
  CHECK(b["model"] == "gen");
  REQUIRE(b["choices"].size() == 1);
  CHECK(b["choices"][0]["text"].is_string());
  CHECK(b["usage"]["completion_tokens"].get<int>() <= 4);
  CHECK(b["usage"]["prompt_tokens"].get<int>() > 0);
  const std::string reason = b["choices"][0]["finish_reason"];
  CHECK((reason == "length" || reason == "stop"));
  CHECK(b["vsynth"]["context"].get<std::string>().rfind("none", 0) == 0);
  CHECK(b["vsynth"]["status"] == "gen.ok");

  // Chat and llama.cpp's /infill reach the same pipeline in their own shapes.
  const json chat{{"messages", {{{"role", "user"}, {"content", "add a and b"}}}},
                  {"max_tokens", 3}};
  const auto c = post(s, "/v1/chat/completions", chat.dump());
  REQUIRE(c);
  REQUIRE(c->status == 200);
  CHECK(json::parse(c->body)["choices"][0]["message"]["role"] == "assistant");
  const json infill{{"input_prefix", "def f("}, {"input_suffix", ")\n"}, {"n_predict", 3}};
  const auto i = post(s, "/infill", infill.dump());
  REQUIRE(i);
  REQUIRE(i->status == 200);
  const json ib = json::parse(i->body);
  CHECK(ib["content"].is_string());
  CHECK(ib["stop"] == true);
  CHECK(ib["tokens_predicted"].get<int>() <= 3);
  // n_predict 0: a warm-up, prefill only.
  const auto w = post(s, "/infill", json{{"input_prefix", "def g("}, {"n_predict", 0}}.dump());
  REQUIRE(w);
  REQUIRE(w->status == 200);
  CHECK(json::parse(w->body)["tokens_predicted"] == 0);
}

TEST_CASE("a request's text does not depend on what runs beside it", "[serve]") {
  TestServer& s = tiny_server();
  const json req = completion("x = ", 12, 0.9, 42);
  const auto lone = post(s, "/v1/completions", req.dump());
  REQUIRE(lone);
  REQUIRE(lone->status == 200);
  const std::string expected = json::parse(lone->body)["choices"][0]["text"];
  std::vector<std::string> texts(6);
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      // Odd threads send other requests (other prompts, seeds) to mix the load.
      const json mine = t % 2 ? completion("y = ", 12, 0.9, t) : req;
      const auto r = post(s, "/v1/completions", mine.dump());
      texts[t] = r && r->status == 200
                     ? json::parse(r->body)["choices"][0]["text"].get<std::string>()
                     : "<failed>";
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 6; t += 2) CHECK(texts[t] == expected);
  // A different seed is a different request: its text may differ, but it is its own.
  CHECK(texts[1] != "<failed>");
}

TEST_CASE("streams send SSE chunks then data: [DONE] and resume_from continues one", "[serve]") {
  TestServer& s = tiny_server();
  const json req = completion("def f(", 10, 0.8, 7, true);
  const auto r = post(s, "/v1/completions", req.dump());
  REQUIRE(r);
  REQUIRE(r->status == 200);
  CHECK(r->get_header_value("Content-Type").find("text/event-stream") == 0);
  bool done = false;
  const auto events = sse_events(r->body, &done);
  CHECK(done);
  REQUIRE(!events.empty());
  std::string text;
  for (const auto& e : events) text += e["choices"][0]["text"].get<std::string>();
  CHECK(events.back()["choices"][0]["finish_reason"].is_string());
  CHECK(events.front()["choices"][0]["finish_reason"].is_null());
  // The streamed text is the non-streamed answer.
  json plain = req;
  plain["stream"] = false;
  const auto p = post(s, "/v1/completions", plain.dump());
  REQUIRE(p);
  CHECK(json::parse(p->body)["choices"][0]["text"] == text);

  // resume_from: the rest of the text, from the held result (no new task).
  const std::size_t k = text.size() / 2;
  json resume = req;
  resume["resume_from"] = {{"offset", k}, {"checksum", serve::text_checksum(text.substr(0, k))}};
  const std::size_t tasks_before = s.log().size();
  const auto rr = post(s, "/v1/completions", resume.dump());
  REQUIRE(rr);
  INFO(rr->body);
  REQUIRE(rr->status == 200);
  std::string rest;
  for (const auto& e : sse_events(rr->body)) rest += e["choices"][0]["text"].get<std::string>();
  CHECK(rest == text.substr(k));
  const auto last = s.log();
  REQUIRE(last.size() == tasks_before + 1);
  CHECK(last.back().task_id.empty());  // nothing was submitted to the pipeline

  resume["resume_from"]["checksum"] = "0000000000000000";
  const auto bad = post(s, "/v1/completions", resume.dump());
  REQUIRE(bad);
  CHECK(bad->status == 409);
  CHECK(json::parse(bad->body)["error"]["param"] == "resume_from.checksum");
  json unknown = completion("never sent before", 3, 0.0, 1, true);
  unknown["resume_from"] = {{"offset", 0}, {"checksum", serve::text_checksum("")}};
  const auto gone = post(s, "/v1/completions", unknown.dump());
  REQUIRE(gone);
  CHECK(gone->status == 409);
  CHECK(json::parse(gone->body)["error"]["param"] == "resume_from");
}

TEST_CASE("/v1/tasks returns the result record and streamed its stage events come first",
          "[serve]") {
  TestServer& s = tiny_server();
  const json task{{"id", "my-task"}, {"prefix", "def f("}, {"decode", {{"max_new_tokens", 3}}}};
  const auto r = post(s, "/v1/tasks", task.dump());
  REQUIRE(r);
  REQUIRE(r->status == 200);
  const json rec = json::parse(r->body);
  CHECK(rec["id"] == "my-task");
  CHECK(rec["status"] == "gen.ok");
  CHECK(rec["facets"]["candidates"]["candidates"][0]["tokens"].get<int>() <= 3);

  json st = task;
  st["stream"] = true;
  const auto sr = post(s, "/v1/tasks", st.dump());
  REQUIRE(sr);
  REQUIRE(sr->status == 200);
  bool done = false;
  const auto events = sse_events(sr->body, &done);
  CHECK(done);
  REQUIRE(events.size() >= 3);
  CHECK(events.front()["event"] == "stage_begin");
  CHECK(events.front()["stage"] == "gen");
  CHECK(events.back()["event"] == "result");
  CHECK(events.back()["record"]["id"] == "my-task");
  bool ended = false;
  for (const auto& e : events) ended = ended || e["event"] == "stage_end";
  CHECK(ended);
}

TEST_CASE("a pipeline with context stages runs when the request names its file", "[serve]") {
  TestServer& s = tiny_server();
  const json req{{"prompt", "def f(a, b):\n    return "},
                 {"suffix", "\n"},
                 {"file", "f.py"},
                 {"model", "ctx"},
                 {"max_tokens", 3}};
  const auto r = post(s, "/v1/completions", req.dump());
  REQUIRE(r);
  INFO(r->body);
  REQUIRE(r->status == 200);
  const json b = json::parse(r->body);
  CHECK(b["model"] == "ctx");
  CHECK(b["vsynth"]["context"].get<std::string>().rfind("used", 0) == 0);
  CHECK(b["vsynth"]["status"] == "gen.ok");
}

TEST_CASE("a request without a cursor skips the context stages and one with a cursor runs them",
          "[serve]") {
  TestServer& s = tiny_server();
  // Chat has no file around a cursor: the file-reading stages are skipped for it alone.
  const json chat{{"messages", {{{"role", "user"}, {"content", "add a and b"}}}},
                  {"max_tokens", 4},
                  {"model", "ctx"}};
  const auto r = post(s, "/v1/chat/completions", chat.dump());
  REQUIRE(r);
  INFO(r->body);
  REQUIRE(r->status == 200);
  const json b = json::parse(r->body);
  CHECK(b["vsynth"]["context"].get<std::string>().rfind("skipped", 0) == 0);
  CHECK(b["vsynth"]["skipped_stages"] == json::array({"anchor"}));
  CHECK(b["vsynth"]["status"] == "gen.ok");
  // Without its context stages the pipeline is the plain one: the same greedy text.
  json plain_chat = chat;
  plain_chat["model"] = "gen";
  const auto plain = post(s, "/v1/chat/completions", plain_chat.dump());
  REQUIRE(plain);
  REQUIRE(plain->status == 200);
  const json pb = json::parse(plain->body);
  CHECK_FALSE(pb["vsynth"].contains("skipped_stages"));
  CHECK(b["choices"][0]["message"] == pb["choices"][0]["message"]);

  // A completion without a file name still has a cursor (source = prefix + suffix): the
  // anchor runs on it as an unnamed file (language detected from the text) and the context
  // stages after it run too: a 200, nothing skipped.
  json req = completion("def f(a, b):\n    return ", 6, 0.0, 0);
  req["suffix"] = "\n";
  req["model"] = "ctx";
  const auto c = post(s, "/v1/completions", req.dump());
  REQUIRE(c);
  INFO(c->body);
  const json cb = json::parse(c->body);
  CHECK(c->status == 200);
  CHECK_FALSE(cb["vsynth"].contains("skipped_stages"));
  CHECK(cb["vsynth"]["context"].get<std::string>().rfind("used", 0) == 0);
  // How the code after the cursor reached the prompt (the tiny model has no FIM tokens).
  REQUIRE(cb["vsynth"].contains("suffix"));
  const std::string how = cb["vsynth"]["suffix"];
  CHECK((how == "above" || how == "dropped" || how == "none"));
  CHECK(cb["vsynth"]["context"].get<std::string>().find("suffix: " + how) != std::string::npos);
}

TEST_CASE("/health and /v1/models and /metrics answer", "[serve]") {
  TestServer& s = tiny_server();
  const auto first = post(s, "/v1/completions", completion("a", 2, 0.0, 0).dump());
  REQUIRE(first);
  INFO(first->body);
  REQUIRE(first->status == 200);
  const auto h = get(s, "/health");
  REQUIRE(h);
  CHECK(h->status == 200);
  const json hb = json::parse(h->body);
  CHECK(hb["ready"] == true);
  CHECK(hb["model"] == tiny_model());
  CHECK(hb["build"].get<std::string>().rfind("vsynth ", 0) == 0);
  CHECK(hb["pipelines"].size() == 2);

  const auto m = get(s, "/v1/models");
  REQUIRE(m);
  const json mb = json::parse(m->body);
  CHECK(mb["data"][0]["id"] == "gen");
  CHECK(mb["data"][1]["id"] == "ctx");

  const auto p = get(s, "/metrics");
  REQUIRE(p);
  CHECK(p->get_header_value("Content-Type").find("text/plain") == 0);
  // Every line is a comment or `name{labels} number` (the exposition format).
  const std::regex sample(
      R"(^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_]+="[^"]*",?)*\})? [-+0-9.eEInfa]+$)");
  std::set<std::string> names;
  std::size_t pos = 0;
  const std::string& text = p->body;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    REQUIRE(end != std::string::npos);  // ends with a newline
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.rfind("# ", 0) == 0) continue;
    INFO(line);
    CHECK(std::regex_match(line, sample));
    names.insert(line.substr(0, line.find_first_of("{ ")));
  }
  for (const char* n : {"vsynth_serve_requests_total", "vsynth_serve_queue_depth",
                        "vsynth_serve_generated_tokens_total", "vsynth_serve_ttft_seconds_bucket",
                        "vsynth_serve_inter_token_seconds_count", "vsynth_serve_running"}) {
    CHECK(names.count(n) == 1);
  }
  CHECK(text.find("vsynth_serve_requests_total{endpoint=\"/v1/completions\",status=\"200\"}") !=
        std::string::npos);
}

TEST_CASE("API keys map to tenants and a missing or unknown key is 401", "[serve]") {
  serve::ServeConfig cfg = serve::parse_config(R"(
tenants:
  alpha: { keys: ["sk-alpha-0001"], priority: gold, max_tokens: 2 }
  beta:  { keys: ["sk-beta-00002"], priority: bronze }
)",
                                               "test.yaml");
  TestServer s({{"gen", pipeline_file("gen", tiny_model())}}, cfg);
  const std::string body = completion("a", 8, 0.0, 0).dump();
  const auto none = post(s, "/v1/completions", body);
  REQUIRE(none);
  CHECK(none->status == 401);
  const auto wrong = post(s, "/v1/completions", body, {{"Authorization", "Bearer sk-alpha-0002"}});
  REQUIRE(wrong);
  CHECK(wrong->status == 401);
  CHECK(json::parse(wrong->body)["error"]["param"] == "Authorization");
  const auto ok = post(s, "/v1/completions", body, {{"Authorization", "Bearer sk-alpha-0001"}});
  REQUIRE(ok);
  REQUIRE(ok->status == 200);
  // alpha's max_tokens cap (2) cuts the request's 8.
  CHECK(json::parse(ok->body)["usage"]["completion_tokens"].get<int>() <= 2);
  const auto b = post(s, "/v1/completions", body, {{"X-Api-Key", "sk-beta-00002"}});
  REQUIRE(b);
  CHECK(b->status == 200);
  const auto log = s.log();
  std::vector<std::string> tenants;
  for (const auto& r : log) tenants.push_back(r.tenant);
  CHECK(tenants == std::vector<std::string>{"", "", "alpha", "beta"});
}

TEST_CASE("an item whose observer was cancelled runs no stage", "[serve]") {
  serve::ServedPipeline p(
      "gen", graph::load_pipeline(pipeline_file("gen", tiny_model()), registry()), registry());
  auto ex = std::make_shared<serve::Exchange>();
  ex->cancel();
  REQUIRE(p.submit("t1", {{"id", "t1"}, {"prefix", "a"}}, ex));
  const auto snap = ex->wait_done(std::chrono::steady_clock::now() + std::chrono::seconds(30));
  REQUIRE(snap.done);
  CHECK(snap.record["status"] == "cancelled");
  CHECK_FALSE(snap.record["facets"].contains("candidates"));
  CHECK(snap.events.empty());  // the stage never began
}

// --- the default model (slow enough to be caught mid-generation) ---

TEST_CASE("a full queue answers 429 at once with Retry-After", "[serve][model]") {
  if (!test::have_default_model()) return;
  const serve::ServeConfig cfg = serve::parse_config(
      "anonymous: { max_concurrent: 1, queue_depth: 0, max_tokens: 256 }\n", "test.yaml");
  TestServer s({{"gen", pipeline_file("real", test::default_model().string(), "", 256)}}, cfg);
  // A stream holds the tenant's only slot while its client reads it.
  std::atomic<bool> first_text{false};
  std::atomic<bool> release{false};
  std::thread holder([&] {
    Connection c(s.port());
    c.send_raw(stream_request(completion("def fibonacci(n):\n", 256, 0.0, 0, true).dump()));
    c.read_raw([&](std::string_view) {
      first_text = true;
      // Read slowly until told to stop, then drop the connection.
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return false;
    });
    c.close();
  });
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!first_text && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(first_text);
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = post(s, "/v1/completions", completion("x", 4, 0.0, 0).dump());
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  release = true;
  holder.join();
  REQUIRE(r);
  CHECK(r->status == 429);
  CHECK(std::stoi(r->get_header_value("Retry-After")) >= 1);
  CHECK(json::parse(r->body)["error"]["type"] == "rate_limit_exceeded");
  INFO("429 answered in " << ms << " ms");
  CHECK(ms < 5000);  // at once: never waited for the slot (a loose bound, not a timing test)
  const auto metrics = get(s, "/metrics");
  REQUIRE(metrics);
  CHECK(metrics->body.find("vsynth_serve_rejections_total{tenant=\"anonymous\"} 1") !=
        std::string::npos);
}

TEST_CASE("a client that disconnects mid-stream cancels its generation", "[serve][model]") {
  if (!test::have_default_model()) return;
  TestServer s({{"gen", pipeline_file("real", test::default_model().string(), "", 256)}});
  {
    Connection c(s.port());
    REQUIRE(
        c.send_raw(stream_request(completion("def fibonacci(n):\n", 256, 0.0, 0, true).dump())));
    int chunks = 0;
    c.read_raw([&](std::string_view) { return ++chunks < 2; });
    c.close();  // the connection is gone
  }
  const auto rec = s.await([](const serve::AccessRecord& r) { return r.status == 499; },
                           std::chrono::seconds(60));
  REQUIRE(rec);
  CHECK(rec->finish == "cancelled");
  CHECK(rec->tokens < 256);
  const auto metrics = get(s, "/metrics");
  REQUIRE(metrics);
  CHECK(metrics->body.find("vsynth_serve_finished_total{finish=\"cancelled\"} 1") !=
        std::string::npos);
}

namespace {

// A gauge of /metrics' vsynth_serve_resource family (-1 when absent).
double resource_gauge(TestServer& s, const std::string& counter) {
  const auto m = get(s, "/metrics");
  if (!m) return -1;
  const std::string key = "counter=\"" + counter + "\"} ";
  const std::size_t at = m->body.find(key);
  if (at == std::string::npos) return -1;
  return std::stod(m->body.substr(at + key.size()));
}

}  // namespace

TEST_CASE("concurrent requests to a batching model share its steps, each text its own",
          "[serve][model]") {
  if (!test::have_default_model()) return;
  // generate.yaml's shape with the model's batching on: generate.llm's workers then default to
  // a batch's rows, so the default tenant's two concurrent requests decode side by side.
  TestServer s({{"gen", pipeline_file("batched", test::default_model().string(), "", 24,
                                      "batching: { enabled: true }")}});
  const std::vector<json> reqs{completion("def fibonacci(n):\n", 24, 0.0, 0),
                               completion("class Stack:\n    def push(self, x):\n", 24, 0.0, 0)};
  const auto text = [&](const json& req) {
    const auto r = post(s, "/v1/completions", req.dump());
    return r && r->status == 200 ? json::parse(r->body)["choices"][0]["text"].get<std::string>()
                                 : std::string("<failed>");
  };
  // Alone, one after the other: every step holds one row.
  std::vector<std::string> alone;
  for (const json& r : reqs) alone.push_back(text(r));
  CHECK(alone[0] != "<failed>");
  CHECK(alone[1] != "<failed>");
  const double steps_alone = resource_gauge(s, "batch_steps");
  CHECK(steps_alone > 0);
  CHECK(resource_gauge(s, "batch_rows_per_step") == 1.0);

  // Together: the same texts, in fewer steps than alone (most steps hold both rows).
  std::vector<std::string> together(reqs.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    threads.emplace_back([&, i] { together[i] = text(reqs[i]); });
  }
  for (auto& t : threads) t.join();
  CHECK(together == alone);
  const double steps = resource_gauge(s, "batch_steps");
  INFO("steps alone " << steps_alone << ", in all " << steps << ", rows per step "
                      << resource_gauge(s, "batch_rows_per_step"));
  CHECK(resource_gauge(s, "batch_rows_per_step") > 1.0);
  CHECK(steps - steps_alone < 0.75 * steps_alone);
}
