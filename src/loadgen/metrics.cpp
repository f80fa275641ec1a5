#include "loadgen/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace cmax::loadgen {
namespace {

using nlohmann::json;

constexpr std::array<CacheSource, 4> kCacheSources = {CacheSource::kNone, CacheSource::kOpenAi,
                                                      CacheSource::kAnthropic, CacheSource::kDeepSeek};

bool cache_source_from_name(std::string_view name, CacheSource& out) {
  for (CacheSource s : kCacheSources) {
    if (cache_source_name(s) == name) {
      out = s;
      return true;
    }
  }
  return false;
}

double ratio(double num, double den) { return den > 0 ? num / den : 0.0; }

// Whether a successful request meets every bound of `slo` (0 = unbounded).
bool meets(const RequestRecord& r, const Slo& slo) {
  if (slo.ttft_ms > 0) {
    if (r.ttft_s < 0 || (std::max(r.queue_s, 0.0) + r.ttft_s) * 1e3 > slo.ttft_ms) return false;
  }
  // A one-token answer has no TPOT and cannot miss the bound.
  if (slo.tpot_ms > 0 && r.tpot_s >= 0 && r.tpot_s * 1e3 > slo.tpot_ms) return false;
  if (slo.e2e_ms > 0) {
    if (r.e2e_s < 0 || r.e2e_s * 1e3 > slo.e2e_ms) return false;
  }
  return true;
}

// First send to last finish over the records that were sent at all.
double duration_from_records(std::span<const RequestRecord> records) {
  double start = std::numeric_limits<double>::infinity();
  double end = -std::numeric_limits<double>::infinity();
  for (const RequestRecord& r : records) {
    if (r.sent_s < 0) continue;
    // A retried request started with its first attempt, which the window must include.
    start = std::min(start, r.first_sent_s >= 0 ? std::min(r.first_sent_s, r.sent_s) : r.sent_s);
    // A failure may lack e2e (a timeout); its last known moment still ends the window.
    end = std::max(end, r.sent_s + std::max({0.0, r.e2e_s, r.ttft_s}));
  }
  return end > start ? end - start : 0.0;
}

json lat_to_json(const LatencyStats& l) {
  if (l.count == 0) {
    return json{{"count", std::uint64_t{0}}, {"mean", nullptr}, {"p50", nullptr}, {"p90", nullptr},
                {"p95", nullptr}, {"p99", nullptr}, {"max", nullptr}};
  }
  return json{{"count", l.count}, {"mean", l.mean_ms}, {"p50", l.p50_ms}, {"p90", l.p90_ms},
              {"p95", l.p95_ms}, {"p99", l.p99_ms}, {"max", l.max_ms}};
}

json classes_to_json(const std::array<std::uint64_t, kErrorClassCount>& counts) {
  json j = json::object();
  for (int i = 1; i < kErrorClassCount; ++i) {
    j[std::string(error_class_name(static_cast<ErrorClass>(i)))] = counts[static_cast<std::size_t>(i)];
  }
  return j;
}

// Typed reads of one optional field of an object. Each leaves `out` alone when the field is
// absent (or null, where null is allowed) and fails naming the field's path when it is ill-typed.
class Reader {
 public:
  Reader(const json& j, std::string prefix) : j_(j), prefix_(std::move(prefix)) {}

  Result<void> u64(const char* key, std::uint64_t& out, std::uint64_t max = UINT64_MAX) const {
    const json* v = find(key);
    if (v == nullptr) return ok();
    if (v->is_number_unsigned()) {
      out = v->get<std::uint64_t>();
    } else if (v->is_number_integer() && v->get<std::int64_t>() >= 0) {  // json built in memory from an int
      out = static_cast<std::uint64_t>(v->get<std::int64_t>());
    } else if (v->is_number_float() && v->get<double>() >= 0 && v->get<double>() < 1.8e19 &&
               std::floor(v->get<double>()) == v->get<double>()) {
      out = static_cast<std::uint64_t>(v->get<double>());  // 12.0: an integer written as a double
    } else {
      return fail("\"{}\" is not a non-negative integer", path(key));
    }
    if (out > max) return fail("\"{}\" is out of range (at most {})", path(key), max);
    return ok();
  }

