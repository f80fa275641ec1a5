// The metrics server's HTTP side: cpp-httplib (Debian's libcpp-httplib-dev) kept to this file.

#include <httplib.h>

#include <chrono>
#include <thread>

#include "agent/metrics.h"

namespace cmax::agent {

struct MetricsServer::Impl {
  httplib::Server server;
  std::thread thread;
  int port = 0;
};

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(const std::string& host, int port, const AgentStats& stats,
                                                            std::string node) {
  auto impl = std::make_unique<Impl>();
  impl->server.Get("/metrics", [&stats, node](const httplib::Request&, httplib::Response& res) {
    res.set_content(render_metrics(stats, node), "text/plain; version=0.0.4; charset=utf-8");
  });
  impl->server.set_read_timeout(5, 0);
  impl->server.set_write_timeout(5, 0);
  if (port == 0) {
    impl->port = impl->server.bind_to_any_port(host);
  } else {
    impl->port = impl->server.bind_to_port(host, port) ? port : -1;
  }
  if (impl->port < 0) return fail("listen on {}:{} for metrics: cannot bind (in use, or not an address here)", host, port);
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->server.listen_after_bind(); });
  // A stop() before the thread has started listening would be lost (this httplib has no
  // wait_until_ready), and the destructor's join would hang: wait, bounded, until it listens.
  for (int i = 0; i < 2000 && !impl->server.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (!impl->server.is_running()) {
    impl->server.stop();
    impl->thread.detach();  // never joined: a hung join is worse than a leaked idle thread
    return fail("listen on {}:{} for metrics: the server did not start within 2 s", host, impl->port);
  }
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(impl)));
}

MetricsServer::MetricsServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MetricsServer::~MetricsServer() {
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

int MetricsServer::port() const { return impl_->port; }

}  // namespace cmax::agent
