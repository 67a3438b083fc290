// vsynth serve: the server's own counters and histograms, rendered as Prometheus text
// (exposition format 0.0.4) for GET /metrics. Thread-safe; every update takes one mutex (a
// request updates a handful of times, never per byte).
//
// Series (prefix vsynth_serve_):
//   requests_total{endpoint, status}      counter: answered requests by HTTP status
//   finished_total{finish}                counter: generations by finish (eog, length, cancelled..)
//   rejections_total{tenant}              counter: 429s
//   queue_depth, running                  gauges: waiting / running requests (all tenants)
//   queue_depth_tenant{tenant}            gauge
//   generated_tokens_total                counter (rate() of it: tokens/s)
//   decode_tokens_per_second              gauge: the last generation's decode rate
//   ttft_seconds, inter_token_seconds,    histograms: arrival -> first streamed text; between
//   request_seconds                       streamed pieces; arrival -> last byte
//   kv_pool_cached_tokens_total,          counters: prompt tokens served from the KV pool, and
//   kv_pool_prompt_tokens_total           all prompt tokens that went through it (hit rate: ratio)
//   draft_tokens_total, accepted_draft_tokens_total   counters: speculative decoding
//   resource{pipeline, resource, counter} gauges: what the pipelines' resources report, e.g. a
//                                         model with batching on: batch_steps, batch_rows_per_step
//                                         (the batch size), batch_tokens (render_resources)
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "graph/resource.h"

namespace vsynth::serve {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);  // upper bounds, ascending (seconds)
  void observe(double v);
  // Lines `name_bucket{le=..}`, `name_sum`, `name_count`.
  void render(std::string& out, std::string_view name) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bound, not cumulative; +Inf last
  double sum_ = 0;
  uint64_t count_ = 0;
};

struct LoadGauges {
  int running = 0, waiting = 0;
  std::map<std::string, int> waiting_by_tenant;
};

class ServeMetrics {
 public:
  ServeMetrics();
  void answered(std::string_view endpoint, int status);
  void finished(std::string_view finish);
  void rejected(std::string_view tenant);
  void generated(int tokens, double tokens_per_s);
  void ttft(double s);
  void inter_token(double s);
  void request_time(double s);
  void kv_pool(int cached_tokens, int prompt_tokens);
  void drafts(int drafted, int accepted);

  std::string render(const LoadGauges& load) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::map<std::string, uint64_t> finished_, rejections_;
  uint64_t tokens_ = 0, kv_cached_ = 0, kv_prompt_ = 0, drafted_ = 0, accepted_ = 0;
  double last_tps_ = 0;
  Histogram ttft_, inter_token_, request_;
};

// Label values escaped for the exposition format (\\, \", \n).
std::string prom_escape(std::string_view s);

// One pipeline's resource counters.
struct PipelineResources {
  std::string pipeline;
  std::vector<graph::ResourceSnapshot> resources;
};
// The vsynth_serve_resource gauge family (HELP and TYPE once, then a sample per counter).
std::string render_resources(const std::vector<PipelineResources>& pipelines);

}  // namespace vsynth::serve
