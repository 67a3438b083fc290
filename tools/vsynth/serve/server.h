// vsynth serve: the server: routes, authentication, admission, a request's life from body to
// answer in named phases, streaming, resume_from, disconnects and supersedes, the access log.
// The sockets are http_server.h's (Boost.Beast on Asio); the requests' blocking phases
// (waiting for a slot, for the result, writing a stream) run on a pool of worker threads.
//
//   POST /v1/completions, /v1/chat/completions   OpenAI-compatible (SSE with data: [DONE])
//   POST /infill, /completion                    llama.cpp-server-compatible
//   POST /v1/tasks                               a task record -> its result record
//   GET  /v1/models, /health, /metrics
//
// Binds 127.0.0.1 unless told otherwise. No endpoint reads a path from the request: file
// contents arrive in the body. See docs/serving.md.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "graph/registry.h"
#include "tools/vsynth/serve/admission.h"
#include "tools/vsynth/serve/metrics.h"
#include "tools/vsynth/serve/responses.h"
#include "tools/vsynth/serve/served_pipeline.h"

namespace vsynth::serve {

// One answered request, as the access log writes it.
struct AccessRecord {
  std::string method, path, tenant, task_id, pipeline, finish;
  int status = 0;
  double ms = 0;
  int tokens = 0;
  bool stream = false;
};

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (Server::port() says which)
  // Served pipelines, name -> YAML file; the first is the default (a request without `model`).
  std::vector<std::pair<std::string, std::string>> pipelines;
  ServeConfig config = default_config();
  FILE* access_log = stderr;  // one line per request; nullptr: none
  // Called once per answered request, after the access log line (tests, embedders).
  std::function<void(const AccessRecord&)> on_access;
};

class HttpServer;
class Responder;
struct HttpRequest;
struct HttpResponse;

class Server {
 public:
  // Loads and builds every pipeline (models included). Throws std::runtime_error (or
  // graph::SpecError) naming the pipeline that failed.
  Server(ServerOptions options, const graph::Registry& registry);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and starts answering on a thread of its own; returns the port. Throws when the
  // address cannot be bound.
  int start();
  // Blocks until stop() (from another thread or a signal handler's thread).
  void wait();
  // Stops listening, cancels every request in flight, stops the pipelines.
  void stop();
  int port() const { return port_; }

 private:
  struct Call;
  void handle(HttpRequest req, std::shared_ptr<Responder> out);
  void get(const std::string& path, const HttpRequest& req, Responder& out);
  // generate's phases, in order: the first four on the io thread, the rest on a worker.
  void generate(Endpoint e, HttpRequest req, std::shared_ptr<Responder> out);
  bool authenticate(Call& c, const HttpRequest& req);
  bool parse(Call& c, const HttpRequest& req);
  bool resume(Call& c);
  void supersede(const std::shared_ptr<Call>& c, const HttpRequest& req);
  void run(const std::shared_ptr<Call>& c);  // worker: admit, submit, await
  bool admit(Call& c);
  bool submit(Call& c);
  void await(Call& c);
  void stream(const std::shared_ptr<Call>& c);
  std::string pump(Call& c, const Exchange::Snapshot& snap);
  std::string final_piece(Call& c, const Exchange::Snapshot& snap);
  void fail(Call& c, int status, const std::string& message, const std::string& field,
            std::vector<std::pair<std::string, std::string>> headers = {});
  void log(const AccessRecord& r);
  ResultInfo result_info(const Call& c, const Exchange::Snapshot& snap) const;
  void account(const ResultInfo& info, const GenerationFacts& f);
  ServedPipeline* pick(const std::string& model) const;
  void post_work(std::function<void()> fn);

  // resume_from: finished results by request fingerprint, the newest `recent_results`.
  void remember(const std::string& fingerprint, const ResultInfo& info);
  std::optional<ResultInfo> recall(const std::string& fingerprint) const;

  ServerOptions options_;
  std::vector<std::unique_ptr<ServedPipeline>> pipelines_;
  Admission admission_;
  ServeMetrics metrics_;
  int port_ = 0;
  std::atomic<uint64_t> next_task_{0};
  std::atomic<bool> stopping_{false};
  mutable std::mutex mu_;
  std::vector<std::weak_ptr<Exchange>> live_;  // requests in flight (cancelled on stop)
  std::deque<std::pair<std::string, ResultInfo>> recent_;
  std::map<std::string, std::weak_ptr<Call>> slots_;  // "client\nslot" -> its newest request
  std::mutex log_mu_;
  // Workers: the requests' blocking phases. Their number covers every request the tenants may
  // hold at once (running + queued), so a 429 never waits for a worker.
  std::mutex work_mu_;
  std::condition_variable work_cv_;
  std::deque<std::function<void()>> work_;
  bool work_closed_ = false;
  std::vector<std::thread> workers_;
  std::unique_ptr<HttpServer> http_;  // last: its connections go before the rest
  std::mutex stop_mu_;
  bool stopped_ = false;
};

}  // namespace vsynth::serve
