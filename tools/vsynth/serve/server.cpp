#include "tools/vsynth/serve/server.h"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <httplib.h>

#include <chrono>
#include <ctime>

#include "graph/validate.h"

#ifndef VSYNTH_VERSION
#define VSYNTH_VERSION "unknown"
#endif

namespace vsynth::serve {

using clock = std::chrono::steady_clock;
using nlohmann::json;

namespace {

double ms_since(clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock::now() - t0).count();
}

// Authorization: Bearer KEY, else X-Api-Key.
std::string api_key(const httplib::Request& req) {
  const std::string auth = req.get_header_value("Authorization");
  constexpr std::string_view kBearer = "Bearer ";
  if (auth.size() > kBearer.size() && std::string_view(auth).substr(0, kBearer.size()) == kBearer) {
    return auth.substr(kBearer.size());
  }
  return req.get_header_value("X-Api-Key");
}

const json* candidates_of(const json& record) {
  const auto f = record.find("facets");
  if (f == record.end()) return nullptr;
  const auto c = f->find("candidates");
  return c == f->end() ? nullptr : &*c;
}

bool llama_style(Endpoint e) {
  return e == Endpoint::Infill || e == Endpoint::Completion;
}

}  // namespace

// One streamed answer's state, shared by httplib's content provider and releaser.
struct Server::Stream {
  Endpoint endpoint = Endpoint::Completions;
  std::shared_ptr<Exchange> ex;
  Admission::Ticket ticket;
  ServedPipeline* pipeline = nullptr;
  std::string task_id, context, fingerprint, client_id;
  ResultInfo info;  // id, model, created while streaming; the rest when done
  std::size_t sent = 0, events = 0, retracted = 0;
  bool finished = false;
  clock::time_point t0, last_piece, last_write, deadline;
  AccessRecord access;
};

Server::Server(ServerOptions options, const graph::Registry& registry)
    : options_(std::move(options)), admission_(options_.config) {
  if (options_.pipelines.empty()) throw std::runtime_error("no pipeline to serve");
  for (const auto& [name, file] : options_.pipelines) {
    for (const auto& p : pipelines_) {
      if (p->name() == name)
        throw std::runtime_error(fmt::format("pipeline `{}` given twice", name));
    }
    graph::ValidatedPipeline spec = graph::load_pipeline(file, registry);
    try {
      pipelines_.push_back(std::make_unique<ServedPipeline>(name, std::move(spec), registry));
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("pipeline `{}` ({}): {}", name, file, e.what()));
    }
  }
  http_ = std::make_unique<httplib::Server>();
  const auto threads = static_cast<std::size_t>(options_.config.threads);
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http_->set_payload_max_length(options_.config.max_body_bytes);
  routes();
}

Server::~Server() {
  stop();
}

int Server::start() {
  if (options_.port == 0) {
    port_ = http_->bind_to_any_port(options_.host);
  } else {
    port_ = http_->bind_to_port(options_.host, options_.port) ? options_.port : -1;
  }
  if (port_ <= 0) {
    throw std::runtime_error(
        fmt::format("cannot listen on {}:{} (in use, or not an address "
                    "of this machine)",
                    options_.host, options_.port));
  }
  listener_ = std::thread([this] { http_->listen_after_bind(); });
  return port_;
}

void Server::wait() {
  if (listener_.joinable()) listener_.join();
}

void Server::stop() {
  if (stopping_.exchange(true)) {
    wait();
    return;
  }
  {
    std::lock_guard l(mu_);
    for (auto& w : live_) {
      if (auto ex = w.lock()) ex->cancel();
    }
  }
  http_->stop();
  wait();
  for (auto& p : pipelines_) p->stop();
}

ServedPipeline* Server::pick(const std::string& model) const {
  if (model.empty()) return pipelines_.front().get();
  for (const auto& p : pipelines_) {
    if (p->name() == model) return p.get();
  }
  return nullptr;
}

void Server::log(const AccessRecord& r) {
  metrics_.answered(r.path, r.status);
  if (options_.access_log) {
    const std::tm now = fmt::gmtime(std::time(nullptr));  // UTC, whatever TZ says
    const std::string line = fmt::format(
        "{:%Y-%m-%dT%H:%M:%SZ} {} {} {} tenant={} task={} pipeline={} stream={} tokens={} "
        "finish={} ms={:.1f}\n",
        now, r.method, r.path, r.status, r.tenant.empty() ? "-" : r.tenant,
        r.task_id.empty() ? "-" : r.task_id, r.pipeline.empty() ? "-" : r.pipeline,
        r.stream ? 1 : 0, r.tokens, r.finish.empty() ? "-" : r.finish, r.ms);
    std::lock_guard l(log_mu_);
    std::fputs(line.c_str(), options_.access_log);
    std::fflush(options_.access_log);
  }
  if (options_.on_access) options_.on_access(r);
}

