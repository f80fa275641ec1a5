// HttpEngine: libcurl multi + epoll. Each exchange is one easy handle (recycled through a free
// list); curl tells us which sockets to watch (socket callback) and when to call it back (timer
// callback); epoll_wait sleeps until one of those.

#include "loadgen/http_client.h"
#include "loadgen/http1_decoder.h"
#include "loadgen/transport.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

#include <curl/curl.h>
#include <fmt/format.h>

namespace cmax::loadgen {
namespace {

using Clock = std::chrono::steady_clock;

// curl_global_init is not thread-safe before 7.84; do it once.
void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

ErrorClass classify(CURLcode code) {
  switch (code) {
    case CURLE_OPERATION_TIMEDOUT:
      return ErrorClass::kTimeout;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
      return ErrorClass::kConnect;
    case CURLE_ABORTED_BY_CALLBACK:
    case CURLE_WRITE_ERROR:
      return ErrorClass::kCanceled;
    default:  // RECV_ERROR, PARTIAL_FILE, GOT_NOTHING, SEND_ERROR, HTTP2, HTTP2_STREAM...
      return ErrorClass::kDropped;
  }
}

}  // namespace

bool http_version_from_name(std::string_view name, HttpVersion& out) {
  if (name == "1.1") out = HttpVersion::kHttp11;
  else if (name == "2") out = HttpVersion::kHttp2;
  else if (name == "auto") out = HttpVersion::kAuto;
  else return false;
  return true;
}

std::string_view http_version_name(HttpVersion v) {
  switch (v) {
    case HttpVersion::kHttp11: return "1.1";
    case HttpVersion::kHttp2: return "2";
    case HttpVersion::kAuto: break;
  }
  return "auto";
}

namespace detail {
namespace {

class CurlTransport final : public Transport {
 public:
  struct Exchange {
    CURL* easy = nullptr;
    ExchangeHandler* handler = nullptr;
    int status = 0;
    double retry_after_s = -1;
    bool aborted = false;
    char error[CURL_ERROR_SIZE] = {};
    curl_slist* own_headers = nullptr;  // the shared list plus this request's header; freed on reuse
  };

  ClientConfig config;
  std::string base;  // base_url without a trailing slash
  CURLM* multi = nullptr;
  int epfd = -1;
  long timer_ms = -1;  // curl's requested timeout; -1 none
  Clock::time_point timer_set;
  curl_slist* post_headers = nullptr;
  curl_slist* stream_headers = nullptr;
  curl_slist* get_headers = nullptr;
  std::vector<Exchange*> free_list;
  std::vector<Exchange*> all;
  int active = 0;
  Clock::time_point last_wake;

  ~CurlTransport() override {
    cancel_all();
    for (auto* x : all) {
      curl_easy_cleanup(x->easy);
      curl_slist_free_all(x->own_headers);
      delete x;
    }
    if (multi) curl_multi_cleanup(multi);
    if (epfd >= 0) ::close(epfd);
    curl_slist_free_all(post_headers);
    curl_slist_free_all(stream_headers);
    curl_slist_free_all(get_headers);
  }

  static int on_socket(CURL*, curl_socket_t s, int what, void* userp, void* socketp) {
    auto* self = static_cast<CurlTransport*>(userp);
    if (what == CURL_POLL_REMOVE) {
      ::epoll_ctl(self->epfd, EPOLL_CTL_DEL, s, nullptr);
      curl_multi_assign(self->multi, s, nullptr);
      return 0;
    }
    epoll_event ev{};
    ev.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0u) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0u);
    ev.data.fd = s;
    if (socketp == nullptr) {
      if (::epoll_ctl(self->epfd, EPOLL_CTL_ADD, s, &ev) != 0 && errno == EEXIST)
        ::epoll_ctl(self->epfd, EPOLL_CTL_MOD, s, &ev);
      curl_multi_assign(self->multi, s, reinterpret_cast<void*>(1));
    } else if (::epoll_ctl(self->epfd, EPOLL_CTL_MOD, s, &ev) != 0 && errno == ENOENT) {
      ::epoll_ctl(self->epfd, EPOLL_CTL_ADD, s, &ev);
    }
    return 0;
  }

  static int on_timer(CURLM*, long timeout_ms, void* userp) {
    auto* self = static_cast<CurlTransport*>(userp);
    self->timer_ms = timeout_ms;
    self->timer_set = Clock::now();
    return 0;
  }

  static std::size_t on_write(char* data, std::size_t size, std::size_t n, void* userp) {
    auto* x = static_cast<Exchange*>(userp);
    const std::size_t len = size * n;
    if (x->status == 0) {
      long code = 0;
      curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &code);
      x->status = static_cast<int>(code);
    }
    if (!x->handler->on_body(std::string_view(data, len), x->status)) {
      x->aborted = true;
      return CURL_WRITEFUNC_ERROR;
    }
    return len;
  }

