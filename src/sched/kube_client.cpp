#include "sched/kube_client.h"

#include <fmt/format.h>
#include <httplib.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <utility>

#include "core/strings.h"

#ifndef CMAX_VERSION
#define CMAX_VERSION "0.0.0"
#endif

namespace cmax::sched {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr std::size_t kMaxTokenBytes = 64u << 10;

// An X509_STORE holding every certificate of a PEM bundle, or nullptr when it holds none.
X509_STORE* pem_store(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (!bio) return nullptr;
  X509_STORE* store = X509_STORE_new();
  int added = 0;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    if (X509_STORE_add_cert(store, cert) == 1) ++added;
    X509_free(cert);
  }
  ERR_clear_error();  // the loop ends on "no start line"
  BIO_free(bio);
  if (added == 0) {
    X509_STORE_free(store);
    return nullptr;
  }
  return store;
}

Result<std::string> read_token(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return fail("read service-account token {}: {}: is the token mounted (automountServiceAccountToken)?", path,
                std::strerror(errno));
  std::string token(kMaxTokenBytes + 1, '\0');
  in.read(token.data(), static_cast<std::streamsize>(token.size()));
  token.resize(static_cast<std::size_t>(in.gcount()));
  if (token.size() > kMaxTokenBytes)
    return fail("service-account token {} is larger than {} bytes: not a token", path,
                kMaxTokenBytes);
  std::string trimmed(core::trim(token));
  if (trimmed.empty()) return fail("service-account token {} is empty", path);
  for (unsigned char c : trimmed)
    if (c < 0x21 || c == 0x7f)
      return fail("service-account token {} holds whitespace or control characters: not a token",
                  path);
  return trimmed;
}

std::string transport_error(httplib::Error err, milliseconds elapsed,
                            const kube::ApiEndpoint& ep,
                            const KubernetesOptions& options, std::size_t max_body) {
  auto where = fmt::format("{}:{}", ep.host, ep.port);
  switch (err) {
    case httplib::Error::Connection:
      return fmt::format("cannot connect to {}: is the API server address right and reachable?",
                         where);
    case httplib::Error::ConnectionTimeout:
      return fmt::format("no connection to {} within {} ms: is the API server reachable?", where,
                         options.timeout.count());
    case httplib::Error::Read:
      // httplib reports a read timeout and an early close alike; the clock tells them apart.
      if (elapsed >= options.timeout)
        return fmt::format("no answer from {} within {} ms: is the API server overloaded?", where,
                           options.timeout.count());
      return fmt::format("{} closed the connection before a full answer", where);
    case httplib::Error::Write:
      return fmt::format("sending the request to {} failed", where);
    case httplib::Error::Canceled:
      return fmt::format("answer from {} larger than {} bytes", where, max_body);
    case httplib::Error::SSLConnection:
      return fmt::format("TLS handshake with {} failed: does it serve https on that port?", where);
    case httplib::Error::SSLLoadingCerts:
      return fmt::format("cannot load CA bundle {}: mount the service account's ca.crt", options.ca_path);
    case httplib::Error::SSLServerVerification:
      return fmt::format(
          "the certificate of {} does not verify against {}: wrong CA, or a host not named in "
          "the certificate",
          where, options.ca_path);
    default:
      return fmt::format("request to {} failed (httplib error {})", where, static_cast<int>(err));
  }
}

std::string_view reason_phrase(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 409:
      return "Conflict";
    case 422:
      return "Unprocessable Entity";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "";
  }
}

}  // namespace

struct KubeClient::Connection {
  std::mutex mu;
  std::unique_ptr<httplib::ClientImpl> client;  ///< made at the first request
};

KubeClient::KubeClient(KubernetesOptions options, bool keep_alive)
    : options_(std::move(options)), endpoint_(kube::parse_api_url(options_.api_url)) {
  if (keep_alive) conn_ = std::make_shared<Connection>();
}

