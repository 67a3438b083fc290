#include "tools/vsynth/serve/http_server.h"

#include <fmt/format.h>
#include <sys/socket.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <list>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

namespace vsynth::serve {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto x = static_cast<unsigned char>(a[i]), y = static_cast<unsigned char>(b[i]);
    if (std::tolower(x) != std::tolower(y)) return false;
  }
  return true;
}

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(s));
}

// The status line and headers of an answer ("HTTP/1.1 404 Not Found\r\n...\r\n\r\n").
std::string head_of(const HttpResponse& r, bool keep_alive, std::optional<std::size_t> length) {
  const auto reason = http::obsolete_reason(static_cast<http::status>(r.status));
  std::string h = fmt::format("HTTP/1.1 {} {}\r\nServer: vsynth\r\nContent-Type: {}\r\n", r.status,
                              std::string_view(reason.data(), reason.size()), r.content_type);
  if (length) {
    h += fmt::format("Content-Length: {}\r\n", *length);
  } else {
    h += "Transfer-Encoding: chunked\r\n";
  }
  h += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  for (const auto& [k, v] : r.headers) h += k + ": " + v + "\r\n";
  h += "\r\n";
  return h;
}

// A blocking caller's wait for one write that runs on the connection's strand.
struct WriteWait {
  std::mutex mu;
  std::condition_variable cv;
  int state = 0;  // 0 pending, 1 written, 2 failed
  void set(int s) {
    {
      std::lock_guard l(mu);
      state = s;
    }
    cv.notify_all();
  }
};

}  // namespace

std::string HttpRequest::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (iequals(k, name)) return v;
  }
  return {};
}

class Session;

// Members in the order they must outlive each other: the io_context's destructor destroys the
// handlers still queued (and with them the sessions they hold), which touch `open`.
struct HttpServer::Impl {
  HttpOptions opt;
  Handler handler;
  Refusal refusal;
  std::atomic<bool> stopped{false};
  std::atomic<std::size_t> open{0};
  std::atomic<std::size_t> refusing{0};
  std::mutex mu;
  std::list<std::weak_ptr<Session>> sessions;
  asio::io_context ioc;
  std::optional<tcp::acceptor> acceptor;
  std::vector<std::thread> threads;

  Impl(HttpOptions o, Handler h, Refusal r)
      : opt(std::move(o)), handler(std::move(h)), refusal(std::move(r)) {}
  void accept();
  void refuse(tcp::socket socket);
};