  template <class T>
  Result<void> narrow(const char* key, T& out) const {
    std::uint64_t wide = out;
    if (auto r = u64(key, wide, std::numeric_limits<T>::max()); !r) return r;
    out = static_cast<T>(wide);
    return ok();
  }

  Result<void> i32(const char* key, int& out) const {
    const json* v = find(key);
    if (v == nullptr) return ok();
    if (!v->is_number_integer()) return fail("\"{}\" is not an integer", path(key));
    const std::int64_t x = v->get<std::int64_t>();
    if (v->is_number_unsigned() ? v->get<std::uint64_t>() > INT32_MAX : (x < INT32_MIN || x > INT32_MAX)) {
      return fail("\"{}\" is out of range", path(key));
    }
    out = static_cast<int>(x);
    return ok();
  }

  /// A number; null reads as `if_null`.
  Result<void> number(const char* key, double& out, double if_null = 0) const {
    auto it = j_.find(key);
    if (it == j_.end()) return ok();
    if (it->is_null()) {
      out = if_null;
      return ok();
    }
    if (!it->is_number()) return fail("\"{}\" is not a number", path(key));
    out = it->get<double>();
    return ok();
  }

  Result<void> string(const char* key, std::string& out) const {
    const json* v = find(key);
    if (v == nullptr) return ok();
    if (!v->is_string()) return fail("\"{}\" is not a string", path(key));
    out = v->get<std::string>();
    return ok();
  }

  Result<void> boolean(const char* key, bool& out) const {
    const json* v = find(key);
    if (v == nullptr) return ok();
    if (!v->is_boolean()) return fail("\"{}\" is not true or false", path(key));
    out = v->get<bool>();
    return ok();
  }

  /// The field when it is present and not null; an error when it is not an object.
  Result<const json*> object(const char* key) const {
    const json* v = find(key);
    if (v == nullptr) return static_cast<const json*>(nullptr);
    if (!v->is_object()) return fail("\"{}\" is not an object", path(key));
    return v;
  }

  bool has(const char* key) const { return find(key) != nullptr; }

  std::string path(std::string_view key) const {
    return prefix_.empty() ? std::string(key) : prefix_ + "." + std::string(key);
  }

 private:
  const json* find(const char* key) const {
    auto it = j_.find(key);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }

