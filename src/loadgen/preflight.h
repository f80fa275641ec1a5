#pragma once
// The bench's preflight: GET /models says the endpoint answers, the key is accepted and the model
// exists, before any load is sent.

#include <atomic>
#include <string>
#include <vector>

#include "core/result.h"
#include "loadgen/http_client.h"

namespace cmax::loadgen {

struct PreflightOptions {
  std::string base_url;             ///< named in messages
  std::string model;                ///< "" = the first the endpoint lists
  std::string api_key_env;          ///< named when the key is refused
  double connect_timeout_s = 10;    ///< the wait is this plus 10 s
};

/// The model to send, or an error an operator can act on (endpoint down, key refused, a base URL
/// without /v1, unknown model). Doubts that do not stop the run go to `warnings`.
Result<std::string> preflight(HttpEngine& engine, const PreflightOptions& o, std::vector<std::string>& warnings,
                              const std::atomic<bool>* stop);

}  // namespace cmax::loadgen