// One connection: reads requests one after another, hands each to the handler and writes its
// answer. Everything touching the socket runs on its strand.
class Session : public Responder, public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, HttpServer::Impl* srv) : stream_(std::move(socket)), srv_(srv) {}
  ~Session() override { --srv_->open; }

  void start() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read(true); });
  }
  // Closes the socket (server stop): every operation on it ends.
  void shut() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] { self->close(); });
  }

  bool send(HttpResponse r) override {
    if (gone()) return false;
    auto data = std::make_shared<std::string>();
    {
      std::lock_guard l(mu_);
      if (answered_) return !gone_;
      answered_ = true;
      on_gone_ = nullptr;
    }
    *data = head_of(r, keep_alive_, r.body.size()) + r.body;
    asio::post(stream_.get_executor(), [self = shared_from_this(), data] {
      self->stop_watching();
      self->stream_.expires_after(seconds(self->srv_->opt.write_s));
      asio::async_write(self->stream_, asio::buffer(*data),
                        [self, data](error_code ec, std::size_t) {
                          self->stream_.expires_never();
                          if (ec) return self->fail();
                          self->next();
                        });
    });
    return true;
  }

  bool begin_stream(HttpResponse head) override {
    {
      std::lock_guard l(mu_);
      if (answered_ || gone_) return false;
      answered_ = true;
      streaming_ = true;
    }
    return write_raw(head_of(head, keep_alive_, std::nullopt));
  }

  bool write(std::string_view chunk) override {
    if (chunk.empty()) return !gone();
    return write_raw(fmt::format("{:x}\r\n", chunk.size()) + std::string(chunk) + "\r\n");
  }

  void end() override {
    {
      std::lock_guard l(mu_);
      on_gone_ = nullptr;
    }
    if (!write_raw("0\r\n\r\n")) return;
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
      self->stop_watching();
      self->next();
    });
  }

  bool gone() const override {
    std::lock_guard l(mu_);
    return gone_;
  }

  void on_gone(std::function<void()> fn) override {
    {
      std::lock_guard l(mu_);
      if (!gone_) {
        on_gone_ = std::move(fn);
        return;
      }
    }
    fn();
  }

 private:
  // Phase 1: wait for a request (keep-alive: idle up to keep_alive_s; a new connection's first
  // byte counts against request_read_s), then read its head and body by one deadline.
  void read(bool first) {
    {
      std::lock_guard l(mu_);
      answered_ = streaming_ = false;
      on_gone_ = nullptr;
    }
    parser_.emplace();
    parser_->body_limit(srv_->opt.max_body_bytes);
    parser_->header_limit(static_cast<std::uint32_t>(srv_->opt.max_header_bytes));
    if (first) {
      stream_.expires_after(seconds(srv_->opt.request_read_s));
      return read_head();
    }
    if (buf_.size() > 0) {
      stream_.expires_after(seconds(srv_->opt.request_read_s));
      return read_head();
    }
    stream_.expires_after(seconds(srv_->opt.keep_alive_s));
    stream_.async_read_some(
        buf_.prepare(4096), [self = shared_from_this()](error_code ec, std::size_t n) {
          if (ec) return self->close();  // idle too long, or the client closed: nothing to answer
          self->buf_.commit(n);
          self->stream_.expires_after(seconds(self->srv_->opt.request_read_s));
          self->read_head();
        });
  }

  void read_head() {
    http::async_read_header(stream_, buf_, *parser_,
                            [self = shared_from_this()](error_code ec, std::size_t) {
                              if (ec) return self->read_failed(ec);
                              self->read_body();
                            });
  }

  void read_body() {
    auto& req = parser_->get();
    if (iequals(std::string_view(req[http::field::expect]), "100-continue")) {
      auto cont = std::make_shared<std::string>("HTTP/1.1 100 Continue\r\n\r\n");
      asio::async_write(stream_, asio::buffer(*cont),
                        [self = shared_from_this(), cont](error_code ec, std::size_t) {
                          if (ec) return self->close();
                          self->read_rest();
                        });
      return;
    }
    read_rest();
  }

  void read_rest() {
    http::async_read(stream_, buf_, *parser_,
                     [self = shared_from_this()](error_code ec, std::size_t) {
                       if (ec) return self->read_failed(ec);
                       self->dispatch();
                     });
  }

  void read_failed(error_code ec) {
    if (ec == http::error::end_of_stream || ec == asio::error::eof || ec == beast::error::timeout ||
        ec == asio::error::operation_aborted || ec == asio::error::connection_reset ||
        srv_->stopped) {
      return close();  // slowloris or a client gone: nothing worth answering
    }
    int status = 400;
    std::string message = fmt::format("malformed HTTP request: {}", ec.message()), field;
    if (ec == http::error::body_limit) {
      status = 413;
      message = fmt::format("the body is over {} bytes (server.max_body_bytes)",
                            srv_->opt.max_body_bytes);
      field = "body";
    } else if (ec == http::error::header_limit) {
      status = 431;
      message = fmt::format("the request's headers are over {} bytes", srv_->opt.max_header_bytes);
    }
    std::optional<HttpRequest> partial;
    if (parser_ && parser_->is_header_done()) partial = request_of(false);
    HttpResponse r = srv_->refusal(status, message, field, partial ? &*partial : nullptr);
    keep_alive_ = false;
    {
      std::lock_guard l(mu_);
      answered_ = true;
    }
    auto data = std::make_shared<std::string>(head_of(r, false, r.body.size()) + r.body);
    stream_.expires_after(seconds(srv_->opt.write_s));
    asio::async_write(
        stream_, asio::buffer(*data),
        [self = shared_from_this(), data](error_code, std::size_t) { self->linger(); });
  }

  HttpRequest request_of(bool with_body) {
    auto& m = parser_->get();
    HttpRequest r;
    r.method = std::string(m.method_string());
    const std::string_view target(m.target().data(), m.target().size());
    r.path = std::string(target.substr(0, target.find('?')));
    for (const auto& f : m) {
      r.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
    }
    if (with_body) r.body = std::move(m.body());
    return r;
  }

  // Phase 2: the handler has the request; the socket is watched until the answer is complete.
  void dispatch() {
    stream_.expires_never();
    keep_alive_ = parser_->get().keep_alive() && !srv_->stopped;
    HttpRequest req = request_of(true);
    parser_.reset();
    watch();
    srv_->handler(std::move(req), shared_from_this());
  }

  // Readable while a request is answered: the client closed (EOF), reset, or sent more (a
  // pipelined request: left in the socket for the next read, and the watch ends).
  void watch() {
    watching_ = true;
    stream_.socket().async_wait(
        tcp::socket::wait_read,
        asio::bind_executor(stream_.get_executor(), [self = shared_from_this()](error_code ec) {
          if (!self->watching_ || ec == asio::error::operation_aborted) return;
          if (ec) return self->went();
          char c;
          const auto n =
              ::recv(self->stream_.socket().native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
          if (n == 0) return self->went();
          if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            return self->watch();
          }
          if (n < 0) return self->went();
          self->watching_ = false;  // a pipelined request: read after this answer
        }));
  }

  void stop_watching() {
    if (!watching_) return;
    watching_ = false;
    error_code ec;
    stream_.socket().cancel(ec);
  }

  // The client left while its request was answered.
  void went() {
    watching_ = false;
    std::function<void()> fn;
    {
      std::lock_guard l(mu_);
      gone_ = true;
      fn = std::move(on_gone_);
      on_gone_ = nullptr;
    }
    close();
    if (fn) fn();
  }

  void fail() {
    {
      std::lock_guard l(mu_);
      gone_ = true;
      on_gone_ = nullptr;
    }
    close();
  }

  // Phase 3: the answer is written: the next request, or the end of the connection.
  void next() {
    if (keep_alive_ && !srv_->stopped) return read(false);
    error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    close();
  }

  // After an error answer with unread bytes behind it: stop sending, read what the client
  // still sends for a moment (so that closing does not reset the connection before the client
  // reads the answer), then close.
  void linger() {
    error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.expires_after(std::chrono::seconds(2));
    drain(0);
  }
  void drain(std::size_t seen) {
    if (seen > (4u << 20)) return close();
    auto chunk = std::make_shared<std::array<char, 16384>>();
    stream_.async_read_some(asio::buffer(*chunk),
                            [self = shared_from_this(), chunk, seen](error_code ec, std::size_t n) {
                              if (ec) return self->close();
                              self->drain(seen + n);
                            });
  }

  void close() {
    watching_ = false;
    error_code ec;
    stream_.socket().close(ec);
  }

  // A write from any thread, waited for: false when the client has gone or it failed or
  // took write_s.
  bool write_raw(std::string bytes) {
    if (gone()) return false;
    auto w = std::make_shared<WriteWait>();
    auto data = std::make_shared<std::string>(std::move(bytes));
    asio::post(stream_.get_executor(), [self = shared_from_this(), w, data] {
      asio::async_write(self->stream_.socket(), asio::buffer(*data),
                        [self, w, data](error_code ec, std::size_t) {
                          if (ec) self->fail();
                          w->set(ec ? 2 : 1);
                        });
    });
    const auto until = std::chrono::steady_clock::now() + seconds(srv_->opt.write_s);
    std::unique_lock l(w->mu);
    while (w->state == 0) {
      if (srv_->stopped || std::chrono::steady_clock::now() >= until) {
        l.unlock();
        asio::post(stream_.get_executor(), [self = shared_from_this()] { self->fail(); });
        return false;
      }
      w->cv.wait_for(l, std::chrono::milliseconds(100));
    }
    return w->state == 1;
  }

  beast::tcp_stream stream_;
  HttpServer::Impl* srv_;  // outlives every session (the server joins its users first)
  beast::flat_buffer buf_;
  std::optional<http::request_parser<http::string_body>> parser_;
  bool keep_alive_ = true;  // strand only
  bool watching_ = false;   // strand only
  mutable std::mutex mu_;
  bool answered_ = false, streaming_ = false, gone_ = false;
  std::function<void()> on_gone_;
};