  const json& j_;
  std::string prefix_;
};

// Returns the failure of a Result<void> step from the enclosing reader.
#define CMAX_TRY(expr)                      \
  do {                                      \
    if (auto r_ = (expr); !r_) {            \
      return Unexpected<Error>{r_.error()}; \
    }                                       \
  } while (0)

Result<void> read_lat(const Reader& parent, const char* key, LatencyStats& out) {
  auto obj = parent.object(key);
  if (!obj) return Unexpected<Error>{obj.error()};
  out = LatencyStats{};
  if (*obj == nullptr) return ok();
  const Reader r(**obj, parent.path(key));
  CMAX_TRY(r.u64("count", out.count));
  CMAX_TRY(r.number("mean", out.mean_ms));
  CMAX_TRY(r.number("p50", out.p50_ms));
  CMAX_TRY(r.number("p90", out.p90_ms));
  CMAX_TRY(r.number("p95", out.p95_ms));
  CMAX_TRY(r.number("p99", out.p99_ms));
  CMAX_TRY(r.number("max", out.max_ms));
  return ok();
}

// Unknown keys are skipped (readers ignore what a later writer adds), "ok" included.
Result<void> read_classes(const Reader& parent, const char* key, std::array<std::uint64_t, kErrorClassCount>& out) {
  auto obj = parent.object(key);
  if (!obj) return Unexpected<Error>{obj.error()};
  out = {};
  if (*obj == nullptr) return ok();
  const Reader r(**obj, parent.path(key));
  for (int i = 1; i < kErrorClassCount; ++i) {
    const std::string name(error_class_name(static_cast<ErrorClass>(i)));
    CMAX_TRY(r.u64(name.c_str(), out[static_cast<std::size_t>(i)]));
  }
  return ok();
}

Result<void> read_cache_source(const Reader& r, const char* key, CacheSource& out) {
  if (!r.has(key)) return ok();
  std::string name;
  CMAX_TRY(r.string(key, name));
  if (!cache_source_from_name(name, out)) {
    return fail("\"{}\" is \"{}\", not one of openai, anthropic, deepseek, none", r.path(key), name);
  }
  return ok();
}

Result<Summary> read_summary(const json& j) {
  if (!j.is_object()) return fail("summary: not a JSON object");
  Summary s;
  const Reader r(j, "");
  CMAX_TRY(r.u64("requests", s.requests));
  CMAX_TRY(r.u64("succeeded", s.succeeded));
  CMAX_TRY(r.u64("failed", s.failed));
  CMAX_TRY(read_classes(r, "errors", s.errors));
  // Older documents have no client_canceled: their errors.canceled is the same count.
  s.client_canceled = s.errors[static_cast<std::size_t>(ErrorClass::kCanceled)];
  CMAX_TRY(r.u64("client_canceled", s.client_canceled));
  CMAX_TRY(read_classes(r, "retries", s.retries));
  CMAX_TRY(r.number("duration_s", s.duration_s));
  CMAX_TRY(r.number("request_throughput", s.request_throughput));
  CMAX_TRY(r.number("output_tokens_per_s", s.output_tokens_per_s));
  CMAX_TRY(r.number("total_tokens_per_s", s.total_tokens_per_s));
  CMAX_TRY(r.u64("prompt_tokens", s.prompt_tokens));
  CMAX_TRY(r.u64("cached_tokens", s.cached_tokens));
  CMAX_TRY(r.u64("cache_creation_tokens", s.cache_creation_tokens));
  CMAX_TRY(r.u64("completion_tokens", s.completion_tokens));
  CMAX_TRY(r.u64("requests_with_usage", s.requests_with_usage));
  CMAX_TRY(r.u64("requests_without_cache_field", s.requests_without_cache_field));
  CMAX_TRY(r.number("cache_hit_rate", s.cache_hit_rate, -1));
  CMAX_TRY(read_cache_source(r, "cache_source", s.cache_source));
  CMAX_TRY(read_lat(r, "ttft_ms", s.ttft));
  CMAX_TRY(read_lat(r, "ttft_incl_queue_ms", s.ttft_incl_queue));
  CMAX_TRY(read_lat(r, "tpot_ms", s.tpot));
  CMAX_TRY(read_lat(r, "itl_ms", s.itl));
  CMAX_TRY(read_lat(r, "e2e_ms", s.e2e));
  CMAX_TRY(read_lat(r, "queue_ms", s.queue));
  auto goodput = r.object("goodput");
  if (!goodput) return Unexpected<Error>{goodput.error()};
  if (*goodput != nullptr) {
    const Reader g(**goodput, "goodput");
    CMAX_TRY(g.u64("requests", s.good_requests));
    CMAX_TRY(g.number("share", s.goodput_share));
    CMAX_TRY(g.number("requests_per_s", s.goodput_rps));
  }
  return s;
}

// A time in seconds, -1 (never) as null.
json time_or_null(double s) { return s < 0 ? json(nullptr) : json(s); }

Result<RequestRecord> read_record(const json& j) {
  if (!j.is_object()) return fail("not a JSON object");
  RequestRecord rec;
  const Reader r(j, "");
  CMAX_TRY(r.u64("index", rec.index));
  CMAX_TRY(r.narrow("session", rec.session));
  CMAX_TRY(r.narrow("turn", rec.turn));
  CMAX_TRY(r.i32("concurrency", rec.concurrency));
  CMAX_TRY(r.number("scheduled_s", rec.scheduled_s, -1));
  CMAX_TRY(r.number("sent_s", rec.sent_s, -1));
  CMAX_TRY(r.number("first_sent_s", rec.first_sent_s, -1));
  CMAX_TRY(r.number("queue_s", rec.queue_s, 0));
  CMAX_TRY(r.number("ttft_s", rec.ttft_s, -1));
  CMAX_TRY(r.number("e2e_s", rec.e2e_s, -1));
  CMAX_TRY(r.number("tpot_s", rec.tpot_s, -1));
  CMAX_TRY(r.narrow("attempts", rec.attempts));
  CMAX_TRY(r.i32("http_status", rec.http_status));
  std::string error = "ok";
  CMAX_TRY(r.string("error", error));
  if (!error_class_from_name(error, rec.error)) {
    return fail("\"error\" is \"{}\", not an error class (ok, http_429, ..., canceled)", error);
  }
  CMAX_TRY(r.string("error_detail", rec.error_detail));
  auto usage = r.object("usage");
  if (!usage) return Unexpected<Error>{usage.error()};
  if (*usage != nullptr) {
    const Reader u(**usage, "usage");
    rec.usage.present = true;
    CMAX_TRY(u.u64("prompt_tokens", rec.usage.prompt_tokens));
    CMAX_TRY(u.u64("completion_tokens", rec.usage.completion_tokens));
    CMAX_TRY(u.u64("cached_tokens", rec.usage.cached_tokens));
    CMAX_TRY(u.u64("cache_creation_tokens", rec.usage.cache_creation_tokens));
    CMAX_TRY(read_cache_source(u, "cache_source", rec.usage.cache_source));
  }
  CMAX_TRY(r.narrow("content_chunks", rec.content_chunks));
  CMAX_TRY(r.u64("expected_prompt_tokens", rec.expected_prompt_tokens));
  CMAX_TRY(r.narrow("max_tokens", rec.max_tokens));
  CMAX_TRY(r.string("response_id", rec.response_id));
  return rec;
}

#undef CMAX_TRY

}  // namespace

