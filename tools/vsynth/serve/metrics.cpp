#include "tools/vsynth/serve/metrics.h"

#include <fmt/format.h>

#include <algorithm>

namespace vsynth::serve {

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double v) {
  const auto i = static_cast<std::size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) -
                                          bounds_.begin());
  ++counts_[i];
  sum_ += v;
  ++count_;
}

void Histogram::render(std::string& out, std::string_view name) const {
  uint64_t cum = 0;
  for (std::size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, bounds_[i], cum);
  }
  cum += counts_.back();
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, cum, name, sum_,
                     name, count_);
}

std::string prom_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

namespace {
const std::vector<double> kLatency{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
const std::vector<double> kGaps{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1};
}  // namespace

ServeMetrics::ServeMetrics() : ttft_(kLatency), inter_token_(kGaps), request_(kLatency) {}

void ServeMetrics::answered(std::string_view endpoint, int status) {
  std::lock_guard l(mu_);
  ++requests_[{std::string(endpoint), status}];
}
void ServeMetrics::finished(std::string_view finish) {
  std::lock_guard l(mu_);
  ++finished_[std::string(finish)];
}
void ServeMetrics::rejected(std::string_view tenant) {
  std::lock_guard l(mu_);
  ++rejections_[std::string(tenant)];
}
void ServeMetrics::generated(int tokens, double tps) {
  std::lock_guard l(mu_);
  tokens_ += static_cast<uint64_t>(std::max(0, tokens));
  if (tps > 0) last_tps_ = tps;
}
void ServeMetrics::ttft(double s) {
  std::lock_guard l(mu_);
  ttft_.observe(s);
}
void ServeMetrics::inter_token(double s) {
  std::lock_guard l(mu_);
  inter_token_.observe(s);
}
void ServeMetrics::request_time(double s) {
  std::lock_guard l(mu_);
  request_.observe(s);
}
void ServeMetrics::kv_pool(int cached, int prompt) {
  std::lock_guard l(mu_);
  kv_cached_ += static_cast<uint64_t>(std::max(0, cached));
  kv_prompt_ += static_cast<uint64_t>(std::max(0, prompt));
}
void ServeMetrics::drafts(int drafted, int accepted) {
  std::lock_guard l(mu_);
  drafted_ += static_cast<uint64_t>(std::max(0, drafted));
  accepted_ += static_cast<uint64_t>(std::max(0, accepted));
}

std::string ServeMetrics::render(const LoadGauges& load) const {
  std::lock_guard l(mu_);
  std::string o;
  const auto head = [&](const char* name, const char* type, const char* help) {
    o += fmt::format("# HELP vsynth_serve_{} {}\n# TYPE vsynth_serve_{} {}\n", name, help, name,
                     type);
  };
  head("requests_total", "counter", "Answered requests by endpoint and HTTP status.");
  for (const auto& [k, n] : requests_) {
    o += fmt::format("vsynth_serve_requests_total{{endpoint=\"{}\",status=\"{}\"}} {}\n",
                     prom_escape(k.first), k.second, n);
  }
  head("finished_total", "counter", "Generations by finish reason.");
  for (const auto& [k, n] : finished_) {
    o += fmt::format("vsynth_serve_finished_total{{finish=\"{}\"}} {}\n", prom_escape(k), n);
  }
  head("rejections_total", "counter", "Requests refused with 429, by tenant.");
  for (const auto& [k, n] : rejections_) {
    o += fmt::format("vsynth_serve_rejections_total{{tenant=\"{}\"}} {}\n", prom_escape(k), n);
  }
  head("queue_depth", "gauge", "Requests waiting for a slot, all tenants.");
  o += fmt::format("vsynth_serve_queue_depth {}\n", load.waiting);
  head("queue_depth_tenant", "gauge", "Requests waiting for a slot, by tenant.");
  for (const auto& [k, n] : load.waiting_by_tenant) {
    o += fmt::format("vsynth_serve_queue_depth_tenant{{tenant=\"{}\"}} {}\n", prom_escape(k), n);
  }
  head("running", "gauge", "Requests inside the pipelines.");
  o += fmt::format("vsynth_serve_running {}\n", load.running);
  head("generated_tokens_total", "counter", "Tokens generated (candidate 0).");
  o += fmt::format("vsynth_serve_generated_tokens_total {}\n", tokens_);
  head("decode_tokens_per_second", "gauge", "Decode rate of the last generation.");
  o += fmt::format("vsynth_serve_decode_tokens_per_second {}\n", last_tps_);
  head("ttft_seconds", "histogram", "Arrival to the first streamed text.");
  ttft_.render(o, "vsynth_serve_ttft_seconds");
  head("inter_token_seconds", "histogram", "Gaps between streamed pieces.");
  inter_token_.render(o, "vsynth_serve_inter_token_seconds");
  head("request_seconds", "histogram", "Arrival to the last byte.");
  request_.render(o, "vsynth_serve_request_seconds");
  head("kv_pool_cached_tokens_total", "counter", "Prompt tokens served from the KV pool.");
  o += fmt::format("vsynth_serve_kv_pool_cached_tokens_total {}\n", kv_cached_);
  head("kv_pool_prompt_tokens_total", "counter", "Prompt tokens that went through the KV pool.");
  o += fmt::format("vsynth_serve_kv_pool_prompt_tokens_total {}\n", kv_prompt_);
  head("draft_tokens_total", "counter", "Tokens drafted by speculative decoding.");
  o += fmt::format("vsynth_serve_draft_tokens_total {}\n", drafted_);
  head("accepted_draft_tokens_total", "counter", "Drafted tokens kept.");
  o += fmt::format("vsynth_serve_accepted_draft_tokens_total {}\n", accepted_);
  return o;
}

std::string render_resources(const std::vector<PipelineResources>& pipelines) {
  std::string o =
      "# HELP vsynth_serve_resource What the pipelines' resources report (vsynth run's summary: "
      "batch_steps, batch_rows_per_step, kv_pool_hit_rate, ...).\n"
      "# TYPE vsynth_serve_resource gauge\n";
  for (const PipelineResources& p : pipelines) {
    for (const graph::ResourceSnapshot& r : p.resources) {
      for (const graph::ResourceCounter& c : r.counters) {
        o += fmt::format(
            "vsynth_serve_resource{{pipeline=\"{}\",resource=\"{}\",counter=\"{}\"}} {}\n",
            prom_escape(p.pipeline), prom_escape(r.name), prom_escape(c.name), c.value);
      }
    }
  }
  return o;
}

}  // namespace vsynth::serve