namespace {

// The bearer token of `options`: inline, or read again from its file (bound tokens rotate).
Result<std::string> bearer_token(const KubernetesOptions& options, const std::string& where) {
  if (options.token_path.empty()) return options.token;
  auto t = read_token(options.token_path);
  if (!t) return fail("{}: {}", where, t.error().message);
  return t;
}

// A client for `ep` with the CA of `options`; `timeout` bounds each read (connect and write:
// options.timeout).
Result<std::unique_ptr<httplib::ClientImpl>> make_client(const kube::ApiEndpoint& ep, const KubernetesOptions& options,
                                                         milliseconds timeout, const std::string& where) {
  std::unique_ptr<httplib::ClientImpl> client;
  if (ep.tls) {
    auto tls = std::make_unique<httplib::SSLClient>(ep.host, ep.port);
    if (!options.ca_pem.empty()) {
      X509_STORE* store = pem_store(options.ca_pem);
      if (!store)
        return fail("{}: the inline CA bundle (certificate-authority-data) holds no PEM certificate", where);
      tls->set_ca_cert_store(store);  // httplib owns it from here
    } else {
      if (!std::ifstream(options.ca_path))
        return fail("{}: read CA bundle {}: {}: mount the service account's ca.crt or set ca_path", where,
                    options.ca_path, std::strerror(errno));
      tls->set_ca_cert_path(options.ca_path);
    }
    tls->enable_server_certificate_verification(true);
    client = std::move(tls);
  } else {
    client = std::make_unique<httplib::ClientImpl>(ep.host, ep.port);
  }
  client->set_connection_timeout(options.timeout);
  client->set_read_timeout(timeout);
  client->set_write_timeout(options.timeout);
  client->set_keep_alive(false);
  // The request line and headers go out in one write and the body in another: with Nagle on, the
  // body waits for the server's delayed ACK of the first, 40 ms on Linux (measured against a real
  // kube-apiserver: every PATCH took 40 ms more than its GET).
  client->set_tcp_nodelay(true);
  client->set_follow_location(false);
  client->set_url_encode(false);  // paths and queries are encoded by the caller, exactly once
  return client;
}

httplib::Headers request_headers(std::string_view accept, const KubernetesOptions& options, const std::string& token) {
  httplib::Headers h = {{"Accept", std::string(accept)},
                        {"User-Agent", options.user_agent.empty() ? std::string("cmax/" CMAX_VERSION) : options.user_agent}};
  if (!token.empty()) h.emplace("Authorization", "Bearer " + token);
  return h;
}

}  // namespace

Result<KubeReply> KubeClient::send(std::string_view method, const std::string& path,
                                 std::string_view content_type, const std::string& body,
                                 std::size_t max_body, std::string_view accept) const {
  auto where = fmt::format("{} {}", method, path);
  // A bad URL fails here, before any socket is opened.
  if (!endpoint_) return fail("{}: {}", where, endpoint_.error().message);
  const auto& ep = *endpoint_;
  auto token = bearer_token(options_, where);
  if (!token) return Unexpected<Error>{token.error()};

  httplib::Request req;
  req.method = std::string(method);
  req.path = ep.base_path + path;
  req.headers = request_headers(accept, options_, *token);
  if (!body.empty()) {
    req.headers.emplace("Content-Type", std::string(content_type));
    req.body = body;
  }
  KubeReply reply;
  req.content_receiver = [&reply, max_body](const char* data, size_t n, uint64_t, uint64_t) {
    if (reply.body.size() + n > max_body) return false;
    reply.body.append(data, n);
    return true;
  };

  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  auto start = steady_clock::now();
  bool sent = false;
  // A client of our own, or the kept one (made at its first request, or again after a failure).
  auto connect = [&]() -> Result<std::unique_ptr<httplib::ClientImpl>> {
    auto c = make_client(ep, options_, options_.timeout, where);
    if (c && conn_) (*c)->set_keep_alive(true);
    return c;
  };
  if (conn_) {
    // One request at a time on the kept connection. The server may have closed it while idle; a
    // send that fails on a reused connection is sent once more on a new one.
    std::lock_guard lock(conn_->mu);
    const bool reused = conn_->client != nullptr;
    if (!reused) {
      auto c = connect();
      if (!c) return Unexpected<Error>{c.error()};
      conn_->client = std::move(*c);
    }
    sent = conn_->client->send(req, res, err);
    if ((!sent || err != httplib::Error::Success) && reused && err != httplib::Error::Canceled) {
      auto c = connect();
      if (!c) return Unexpected<Error>{c.error()};
      conn_->client = std::move(*c);
      reply.body.clear();
      res = httplib::Response();
      err = httplib::Error::Success;
      start = steady_clock::now();
      sent = conn_->client->send(req, res, err);
    }
    if (!sent || err != httplib::Error::Success) conn_->client.reset();
  } else {
    auto c = connect();
    if (!c) return Unexpected<Error>{c.error()};
    sent = (*c)->send(req, res, err);
  }
  auto elapsed = std::chrono::duration_cast<milliseconds>(steady_clock::now() - start);
  if (!sent || err != httplib::Error::Success)
    return fail("{}: {}", where, transport_error(err, elapsed, ep, options_, max_body));
  reply.status = res.status;
  reply.reason = res.reason.empty() ? std::string(reason_phrase(res.status)) : res.reason;
  return reply;
}

