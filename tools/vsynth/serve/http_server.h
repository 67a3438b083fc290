// vsynth serve: the HTTP/1.1 layer (Boost.Beast on Asio). It owns the sockets: every connection
// reads its request on the io threads under one deadline for the headers and the body
// (`request_read_s`), with a byte budget for the body whether chunked or not (`max_body_bytes`,
// refused with 413 as soon as it is passed), and a cap on open connections (past it a 503, then
// close). Requests are handed to a handler on an io thread, with a Responder through which any
// thread answers: the whole answer, or a stream of chunks. While a request is being answered the
// connection keeps watching its socket, so a client that closes it is noticed at once
// (Responder::on_gone), streamed or not. Keep-alive between requests (`keep_alive_s` of idle).
// Nothing here knows the endpoints or JSON bodies: server.cpp does.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vsynth::serve {

struct HttpRequest {
  std::string method;  // as sent: GET, POST, ...
  std::string path;    // the target without its query
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // The first header of that name (case-insensitive), "" when absent.
  std::string header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // beyond type, length, connection
};

// One request's way back to its client. Every member is thread-safe.
class Responder {
 public:
  virtual ~Responder() = default;
  // The whole answer (once; later calls do nothing). False when the client has gone.
  virtual bool send(HttpResponse r) = 0;
  // A streamed answer (chunked): the head (its body ignored), chunks, the end. write() blocks
  // until the chunk is on the socket; false when the client has gone or the write failed.
  virtual bool begin_stream(HttpResponse head) = 0;
  virtual bool write(std::string_view chunk) = 0;
  virtual void end() = 0;
  // True once the client closed its side of the connection or it failed.
  virtual bool gone() const = 0;
  // `fn` runs once when the client goes (at once, on the caller's thread, when it already has;
  // else on an io thread). Nothing runs when the answer is complete first.
  virtual void on_gone(std::function<void()> fn) = 0;
};

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: any free port
  int io_threads = 2;
  int backlog = 512;
  std::size_t max_connections = 512;  // open at once; one more gets 503 and is closed
  double request_read_s = 10;         // from a request's first byte to its last
  double keep_alive_s = 30;           // idle between requests on one connection
  double write_s = 30;                // one write to a client that does not read
  std::size_t max_body_bytes = 1 << 20;
  std::size_t max_header_bytes = 16 << 10;
};

class HttpServer {
 public:
  // Called on an io thread for every request read in full: must not block (hand long work to
  // other threads). The responder lives as long as someone holds it.
  using Handler = std::function<void(HttpRequest, std::shared_ptr<Responder>)>;
  // The answers the layer gives itself (413 body too large, 400 malformed, 431 headers too
  // large, 503 too many connections): a body for them, and the place to log them. `req` is
  // null when not even the request line was read.
  using Refusal = std::function<HttpResponse(int status, const std::string& message,
                                             const std::string& field, const HttpRequest* req)>;

  HttpServer(HttpOptions options, Handler handler, Refusal refusal);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds, listens, starts the io threads; returns the port. Throws std::runtime_error.
  int start();
  // Stops accepting, closes every connection, joins the io threads. Idempotent.
  void stop();
  std::size_t open_connections() const;

  struct Impl;  // http_server.cpp's: the io_context, the acceptor, the sessions

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace vsynth::serve