void Server::answer_error(Endpoint, const httplib::Request& req, httplib::Response& res, int status,
                          const std::string& message, const std::string& field,
                          const std::string& tenant) {
  res.status = status;
  res.set_content(error_body(status, message, field).dump(), "application/json");
  AccessRecord a;
  a.method = req.method;
  a.path = req.path;
  a.status = status;
  a.tenant = tenant;
  log(a);
}

ResultInfo Server::result_info(const std::string& task_id, const ServedPipeline& p,
                               const json& record, const std::string& context) const {
  ResultInfo r;
  r.id = "cmpl-" + task_id;
  r.model = p.name();
  r.created = static_cast<int64_t>(std::time(nullptr));
  if (const json* c = candidates_of(record)) {
    r.prompt_tokens = c->value("prompt_tokens", 0);
    if (c->value("warmed_tokens", -1) >= 0) r.finish = "warmup";
    const json& list = c->value("candidates", json::array());
    if (!list.empty()) {
      r.text = list[0].value("text", "");
      r.finish = list[0].value("finish", "");
      r.completion_tokens = list[0].value("tokens", 0);
    }
  }
  const std::string status = record.value("status", "");
  if (status == "cancelled") r.finish = "cancelled";
  r.vsynth = {{"task_id", task_id},
              {"pipeline", p.name()},
              {"status", status},
              {"finish", r.finish},
              {"context", context}};
  if (record.contains("error")) r.vsynth["error"] = record["error"];
  if (record.contains("skipped_stages")) r.vsynth["skipped_stages"] = record["skipped_stages"];
  return r;
}

void Server::account(const ResultInfo& info, const json& record) {
  metrics_.finished(info.finish.empty() ? std::string("none") : info.finish);
  const json* c = candidates_of(record);
  if (!c) return;
  const json& list = c->value("candidates", json::array());
  if (!list.empty()) {
    metrics_.generated(list[0].value("tokens", 0), list[0].value("tokens_per_s", 0.0));
    if (const auto sp = list[0].find("speculation"); sp != list[0].end()) {
      metrics_.drafts(sp->value("drafted", 0), sp->value("accepted", 0));
    }
  }
  if (const auto kv = c->find("kv_pool"); kv != c->end()) {
    metrics_.kv_pool(kv->value("cached_tokens", 0), kv->value("prompt_tokens", 0));
  }
}

void Server::remember(const std::string& fingerprint, const ResultInfo& info) {
  if (options_.config.recent_results == 0 || info.finish == "cancelled") return;
  std::lock_guard l(mu_);
  recent_.emplace_back(fingerprint, info);
  while (recent_.size() > options_.config.recent_results) recent_.pop_front();
}

std::optional<ResultInfo> Server::recall(const std::string& fingerprint) const {
  std::lock_guard l(mu_);
  for (auto it = recent_.rbegin(); it != recent_.rend(); ++it) {
    if (it->first == fingerprint) return it->second;
  }
  return std::nullopt;
}

// --- generation endpoints ---

