#pragma once
// A run's numbers from its request records: latency percentiles, throughput, goodput under SLOs,
// errors by class, client-side queueing, and the cached-token hit rate. Pure.

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/result.h"
#include "loadgen/histogram.h"
#include "loadgen/record.h"

namespace cmax::loadgen {

/// Milliseconds. count = 0 means no sample (the JSON then has nulls).
struct LatencyStats {
  std::uint64_t count = 0;
  double mean_ms = 0, p50_ms = 0, p90_ms = 0, p95_ms = 0, p99_ms = 0, max_ms = 0;
};
LatencyStats latency_stats(const Histogram& h);

/// Service-level objectives for goodput; 0 = no bound on that metric. A request is "good" when it
/// succeeded and meets every bound set (TTFT incl. client queueing, TPOT, E2E).
struct Slo {
  double ttft_ms = 0, tpot_ms = 0, e2e_ms = 0;
};

struct Summary {
  std::uint64_t requests = 0, succeeded = 0, failed = 0;
  /// Of `failed`, the requests cmax canceled itself when it stopped (Ctrl-C, --duration, a stage's
  /// budget): errors[kCanceled]. Not the endpoint's failures: success_rate leaves them out.
  std::uint64_t client_canceled = 0;
  std::array<std::uint64_t, kErrorClassCount> errors{};   ///< final outcome per ErrorClass (index kNone unused)
  std::array<std::uint64_t, kErrorClassCount> retries{};  ///< retried attempts per class (from attempts > 1 is
                                                          ///< not enough to know the class: the runner fills it)
  double duration_s = 0;  ///< first send to last finish of these records (or the caller's, when given)
  double request_throughput = 0;     ///< succeeded / duration
  double output_tokens_per_s = 0;    ///< completion tokens of succeeded requests / duration
  double total_tokens_per_s = 0;     ///< prompt + completion of succeeded requests / duration
  std::uint64_t prompt_tokens = 0, cached_tokens = 0, cache_creation_tokens = 0, completion_tokens = 0;
  std::uint64_t requests_with_usage = 0;     ///< succeeded requests that reported usage
  std::uint64_t requests_without_cache_field = 0;  ///< ...of which no cache field at all
  /// cached_tokens / prompt_tokens over succeeded requests with usage; < 0 when no request
  /// reported usage (the JSON has null: "not reported" is not "0%").
  double cache_hit_rate = -1;
  CacheSource cache_source = CacheSource::kNone;  ///< the convention most requests used
  LatencyStats ttft, ttft_incl_queue, tpot, itl, e2e, queue;
  Slo slo;
  std::uint64_t good_requests = 0;  ///< meeting every SLO bound
  double goodput_rps = 0;           ///< good_requests / duration
  double goodput_share = 0;         ///< good_requests / requests
};

/// succeeded / (requests - client_canceled): the endpoint's own success rate; < 0 when no request
/// was judged (none sent, or every one canceled by cmax). Pure.
double success_rate(const Summary& s);

/// Summarizes `records` (successes feed the latency stats; ITL comes from `itl`, which the runner
/// fills per token gap). `duration_s` <= 0: computed from the records (min sent_s to max
/// sent_s + e2e_s). `retries` is copied in as is.
Summary summarize(std::span<const RequestRecord> records, const Histogram& itl, double duration_s, const Slo& slo,
                  const std::array<std::uint64_t, kErrorClassCount>& retries = {});

/// The summary as it appears in bench.json (docs/schemas/endpoint-bench.md) and back.
nlohmann::json summary_to_json(const Summary& s);
Result<Summary> summary_from_json(const nlohmann::json& j);

/// Summaries as CSV (RFC 4180, a header line then one line per row, `\n` ends): the row's name
/// ("overall", "c=4"), counts, throughput, TTFT (incl. queueing too), TPOT, ITL and E2E p50/p90/
/// p99 in ms, tokens, the cache hit rate (empty when no request reported usage) and the goodput
/// share. bench.csv beside bench.json. Pure.
std::string summaries_csv(const std::vector<std::pair<std::string, Summary>>& rows);

/// One request record as a requests.jsonl line (no newline) and back.
std::string record_to_jsonl(const RequestRecord& r);
Result<RequestRecord> record_from_jsonl(std::string_view line);

}  // namespace cmax::loadgen