  static std::size_t on_header(char* data, std::size_t size, std::size_t n, void* userp) {
    auto* x = static_cast<Exchange*>(userp);
    const std::size_t len = size * n;
    if (const double secs = retry_after_header(std::string_view(data, len)); secs >= 0) x->retry_after_s = secs;
    return len;
  }

  Exchange* acquire() {
    if (!free_list.empty()) {
      auto* x = free_list.back();
      free_list.pop_back();
      curl_easy_reset(x->easy);
      return x;
    }
    auto* x = new Exchange;
    x->easy = curl_easy_init();
    all.push_back(x);
    return x;
  }

  void start(Exchange* x, const std::string& url, curl_slist* headers, const std::string* body,
             ExchangeHandler* h) {
    x->handler = h;
    x->status = 0;
    x->retry_after_s = -1;
    x->aborted = false;
    x->error[0] = '\0';
    CURL* e = x->easy;
    curl_easy_setopt(e, CURLOPT_URL, url.c_str());
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
    if (body) {
      curl_easy_setopt(e, CURLOPT_POSTFIELDS, body->data());
      curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
    } else {
      curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    }
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(e, CURLOPT_PRIVATE, x);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->error);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(config.connect_timeout.count()));
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(config.request_timeout.count()));
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, static_cast<long>(std::max<std::int64_t>(config.stall_timeout.count(), 1)));
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 64L * 1024);
    const bool https = url.starts_with("https://");
    long version = CURL_HTTP_VERSION_1_1;
    if (config.http == HttpVersion::kHttp2) version = https ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE;
    if (config.http == HttpVersion::kAuto) version = https ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_1_1;
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, version);
    curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);  // HTTP/2: wait to multiplex rather than open another connection
    if (!config.ca_file.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, config.ca_file.c_str());
    ++active;
    curl_multi_add_handle(multi, e);
  }

  void finish(Exchange* x, CURLcode code) {
    TransferResult r;
    long status = 0;
    curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
    r.http_status = static_cast<int>(status);
    r.retry_after_s = x->retry_after_s;
    if (code != CURLE_OK) {
      r.transport = x->aborted ? ErrorClass::kCanceled : classify(code);
      r.detail = x->error[0] ? std::string(x->error) : std::string(curl_easy_strerror(code));
    }
    curl_multi_remove_handle(multi, x->easy);
    --active;
    auto* h = x->handler;
    x->handler = nullptr;
    free_list.push_back(x);
    h->on_done(r);
  }

  void drain() {
    int left = 0;
    while (CURLMsg* m = curl_multi_info_read(multi, &left)) {
      if (m->msg != CURLMSG_DONE) continue;
      Exchange* x = nullptr;
      curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &x);
      if (x) finish(x, m->data.result);
    }
  }

  int poll(std::chrono::milliseconds timeout) override {
    int running = 0;
    coalesce_wakeups(config, active, last_wake, timeout);
    long wait = static_cast<long>(timeout.count());
    if (timer_ms >= 0) {
      const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - timer_set).count();
      wait = std::min<long>(wait, std::max<long>(0, timer_ms - static_cast<long>(elapsed)));
    }
    epoll_event events[256];
    const int n = ::epoll_wait(epfd, events, 256, static_cast<int>(wait));
    for (int i = 0; i < n; ++i) {
      int flags = 0;
      if (events[i].events & EPOLLIN) flags |= CURL_CSELECT_IN;
      if (events[i].events & EPOLLOUT) flags |= CURL_CSELECT_OUT;
      if (events[i].events & (EPOLLERR | EPOLLHUP)) flags |= CURL_CSELECT_ERR;
      curl_multi_socket_action(multi, events[i].data.fd, flags, &running);
    }
    if (timer_ms >= 0) {
      const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - timer_set).count();
      if (elapsed >= timer_ms) {
        timer_ms = -1;
        curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
      }
    }
    drain();
    last_wake = Clock::now();
    return active;
  }

  void cancel_all() override {
    std::vector<Exchange*> running;
    for (auto* x : all)
      if (x->handler) running.push_back(x);
    for (auto* x : running) {
      curl_multi_remove_handle(multi, x->easy);
      --active;
      auto* h = x->handler;
      x->handler = nullptr;
      free_list.push_back(x);
      TransferResult r;
      r.http_status = x->status;
      r.transport = ErrorClass::kCanceled;
      r.detail = "canceled: the run was stopped";
      h->on_done(r);
    }
  }

  void post(std::string_view path, const std::string& body, bool stream, ExchangeHandler* handler,
            std::string_view header) override {
    auto* x = acquire();
    const std::string url = base + std::string(path);
    curl_slist* headers = stream ? stream_headers : post_headers;
    curl_slist_free_all(x->own_headers);
    x->own_headers = nullptr;
    if (!header.empty()) {
      for (const curl_slist* l = headers; l; l = l->next) x->own_headers = curl_slist_append(x->own_headers, l->data);
      x->own_headers = curl_slist_append(x->own_headers, std::string(header).c_str());
      headers = x->own_headers;
    }
    start(x, url, headers, &body, handler);
  }
  void get(std::string_view path, ExchangeHandler* handler) override {
    auto* x = acquire();
    start(x, base + std::string(path), get_headers, nullptr, handler);
  }
  int running() const override { return active; }
};

}  // namespace