void Server::generate(Endpoint e, const httplib::Request& req, httplib::Response& res) {
  const auto t0 = clock::now();
  // Phase 1: the tenant. Without tenants in the config every key is anonymous (clients such
  // as the openai package always send one).
  const std::string key = options_.config.tenants.empty() ? std::string() : api_key(req);
  const TenantConfig* tenant = admission_.tenant_for(key);
  if (!tenant) {
    return answer_error(
        e, req, res, 401,
        key.empty() ? "an API key is required (Authorization: Bearer KEY)" : "unknown API key",
        "Authorization", "");
  }
  // Phase 2: the request, its pipeline, its file.
  ParsedRequest pr;
  try {
    pr = parse_request(e, req.body, RequestLimits{tenant->max_tokens});
  } catch (const RequestError& x) {
    return answer_error(e, req, res, x.status(), x.what(), x.field(), tenant->name);
  }
  ServedPipeline* p = pick(pr.model);
  if (!p) {
    std::string names;
    for (const auto& q : pipelines_) names += (names.empty() ? "" : ", ") + q->name();
    return answer_error(
        e, req, res, 404,
        fmt::format("model `{}` names no served pipeline (served: {})", pr.model, names), "model",
        tenant->name);
  }
  const bool fileless = !p->file_stage().empty() && !pr.has_file;
  if (fileless && !p->fileless_bypass().error.empty()) {
    return answer_error(
        e, req, res, 400,
        fmt::format("pipeline `{}` reads the file around the cursor (stage {}) and cannot run "
                    "without it ({}): name the file with `file` (Tabby: `filepath`), or choose "
                    "a pipeline without context stages with `model`",
                    p->name(), p->file_stage(), p->fileless_bypass().error),
        "file", tenant->name);
  }
  std::string context;
  if (p->file_stage().empty()) {
    context = "none: the pipeline has no context stages";
  } else if (fileless) {
    context = fmt::format("skipped: the request names no file (stages {} skipped)",
                          fmt::join(p->fileless_bypass().stages, ", "));
  } else {
    context = "used: stage " + p->file_stage();
  }

  auto st = std::make_shared<Stream>();
  st->endpoint = e;
  st->pipeline = p;
  st->context = context;
  st->fingerprint = p->name() + ':' + pr.fingerprint;
  st->client_id = pr.client_id;
  st->t0 = st->last_piece = st->last_write = t0;
  st->deadline = t0 + std::chrono::duration_cast<clock::duration>(
                          std::chrono::duration<double>(tenant->timeout_s));
  st->access.method = req.method;
  st->access.path = req.path;
  st->access.tenant = tenant->name;
  st->access.pipeline = p->name();
  st->access.stream = pr.stream;

  // Phase 3: resume_from continues a result the server still holds; nothing is generated.
  if (pr.resume) {
    const std::optional<ResultInfo> held = recall(st->fingerprint);
    if (!held) {
      return answer_error(e, req, res, 409,
                          "resume_from: the server holds no finished result for this request "
                          "(never finished, cancelled when its stream broke, or evicted): send "
                          "it again without resume_from",
                          "resume_from", tenant->name);
    }
    if (pr.resume->offset > held->text.size() ||
        text_checksum(std::string_view(held->text).substr(0, pr.resume->offset)) !=
            pr.resume->checksum) {
      return answer_error(e, req, res, 409,
                          fmt::format("resume_from: the checksum of the first {} bytes does not "
                                      "match the result held ({} bytes): send the request "
                                      "again without resume_from",
                                      pr.resume->offset, held->text.size()),
                          "resume_from.checksum", tenant->name);
    }
    st->ex = std::make_shared<Exchange>();
    st->info = *held;
    st->task_id = held->vsynth.value("task_id", "");
    st->sent = pr.resume->offset;
    st->ex->on_text(held->text);
    st->ex->finish({{"status", held->vsynth.value("status", "")}, {"resumed", true}});
    return stream(st, res);
  }

  // Phase 4: admission (429 at once when the tenant's queue is full).
  Admission::Outcome adm =
      admission_.acquire(*tenant, st->deadline, [this] { return stopping_.load(); });
  if (!adm.ticket) {
    if (adm.status == 429) {
      metrics_.rejected(tenant->name);
      res.set_header("Retry-After", std::to_string(adm.retry_after));
    }
    return answer_error(e, req, res, adm.status, adm.reason, "", tenant->name);
  }
  st->ticket = std::move(adm.ticket);

  // Phase 5: the task into the pipeline.
  st->task_id = fmt::format("req-{}", next_task_.fetch_add(1) + 1);
  st->access.task_id = st->task_id;
  st->info.id = "cmpl-" + st->task_id;
  st->info.model = p->name();
  st->info.created = static_cast<int64_t>(std::time(nullptr));
  st->ex = std::make_shared<Exchange>();
  json data = std::move(pr.task);
  data["id"] = st->task_id;
  {
    std::lock_guard l(mu_);
    std::erase_if(live_, [](const std::weak_ptr<Exchange>& w) { return w.expired(); });
    live_.push_back(st->ex);
  }
  if (stopping_ || !p->submit(st->task_id, std::move(data), st->ex, fileless)) {
    return answer_error(e, req, res, 503, "the server is stopping", "", tenant->name);
  }
  if (pr.stream) return stream(st, res);

  // Phase 6 (no stream): wait for the record; past the deadline, cancel and say so.
  Exchange::Snapshot snap = st->ex->wait_done(st->deadline);
  const bool late = !snap.done;
  if (late) {
    st->ex->cancel();  // ends within one decoding step
    snap = st->ex->wait_done(clock::now() + std::chrono::seconds(30));
  }
  st->ticket = Admission::Ticket();
  const ResultInfo info =
      snap.done ? result_info(st->task_id, *p, snap.record, context) : ResultInfo{};
  if (snap.done) account(info, snap.record);
  st->access.tokens = info.completion_tokens;
  st->access.finish = info.finish;
  if (late) {
    st->access.ms = ms_since(t0);
    return answer_error(e, req, res, 504,
                        fmt::format("tenant `{}`: no result within timeout_s {}; the "
                                    "generation was cancelled",
                                    tenant->name, tenant->timeout_s),
                        "", tenant->name);
  }
  res.status = 200;  // httplib leaves -1 until the handler returns; the log needs the real one
  json body;
  if (e == Endpoint::Tasks) {
    body = snap.record;
    if (!st->client_id.empty()) body["id"] = st->client_id;
    body["task_id"] = st->task_id;
  } else if (snap.record.value("status", "") == "error") {
    res.status = 500;
    body = error_body(500, "the pipeline failed the request: " + snap.record.value("error", ""));
  } else {
    body = completion_body(e, info);
    remember(st->fingerprint, info);
  }
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
  metrics_.request_time(ms_since(t0) / 1000.0);
  st->access.status = res.status;
  st->access.ms = ms_since(t0);
  log(st->access);
}