LatencyStats latency_stats(const Histogram& h) {
  LatencyStats l;
  l.count = h.count();
  if (l.count == 0) return l;
  l.mean_ms = h.mean_us() / 1e3;
  l.p50_ms = static_cast<double>(h.percentile_us(50)) / 1e3;
  l.p90_ms = static_cast<double>(h.percentile_us(90)) / 1e3;
  l.p95_ms = static_cast<double>(h.percentile_us(95)) / 1e3;
  l.p99_ms = static_cast<double>(h.percentile_us(99)) / 1e3;
  l.max_ms = static_cast<double>(h.max_us()) / 1e3;
  return l;
}

Summary summarize(std::span<const RequestRecord> records, const Histogram& itl, double duration_s, const Slo& slo,
                  const std::array<std::uint64_t, kErrorClassCount>& retries) {
  Summary s;
  s.requests = records.size();
  s.retries = retries;
  s.slo = slo;
  Histogram ttft, ttft_incl_queue, tpot, e2e, queue;
  std::array<std::uint64_t, kCacheSources.size()> sources{};
  for (const RequestRecord& r : records) {
    // Queueing is the client's doing, so it counts for every request that left, failed or not.
    if (r.first_sent_s >= 0) queue.record_s(std::max(r.queue_s, 0.0));
    if (!r.ok()) {
      ++s.errors[static_cast<std::size_t>(r.error)];
      continue;
    }
    ++s.succeeded;
    if (r.ttft_s >= 0) {
      ttft.record_s(r.ttft_s);
      ttft_incl_queue.record_s(std::max(r.queue_s, 0.0) + r.ttft_s);
    }
    if (r.tpot_s >= 0) tpot.record_s(r.tpot_s);
    if (r.e2e_s >= 0) e2e.record_s(r.e2e_s);
    if (r.usage.present) {
      ++s.requests_with_usage;
      s.prompt_tokens += r.usage.prompt_tokens;
      s.cached_tokens += r.usage.cached_tokens;
      s.cache_creation_tokens += r.usage.cache_creation_tokens;
      s.completion_tokens += r.usage.completion_tokens;
      if (r.usage.cache_source == CacheSource::kNone) ++s.requests_without_cache_field;
      ++sources[static_cast<std::size_t>(r.usage.cache_source)];
    }
    if (meets(r, slo)) ++s.good_requests;
  }
  s.failed = s.requests - s.succeeded;
  s.client_canceled = s.errors[static_cast<std::size_t>(ErrorClass::kCanceled)];
  s.duration_s = duration_s > 0 ? duration_s : duration_from_records(records);

  // The first of the most used conventions, in enum order, so that ties resolve the same way.
  std::uint64_t best = 0;
  for (std::size_t i = 1; i < sources.size(); ++i) {
    if (sources[i] > best) {
      best = sources[i];
      s.cache_source = kCacheSources[i];
    }
  }
  if (s.requests_with_usage > 0 && s.prompt_tokens > 0) {
    s.cache_hit_rate = static_cast<double>(s.cached_tokens) / static_cast<double>(s.prompt_tokens);
  }

  s.request_throughput = ratio(static_cast<double>(s.succeeded), s.duration_s);
  s.output_tokens_per_s = ratio(static_cast<double>(s.completion_tokens), s.duration_s);
  s.total_tokens_per_s = ratio(static_cast<double>(s.prompt_tokens + s.completion_tokens), s.duration_s);
  s.goodput_rps = ratio(static_cast<double>(s.good_requests), s.duration_s);
  s.goodput_share = ratio(static_cast<double>(s.good_requests), static_cast<double>(s.requests));

  s.ttft = latency_stats(ttft);
  s.ttft_incl_queue = latency_stats(ttft_incl_queue);
  s.tpot = latency_stats(tpot);
  s.itl = latency_stats(itl);
  s.e2e = latency_stats(e2e);
  s.queue = latency_stats(queue);
  return s;
}

