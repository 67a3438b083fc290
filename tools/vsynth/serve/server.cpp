#include "tools/vsynth/serve/server.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>
#include <ctime>

#include "graph/validate.h"
#include "tools/vsynth/serve/dialects/dialect.h"
#include "tools/vsynth/serve/http_server.h"
#include "tools/vsynth/serve/json_body.h"

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

bool iequals_prefix(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) !=
        std::tolower(static_cast<unsigned char>(prefix[i]))) {
      return false;
    }
  }
  return true;
}

// Authorization: Bearer KEY (the scheme in any case, RFC 9110 11.1), else X-Api-Key.
std::string api_key(const HttpRequest& req) {
  const std::string auth = req.header("Authorization");
  constexpr std::string_view kBearer = "bearer ";
  if (auth.size() > kBearer.size() && iequals_prefix(auth, kBearer)) {
    const auto start = auth.find_first_not_of(' ', kBearer.size());
    if (start != std::string::npos) return auth.substr(start);
  }
  return req.header("X-Api-Key");
}

HttpResponse json_response(int status, const json& body) {
  HttpResponse r;
  r.status = status;
  r.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

struct Route {
  const char* path;
  const char* method;
  std::optional<Endpoint> endpoint;  // a generation endpoint (POST)
};

constexpr Route kRoutes[] = {
    {"/v1/completions", "POST", Endpoint::Completions},
    {"/v1/chat/completions", "POST", Endpoint::Chat},
    {"/infill", "POST", Endpoint::Infill},
    {"/completion", "POST", Endpoint::Completion},
    {"/v1/tasks", "POST", Endpoint::Tasks},
    {"/v1/models", "GET", std::nullopt},
    {"/health", "GET", std::nullopt},
    {"/metrics", "GET", std::nullopt},
};

}  // namespace

// One generation request, from its body to its answer.
struct Server::Call {
  Endpoint endpoint = Endpoint::Completions;
  std::shared_ptr<Responder> out;
  const TenantConfig* tenant = nullptr;
  ParsedRequest pr;
  ServedPipeline* pipeline = nullptr;
  bool fileless = false;
  std::string context, task_id, fingerprint;
  std::shared_ptr<Exchange> ex = std::make_shared<Exchange>();
  Admission::Ticket ticket;
  ResultInfo info;  // id, model, created while streaming; the rest when done
  std::size_t sent = 0, events = 0, retracted = 0;
  clock::time_point t0, last_piece, last_write, deadline;
  AccessRecord access;
  std::atomic<bool> superseded{false};
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
  const ServeConfig& cfg = options_.config;
  int held = 0;  // requests the tenants may hold at once (running + queued)
  for (const auto& t : cfg.tenants) held += t.max_concurrent + t.queue_depth;
  if (cfg.anonymous) held += cfg.anonymous->max_concurrent + cfg.anonymous->queue_depth;
  const int workers = std::max(cfg.threads, held + 4);
  for (int i = 0; i < workers; ++i) {
    workers_.emplace_back([this] {
      while (true) {
        std::function<void()> fn;
        {
          std::unique_lock l(work_mu_);
          work_cv_.wait(l, [&] { return work_closed_ || !work_.empty(); });
          if (work_.empty()) return;
          fn = std::move(work_.front());
          work_.pop_front();
        }
        fn();
      }
    });
  }
  HttpOptions h;
  h.host = options_.host;
  h.port = options_.port;
  h.io_threads = cfg.io_threads;
  h.max_connections = cfg.max_connections;
  h.request_read_s = cfg.request_read_s;
  h.keep_alive_s = cfg.keep_alive_s;
  h.max_body_bytes = cfg.max_body_bytes;
  http_ = std::make_unique<HttpServer>(
      h, [this](HttpRequest req, std::shared_ptr<Responder> out) { handle(std::move(req), out); },
      [this](int status, const std::string& message, const std::string& field,
             const HttpRequest* req) {
        AccessRecord a;
        a.method = req ? req->method : "-";
        a.path = req ? req->path : "-";
        a.status = status;
        log(a);
        return json_response(status, error_body(status, message, field));
      });
}

