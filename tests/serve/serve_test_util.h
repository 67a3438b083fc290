// Test helpers for vsynth serve: an in-process server on 127.0.0.1 at an ephemeral port over a
// pipeline written for the test (a tiny random model, or the default model), its access
// records, and small HTTP helpers (http_client.h; SSE parsing).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "stages/ast/register.h"
#include "stages/generation/register.h"
#include "tests/generation/gen_test_util.h"
#include "tests/serve/http_client.h"
#include "tests/test_skip.h"
#include "tools/vsynth/serve/server.h"

namespace vsynth::servetest {

namespace fs = std::filesystem;
using nlohmann::json;

inline const graph::Registry& registry() {
  static const graph::Registry r = [] {
    graph::Registry reg;
    stages::generation::register_stages(reg);
    stages::ast::register_stages(reg);
    return reg;
  }();
  return r;
}

// One folder per process: ctest runs test cases of this binary in parallel processes, and two of
// them writing the same pipeline file let a third read it half written. Removed at exit.
inline fs::path test_dir() {
  static const fs::path d = [] {
    fs::path p = fs::path(VSYNTH_BINARY_DIR) / "serve_test" / std::to_string(::getpid());
    fs::create_directories(p);
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(fs::path(VSYNTH_BINARY_DIR) / "serve_test" / std::to_string(::getpid()), ec);
    });
    return p;
  }();
  return d;
}

// The tiny random llama GGUF (tests/generation/gen_test_util.h), written once.
inline std::string tiny_model() {
  static const std::string path = [] {
    const fs::path p = test_dir() / "tiny.gguf";
    const auto vocab = gentest::spm_vocab(
        {"def", "\xE2\x96\x81", "(", ")", ":", "\n", "a", "b", "+", "x", "y", "=", "1", "2"});
    gentest::write_tiny_model(p, vocab, 1, 2048);
    return p.string();
  }();
  return path;
}

// A generate-only pipeline over `model` (a path), written to a file named after `name`;
// `model_with`: more model.gguf parameters (e.g. "batching: { enabled: true }").
inline std::string pipeline_file(const std::string& name, const std::string& model,
                                 const std::string& stages = "", int max_new_tokens = 16,
                                 const std::string& model_with = "") {
  const fs::path p = test_dir() / (name + ".yaml");
  std::ofstream out(p);
  out << "resources:\n  m: { use: model.gguf, with: { path: \"" << model
      << "\", threads: 1, context_length: 1024" << (model_with.empty() ? "" : ", " + model_with)
      << " } }\nstages:\n"
      << stages
      << "  gen: { use: generate.llm, with: { model: m, max_new_tokens: " << max_new_tokens
      << ", temperature: 0.0, mode: complete } }\nedges: [ "
      << (stages.empty() ? "gen -> out" : "anchor -> gen -> out") << " ]\n";
  return p.string();
}

class TestServer {
 public:
  explicit TestServer(std::vector<std::pair<std::string, std::string>> pipelines,
                      serve::ServeConfig config = serve::default_config()) {
    serve::ServerOptions o;
    o.port = 0;
    o.pipelines = std::move(pipelines);
    o.config = std::move(config);
    o.access_log = nullptr;
    o.on_access = [this](const serve::AccessRecord& r) {
      {
        std::lock_guard l(mu_);
        log_.push_back(r);
      }
      cv_.notify_all();
    };
    server_ = std::make_unique<serve::Server>(o, registry());
    port_ = server_->start();
  }
  ~TestServer() { server_->stop(); }

  int port() const { return port_; }

  // The first access record matching `pred`, waiting up to `timeout` for it.
  template <class Pred>
  std::optional<serve::AccessRecord> await(Pred pred, std::chrono::seconds timeout) {
    std::unique_lock l(mu_);
    std::optional<serve::AccessRecord> found;
    cv_.wait_for(l, timeout, [&] {
      for (const auto& r : log_) {
        if (pred(r)) {
          found = r;
          return true;
        }
      }
      return false;
    });
    return found;
  }
  std::vector<serve::AccessRecord> log() const {
    std::lock_guard l(mu_);
    return log_;
  }

 private:
  std::unique_ptr<serve::Server> server_;
  int port_ = 0;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<serve::AccessRecord> log_;
};

inline std::optional<Reply> post(const TestServer& s, const std::string& path,
                                 const std::string& body, const Headers& headers = {}) {
  return http_request(s.port(), "POST", path, body, headers);
}

inline std::optional<Reply> get(const TestServer& s, const std::string& path) {
  return http_request(s.port(), "GET", path);
}

// The JSON objects of an SSE body's `data:` lines, [DONE] excluded; `done` says if it came.
inline std::vector<json> sse_events(const std::string& body, bool* done = nullptr) {
  std::vector<json> out;
  if (done) *done = false;
  std::size_t pos = 0;
  while (pos < body.size()) {
    std::size_t end = body.find('\n', pos);
    if (end == std::string::npos) end = body.size();
    const std::string line = body.substr(pos, end - pos);
    pos = end + 1;
    if (line.rfind("data: ", 0) != 0) continue;
    const std::string data = line.substr(6);
    if (data == "[DONE]") {
      if (done) *done = true;
      continue;
    }
    out.push_back(json::parse(data));
  }
  return out;
}

}  // namespace vsynth::servetest