void HttpServer::Impl::accept() {
  acceptor->async_accept(asio::make_strand(ioc), [self = this](error_code ec, tcp::socket socket) {
    if (self->stopped) return;
    if (!ec) {
      if (self->open.load() >= self->opt.max_connections) {
        self->refuse(std::move(socket));
      } else {
        ++self->open;
        auto s = std::make_shared<Session>(std::move(socket), self);
        {
          std::lock_guard l(self->mu);
          self->sessions.remove_if([](const std::weak_ptr<Session>& w) { return w.expired(); });
          self->sessions.push_back(s);
        }
        s->start();
      }
    }
    self->accept();
  });
}

// Past max_connections: a 503 written at once, then closed after a short drain.
void HttpServer::Impl::refuse(tcp::socket socket) {
  if (refusing.load() >= 256) return;  // the socket closes as it goes out of scope
  ++refusing;
  HttpResponse r =
      refusal(503,
              fmt::format("too many open connections (server.max_connections {}); retry",
                          opt.max_connections),
              "", nullptr);
  r.headers.emplace_back("Retry-After", "1");
  struct Refused {
    beast::tcp_stream stream;
    std::string data;
    std::array<char, 4096> sink{};
  };
  auto st = std::make_shared<Refused>(
      Refused{beast::tcp_stream(std::move(socket)), head_of(r, false, r.body.size()) + r.body});
  st->stream.expires_after(std::chrono::seconds(2));
  Impl* self = this;
  asio::async_write(st->stream, asio::buffer(st->data), [st, self](error_code ec, std::size_t) {
    if (ec) {
      --self->refusing;
      return;
    }
    error_code e2;
    st->stream.socket().shutdown(tcp::socket::shutdown_send, e2);
    // Read until the client closes (or the 2 s expiry): each read's handler holds the state,
    // and nothing holds the handler, so a server stopped mid-drain frees it (no cycle).
    struct Drain {
      std::shared_ptr<Refused> st;
      Impl* self;
      void operator()() const {
        st->stream.async_read_some(asio::buffer(st->sink), [d = *this](error_code e, std::size_t) {
          if (e) {
            --d.self->refusing;
            return;
          }
          d();
        });
      }
    };
    Drain{st, self}();
  });
}

