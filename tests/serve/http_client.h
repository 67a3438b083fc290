// A small HTTP/1.1 client for the serve tests and bench_serve (Boost.Beast on Asio): one
// request per connection (or several on a kept one), every operation under a deadline, and
// raw access to the socket for the hostile cases (slowloris, abandoned requests).
#pragma once

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vsynth::servetest {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Headers = std::vector<std::pair<std::string, std::string>>;

struct Reply {
  int status = 0;
  std::string body;
  Headers headers;
  std::string get_header_value(std::string_view name) const {
    for (const auto& [k, v] : headers) {
      if (beast::iequals(k, name)) return v;
    }
    return {};
  }
};

// A connection to 127.0.0.1:port; every call runs its operations under `timeout`.
class Connection {
 public:
  explicit Connection(int port, std::chrono::milliseconds timeout = std::chrono::seconds(60))
      : stream_(ioc_), timeout_(timeout) {
    stream_.expires_after(timeout_);
    bool ok = false;
    stream_.async_connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"),
                                                  static_cast<unsigned short>(port)),
                          [&](beast::error_code ec) { ok = !ec; });
    run();
    connected_ = ok;
  }
  bool connected() const { return connected_; }

  // A whole request and its whole answer; nullopt when the connection failed or timed out.
  std::optional<Reply> request(const std::string& method, const std::string& path,
                               const std::string& body = {}, const Headers& headers = {},
                               bool keep_alive = true) {
    if (!connected_) return std::nullopt;
    http::request<http::string_body> req(http::string_to_verb(method), path, 11);
    req.set(http::field::host, "127.0.0.1");
    if (!body.empty() || method == "POST") req.set(http::field::content_type, "application/json");
    for (const auto& [k, v] : headers) req.set(k, v);
    req.body() = body;
    req.keep_alive(keep_alive);
    req.prepare_payload();
    if (method != "POST" && body.empty()) req.erase(http::field::content_length);
    beast::error_code ec;
    stream_.expires_after(timeout_);
    http::async_write(stream_, req, [&](beast::error_code e, std::size_t) { ec = e; });
    run();
    if (ec) return std::nullopt;
    return read_reply();
  }

  // The answer to a request already sent (raw or not).
  std::optional<Reply> read_reply() {
    http::response_parser<http::string_body> parser;
    parser.body_limit(1u << 30);
    beast::error_code ec;
    stream_.expires_after(timeout_);
    http::async_read(stream_, buf_, parser, [&](beast::error_code e, std::size_t) { ec = e; });
    run();
    if (ec) return std::nullopt;
    Reply r;
    r.status = static_cast<int>(parser.get().result_int());
    r.body = std::move(parser.get().body());
    for (const auto& f : parser.get()) {
      r.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
    }
    return r;
  }

  // Bytes as they are, without HTTP framing (slowloris, a request cut short).
  bool send_raw(std::string_view bytes) {
    beast::error_code ec;
    stream_.expires_after(timeout_);
    asio::async_write(stream_, asio::buffer(bytes.data(), bytes.size()),
                      [&](beast::error_code e, std::size_t) { ec = e; });
    run();
    return !ec;
  }

  // Reads the raw answer (chunk framing and all) as it comes, giving each piece to `on_bytes`
  // until it returns false, the server closes, or `timeout` passes. Returns the bytes read.
  std::string read_raw(const std::function<bool(std::string_view)>& on_bytes) {
    std::string all;
    if (buf_.size() > 0) {
      all.append(static_cast<const char*>(buf_.data().data()), buf_.size());
      buf_.consume(buf_.size());
      if (!on_bytes(all)) return all;
    }
    char chunk[16384];
    while (true) {
      beast::error_code ec;
      std::size_t n = 0;
      stream_.expires_after(timeout_);
      stream_.async_read_some(asio::buffer(chunk), [&](beast::error_code e, std::size_t k) {
        ec = e;
        n = k;
      });
      run();
      if (n > 0) {
        all.append(chunk, n);
        if (!on_bytes(std::string_view(chunk, n))) break;
      }
      if (ec) break;
    }
    return all;
  }

  // True when the server closed the connection (EOF) within `wait`.
  bool closed_by_server(std::chrono::milliseconds wait) {
    char c;
    beast::error_code ec;
    stream_.expires_after(wait);
    stream_.async_read_some(asio::buffer(&c, 1), [&](beast::error_code e, std::size_t) { ec = e; });
    run();
    return ec == asio::error::eof || ec == asio::error::connection_reset;
  }

  void close() {
    beast::error_code ec;
    stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    stream_.socket().close(ec);
  }

 private:
  void run() {
    ioc_.restart();
    ioc_.run();
  }

  asio::io_context ioc_;
  beast::tcp_stream stream_;
  beast::flat_buffer buf_;
  std::chrono::milliseconds timeout_;
  bool connected_ = false;
};

// One request on a connection of its own.
inline std::optional<Reply> http_request(
    int port, const std::string& method, const std::string& path, const std::string& body = {},
    const Headers& headers = {}, std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  Connection c(port, timeout);
  return c.request(method, path, body, headers, false);
}

}  // namespace vsynth::servetest
