#pragma once
// cmaxd's metrics in the Prometheus text exposition format (version 0.0.4), and a loopback HTTP
// server for them. The renderer is pure; the server owns its thread and stops with its owner.

#include <memory>
#include <string>

#include "agent/agent.h"
#include "core/result.h"

namespace cmax::agent {

/// The exposition of `stats` for `node`: counters and gauges with HELP and TYPE lines.
std::string render_metrics(const AgentStats& stats, const std::string& node);

/// Serves GET /metrics on `host`:`port` from its own thread until destroyed.
class MetricsServer {
 public:
  /// Binds and starts serving; an error names the address (in use, not permitted).
  static Result<std::unique_ptr<MetricsServer>> start(const std::string& host, int port, const AgentStats& stats,
                                                      std::string node);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;
  int port() const;

  struct Impl;

 private:
  explicit MetricsServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cmax::agent