HttpServer::HttpServer(HttpOptions options, Handler handler, Refusal refusal)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler), std::move(refusal))) {}

HttpServer::~HttpServer() {
  stop();
}

int HttpServer::start() {
  Impl& im = *impl_;
  error_code ec;
  const auto addr = asio::ip::make_address(im.opt.host, ec);
  if (ec) {
    throw std::runtime_error(
        fmt::format("cannot listen on {}: not an IP address ({})", im.opt.host, ec.message()));
  }
  const tcp::endpoint ep(addr, static_cast<unsigned short>(im.opt.port));
  im.acceptor.emplace(im.ioc);
  im.acceptor->open(ep.protocol(), ec);
  if (!ec) im.acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) im.acceptor->bind(ep, ec);
  if (!ec) im.acceptor->listen(im.opt.backlog, ec);
  if (ec) {
    throw std::runtime_error(
        fmt::format("cannot listen on {}:{} ({}: in use, or not an address of this machine)",
                    im.opt.host, im.opt.port, ec.message()));
  }
  const int port = im.acceptor->local_endpoint().port();
  im.accept();
  for (int i = 0; i < std::max(1, im.opt.io_threads); ++i) {
    im.threads.emplace_back([this] { impl_->ioc.run(); });
  }
  return port;
}

void HttpServer::stop() {
  Impl& im = *impl_;
  if (im.stopped.exchange(true)) return;
  asio::post(im.ioc, [&im] {
    error_code ec;
    if (im.acceptor) im.acceptor->close(ec);
  });
  {
    std::lock_guard l(im.mu);
    for (auto& w : im.sessions) {
      if (auto s = w.lock()) s->shut();
    }
  }
  // The closes above end every pending operation; what still runs ends within a moment.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (im.open.load() > 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  im.ioc.stop();
  for (auto& t : im.threads) {
    if (t.joinable()) t.join();
  }
}

std::size_t HttpServer::open_connections() const {
  return impl_->open.load();
}

}  // namespace vsynth::serve
