#include "loadgen/preflight.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/strings.h"
#include "loadgen/collect.h"
#include "loadgen/chunk.h"
#include "loadgen/record.h"

namespace cmax::loadgen {
namespace {

// OpenAI-compatible servers answer under /v1; a base URL without it finds nothing anywhere.
Result<std::string> not_found(const PreflightOptions& f, const std::string& body_text) {
  const std::string said = error_body_message(body_text);
  const std::string body = said.empty() ? std::string() : fmt::format(" (the server said: {})", core::clip(said, 160));
  std::string_view base = f.base_url;
  while (base.ends_with('/')) base.remove_suffix(1);
  if (!base.ends_with("/v1") && base.find("/v1/") == std::string_view::npos)
    return fail("GET {}/models: HTTP 404{}: the base URL lacks the API's path; OpenAI-compatible servers (vLLM, SGLang, "
                "TGI, cmax endpoint serve) answer under /v1: try --base-url {}/v1",
                f.base_url, body, base);
  if (f.model.empty())
    return fail("GET {}/models: HTTP 404{}: this endpoint lists no models; name the model with --model", f.base_url, body);
  return std::string();
}

// The model ids of an OpenAI model list; a body that is not one is a warning.
std::vector<std::string> model_ids(const std::string& body, std::vector<std::string>& warnings) {
  std::vector<std::string> ids;
  try {
    auto j = nlohmann::json::parse(body);
    for (const auto& m : j.at("data"))
      if (m.contains("id") && m["id"].is_string()) ids.push_back(m["id"].get<std::string>());
  } catch (const std::exception&) {
    warnings.push_back("GET /models did not answer an OpenAI model list; the model name was not checked");
  }
  return ids;
}

}  // namespace

Result<std::string> preflight(HttpEngine& engine, const PreflightOptions& f, std::vector<std::string>& warnings,
                              const std::atomic<bool>* stop) {
  Collect c;
  engine.get("/models", &c);
  if (!c.wait(engine, std::chrono::milliseconds(long(f.connect_timeout_s * 1000)) + std::chrono::seconds(10), stop)) {
    return fail("GET {}/models: no answer within {} s; is the endpoint up? (--no-preflight skips this check)",
                f.base_url, f.connect_timeout_s + 10);
  }
  const auto& r = c.result;
  if (r.transport != ErrorClass::kNone)
    return fail("GET {}/models: {}; check --base-url and that the endpoint is up", f.base_url, r.detail);
  if (r.http_status == 401 || r.http_status == 403)
    return fail("GET {}/models: HTTP {}: {}; the endpoint refused the API key (set {} or --api-key-file)", f.base_url,
                r.http_status, error_body_message(c.body), f.api_key_env);
  if (r.http_status == 404) {
    if (auto e = not_found(f, c.body); !e) return e;
  }
  if (r.http_status != 200) {
    warnings.push_back(fmt::format("GET /models answered HTTP {}; the model name was not checked", r.http_status));
    if (f.model.empty()) return fail("GET {}/models: HTTP {}; name the model with --model", f.base_url, r.http_status);
    return f.model;
  }
  const std::vector<std::string> ids = model_ids(c.body, warnings);
  if (f.model.empty()) {
    if (ids.empty()) return fail("GET {}/models lists no model; name one with --model", f.base_url);
    if (ids.size() > 1) warnings.push_back(fmt::format("the endpoint serves {} models; using the first, {}", ids.size(), ids[0]));
    return ids.front();
  }
  if (!ids.empty() && std::find(ids.begin(), ids.end(), f.model) == ids.end())
    return fail("model {}: not among the {} the endpoint lists (first: {}); check --model", f.model, ids.size(), ids[0]);
  return f.model;
}

}  // namespace cmax::loadgen
