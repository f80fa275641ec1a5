#pragma once
// One whole exchange, collected: the bench's side requests (the preflight's GET /models, the
// server's /metrics, its cache flush), each waited on with a bound.

#include <atomic>
#include <chrono>
#include <string>
#include <string_view>

#include "loadgen/http_client.h"

namespace cmax::loadgen {

/// Keeps up to 1 MiB of the body and how the exchange ended. Used on the engine's thread.
struct Collect final : ExchangeHandler {
  std::string body;
  TransferResult result;
  bool done = false;
  bool on_body(std::string_view b, int) override;
  void on_done(const TransferResult& r) override;
  /// Polls `engine` until the exchange is done, `timeout` has passed or `*stop` is set (null:
  /// never); what is still running then is canceled. Returns done.
  bool wait(HttpEngine& engine, std::chrono::milliseconds timeout, const std::atomic<bool>* stop);
};

}  // namespace cmax::loadgen
