// vsynth serve: one pipeline kept running for the server's lifetime. A request becomes a Task
// fed to a long-running Pipeline::run through a blocking source; its result comes back
// through a sink that hands the finished record to the request's Exchange (the task's
// observer, graph/observer.h), which also collects the streamed text and stage events.
// Nothing here knows HTTP.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "graph/bypass.h"
#include "graph/observer.h"
#include "graph/pipeline.h"

namespace vsynth::serve {

// What the server answers with, read from the item's typed `candidates` facet when the task
// is done (candidate 0: the one streamed); no JSON is parsed back.
struct GenerationFacts {
  bool present = false;  // the item has a candidates facet
  std::string text;      // candidate 0's text
  std::string finish;    // generate.llm's finish; "warmup" for a prefill-only task
  int prompt_tokens = 0, completion_tokens = 0;
  int cached_tokens = 0;  // prompt tokens served from the model's KV pool
  bool kv_pool = false;
  double prefill_ms = 0, decode_ms = 0, tokens_per_s = 0;
  int drafted = 0, accepted = 0;  // speculative decoding
  // How the code after the cursor reached the prompt: fim, above, dropped or none ("": the
  // pipeline's generate.llm did not say).
  std::string suffix;
};

// What one request sees of its task while it runs. Written by graph threads and stage
// workers, read by the request's HTTP thread.
class Exchange : public graph::Observer {
 public:
  void on_stage(std::string_view stage, graph::StageEvent e) override;
  void on_text(std::string_view text) override;
  void on_retract(std::size_t bytes) override;
  // The sink: the result record and the typed facts (the task is done).
  void finish(nlohmann::json record, GenerationFacts facts = {});

  struct Snapshot {
    std::string text;                    // streamed so far (after retractions)
    std::vector<nlohmann::json> events;  // {"stage", "event": begin|end}, in order
    std::size_t retracted = 0;           // bytes retracted in all
    bool done = false;
    nlohmann::json record;  // when done
    GenerationFacts facts;  // when done
  };
  // Waits until the text grew past `text_seen`, there are more than `events_seen` events, the
  // retraction count differs from `retracted_seen`, the task is done, or `until`.
  Snapshot wait(std::size_t text_seen, std::size_t events_seen, std::size_t retracted_seen,
                std::chrono::steady_clock::time_point until);
  // Waits until the task is done or `until`.
  Snapshot wait_done(std::chrono::steady_clock::time_point until);
  // Called once with the record when the task is done (at once when it already is), on the
  // sink's thread: for a request whose client left, so that its end is still accounted.
  void on_finish(std::function<void(const Snapshot&)> fn);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  Snapshot s_;
  std::function<void(const Snapshot&)> on_finish_;
};

class ServedPipeline {
 public:
  // Builds the pipeline (loads its models) and starts its run. Throws std::runtime_error
  // naming the resource or stage that failed.
  ServedPipeline(std::string name, graph::ValidatedPipeline spec, const graph::Registry& registry);
  ~ServedPipeline();  // stop()
  ServedPipeline(const ServedPipeline&) = delete;
  ServedPipeline& operator=(const ServedPipeline&) = delete;

  // Queues a task (its observer set to `ex`); the result arrives through ex->finish().
  // Returns false when the pipeline has stopped.
  // `fileless`: the request names no file, so the task skips fileless_bypass().
  bool submit(std::string id, nlohmann::json data, std::shared_ptr<Exchange> ex,
              bool fileless = false);
  // Tasks submitted and not yet finished (queued or inside the graph).
  int in_flight() const;
  // Stops admission, cancels every queued task, waits for the run to end.
  void stop();

  const std::string& name() const { return name_; }
  // The first stage that reads the task's file (ast.anchor, or one needing the `anchor`
  // facet): a request without a file name skips it (fileless_bypass). Empty: none does.
  const std::string& file_stage() const { return file_stage_; }
  // What a request without a file skips: the stages that read the file and those that need
  // what only they produce (graph::bypass_closure); or why they cannot be skipped.
  const graph::BypassPlan& fileless_bypass() const { return fileless_; }
  // The first model.gguf resource's path and device parameters, for /health.
  const std::string& model_path() const { return model_path_; }
  const std::string& device() const { return device_; }
  // Non-empty when the run ended on its own (a fatal error): why.
  std::string fatal() const;
  // The counters its resources report (as `vsynth run`'s summary: a model's batch_steps,
  // batch_rows_per_step, kv_pool_hit_rate, ...), now.
  std::vector<graph::ResourceSnapshot> resource_counters() const {
    return pipeline_->resource_counters();
  }

 private:
  class RequestSource;
  class ResultSink;

  std::string name_;
  std::string file_stage_, model_path_, device_;
  graph::BypassPlan fileless_;
  std::unique_ptr<graph::Pipeline> pipeline_;
  std::unique_ptr<RequestSource> source_;
  std::unique_ptr<ResultSink> sink_;
  graph::RunControl control_;
  std::thread runner_;
  mutable std::mutex mu_;
  std::string fatal_;
  std::atomic<int> in_flight_{0};
};

}  // namespace vsynth::serve