Result<WatchEnd> KubeClient::watch(const std::string& path, const std::function<bool(std::string_view)>& on_line,
                                   std::stop_token stop, milliseconds idle_timeout) const {
  auto where = fmt::format("GET {}", path);
  if (!endpoint_) return fail("{}: {}", where, endpoint_.error().message);
  const auto& ep = *endpoint_;
  auto token = bearer_token(options_, where);
  if (!token) return Unexpected<Error>{token.error()};
  auto made = make_client(ep, options_, idle_timeout, where);
  if (!made) return Unexpected<Error>{made.error()};
  httplib::ClientImpl& client = **made;

  httplib::Request req;
  req.method = "GET";
  req.path = ep.base_path + path;
  req.headers = request_headers("application/json", options_, *token);
  WatchEnd end;
  std::string pending, error_body;
  bool handler_stopped = false;
  int status = 0;
  req.response_handler = [&status](const httplib::Response& r) {
    status = r.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    if (stop.stop_requested()) return false;
    end.bytes += n;
    if (status < 200 || status >= 300) {  // an error answer is one Status object, not events
      if (error_body.size() < (64u << 10)) error_body.append(data, n);
      return true;
    }
    pending.append(data, n);
    if (pending.size() > kDefaultMaxBody) return false;  // one event larger than any Node: not a watch
    std::size_t start = 0;
    for (auto nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n', start)) {
      std::string_view line(pending.data() + start, nl - start);
      start = nl + 1;
      if (line.empty()) continue;
      ++end.events;
      if (!on_line(line)) {
        handler_stopped = true;
        return false;
      }
    }
    pending.erase(0, start);
    return true;
  };
  // A stop shuts the socket from this thread while send() blocks in a read on the caller's.
  std::stop_callback cancel(stop, [&client] { client.stop(); });
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  auto start = steady_clock::now();
  bool sent = client.send(req, res, err);
  auto elapsed = std::chrono::duration_cast<milliseconds>(steady_clock::now() - start);
  end.status = status ? status : res.status;
  if (handler_stopped || stop.stop_requested()) {
    end.stopped = true;
    return end;
  }
  if (!sent || err != httplib::Error::Success) {
    if (err == httplib::Error::Read && elapsed >= idle_timeout)
      return fail("{}: no event and no end from {}:{} within {} ms: is the API server overloaded?", where, ep.host,
                  ep.port, idle_timeout.count());
    return fail("{}: {}", where, transport_error(err, elapsed, ep, options_, kDefaultMaxBody));
  }
  if (end.status < 200 || end.status >= 300) {
    KubeReply r{end.status, res.reason.empty() ? std::string(reason_phrase(end.status)) : res.reason, error_body};
    end.error = describe_reply("GET", path, r);
  }
  return end;
}

std::string describe_reply(std::string_view method, std::string_view path, const KubeReply& reply) {
  auto message = kube::status_message(reply.body);
  std::string text = message ? *message : core::clip(core::trim(reply.body), 300);
  auto out = fmt::format("{} {}: {} {}", method, path, reply.status,
                         reply.reason.empty() ? reason_phrase(reply.status) : std::string_view(reply.reason));
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (!text.empty()) out += ": " + text;
  return out;
}

}  // namespace cmax::sched