void Server::stream(std::shared_ptr<Stream> st, httplib::Response& res) {
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, st](std::size_t, httplib::DataSink& sink) { return pump(*st, sink); },
      [this, st](bool ok) {
        if (ok || st->finished) return;
        // The client left mid-stream: stop its generation, account for it when it ends.
        st->finished = true;
        st->ticket = Admission::Ticket();
        st->ex->cancel();
        st->ex->on_finish([this, st](const json& record) {
          const ResultInfo info = result_info(st->task_id, *st->pipeline, record, st->context);
          account(info, record);
          st->access.status = 499;  // nginx's "client closed request"
          st->access.tokens = info.completion_tokens;
          st->access.finish = info.finish;
          st->access.ms = ms_since(st->t0);
          log(st->access);
        });
      });
}

bool Server::pump(Stream& st, httplib::DataSink& sink) {
  const auto now = clock::now();
  if (now >= st.deadline) st.ex->cancel();  // the final piece comes once the loop stops
  const Exchange::Snapshot snap = st.ex->wait(
      st.sent, st.events, st.retracted,
      std::min(now + std::chrono::milliseconds(250), st.deadline + std::chrono::seconds(30)));
  std::string out;
  // Phase: stage events (/v1/tasks only).
  if (st.endpoint == Endpoint::Tasks) {
    for (std::size_t i = st.events; i < snap.events.size(); ++i) {
      json ev = snap.events[i];
      ev["event"] = "stage_" + ev["event"].get<std::string>();
      out += sse(ev);
    }
  }
  st.events = snap.events.size();
  // Phase: a hook's rollback made shown text void.
  if (snap.retracted != st.retracted) {
    const std::size_t bytes = snap.retracted - st.retracted;
    st.retracted = snap.retracted;
    st.sent = std::min(st.sent, snap.text.size());
    out += sse(st.endpoint == Endpoint::Tasks ? json{{"event", "retract"}, {"bytes", bytes}}
                                              : json{{"vsynth", {{"retract", bytes}}}});
  }
  // Phase: new text.
  if (snap.text.size() > st.sent) {
    const std::string_view delta = std::string_view(snap.text).substr(st.sent);
    const auto t = clock::now();
    if (st.sent == 0) {
      metrics_.ttft(std::chrono::duration<double>(t - st.t0).count());
    } else {
      metrics_.inter_token(std::chrono::duration<double>(t - st.last_piece).count());
    }
    st.last_piece = t;
    out += sse(st.endpoint == Endpoint::Tasks ? json{{"event", "text"}, {"text", delta}}
                                              : chunk_body(st.endpoint, st.info, delta, ""));
    st.sent = snap.text.size();
  }
  if (snap.done) out += final_piece(st, snap.record);
  if (out.empty() && clock::now() - st.last_write > std::chrono::seconds(1)) {
    out = ": keep-alive\n\n";  // an SSE comment: finds a client that left while nothing streams
  }
  if (!out.empty()) {
    if (!sink.write(out.data(), out.size())) return false;
    st.last_write = clock::now();
  }
  if (snap.done) {
    log(st.access);
    sink.done();
  }
  return true;
}