double success_rate(const Summary& s) {
  const std::uint64_t judged = s.requests - std::min(s.client_canceled, s.requests);
  return judged > 0 ? static_cast<double>(s.succeeded) / static_cast<double>(judged) : -1;
}

std::string summaries_csv(const std::vector<std::pair<std::string, Summary>>& rows) {
  std::string out =
      "scope,requests,succeeded,failed,duration_s,request_throughput,output_tokens_per_s,"
      "ttft_ms_p50,ttft_ms_p90,ttft_ms_p99,ttft_incl_queue_ms_p50,ttft_incl_queue_ms_p99,"
      "tpot_ms_p50,tpot_ms_p90,tpot_ms_p99,itl_ms_p50,itl_ms_p90,itl_ms_p99,e2e_ms_p50,e2e_ms_p90,e2e_ms_p99,"
      "prompt_tokens,cached_tokens,completion_tokens,cache_hit_rate,goodput_share\n";
  auto stats = [](const LatencyStats& l) { return fmt::format("{:.3f},{:.3f},{:.3f}", l.p50_ms, l.p90_ms, l.p99_ms); };
  for (const auto& [name, s] : rows) {
    std::string scope = name;  // quoted when it holds a comma or a quote, the quote doubled
    if (scope.find_first_of(",\"\r\n") != std::string::npos) {
      std::string q = "\"";
      for (char c : scope) q += c == '"' ? std::string("\"\"") : std::string(1, c);
      scope = q + "\"";
    }
    out += fmt::format("{},{},{},{},{:.3f},{:.4f},{:.2f},{},{:.3f},{:.3f},{},{},{},{},{},{},{},{:.6f}\n", scope,
                       s.requests, s.succeeded, s.failed, s.duration_s, s.request_throughput, s.output_tokens_per_s,
                       stats(s.ttft), s.ttft_incl_queue.p50_ms, s.ttft_incl_queue.p99_ms, stats(s.tpot), stats(s.itl),
                       stats(s.e2e), s.prompt_tokens, s.cached_tokens, s.completion_tokens,
                       s.cache_hit_rate < 0 ? std::string() : fmt::format("{:.6f}", s.cache_hit_rate), s.goodput_share);
  }
  return out;
}

