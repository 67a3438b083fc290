// vsynth serve against hostile and careless clients, on 127.0.0.1: bodies nested 100,000 deep on
// every endpoint, numbers out of range, bad UTF-8, invalid task records, pipeline failures
// (5xx, streamed: an error event), 405, the bearer scheme in any case, slowloris connections,
// a chunked body over the limit, the connection cap, keep-alive, the exact bodies llama.vim and
// tabby-agent send (tests/serve/data); on the default model, abandoned non-streamed requests,
// id_slot supersede and a burst of 429s.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <thread>

#include "tests/serve/serve_test_util.h"

using namespace vsynth;
using namespace vsynth::servetest;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::string raw_post(const std::string& path, const std::string& body,
                     const std::string& extra_headers = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
         extra_headers + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string read_data(const std::string& name) {
  std::ifstream in(fs::path(VSYNTH_SOURCE_DIR) / "tests/serve/data" / name);
  REQUIRE(in);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TestServer& hostile_server() {
  static TestServer s(
      {{"gen", pipeline_file("gen", tiny_model())},
       {"ctx", pipeline_file("ctx", tiny_model(), "  anchor: { use: ast.anchor }\n")}},
      serve::parse_config("server: { max_body_bytes: 300000, request_read_s: 2, threads: 2 }\n"
                          "anonymous: {}\n",
                          "hostile.yaml"));
  return s;
}

json error_of(const std::optional<Reply>& r) {
  REQUIRE(r);
  const json b = json::parse(r->body, nullptr, false);
  REQUIRE(b.is_object());
  REQUIRE(b.contains("error"));
  return b["error"];
}

}  // namespace

TEST_CASE("bodies nested 100,000 deep are a 400 on every endpoint and the server lives",
          "[serve][hostile]") {
  TestServer& s = hostile_server();
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  for (const char* path :
       {"/v1/completions", "/v1/chat/completions", "/infill", "/completion", "/v1/tasks"}) {
    INFO(path);
    for (const std::string& body :
         {"{\"prompt\": " + deep + "}", "{\"x\": {\"y\": " + deep + "}}", deep}) {
      const auto r = post(s, path, body);
      const json e = error_of(r);
      CHECK(r->status == 400);
      CHECK(e["message"].get<std::string>().find("deeper than 64") != std::string::npos);
    }
  }
  const auto h = get(s, "/health");
  REQUIRE(h);
  CHECK(h->status == 200);
}

TEST_CASE("client mistakes are 4xx naming the field and pipeline failures are 5xx",
          "[serve][hostile]") {
  TestServer& s = hostile_server();
  struct Case {
    const char* path;
    std::string body;
    int status;
    const char* param;
    const char* says;
  };
  const std::vector<Case> cases{
      {"/v1/completions", R"({"prompt": "x", "temperature": 1e400})", 400, "temperature",
       "range of a double"},
      {"/infill", R"({"input_prefix": "a", "input_extra": [{"filename": "u.py", "text": 1e999}]})",
       400, "input_extra[0].text", "range of a double"},
      {"/v1/completions", "{\"prompt\": \"ab\xff\"}", 400, "prompt", "byte offset 14"},
      {"/v1/tasks", R"({"id": "t", "prefix": "a", "decode": {"max_new_tokens": -5}})", 400,
       "decode.max_new_tokens", "decode.max_new_tokens"},
      {"/v1/tasks", R"({"id": "t", "language": "python"})", 400, "prefix", "nothing to generate"},
      {"/v1/tasks", R"({"id": "t", "prefix": 3})", 400, "prefix", "string"},
      {"/infill", R"({"input_prefix": "a", "n_indent": -1})", 400, "n_indent", "n_indent"},
      {"/infill", R"({"input_prefix": "a", "t_max_predict_ms": 1.5})", 400, "t_max_predict_ms",
       "integer"},
  };
  for (const Case& c : cases) {
    INFO(c.path << " " << c.body);
    const auto r = post(s, c.path, c.body);
    const json e = error_of(r);
    CHECK(r->status == c.status);
    CHECK(e["param"] == c.param);
    CHECK(e["message"].get<std::string>().find(c.says) != std::string::npos);
  }

  // A stage failure (generate.llm refuses a /decode key it does not know) is a 500, never a 200.
  const json failing{{"id", "f"}, {"prefix", "a"}, {"decode", {{"no_such_key", 1}}}};
  const auto f = post(s, "/v1/tasks", failing.dump());
  const json fe = error_of(f);
  CHECK(f->status == 500);
  CHECK(fe["type"] == "server_error");
  CHECK(fe["message"].get<std::string>().find("no_such_key") != std::string::npos);
  // Streamed: an error event, then the end.
  json streamed = failing;
  streamed["stream"] = true;
  const auto fs = post(s, "/v1/tasks", streamed.dump());
  REQUIRE(fs);
  CHECK(fs->status == 200);  // the head went out before the failure was known
  bool done = false;
  const auto events = sse_events(fs->body, &done);
  CHECK(done);
  REQUIRE(!events.empty());
  CHECK(events.back()["event"] == "error");
  CHECK(events.back()["error"]["code"] == 500);
  const auto m = get(s, "/metrics");
  REQUIRE(m);
  CHECK(m->body.find("vsynth_serve_requests_total{endpoint=\"/v1/tasks\",status=\"500\"} 2") !=
        std::string::npos);
  CHECK(m->body.find("vsynth_serve_requests_total{endpoint=\"/v1/tasks\",status=\"400\"}") !=
        std::string::npos);

  // A wrong method is 405 with Allow.
  const auto g = get(s, "/v1/completions");
  REQUIRE(g);
  CHECK(g->status == 405);
  CHECK(g->get_header_value("Allow") == "POST");
  const auto p = post(s, "/health", "{}");
  REQUIRE(p);
  CHECK(p->status == 405);
  CHECK(p->get_header_value("Allow") == "GET");
  // Error lines carry their real time.
  const auto logged = s.await(
      [](const serve::AccessRecord& r) { return r.status == 400 && r.path == "/v1/completions"; },
      std::chrono::seconds(5));
  REQUIRE(logged);
  CHECK(logged->ms > 0.0);
}

TEST_CASE("the bearer scheme is matched in any case", "[serve][hostile]") {
  const serve::ServeConfig cfg = serve::parse_config(
      "tenants:\n  alpha: { keys: [\"sk-alpha-0001\"], priority: gold }\n", "bearer.yaml");
  TestServer s({{"gen", pipeline_file("gen", tiny_model())}}, cfg);
  const std::string body = json{{"prompt", "a"}, {"max_tokens", 2}}.dump();
  for (const char* auth :
       {"bearer sk-alpha-0001", "BEARER sk-alpha-0001", "Bearer  sk-alpha-0001"}) {
    INFO(auth);
    const auto r = post(s, "/v1/completions", body, {{"Authorization", auth}});
    REQUIRE(r);
    CHECK(r->status == 200);
  }
  const auto log = s.log();
  REQUIRE(log.size() == 3);
  for (const auto& r : log) CHECK(r.tenant == "alpha");
}

TEST_CASE("slowloris connections beyond the workers do not starve /health or a completion",
          "[serve][hostile]") {
  TestServer& s = hostile_server();  // request_read_s 2, 2 worker threads asked for
  constexpr int kSlow = 40;
  std::vector<std::unique_ptr<Connection>> slow;
  for (int i = 0; i < kSlow; ++i) {
    slow.push_back(std::make_unique<Connection>(s.port(), std::chrono::seconds(5)));
    REQUIRE(slow.back()->connected());
    slow.back()->send_raw("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: ");
  }
  std::atomic<bool> stop{false};
  std::thread dribble([&] {
    // One byte per connection every 100 ms: never a whole header.
    for (int t = 0; t < 40 && !stop; ++t) {
      for (auto& c : slow) c->send_raw("a");
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (int i = 0; i < 5; ++i) {
    const auto t0 = Clock::now();
    const auto h = http_request(s.port(), "GET", "/health", {}, {}, std::chrono::seconds(2));
    REQUIRE(h);
    CHECK(h->status == 200);
    CHECK(ms_since(t0) < 1000);
  }
  const auto t0 = Clock::now();
  const auto r = post(s, "/v1/completions", json{{"prompt", "a"}, {"max_tokens", 4}}.dump());
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(ms_since(t0) < 10000);
  stop = true;
  dribble.join();
  // Each slow connection had request_read_s (2 s) for its request: all closed by now or soon.
  int closed = 0;
  for (auto& c : slow) closed += c->closed_by_server(std::chrono::seconds(4)) ? 1 : 0;
  CHECK(closed == kSlow);
}

TEST_CASE("a chunked body over max_body_bytes is refused at the limit", "[serve][hostile]") {
  TestServer& s = hostile_server();  // max_body_bytes 300000
  Connection c(s.port(), std::chrono::seconds(10));
  REQUIRE(c.send_raw(
      "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: chunked\r\n\r\n"));
  // 100 chunks of 10,000 bytes (1 MB) with no end: the server answers once 300,000 are read.
  const std::string chunk = "2710\r\n" + std::string(10000, ' ') + "\r\n";
  int sent = 0;
  for (; sent < 100; ++sent) {
    if (!c.send_raw(chunk)) break;
  }
  const auto r = c.read_reply();
  const json e = error_of(r);
  CHECK(r->status == 413);
  CHECK(e["param"] == "body");
  INFO("chunks written before the refusal: " << sent);
  const auto h = get(s, "/health");
  REQUIRE(h);
  CHECK(h->status == 200);
}

TEST_CASE("past max_connections a connection gets 503 and keep-alive serves several requests",
          "[serve][hostile]") {
  TestServer s({{"gen", pipeline_file("gen", tiny_model())}},
               serve::parse_config("server: { max_connections: 4 }\nanonymous: {}\n", "cap.yaml"));
  std::vector<std::unique_ptr<Connection>> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(std::make_unique<Connection>(s.port(), std::chrono::seconds(5)));
    REQUIRE(held.back()->connected());
  }
  // Accepted in order: wait until the server counts them.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  Connection over(s.port(), std::chrono::seconds(5));
  REQUIRE(over.connected());
  over.send_raw("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  const auto r = over.read_reply();
  const json e = error_of(r);
  CHECK(r->status == 503);
  CHECK(r->get_header_value("Retry-After") == "1");
  // One of the held connections, kept alive across requests.
  for (int i = 0; i < 3; ++i) {
    const auto k = held[0]->request("POST", "/v1/completions",
                                    json{{"prompt", "a"}, {"max_tokens", 2}}.dump());
    REQUIRE(k);
    CHECK(k->status == 200);
  }
  for (auto& c : held) c->close();
  // Once they are gone, new connections are served again.
  std::optional<Reply> again;
  for (int i = 0; i < 40 && !(again && again->status == 200); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    again = get(s, "/health");
  }
  REQUIRE(again);
  CHECK(again->status == 200);
}

TEST_CASE("llama.vim's and tabby-agent's exact bodies are answered in their shapes",
          "[serve][hostile]") {
  TestServer& s = hostile_server();
  // llama.vim's FIM request: only the response_fields it asks for.
  const auto fim = post(s, "/infill", read_data("llama_vim_fim.json"));
  REQUIRE(fim);
  INFO(fim->body);
  // generate.llm reads its n_indent and t_max_predict_ms (as /decode fields): a 200.
  REQUIRE(fim->status == 200);
  const json fb = json::parse(fim->body);
  CHECK(fb["content"].is_string());
  for (const char* k : {"timings/prompt_n", "timings/prompt_ms", "timings/prompt_per_second",
                        "timings/predicted_n", "timings/predicted_ms",
                        "timings/predicted_per_second", "truncated", "tokens_cached"}) {
    CHECK(fb.contains(k));
  }
  for (const auto& [k, v] : fb.items()) {
    CHECK((k == "content" || k.rfind("timings/", 0) == 0 || k == "truncated" ||
           k == "tokens_cached"));
  }
  // Its warm-up: n_predict 0, response_fields [""]: an empty object.
  const auto warm = post(s, "/infill", read_data("llama_vim_warmup.json"));
  REQUIRE(warm);
  INFO(warm->body);
  REQUIRE(warm->status == 200);
  CHECK(json::parse(warm->body) == json::object());
  // tabby-agent's completion: {id, choices: [{index, text}]}, on both pipelines (the file is
  // named, so the context stages read it).
  for (const char* model : {"gen", "ctx"}) {
    json body = json::parse(read_data("tabby_agent_completion.json"));
    body["model"] = model;
    const auto t = post(s, "/v1/completions", body.dump());
    REQUIRE(t);
    INFO(model << ": " << t->body);
    REQUIRE(t->status == 200);
    const json b = json::parse(t->body);
    CHECK(b["id"].is_string());
    CHECK(b["choices"][0]["index"] == 0);
    CHECK(b["choices"][0]["text"].is_string());
  }
}

// --- the default model (slow enough to be caught mid-generation) ---

TEST_CASE("30 abandoned non-streamed requests leave the next one served in its idle time",
          "[serve][hostile][model]") {
  if (!test::have_default_model()) return;
  TestServer s({{"gen", pipeline_file("real", test::default_model().string(), "", 64)}});
  const std::string body =
      json{{"input_prefix", "def fibonacci(n):\n"}, {"n_predict", 48}, {"temperature", 0.0}}.dump();
  (void)post(s, "/infill", body);  // warm-up: page the weights in
  const auto t_idle = Clock::now();
  const auto idle = post(s, "/infill", body);
  const double idle_ms = ms_since(t_idle);
  REQUIRE(idle);
  REQUIRE(idle->status == 200);
  for (int i = 0; i < 30; ++i) {
    Connection c(s.port(), std::chrono::seconds(5));
    const std::string mine = json{
        {"input_prefix", "# " + std::to_string(i) + "\ndef fibonacci(n):\n"},
        {"n_predict", 48}}.dump();
    c.send_raw(raw_post("/infill", mine));
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    c.close();
  }
  const auto t0 = Clock::now();
  const auto r = post(s, "/infill", body);
  const double ms = ms_since(t0);
  REQUIRE(r);
  CHECK(r->status == 200);  // never a 429: the abandoned requests left the queue
  INFO("idle " << idle_ms << " ms, after 30 abandoned " << ms << " ms (x" << ms / idle_ms << ")");
  CHECK(ms <= 1.5 * idle_ms + 1000);  // 1 s of slack for a shared 2-core machine
  // Every abandoned request ends as 499 in the access log.
  const auto count = [&](int status) {
    int n = 0;
    for (const auto& a : s.log()) n += a.status == status ? 1 : 0;
    return n;
  };
  for (int i = 0; i < 600 && count(499) < 30; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  CHECK(count(499) == 30);
  CHECK(count(429) == 0);
}

TEST_CASE("a client's new request on its id_slot supersedes the earlier one",
          "[serve][hostile][model]") {
  if (!test::have_default_model()) return;
  TestServer s({{"gen", pipeline_file("real", test::default_model().string(), "", 256)}});
  const auto infill = [](int n) {
    return json{{"input_prefix", "def fibonacci(n):\n"}, {"n_predict", n}, {"id_slot", 0}}.dump();
  };
  Connection first(s.port(), std::chrono::seconds(60));
  REQUIRE(first.send_raw(raw_post("/infill", infill(256), "X-Client-Id: editor-1\r\n")));
  std::this_thread::sleep_for(std::chrono::milliseconds(800));  // it is decoding by now
  const auto t0 = Clock::now();
  const auto second = post(s, "/infill", infill(4), {{"X-Client-Id", "editor-1"}});
  REQUIRE(second);
  CHECK(second->status == 200);
  const auto old = first.read_reply();
  const json e = error_of(old);
  CHECK(old->status == 409);
  CHECK(e["param"] == "id_slot");
  INFO("superseded and the new one answered in " << ms_since(t0) << " ms");
  CHECK(ms_since(t0) < 30000);
  const auto rec = s.await([](const serve::AccessRecord& r) { return r.status == 409; },
                           std::chrono::seconds(5));
  REQUIRE(rec);
  CHECK(rec->finish == "cancelled");
  CHECK(rec->tokens < 256);

  // Anonymous requests without a client id never cancel each other.
  std::vector<int> statuses(2, 0);
  std::vector<std::thread> ts;
  for (int i = 0; i < 2; ++i) {
    ts.emplace_back([&, i] {
      const auto r = post(s, "/infill", infill(6));
      statuses[i] = r ? r->status : -1;
    });
  }
  for (auto& t : ts) t.join();
  CHECK(statuses == std::vector<int>{200, 200});
}

TEST_CASE("a burst on a full tenant is all 429s, at once, none dropped",
          "[serve][hostile][model]") {
  if (!test::have_default_model()) return;
  const serve::ServeConfig cfg = serve::parse_config(
      "anonymous: { max_concurrent: 1, queue_depth: 0, max_tokens: 256 }\n", "burst.yaml");
  TestServer s({{"gen", pipeline_file("real", test::default_model().string(), "", 256)}}, cfg);
  Connection holder(s.port(), std::chrono::seconds(60));
  REQUIRE(holder.send_raw(raw_post(
      "/v1/completions",
      json{{"prompt", "def fibonacci(n):\n"}, {"max_tokens", 256}, {"stream", true}}.dump())));
  bool text = false;
  holder.read_raw([&](std::string_view b) {
    text = b.find("\"text\"") != std::string_view::npos;
    return !text;
  });
  REQUIRE(text);
  constexpr int kThreads = 20, kEach = 5;
  std::vector<double> ms;
  std::mutex mu;
  std::atomic<int> failed{0}, other{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        const auto t0 = Clock::now();
        const auto r = post(s, "/v1/completions", json{{"prompt", "x"}, {"max_tokens", 4}}.dump());
        const double d = ms_since(t0);
        if (!r) {
          ++failed;
        } else if (r->status != 429) {
          ++other;
        } else {
          std::lock_guard l(mu);
          ms.push_back(d);
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  holder.close();
  std::sort(ms.begin(), ms.end());
  REQUIRE(!ms.empty());
  const double p99 = ms[std::min(ms.size() - 1, static_cast<std::size_t>(0.99 * ms.size()))];
  INFO("429 p50 " << ms[ms.size() / 2] << " ms, p99 " << p99 << " ms");
  CHECK(failed == 0);  // no connection refused or reset
  CHECK(other == 0);
  CHECK(ms.size() == kThreads * kEach);
  CHECK(p99 < 1000);  // a generous bound; bench_serve measures it
}
