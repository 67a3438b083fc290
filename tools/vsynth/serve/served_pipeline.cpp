#include "tools/vsynth/serve/served_pipeline.h"

#include <algorithm>

#include "stages/facets/candidates.h"

namespace vsynth::serve {

// --- Exchange ---

void Exchange::on_stage(std::string_view stage, graph::StageEvent e) {
  {
    std::lock_guard l(mu_);
    s_.events.push_back(
        {{"stage", stage}, {"event", e == graph::StageEvent::Begin ? "begin" : "end"}});
  }
  cv_.notify_all();
}

void Exchange::on_text(std::string_view text) {
  {
    std::lock_guard l(mu_);
    s_.text.append(text);
  }
  cv_.notify_all();
}

void Exchange::on_retract(std::size_t bytes) {
  {
    std::lock_guard l(mu_);
    const std::size_t n = std::min(bytes, s_.text.size());
    s_.text.resize(s_.text.size() - n);
    s_.retracted += n;
  }
  cv_.notify_all();
}

void Exchange::finish(nlohmann::json record, GenerationFacts facts) {
  std::function<void(const Snapshot&)> fn;
  {
    std::lock_guard l(mu_);
    s_.record = std::move(record);
    s_.facts = std::move(facts);
    s_.done = true;
    fn = std::move(on_finish_);
    on_finish_ = nullptr;
  }
  cv_.notify_all();
  if (fn) fn(s_);  // done: nobody writes the snapshot any more
}

void Exchange::on_finish(std::function<void(const Snapshot&)> fn) {
  {
    std::lock_guard l(mu_);
    if (!s_.done) {
      on_finish_ = std::move(fn);
      return;
    }
  }
  fn(s_);
}

Exchange::Snapshot Exchange::wait_done(std::chrono::steady_clock::time_point until) {
  std::unique_lock l(mu_);
  cv_.wait_until(l, until, [&] { return s_.done; });
  return s_;
}

Exchange::Snapshot Exchange::wait(std::size_t text_seen, std::size_t events_seen,
                                  std::size_t retracted_seen,
                                  std::chrono::steady_clock::time_point until) {
  std::unique_lock l(mu_);
  cv_.wait_until(l, until, [&] {
    return s_.done || s_.text.size() > text_seen || s_.events.size() > events_seen ||
           s_.retracted != retracted_seen;
  });
  return s_;
}

// --- the source and sink ---

// Blocks in next() until a request arrives or the pipeline stops.
class ServedPipeline::RequestSource : public graph::Source {
 public:
  std::optional<graph::Task> next() override {
    std::unique_lock l(mu_);
    cv_.wait(l, [&] { return closed_ || !queue_.empty(); });
    if (queue_.empty()) return std::nullopt;
    graph::Task t = std::move(queue_.front());
    queue_.pop_front();
    return t;
  }
  bool push(graph::Task t) {
    {
      std::lock_guard l(mu_);
      if (closed_) return false;
      queue_.push_back(std::move(t));
    }
    cv_.notify_one();
    return true;
  }
  // No more tasks; those still queued are cancelled (they fail at their first stage).
  void close() {
    {
      std::lock_guard l(mu_);
      closed_ = true;
      for (auto& t : queue_) {
        if (t.observer) t.observer->cancel();
      }
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<graph::Task> queue_;
  bool closed_ = false;
};

namespace {

GenerationFacts facts_of(const graph::Item& item) {
  GenerationFacts f;
  const auto* c = item.find<stages::facets::CandidatesFacet>();
  if (!c) return f;
  f.present = true;
  f.prompt_tokens = c->prompt_tokens;
  f.prefill_ms = c->prefill_ms;
  f.kv_pool = c->kv_pool;
  f.cached_tokens = c->cached_tokens;
  f.suffix = c->suffix;
  if (c->warmup) f.finish = "warmup";
  if (!c->candidates.empty()) {
    const auto& first = c->candidates.front();
    f.text = std::string(first.text);
    f.finish = first.finish;
    f.completion_tokens = first.tokens;
    f.decode_ms = first.decode_ms;
    f.tokens_per_s = first.tokens_per_s;
    f.drafted = first.drafted;
    f.accepted = first.accepted;
  }
  return f;
}

}  // namespace

class ServedPipeline::ResultSink : public graph::Sink {
 public:
  explicit ResultSink(std::atomic<int>& in_flight) : in_flight_(in_flight) {}
  void write(const graph::Item& item) override {
    if (auto ex = std::dynamic_pointer_cast<Exchange>(item.task().observer)) {
      --in_flight_;
      ex->finish(item.to_record(), facts_of(item));
    }
  }
  bool contains(std::string_view) const override { return false; }  // ids are never reused

 private:
  std::atomic<int>& in_flight_;
};

// --- ServedPipeline ---

namespace {

bool reads_file(const graph::ResolvedStage& s) {
  const auto& c = s.kind->contract;
  return c.reads_task_file || std::find(c.requires_facets.begin(), c.requires_facets.end(),
                                        "anchor") != c.requires_facets.end();
}

}  // namespace

ServedPipeline::ServedPipeline(std::string name, graph::ValidatedPipeline spec,
                               const graph::Registry& registry)
    : name_(std::move(name)) {
  std::vector<std::string> readers;
  for (const auto& s : spec.stages) {
    if (!reads_file(s)) continue;
    if (file_stage_.empty()) file_stage_ = s.name + " (" + s.kind->contract.kind + ")";
    readers.push_back(s.name);
  }
  if (!readers.empty()) fileless_ = graph::bypass_closure(spec, readers);
  for (const auto& r : spec.resources) {
    if (r.kind->contract.kind != "model.gguf") continue;
    if (r.params.has("path")) model_path_ = r.params.string("path");
    if (r.params.has("device")) device_ = r.params.string("device");
    break;
  }
  pipeline_ = std::make_unique<graph::Pipeline>(std::move(spec), registry);
  source_ = std::make_unique<RequestSource>();
  sink_ = std::make_unique<ResultSink>(in_flight_);
  runner_ = std::thread([this] {
    const graph::RunResult r = pipeline_->run(*source_, *sink_, control_);
    std::lock_guard l(mu_);
    fatal_ = r.fatal.empty() && !control_.cancelled() ? "the pipeline's run ended" : r.fatal;
  });
}

ServedPipeline::~ServedPipeline() {
  stop();
}

bool ServedPipeline::submit(std::string id, nlohmann::json data, std::shared_ptr<Exchange> ex,
                            bool fileless) {
  graph::Task t{std::move(id), std::move(data)};
  t.observer = std::move(ex);
  if (fileless) t.bypass = fileless_.stages;
  ++in_flight_;
  if (source_->push(std::move(t))) return true;
  --in_flight_;
  return false;
}

int ServedPipeline::in_flight() const {
  return in_flight_.load();
}

void ServedPipeline::stop() {
  if (!runner_.joinable()) return;
  source_->close();
  runner_.join();
}

std::string ServedPipeline::fatal() const {
  std::lock_guard l(mu_);
  return fatal_;
}

}  // namespace vsynth::serve
