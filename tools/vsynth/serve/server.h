// vsynth serve: the HTTP server (cpp-httplib): routes, authentication, admission, the
// request's life from body to answer, streaming, resume_from, the access log.
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

namespace httplib {
class DataSink;
class Server;
struct Request;
struct Response;
}  // namespace httplib

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
  struct Stream;
  void routes();
  void generate(Endpoint e, const httplib::Request& req, httplib::Response& res);
  void stream(std::shared_ptr<Stream> st, httplib::Response& res);
  // One turn of a stream: waits a little for news, writes it; false when the client is gone.
  bool pump(Stream& st, httplib::DataSink& sink);
  std::string final_piece(Stream& st, const nlohmann::json& record);
  void answer_error(Endpoint e, const httplib::Request& req, httplib::Response& res, int status,
                    const std::string& message, const std::string& field,
                    const std::string& tenant);
  void log(const AccessRecord& r);
  ResultInfo result_info(const std::string& task_id, const ServedPipeline& p,
                         const nlohmann::json& record, const std::string& context) const;
  void account(const ResultInfo& info, const nlohmann::json& record);
  ServedPipeline* pick(const std::string& model) const;

  // resume_from: finished results by request fingerprint, the newest `recent_results`.
  void remember(const std::string& fingerprint, const ResultInfo& info);
  std::optional<ResultInfo> recall(const std::string& fingerprint) const;

  ServerOptions options_;
  std::vector<std::unique_ptr<ServedPipeline>> pipelines_;
  Admission admission_;
  ServeMetrics metrics_;
  std::unique_ptr<httplib::Server> http_;
  std::thread listener_;
  int port_ = 0;
  std::atomic<uint64_t> next_task_{0};
  std::atomic<bool> stopping_{false};
  mutable std::mutex mu_;
  std::vector<std::weak_ptr<Exchange>> live_;  // requests in flight (cancelled on stop)
  std::deque<std::pair<std::string, ResultInfo>> recent_;
  std::mutex log_mu_;
};

}  // namespace vsynth::serve