nlohmann::json summary_to_json(const Summary& s) {
  return json{
      {"requests", s.requests},
      {"succeeded", s.succeeded},
      {"failed", s.failed},
      {"client_canceled", s.client_canceled},
      {"success_rate", success_rate(s) < 0 ? json(nullptr) : json(success_rate(s))},
      {"errors", classes_to_json(s.errors)},
      {"retries", classes_to_json(s.retries)},
      {"duration_s", s.duration_s},
      {"request_throughput", s.request_throughput},
      {"output_tokens_per_s", s.output_tokens_per_s},
      {"total_tokens_per_s", s.total_tokens_per_s},
      {"prompt_tokens", s.prompt_tokens},
      {"cached_tokens", s.cached_tokens},
      {"cache_creation_tokens", s.cache_creation_tokens},
      {"completion_tokens", s.completion_tokens},
      {"requests_with_usage", s.requests_with_usage},
      {"requests_without_cache_field", s.requests_without_cache_field},
      {"cache_hit_rate", s.cache_hit_rate < 0 ? json(nullptr) : json(s.cache_hit_rate)},
      {"cache_source", cache_source_name(s.cache_source)},
      {"ttft_ms", lat_to_json(s.ttft)},
      {"ttft_incl_queue_ms", lat_to_json(s.ttft_incl_queue)},
      {"tpot_ms", lat_to_json(s.tpot)},
      {"itl_ms", lat_to_json(s.itl)},
      {"e2e_ms", lat_to_json(s.e2e)},
      {"queue_ms", lat_to_json(s.queue)},
      {"goodput", json{{"requests", s.good_requests}, {"share", s.goodput_share}, {"requests_per_s", s.goodput_rps}}},
  };
}

Result<Summary> summary_from_json(const nlohmann::json& j) {
  try {
    auto s = read_summary(j);
    if (!s) return fail("read summary: {}", s.error().message);
    return s;
  } catch (const json::exception& e) {  // the reads are type-checked; this is a last resort
    return fail("read summary: {}", e.what());
  }
}

std::string record_to_jsonl(const RequestRecord& r) {
  // Ordered as the schema shows it, so a line reads naturally with `head`.
  nlohmann::ordered_json j;
  j["index"] = r.index;
  j["session"] = r.session;
  j["turn"] = r.turn;
  j["concurrency"] = r.concurrency;
  j["scheduled_s"] = time_or_null(r.scheduled_s);
  j["sent_s"] = time_or_null(r.sent_s);
  j["first_sent_s"] = time_or_null(r.first_sent_s);
  j["queue_s"] = r.queue_s;
  j["ttft_s"] = time_or_null(r.ttft_s);
  j["e2e_s"] = time_or_null(r.e2e_s);
  j["tpot_s"] = time_or_null(r.tpot_s);
  j["attempts"] = r.attempts;
  j["http_status"] = r.http_status;
  j["error"] = error_class_name(r.error);
  j["error_detail"] = r.error_detail;
  if (r.usage.present) {
    j["usage"] = nlohmann::ordered_json{{"prompt_tokens", r.usage.prompt_tokens},
                                        {"completion_tokens", r.usage.completion_tokens},
                                        {"cached_tokens", r.usage.cached_tokens},
                                        {"cache_creation_tokens", r.usage.cache_creation_tokens},
                                        {"cache_source", cache_source_name(r.usage.cache_source)}};
  } else {
    j["usage"] = nullptr;
  }
  j["content_chunks"] = r.content_chunks;
  j["expected_prompt_tokens"] = r.expected_prompt_tokens;
  j["max_tokens"] = r.max_tokens;
  j["response_id"] = r.response_id;
  // The endpoint's error text and id are not ours to trust: invalid UTF-8 becomes U+FFFD instead
  // of an exception. Non-finite times (never produced, but) dump as null.
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

Result<RequestRecord> record_from_jsonl(std::string_view line) {
  const json j = json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return fail("read requests.jsonl line: not valid JSON (a truncated line?)");
  try {
    auto r = read_record(j);
    if (!r) return fail("read requests.jsonl line: {}", r.error().message);
    return r;
  } catch (const json::exception& e) {
    return fail("read requests.jsonl line: {}", e.what());
  }
}

}  // namespace cmax::loadgen