Result<std::unique_ptr<Transport>> make_curl_transport(const ClientConfig& config) {
  global_init();
  auto impl = std::make_unique<CurlTransport>();
  impl->config = config;
  impl->base = config.base_url;
  while (impl->base.ends_with('/')) impl->base.pop_back();
  impl->multi = curl_multi_init();
  impl->epfd = ::epoll_create1(EPOLL_CLOEXEC);
  if (!impl->multi || impl->epfd < 0) return fail("set up libcurl: {}", std::strerror(errno));
  curl_multi_setopt(impl->multi, CURLMOPT_SOCKETFUNCTION, &CurlTransport::on_socket);
  curl_multi_setopt(impl->multi, CURLMOPT_SOCKETDATA, impl.get());
  curl_multi_setopt(impl->multi, CURLMOPT_TIMERFUNCTION, &CurlTransport::on_timer);
  curl_multi_setopt(impl->multi, CURLMOPT_TIMERDATA, impl.get());
  curl_multi_setopt(impl->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, static_cast<long>(std::max(config.max_connections, 1)));
  curl_multi_setopt(impl->multi, CURLMOPT_MAXCONNECTS, static_cast<long>(std::max(config.max_connections, 1)));
  curl_multi_setopt(impl->multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
  auto add = [&](curl_slist*& list, std::initializer_list<std::string> lines) {
    for (const auto& l : lines) list = curl_slist_append(list, l.c_str());
    for (const auto& l : config.extra_headers) list = curl_slist_append(list, l.c_str());
    if (!config.api_key.empty()) list = curl_slist_append(list, api_key_line(config).c_str());
  };
  add(impl->post_headers, {"Content-Type: application/json", "Accept: application/json", "Expect:"});
  add(impl->stream_headers, {"Content-Type: application/json", "Accept: text/event-stream", "Expect:"});
  add(impl->get_headers, {"Accept: application/json"});
  return std::unique_ptr<Transport>(std::move(impl));
}

}  // namespace detail

HttpEngine::HttpEngine(std::unique_ptr<Impl> impl, std::string_view transport)
    : impl_(std::move(impl)), transport_(transport) {}
HttpEngine::~HttpEngine() = default;

struct HttpEngine::Impl {
  std::unique_ptr<detail::Transport> t;
};

bool transport_from_name(std::string_view name, TransportKind& out) {
  if (name == "auto") out = TransportKind::kAuto;
  else if (name == "native") out = TransportKind::kNative;
  else if (name == "curl") out = TransportKind::kCurl;
  else return false;
  return true;
}

std::string_view transport_name(TransportKind k) {
  switch (k) {
    case TransportKind::kNative: return "native";
    case TransportKind::kCurl: return "curl";
    case TransportKind::kAuto: break;
  }
  return "auto";
}

std::string api_key_line(const ClientConfig& config) {
  if (config.api_key.empty()) return {};
  if (config.api_key_header.empty()) return "Authorization: Bearer " + config.api_key;
  return config.api_key_header + ": " + config.api_key;
}

Result<std::unique_ptr<HttpEngine>> HttpEngine::create(const ClientConfig& config) {
  if (!config.base_url.starts_with("http://") && !config.base_url.starts_with("https://"))
    return fail("endpoint {}: not an http:// or https:// URL; give the API base, e.g. http://127.0.0.1:8000/v1",
                config.base_url);
  const bool cleartext = config.base_url.starts_with("http://");
  bool native = config.transport == TransportKind::kNative ||
                (config.transport == TransportKind::kAuto && cleartext && config.http != HttpVersion::kHttp2);
  if (native && !cleartext)
    return fail("endpoint {}: the native transport speaks cleartext HTTP/1.1 only; use --transport curl (or auto) for https",
                config.base_url);
  if (native && config.http == HttpVersion::kHttp2)
    return fail("--http 2 needs --transport curl (the native transport speaks HTTP/1.1)");
  auto t = native ? detail::make_native_transport(config) : detail::make_curl_transport(config);
  if (!t) return Unexpected<Error>{t.error()};
  auto impl = std::make_unique<Impl>();
  impl->t = std::move(*t);
  return std::unique_ptr<HttpEngine>(new HttpEngine(std::move(impl), native ? "native" : "curl"));
}

void HttpEngine::post(std::string_view path, const std::string& body, bool stream, ExchangeHandler* handler,
                      std::string_view header) {
  impl_->t->post(path, body, stream, handler, header);
}
void HttpEngine::get(std::string_view path, ExchangeHandler* handler) { impl_->t->get(path, handler); }
int HttpEngine::poll(std::chrono::milliseconds timeout) { return impl_->t->poll(timeout); }
void HttpEngine::cancel_all() { impl_->t->cancel_all(); }
int HttpEngine::running() const { return impl_->t->running(); }

}  // namespace cmax::loadgen