Server::~Server() {
  stop();
}

int Server::start() {
  port_ = http_->start();
  return port_;
}

void Server::wait() {
  std::unique_lock l(stop_mu_);
  while (!stopped_) {
    l.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    l.lock();
  }
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
  {
    std::lock_guard l(work_mu_);
    work_closed_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : workers_) {
    if (t.joinable()) t.join();
  }
  for (auto& p : pipelines_) p->stop();
  std::lock_guard l(stop_mu_);
  stopped_ = true;
}

void Server::post_work(std::function<void()> fn) {
  {
    std::lock_guard l(work_mu_);
    work_.push_back(std::move(fn));
  }
  work_cv_.notify_one();
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

// An error answer (and its access line, with the time since arrival).
void Server::fail(Call& c, int status, const std::string& message, const std::string& field,
                  std::vector<std::pair<std::string, std::string>> headers) {
  json body = error_body(status, message, field);
  if (!c.task_id.empty()) body["vsynth"] = c.info.vsynth;
  HttpResponse r = json_response(status, body);
  r.headers = std::move(headers);
  c.access.status = status;
  c.access.ms = ms_since(c.t0);
  log(c.access);  // before the answer: a client that has it finds its line logged
  c.out->send(std::move(r));
}

ResultInfo Server::result_info(const Call& c, const Exchange::Snapshot& snap) const {
  const GenerationFacts& f = snap.facts;
  ResultInfo r;
  r.id = "cmpl-" + c.task_id;
  r.model = c.pipeline->name();
  r.created = c.info.created ? c.info.created : static_cast<int64_t>(std::time(nullptr));
  r.text = valid_utf8(f.text);
  r.finish = f.finish;
  r.prompt_tokens = f.prompt_tokens;
  r.completion_tokens = f.completion_tokens;
  r.cached_tokens = f.cached_tokens;
  r.prefill_ms = f.prefill_ms;
  r.decode_ms = f.decode_ms;
  const std::string status = snap.record.value("status", "");
  if (status == "cancelled") r.finish = "cancelled";
  r.vsynth = {{"task_id", c.task_id},
              {"pipeline", c.pipeline->name()},
              {"status", status},
              {"finish", r.finish},
              {"context", c.context}};
  if (!f.suffix.empty()) {  // how the code after the cursor was used, as issue 37 defines it
    r.vsynth["suffix"] = f.suffix;
    r.vsynth["context"] = c.context + "; suffix: " + f.suffix;
  }
  if (snap.record.contains("error")) r.vsynth["error"] = snap.record["error"];
  if (snap.record.contains("exit")) r.vsynth["exit"] = snap.record["exit"];
  if (snap.record.contains("skipped_stages")) {
    r.vsynth["skipped_stages"] = snap.record["skipped_stages"];
  }
  return r;
}

void Server::account(const ResultInfo& info, const GenerationFacts& f) {
  metrics_.finished(info.finish.empty() ? std::string("none") : info.finish);
  if (!f.present) return;
  metrics_.generated(f.completion_tokens, f.tokens_per_s);
  if (f.drafted > 0) metrics_.drafts(f.drafted, f.accepted);
  if (f.kv_pool) metrics_.kv_pool(f.cached_tokens, f.prompt_tokens);
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

// --- routing ---

void Server::handle(HttpRequest req, std::shared_ptr<Responder> out) {
  std::string allow;
  for (const Route& r : kRoutes) {
    if (req.path != r.path) continue;
    if (req.method == r.method) {
      if (r.endpoint) return generate(*r.endpoint, std::move(req), std::move(out));
      return get(r.path, req, *out);
    }
    allow = r.method;
  }
  const int status = allow.empty() ? 404 : 405;
  HttpResponse res = json_response(
      status,
      error_body(status, allow.empty()
                             ? fmt::format("no endpoint {} {}", req.method, req.path)
                             : fmt::format("{} takes {}, not {}", req.path, allow, req.method)));
  if (!allow.empty()) res.headers.emplace_back("Allow", allow);
  AccessRecord a;
  a.method = req.method;
  a.path = req.path;
  a.status = status;
  log(a);
  out->send(std::move(res));
}

void Server::get(const std::string& path, const HttpRequest& req, Responder& out) {
  const auto t0 = clock::now();
  HttpResponse res;
  if (path == "/v1/models") {
    json data = json::array();
    for (const auto& p : pipelines_) {
      data.push_back(
          {{"id", p->name()}, {"object", "model"}, {"created", 0}, {"owned_by", "vsynth"}});
    }
    res = json_response(200, json{{"object", "list"}, {"data", data}});
  } else if (path == "/health") {
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
    res = json_response(ready ? 200 : 503, json{{"status", ready ? "ok" : "unavailable"},
                                                {"ready", ready},
                                                {"model", first["model"]},
                                                {"device", first["device"]},
                                                {"build", "vsynth " VSYNTH_VERSION},
                                                {"pipelines", list}});
  } else {
    const Admission::Load l = admission_.load();
    std::vector<PipelineResources> resources;
    for (const auto& p : pipelines_) resources.push_back({p->name(), p->resource_counters()});
    res.content_type = "text/plain; version=0.0.4";
    res.body =
        metrics_.render({l.running, l.waiting, l.waiting_by_tenant}) + render_resources(resources);
  }
  AccessRecord a;
  a.method = req.method;
  a.path = req.path;
  a.status = res.status;
  a.ms = ms_since(t0);
  log(a);
  out.send(std::move(res));
}

// --- generation: authenticate, parse, resume (io thread); admit, submit, await (worker) ---

void Server::generate(Endpoint e, HttpRequest req, std::shared_ptr<Responder> out) {
  auto c = std::make_shared<Call>();
  c->endpoint = e;
  c->out = std::move(out);
  c->t0 = c->last_piece = c->last_write = clock::now();
  c->access.method = req.method;
  c->access.path = req.path;
  if (!authenticate(*c, req) || !parse(*c, req) || resume(*c)) return;
  supersede(c, req);
  // The client leaving cancels the request wherever it is (waiting, queued, decoding).
  c->out->on_gone([ex = c->ex] { ex->cancel(); });
  post_work([this, c] { run(c); });
}

// Phase: the tenant. Without tenants in the config every key is anonymous (clients such as
// the openai package always send one).
bool Server::authenticate(Call& c, const HttpRequest& req) {
  const std::string key = options_.config.tenants.empty() ? std::string() : api_key(req);
  c.tenant = admission_.tenant_for(key);
  if (c.tenant) {
    c.access.tenant = c.tenant->name;
    c.deadline = c.t0 + std::chrono::duration_cast<clock::duration>(
                            std::chrono::duration<double>(c.tenant->timeout_s));
    return true;
  }
  fail(c, 401,
       key.empty() ? "an API key is required (Authorization: Bearer KEY)" : "unknown API key",
       "Authorization");
  return false;
}

// Phase: the body into a task, its pipeline, whether its file-reading stages run.
bool Server::parse(Call& c, const HttpRequest& req) {
  try {
    c.pr = parse_request(c.endpoint, req.body, RequestLimits{c.tenant->max_tokens});
  } catch (const RequestError& x) {
    fail(c, x.status(), x.what(), x.field());
    return false;
  }
  c.endpoint = c.pr.endpoint;  // Tabby's body on /v1/completions
  ServedPipeline* p = pick(c.pr.model);
  if (!p) {
    std::string names;
    for (const auto& q : pipelines_) names += (names.empty() ? "" : ", ") + q->name();
    fail(c, 404, fmt::format("model `{}` names no served pipeline (served: {})", c.pr.model, names),
         "model");
    return false;
  }
  c.pipeline = p;
  c.access.pipeline = p->name();
  c.access.stream = c.pr.stream;
  c.fingerprint = p->name() + ':' + c.pr.fingerprint;
  c.fileless = !p->file_stage().empty() && !c.pr.has_cursor;
  if (c.fileless && !p->fileless_bypass().error.empty()) {
    fail(c, 400,
         fmt::format("pipeline `{}` reads the file around the cursor (stage {}) and cannot run "
                     "without one ({}): send a prompt with a cursor (a completion or a task "
                     "with `source`), or choose a pipeline without context stages with `model`",
                     p->name(), p->file_stage(), p->fileless_bypass().error),
         "model");
    return false;
  }
  if (p->file_stage().empty()) {
    c.context = "none: the pipeline has no context stages";
  } else if (c.fileless) {
    c.context = fmt::format("skipped: the request has no file around a cursor (stages {} skipped)",
                            fmt::join(p->fileless_bypass().stages, ", "));
  } else {
    c.context = "used: stage " + p->file_stage();
  }
  c.info.model = p->name();
  c.info.created = static_cast<int64_t>(std::time(nullptr));
  return true;
}

// Phase: resume_from continues a result the server still holds; nothing is generated. True
// when it answered.
bool Server::resume(Call& c) {
  if (!c.pr.resume) return false;
  const std::optional<ResultInfo> held = recall(c.fingerprint);
  if (!held) {
    fail(c, 409,
         "resume_from: the server holds no finished result for this request (never finished, "
         "cancelled when its stream broke, or evicted): send it again without resume_from",
         "resume_from");
    return true;
  }
  if (c.pr.resume->offset > held->text.size() ||
      text_checksum(std::string_view(held->text).substr(0, c.pr.resume->offset)) !=
          c.pr.resume->checksum) {
    fail(c, 409,
         fmt::format("resume_from: the checksum of the first {} bytes does not match the result "
                     "held ({} bytes): send the request again without resume_from",
                     c.pr.resume->offset, held->text.size()),
         "resume_from.checksum");
    return true;
  }
  c.info = *held;
  const std::string_view rest = std::string_view(held->text).substr(c.pr.resume->offset);
  std::string body;
  const Dialect& d = dialect_for(c.endpoint);
  if (!rest.empty()) body += sse(d.chunk(c.info, rest));
  body += sse(d.last({c.info, c.pr}));
  if (d.done_marker()) body += kSseDone;
  HttpResponse r;
  r.content_type = "text/event-stream";
  r.headers = {{"Cache-Control", "no-cache"}};
  r.body = std::move(body);
  c.access.status = 200;
  c.access.tokens = held->completion_tokens;
  c.access.finish = held->finish;
  c.access.ms = ms_since(c.t0);
  log(c.access);
  c.out->send(std::move(r));
  return true;
}

// Phase: a client's new request on a slot cancels its earlier one still there (the editor typed
// on). The client is its API key, else X-Client-Id; without either nothing is superseded.
void Server::supersede(const std::shared_ptr<Call>& c, const HttpRequest& req) {
  if (!c->pr.id_slot) return;
  std::string client = api_key(req);
  if (client.empty()) {
    const std::string id = req.header("X-Client-Id");
    if (id.empty()) return;
    client = "id:" + id;
  } else {
    client = "key:" + client;
  }
  const std::string slot = client + '\n' + std::to_string(*c->pr.id_slot);
  std::shared_ptr<Call> old;
  {
    std::lock_guard l(mu_);
    old = slots_[slot].lock();
    slots_[slot] = c;
    std::erase_if(slots_, [](const auto& kv) { return kv.second.expired(); });
  }
  if (old) {
    old->superseded = true;
    old->ex->cancel();
  }
}

void Server::run(const std::shared_ptr<Call>& c) {
  if (!admit(*c)) return;
  if (!submit(*c)) return;
  if (c->pr.stream) return stream(c);
  await(*c);
}

// Phase: a running slot (429 at once when the tenant's queue is full).
bool Server::admit(Call& c) {
  Admission::Outcome adm = admission_.acquire(*c.tenant, c.deadline, [&c, this] {
    return stopping_.load() || c.out->gone() || c.superseded.load();
  });
  if (adm.ticket) {
    c.ticket = std::move(adm.ticket);
    return true;
  }
  if (c.out->gone()) {
    c.access.status = 499;  // nginx's "client closed request"
    c.access.finish = "cancelled";
    c.access.ms = ms_since(c.t0);
    log(c.access);
    return false;
  }
  if (c.superseded) {
    fail(c, 409, "superseded by a newer request of the same client on this id_slot", "id_slot");
    return false;
  }
  std::vector<std::pair<std::string, std::string>> headers;
  if (adm.status == 429) {
    metrics_.rejected(c.tenant->name);
    headers.emplace_back("Retry-After", std::to_string(adm.retry_after));
  }
  fail(c, adm.status, adm.reason, "", std::move(headers));
  return false;
}

// Phase: the task into the pipeline.
bool Server::submit(Call& c) {
  c.task_id = fmt::format("req-{}", next_task_.fetch_add(1) + 1);
  c.access.task_id = c.task_id;
  c.info.id = "cmpl-" + c.task_id;
  c.info.vsynth = {{"task_id", c.task_id}, {"pipeline", c.pipeline->name()}};
  json data = std::move(c.pr.task);
  data["id"] = c.task_id;
  {
    std::lock_guard l(mu_);
    std::erase_if(live_, [](const std::weak_ptr<Exchange>& w) { return w.expired(); });
    live_.push_back(c.ex);
  }
  if (stopping_ || !c.pipeline->submit(c.task_id, std::move(data), c.ex, c.fileless)) {
    fail(c, 503, "the server is stopping", "");
    return false;
  }
  return true;
}

// Phase (no stream): wait for the result; past the deadline, cancel and say so.
void Server::await(Call& c) {
  Exchange::Snapshot snap = c.ex->wait_done(c.deadline);
  const bool late = !snap.done;
  if (late) {
    c.ex->cancel();  // ends within one decoding step
    snap = c.ex->wait_done(clock::now() + std::chrono::seconds(30));
  }
  c.ticket = Admission::Ticket();
  if (!snap.done) {  // the pipeline never gave the task back
    fail(c, 500, "the pipeline did not finish the cancelled request within 30 s", "");
    return;
  }
  const ResultInfo info = result_info(c, snap);
  c.info = info;
  account(info, snap.facts);
  c.access.tokens = info.completion_tokens;
  c.access.finish = info.finish;
  const std::string status = snap.record.value("status", "");
  if (c.out->gone()) {
    c.access.status = 499;
    c.access.ms = ms_since(c.t0);
    log(c.access);
    return;
  }
  if (c.superseded) {
    return fail(c, 409, "superseded by a newer request of the same client on this id_slot",
                "id_slot");
  }
  if (late) {
    return fail(c, 504,
                fmt::format("tenant `{}`: no result within timeout_s {}; the generation was "
                            "cancelled",
                            c.tenant->name, c.tenant->timeout_s),
                "");
  }
  if (status == "error") {
    return fail(c, 500,
                "the pipeline failed the request: " + snap.record.value("error", std::string()),
                "");
  }
  if (status == "cancelled") return fail(c, 503, "the server is stopping", "");
  const json body = dialect_for(c.endpoint).result({info, c.pr, &snap.record});
  remember(c.fingerprint, info);
  metrics_.request_time(ms_since(c.t0) / 1000.0);
  c.access.status = 200;
  c.access.ms = ms_since(c.t0);
  log(c.access);
  c.out->send(json_response(200, body));
}

// Phase (stream): SSE pieces as the text grows; the end, or an error event then the end.
void Server::stream(const std::shared_ptr<Call>& c) {
  HttpResponse head;
  head.content_type = "text/event-stream";
  head.headers = {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}};
  bool ok = c->out->begin_stream(std::move(head));
  while (ok) {
    const auto now = clock::now();
    if (now >= c->deadline) c->ex->cancel();  // the final piece comes once the loop stops
    const Exchange::Snapshot snap = c->ex->wait(
        c->sent, c->events, c->retracted,
        std::min(now + std::chrono::milliseconds(250), c->deadline + std::chrono::seconds(30)));
    std::string piece = pump(*c, snap);
    if (snap.done) {
      piece += final_piece(*c, snap);
      if (c->out->gone()) c->access.status = 499;  // it ended because its client left
      log(c->access);  // before the end: a client that has it finds its line logged
      if (c->out->write(piece)) c->out->end();
      return;
    }
    if (piece.empty() && clock::now() - c->last_write > std::chrono::seconds(1)) {
      piece = ": keep-alive\n\n";  // an SSE comment: finds a client that left while idle
    }
    if (!piece.empty()) {
      ok = c->out->write(piece);
      c->last_write = clock::now();
    }
  }
  // The client left mid-stream: stop its generation, account for it when it ends.
  c->ticket = Admission::Ticket();
  c->ex->cancel();
  c->ex->on_finish([this, c](const Exchange::Snapshot& snap) {
    const ResultInfo info = result_info(*c, snap);
    account(info, snap.facts);
    c->access.status = 499;
    c->access.tokens = info.completion_tokens;
    c->access.finish = info.finish;
    c->access.ms = ms_since(c->t0);
    log(c->access);
  });
}

std::string Server::pump(Call& c, const Exchange::Snapshot& snap) {
  const Dialect& d = dialect_for(c.endpoint);
  std::string out;
  // Stage events (the dialects that show them).
  for (std::size_t i = c.events; i < snap.events.size(); ++i) {
    const json& ev = snap.events[i];
    if (auto e = d.stage_event(ev["stage"].get<std::string>(), ev["event"].get<std::string>())) {
      out += sse(*e);
    }
  }
  c.events = snap.events.size();
  // A hook's rollback made shown text void.
  if (snap.retracted != c.retracted) {
    const std::size_t bytes = snap.retracted - c.retracted;
    c.retracted = snap.retracted;
    c.sent = std::min(c.sent, snap.text.size());
    out += sse(d.retraction(bytes));
  }
  // New text.
  if (snap.text.size() > c.sent) {
    const std::string delta = valid_utf8(std::string_view(snap.text).substr(c.sent));
    const auto t = clock::now();
    if (c.sent == 0) {
      metrics_.ttft(std::chrono::duration<double>(t - c.t0).count());
    } else {
      metrics_.inter_token(std::chrono::duration<double>(t - c.last_piece).count());
    }
    c.last_piece = t;
    out += sse(d.chunk(c.info, delta));
    c.sent = snap.text.size();
  }
  return out;
}

std::string Server::final_piece(Call& c, const Exchange::Snapshot& snap) {
  c.ticket = Admission::Ticket();
  c.info = result_info(c, snap);
  account(c.info, snap.facts);
  const std::string status = snap.record.value("status", "");
  const bool failed = status == "error";
  if (!failed) remember(c.fingerprint, c.info);
  metrics_.request_time(ms_since(c.t0) / 1000.0);
  // The head said 200 before the end was known; the access log and /metrics say what it was.
  c.access.status = failed ? 500 : c.superseded ? 409 : 200;
  c.access.tokens = c.info.completion_tokens;
  c.access.finish = c.info.finish;
  c.access.ms = ms_since(c.t0);
  const Dialect& d = dialect_for(c.endpoint);
  std::string out;
  if (failed) {
    json err = error_body(
        500, "the pipeline failed the request: " + snap.record.value("error", std::string()));
    err["vsynth"] = c.info.vsynth;
    out += sse(d.error_event(err));
  } else {
    out += sse(d.last({c.info, c.pr, &snap.record}));
  }
  if (d.done_marker()) out += kSseDone;
  return out;
}

}  // namespace vsynth::serve