std::string Server::final_piece(Stream& st, const json& record) {
  st.finished = true;
  st.ticket = Admission::Ticket();
  const bool resumed = record.value("resumed", false);
  if (!resumed) {
    st.info = result_info(st.task_id, *st.pipeline, record, st.context);
    account(st.info, record);
    if (record.value("status", "") != "error") remember(st.fingerprint, st.info);
  }
  metrics_.request_time(ms_since(st.t0) / 1000.0);
  st.access.status = 200;
  st.access.tokens = st.info.completion_tokens;
  st.access.finish = st.info.finish;
  st.access.ms = ms_since(st.t0);
  std::string out;
  if (st.endpoint == Endpoint::Tasks) {
    json r = record;
    if (!st.client_id.empty()) r["id"] = st.client_id;
    r["task_id"] = st.task_id;
    out += sse({{"event", "result"}, {"record", r}});
  } else {
    out +=
        sse(chunk_body(st.endpoint, st.info, "", st.info.finish.empty() ? "stop" : st.info.finish));
  }
  if (!llama_style(st.endpoint)) out += kSseDone;
  return out;
}

// --- routes ---

void Server::routes() {
  using httplib::Request;
  using httplib::Response;
  const auto post = [this](const char* path, Endpoint e) {
    http_->Post(path, [this, e](const Request& req, Response& res) { generate(e, req, res); });
  };
  post("/v1/completions", Endpoint::Completions);
  post("/v1/chat/completions", Endpoint::Chat);
  post("/infill", Endpoint::Infill);
  post("/completion", Endpoint::Completion);
  post("/v1/tasks", Endpoint::Tasks);

  http_->Get("/v1/models", [this](const Request& req, Response& res) {
    json data = json::array();
    for (const auto& p : pipelines_) {
      data.push_back(
          {{"id", p->name()}, {"object", "model"}, {"created", 0}, {"owned_by", "vsynth"}});
    }
    res.set_content(json{{"object", "list"}, {"data", data}}.dump(), "application/json");
    log({req.method, req.path, "", "", "", "", 200});
  });
  http_->Get("/health", [this](const Request& req, Response& res) {
    bool ready = !stopping_;
    json list = json::array();
    for (const auto& p : pipelines_) {
      const std::string fatal = p->fatal();
      ready = ready && fatal.empty();
      json j{{"name", p->name()},
             {"model", p->model_path().empty() ? "(the default model)" : p->model_path()},
             {"device", p->device().empty() ? "auto" : p->device()},
             {"context_stage", p->file_stage().empty() ? json(nullptr) : json(p->file_stage())}};
      if (!fatal.empty()) j["error"] = fatal;
      list.push_back(std::move(j));
    }
    const json& first = list[0];
    res.status = ready ? 200 : 503;
    res.set_content(json{{"status", ready ? "ok" : "unavailable"},
                         {"ready", ready},
                         {"model", first["model"]},
                         {"device", first["device"]},
                         {"build", "vsynth " VSYNTH_VERSION},
                         {"pipelines", list}}
                        .dump(),
                    "application/json");
    log({req.method, req.path, "", "", "", "", res.status});
  });
  http_->Get("/metrics", [this](const Request& req, Response& res) {
    const Admission::Load l = admission_.load();
    std::vector<PipelineResources> resources;
    for (const auto& p : pipelines_) resources.push_back({p->name(), p->resource_counters()});
    res.set_content(
        metrics_.render({l.running, l.waiting, l.waiting_by_tenant}) + render_resources(resources),
        "text/plain; version=0.0.4");
    log({req.method, req.path, "", "", "", "", 200});
  });

  // Errors httplib answers itself (no route, body over the limit, a bad request line) get the
  // same JSON error body as ours; ours already have a body and pass through.
  http_->set_error_handler([this](const Request& req, Response& res) {
    if (!res.body.empty()) return;
    std::string message, field;
    if (res.status == 413) {
      message = fmt::format("the body is over {} bytes (server.max_body_bytes)",
                            options_.config.max_body_bytes);
      field = "body";
    } else if (res.status == 404) {
      message = fmt::format("no endpoint {} {}", req.method, req.path);
    } else {
      message = fmt::format("HTTP {}", res.status);
    }
    res.set_content(error_body(res.status, message, field).dump(), "application/json");
    log({req.method, req.path, "", "", "", "", res.status});
  });
  http_->set_exception_handler([this](const Request& req, Response& res, std::exception_ptr ep) {
    std::string what = "unknown error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& x) {
      what = x.what();
    } catch (...) {
    }
    res.status = 500;
    res.set_content(error_body(500, what).dump(), "application/json");
    log({req.method, req.path, "", "", "", "", 500});
  });
}

}  // namespace vsynth::serve
