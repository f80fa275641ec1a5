// run_bench: one thread, one HttpEngine. A Job is one request through all its attempts; it reads
// its response as it arrives (SseParser -> parse_stream_data per event) and times the tokens.

#include "loadgen/runner.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <deque>
#include <memory>
#include <optional>
#include <queue>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "endpoint/openai_tokenize.h"
#include "loadgen/chunk.h"
#include "loadgen/messages_chunk.h"
#include "loadgen/sse.h"

namespace cmax::loadgen {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
constexpr std::size_t kMaxErrorBody = 64 * 1024;
constexpr std::size_t kMaxBody = std::size_t{256} << 20;  // a whole non-streaming response

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

class Runner;

// One request, through every attempt.
class Job final : public ExchangeHandler, public SseSink {
 public:
  Job(Runner* runner, RequestSpec spec, std::string body, std::size_t level, bool stream, bool want_text, bool messages)
      : runner_(runner), level_(level), stream_(stream), want_text_(want_text), messages_(messages),
        spec_(std::move(spec)), body_(std::move(body)) {}

  void begin_attempt(Clock::time_point now) {
    sse_.reset();
    raw_.clear();
    reply_.clear();
    done_seen_ = api_error_ = protocol_error_ = got_first_ = false;
    detail_.clear();
    usage_ = Usage{};
    messages_usage_ = MessagesUsage{};
    chunks_ = 0;
    response_id_.clear();
    sent_ = now;
  }

  bool on_body(std::string_view bytes, int status) override;
  void on_event(const SseEvent& e) override;
  void on_done(const TransferResult& r) override;

  // What each streamed piece touches comes first, so that a piece reads few cache lines of a job
  // that went cold while the server ran.
  Runner* runner_;
  std::size_t level_;
  bool got_first_ = false, done_seen_ = false, api_error_ = false, protocol_error_ = false;

 private:
  bool stream_, want_text_;
  bool messages_;  // Anthropic's Messages API (messages_chunk.h), else OpenAI's (chunk.h)
  MessagesUsage messages_usage_;
  bool stamped_ = false;  // piece_at_ holds the arrival time of the piece being read
  int status_ = 0;
  Clock::time_point piece_at_;
  SseParser sse_;
  friend class Runner;

 public:
  std::uint32_t chunks_ = 0;
  Clock::time_point sent_, first_token_, last_token_;
  Usage usage_;
  std::string response_id_, detail_, reply_, raw_;
  RequestSpec spec_;
  std::string body_;
  std::string header_;  // "Name: session id" (RunConfig::session_header), "" none
  RequestRecord rec_;
};

class Runner {
 public:
  Runner(HttpEngine& engine, Workload& workload, const RunConfig& config, const RunHooks& hooks)
      : engine_(engine), workload_(workload), config_(config), hooks_(hooks), rng_(config.seed),
        theory_(config.theory_block_tokens > 0 ? config.theory_block_tokens : 16) {}

  RunResult run();
  void record_itl(std::size_t level, Clock::duration gap) { itl_[level].record_s(seconds(gap)); }
  void finished(Job* job, const TransferResult& r);

 private:
  bool stop_requested() const { return hooks_.stop && hooks_.stop->load(std::memory_order_relaxed); }
  void start(RequestSpec spec, std::size_t level, int concurrency, double scheduled_s);
  void send(Job* job);
  void progress(bool force);
  void close_record(Job* job, ErrorClass error, const TransferResult& r);
  double since_start(Clock::time_point t) const { return seconds(t - start_); }

  HttpEngine& engine_;
  Workload& workload_;
  const RunConfig& config_;
  const RunHooks& hooks_;
  std::mt19937_64 rng_;
  TheoreticalCache theory_;
  Clock::time_point start_, last_progress_;
  std::vector<std::unique_ptr<Job>> jobs_;  // in flight or waiting to retry
  struct Retry {
    Clock::time_point at;
    Job* job;
    bool operator>(const Retry& o) const { return at > o.at; }
  };
  std::priority_queue<Retry, std::vector<Retry>, std::greater<>> retries_;
  std::vector<Histogram> itl_;
  std::vector<std::array<std::uint64_t, kErrorClassCount>> retry_counts_;
  std::vector<int> level_concurrency_;
  std::vector<std::pair<double, double>> level_span_;  // first send, last finish (run seconds)
  RunResult result_;
  std::size_t issued_ = 0, failed_ = 0;
  int inflight_ = 0;
  std::uint64_t prompt_tokens_ = 0, cached_tokens_ = 0;
  std::deque<std::pair<Clock::time_point, std::uint64_t>> recent_tokens_;
  std::uint64_t tokens_total_ = 0;
  std::string phase_;
  std::size_t total_ = 0;
};

bool Job::on_body(std::string_view bytes, int status) {
  status_ = status;
  stamped_ = false;  // the events of one piece arrived together: one clock read for all of them
  if (status != 200) {
    if (raw_.size() < kMaxErrorBody) raw_.append(bytes.substr(0, kMaxErrorBody - raw_.size()));
    return true;
  }
  if (!stream_) {
    if (raw_.size() + bytes.size() > kMaxBody) {
      protocol_error_ = true;
      detail_ = fmt::format("response body larger than {} MiB", kMaxBody >> 20);
      return false;
    }
    raw_.append(bytes);
    return true;
  }
  sse_.feed(bytes, *this);
  if (sse_.overflow()) {
    protocol_error_ = true;
    detail_ = "an SSE line or event over the parser's bound";
    return false;
  }
  return !protocol_error_;
}

void Job::on_event(const SseEvent& e) {
  if (done_seen_ || protocol_error_) return;
  if (e.event == "error") {  // some servers name error events
    api_error_ = true;
    detail_ = error_body_message(e.data);
    return;
  }
  auto c = messages_ ? parse_messages_event(e.event, e.data, want_text_, messages_usage_)
                     : parse_stream_data(e.data, want_text_);
  if (!c) {
    protocol_error_ = true;
    detail_ = c.error().message;
    return;
  }
  if (c->done) {
    done_seen_ = true;
    return;
  }
  if (c->is_error) {
    api_error_ = true;
    detail_ = c->error_message.empty() ? c->error_type : c->error_message;
    return;
  }
  if (response_id_.empty() && !c->id.empty()) response_id_ = c->id;
  if (c->usage.present) usage_ = c->usage;
  if (c->has_content) {
    if (!stamped_) {
      piece_at_ = Clock::now();
      stamped_ = true;
    }
    const auto now = piece_at_;
    if (!got_first_) {
      got_first_ = true;
      first_token_ = now;
    } else {
      runner_->record_itl(level_, now - last_token_);
    }
    last_token_ = now;
    ++chunks_;
    if (want_text_) reply_ += c->content;
  }
}

void Job::on_done(const TransferResult& r) { runner_->finished(this, r); }

void Runner::close_record(Job* job, ErrorClass error, const TransferResult& r) {
  auto& rec = job->rec_;
  const auto now = Clock::now();
  rec.sent_s = since_start(job->sent_);
  rec.http_status = r.http_status;
  rec.error = error;
  rec.usage = job->usage_;
  rec.content_chunks = job->chunks_;
  rec.response_id = job->response_id_;
  if (job->got_first_) rec.ttft_s = seconds(job->first_token_ - job->sent_);
  if (error == ErrorClass::kNone) {
    rec.e2e_s = seconds(now - job->sent_);
    if (!job->stream_) rec.ttft_s = rec.e2e_s;  // a whole body has no token timing
    // TPOT: first to last content event over the tokens after the first (usage's count when given).
    const std::uint64_t tokens = rec.usage.present ? rec.usage.completion_tokens : rec.content_chunks;
    if (job->stream_ && job->got_first_ && tokens > 1)
      rec.tpot_s = seconds(job->last_token_ - job->first_token_) / double(tokens - 1);
  } else {
    rec.error_detail = job->detail_.empty() ? r.detail : job->detail_;
    if (rec.error_detail.empty() && !job->raw_.empty()) rec.error_detail = error_body_message(job->raw_);
  }
  auto& span = level_span_[job->level_];
  span.second = std::max(span.second, since_start(now));
}

void Runner::finished(Job* job, const TransferResult& r) {
  --inflight_;
  // Classify: transport first, then the HTTP status, then what the body said.
  ErrorClass error = ErrorClass::kNone;
  if (r.transport != ErrorClass::kNone && !(job->protocol_error_ && r.transport == ErrorClass::kCanceled)) {
    error = r.transport;
  } else if (job->protocol_error_) {
    error = ErrorClass::kProtocol;
  } else if (r.http_status == 429) {
    error = ErrorClass::kHttp429;
  } else if (r.http_status >= 500) {
    error = ErrorClass::kHttp5xx;
  } else if (r.http_status != 200) {
    error = ErrorClass::kHttp4xx;
  } else if (job->stream_) {
    if (job->sse_.finish() && !job->done_seen_ && !job->api_error_) error = ErrorClass::kDropped;
    else if (job->api_error_) error = ErrorClass::kApiError;
    else if (!job->done_seen_) error = ErrorClass::kDropped;
    if (error == ErrorClass::kDropped && job->detail_.empty())
      job->detail_ = fmt::format("the stream ended without {} after {} content chunks",
                                 job->messages_ ? "message_stop" : "data: [DONE]", job->chunks_);
  } else {
    auto c = job->messages_ ? parse_messages_body(job->raw_, workload_.wants_reply_text())
                            : parse_completion_body(job->raw_, workload_.wants_reply_text());
    if (!c) {
      error = ErrorClass::kProtocol;
      job->detail_ = c.error().message;
    } else if (c->is_error) {
      error = ErrorClass::kApiError;
      job->detail_ = c->error_message;
    } else {
      job->usage_ = c->usage;
      job->response_id_ = c->id;
      job->chunks_ = c->has_content ? 1 : 0;
      job->reply_ = std::move(c->content);
    }
  }
  if (r.http_status != 200 && job->detail_.empty() && !job->raw_.empty()) job->detail_ = error_body_message(job->raw_);

  // Retry when the policy allows: never after content arrived (a retry would bill it twice).
  const bool may_retry = error != ErrorClass::kNone && retryable(error) && job->chunks_ == 0 &&
                         job->rec_.attempts <= static_cast<std::uint32_t>(config_.retries) && !stop_requested();
  if (may_retry) {
    ++retry_counts_[job->level_][static_cast<std::size_t>(error)];
    double backoff = std::min(config_.max_backoff_s, 0.25 * std::pow(2.0, job->rec_.attempts - 1));
    backoff *= std::uniform_real_distribution<double>(0.5, 1.0)(rng_);
    if (r.retry_after_s >= 0) backoff = std::min(config_.max_backoff_s, r.retry_after_s);
    ++job->rec_.attempts;
    retries_.push({Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(backoff)), job});
    return;
  }

  close_record(job, error, r);
  auto& rec = job->rec_;
  if (!rec.ok()) ++failed_;
  if (rec.ok() && rec.usage.present) {
    prompt_tokens_ += rec.usage.prompt_tokens;
    cached_tokens_ += rec.usage.cached_tokens;
  }
  if (rec.ok()) {
    const std::uint64_t toks = rec.usage.present ? rec.usage.completion_tokens : rec.content_chunks;
    tokens_total_ += toks;
    recent_tokens_.emplace_back(Clock::now(), toks);
  }
  workload_.reply(job->spec_, job->reply_, rec.ok());
  if (!rec.ok() && job->spec_.session != 0) ++result_.sessions_ended;
  if (hooks_.on_record) hooks_.on_record(rec);
  result_.records.push_back(std::move(rec));
  auto it = std::find_if(jobs_.begin(), jobs_.end(), [&](const auto& p) { return p.get() == job; });
  if (it != jobs_.end()) {
    std::swap(*it, jobs_.back());
    jobs_.pop_back();
  }
}

void Runner::send(Job* job) {
  job->begin_attempt(Clock::now());
  if (job->rec_.first_sent_s < 0) job->rec_.first_sent_s = since_start(job->sent_);
  auto& span = level_span_[job->level_];
  if (span.first < 0) span.first = since_start(job->sent_);
  ++inflight_;
  engine_.post(api_path(config_.api), job->body_, config_.stream, job, job->header_);
}

void Runner::start(RequestSpec spec, std::size_t level, int concurrency, double scheduled_s) {
  theory_.add(rendered_prompt(spec, config_.api));
  auto body = request_body(spec, config_);
  auto job = std::make_unique<Job>(this, std::move(spec), std::move(body), level, config_.stream,
                                   workload_.wants_reply_text(), config_.api == endpoint::Api::kMessages);
  if (!config_.session_header.empty() && job->spec_.session != 0)
    job->header_ = fmt::format("{}: {}", config_.session_header, session_id(job->spec_, config_));
  auto& rec = job->rec_;
  rec.index = job->spec_.index;
  rec.session = job->spec_.session;
  rec.turn = job->spec_.turn;
  rec.concurrency = concurrency;
  rec.scheduled_s = scheduled_s;
  rec.max_tokens = job->spec_.max_tokens;
  rec.expected_prompt_tokens = job->spec_.expected_prompt_tokens;
  Job* raw = job.get();
  jobs_.push_back(std::move(job));
  ++issued_;
  send(raw);
  if (scheduled_s >= 0) raw->rec_.queue_s = std::max(0.0, raw->rec_.first_sent_s - scheduled_s);
}

void Runner::progress(bool force) {
  if (!hooks_.on_progress) return;
  const auto now = Clock::now();
  if (!force && now - last_progress_ < std::chrono::milliseconds(250)) return;
  last_progress_ = now;
  while (!recent_tokens_.empty() && now - recent_tokens_.front().first > std::chrono::seconds(2)) recent_tokens_.pop_front();
  std::uint64_t recent = 0;
  for (const auto& [t, n] : recent_tokens_) recent += n;
  Progress p;
  p.phase = phase_;
  p.issued = issued_;
  p.finished = result_.records.size();
  p.failed = failed_;
  p.total = total_;
  p.inflight = inflight_;
  p.elapsed_s = since_start(now);
  p.output_tokens_per_s = double(recent) / std::min(2.0, std::max(p.elapsed_s, 1e-3));
  p.cache_hit_rate = prompt_tokens_ ? double(cached_tokens_) / double(prompt_tokens_) : -1;
  hooks_.on_progress(p);
}

RunResult Runner::run() {
  start_ = Clock::now();
  last_progress_ = start_ - std::chrono::seconds(1);
  const auto& s = config_.schedule;
  std::vector<int> levels = s.kind == ScheduleKind::kConcurrency ? s.levels : std::vector<int>{0};
  if (levels.empty()) levels = {1};
  itl_.assign(levels.size(), Histogram());
  retry_counts_.assign(levels.size(), {});
  level_span_.assign(levels.size(), {-1.0, -1.0});
  const std::size_t max_requests = config_.max_requests ? config_.max_requests : workload_.total();
  total_ = std::min(max_requests, workload_.total());
  const auto deadline = config_.duration_s > 0
                            ? start_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(config_.duration_s))
                            : Clock::time_point::max();
  std::exponential_distribution<double> gap(s.rate_per_s > 0 ? s.rate_per_s : 1.0);

  for (std::size_t li = 0; li < levels.size() && result_.stop_reason.empty(); ++li) {
    const int level = levels[li];
    std::size_t phase_quota = max_requests > issued_ ? max_requests - issued_ : 0;
    if (s.kind == ScheduleKind::kConcurrency) {
      phase_quota = std::min(phase_quota, requests_at_level(s, level));
      phase_ = fmt::format("c={}", level);
    } else if (s.kind == ScheduleKind::kRate) {
      phase_ = fmt::format("rate {}/s", s.rate_per_s);
    } else {
      phase_ = fmt::format("trace x{}", s.trace_speed);
    }
    std::size_t phase_issued = 0;
    if (hooks_.on_level) hooks_.on_level(li, false);
    const auto phase_start = Clock::now();
    // Open loop: the next request, drawn ahead, and the run second it is due at.
    std::optional<RequestSpec> pending;
    double pending_at = since_start(phase_start), poisson_clock = pending_at, trace_origin = -1;
    bool was_starved = false;
    for (;;) {
      if (stop_requested()) {
        result_.stop_reason = "interrupted";
        break;
      }
      const auto now = Clock::now();
      if (now >= deadline) {
        result_.stop_reason = "duration";
        break;
      }
      // Retries that are due.
      while (!retries_.empty() && retries_.top().at <= now) {
        Job* j = retries_.top().job;
        retries_.pop();
        send(j);
      }
      // New requests.
      bool starved = false;
      if (s.kind == ScheduleKind::kConcurrency) {
        while (phase_issued < phase_quota && inflight_ + int(retries_.size()) < level) {
          auto spec = workload_.next();
          if (!spec) {
            starved = true;
            break;
          }
          start(std::move(*spec), li, level, -1);
          ++phase_issued;
        }
      } else {
        const double t = since_start(now);
        while (phase_issued < phase_quota) {
          if (!pending) {
            pending = workload_.next();
            if (!pending) {
              starved = was_starved = true;
              break;
            }
            if (s.kind == ScheduleKind::kRate) {
              // Poisson arrivals; a turn that had to wait for its session's reply is due when drawn.
              if (phase_issued > 0) poisson_clock += gap(rng_);
              if (was_starved) poisson_clock = std::max(poisson_clock, t);
              pending_at = poisson_clock;
            } else {
              if (trace_origin < 0) trace_origin = pending->at_s;
              const double speed = s.trace_speed > 0 ? s.trace_speed : 1.0;
              pending_at = since_start(phase_start) + std::max(0.0, pending->at_s - trace_origin) / speed;
            }
          }
          if (pending_at > t || inflight_ >= s.max_inflight) break;
          start(std::move(*pending), li, 0, pending_at);
          pending.reset();
          was_starved = false;
          ++phase_issued;
        }
      }
      const bool idle = inflight_ == 0 && retries_.empty();
      if (idle && !pending && (phase_issued >= phase_quota || workload_.exhausted() || starved)) break;
      progress(false);
      // Sleep until I/O, the next arrival or the next retry; short waits keep send times honest.
      auto wait = std::chrono::milliseconds(50);
      if (!retries_.empty())
        wait = std::min(wait, std::chrono::duration_cast<std::chrono::milliseconds>(retries_.top().at - Clock::now()));
      if (pending && inflight_ < s.max_inflight) {
        const double until = pending_at - since_start(Clock::now());
        wait = std::min(wait, std::chrono::milliseconds(static_cast<long>(std::max(0.0, std::floor(until * 1000)))));
      }
      if (starved) wait = std::min(wait, std::chrono::milliseconds(5));
      engine_.poll(std::max(wait, std::chrono::milliseconds(0)));
    }
    if (result_.stop_reason.empty() && hooks_.on_level) hooks_.on_level(li, true);
  }
  if (!result_.stop_reason.empty()) {
    // Stopped: what is in flight is canceled (recorded as such); queued retries keep their last error.
    engine_.cancel_all();
    while (!retries_.empty()) {
      Job* j = retries_.top().job;
      retries_.pop();
      TransferResult r;
      r.transport = ErrorClass::kCanceled;
      r.detail = "canceled before its retry: the run was stopped";
      ++inflight_;
      finished(j, r);
    }
    result_.interrupted = true;
  }
  progress(true);
  result_.duration_s = since_start(Clock::now());
  // Summaries: per level, then overall.
  Histogram all_itl;
  std::array<std::uint64_t, kErrorClassCount> all_retries{};
  double first = -1, last = 0;
  for (std::size_t li = 0; li < levels.size(); ++li) {
    all_itl.merge(itl_[li]);
    for (int k = 0; k < kErrorClassCount; ++k) all_retries[k] += retry_counts_[li][k];
    const auto [a, b] = level_span_[li];
    if (a >= 0) {
      first = first < 0 ? a : std::min(first, a);
      last = std::max(last, b);
    }
    if (s.kind != ScheduleKind::kConcurrency) continue;
    std::vector<RequestRecord> mine;
    for (const auto& r : result_.records)
      if (r.concurrency == levels[li]) mine.push_back(r);
    if (mine.empty()) continue;
    result_.levels.push_back({levels[li], summarize(mine, itl_[li], a >= 0 ? b - a : 0, config_.slo, retry_counts_[li])});
  }
  result_.overall = summarize(result_.records, all_itl, first >= 0 ? last - first : 0, config_.slo, all_retries);
  result_.theoretical_hit_rate = theory_.prompt_tokens() ? theory_.hit_rate() : -1;
  result_.theory_prompt_tokens = theory_.prompt_tokens();
  result_.theory_cached_tokens = theory_.cached_tokens();
  return std::move(result_);
}

}  // namespace

std::string_view schedule_kind_name(ScheduleKind k) {
  switch (k) {
    case ScheduleKind::kRate: return "rate";
    case ScheduleKind::kTrace: return "trace";
    case ScheduleKind::kConcurrency: break;
  }
  return "concurrency";
}

std::string_view api_path(endpoint::Api api) {
  switch (api) {
    case endpoint::Api::kCompletions: return "/completions";
    case endpoint::Api::kMessages: return "/messages";
    case endpoint::Api::kChat: break;
  }
  return "/chat/completions";
}

namespace {

// The Messages API has no "system" role: system messages become the top-level `system`, in order,
// joined by a blank line. Returns that text ("" none) and leaves the other messages in `rest`.
std::string split_system(const RequestSpec& spec, std::vector<const Message*>& rest) {
  std::string system;
  for (const auto& m : spec.messages) {
    if (m.role != "system") {
      rest.push_back(&m);
      continue;
    }
    if (!system.empty()) system += "\n\n";
    system += m.content;
  }
  return system;
}

}  // namespace

std::string rendered_prompt(const RequestSpec& spec, endpoint::Api api) {
  if (api == endpoint::Api::kCompletions && spec.messages.size() == 1) return spec.messages.front().content;
  std::vector<endpoint::ChatMessage> chat;
  chat.reserve(spec.messages.size());
  if (api == endpoint::Api::kMessages) {  // as the server sees it: the system text first
    std::vector<const Message*> rest;
    if (auto system = split_system(spec, rest); !system.empty()) chat.push_back({"system", std::move(system)});
    for (const auto* m : rest) chat.push_back({m->role, m->content});
    return endpoint::render_chat(chat);
  }
  for (const auto& m : spec.messages) chat.push_back({m.role, m.content});
  return endpoint::render_chat(chat);
}

namespace {

// A Messages API body: system on top, the turns, and with `cache_breakpoint` the last turn's text as
// a block marked cache_control ephemeral, so that Anthropic caches the conversation up to there
// and the next turn reads it (its prompt-caching guide's pattern for multi-turn chats; servers
// that cache prefixes by themselves ignore the mark).
std::string messages_body(const RequestSpec& spec, const RunConfig& config) {
  json j;
  j["model"] = config.model;
  std::vector<const Message*> rest;
  if (auto system = split_system(spec, rest); !system.empty()) j["system"] = std::move(system);
  json msgs = json::array();
  for (std::size_t i = 0; i < rest.size(); ++i) {
    const auto* m = rest[i];
    if (config.cache_breakpoint && i + 1 == rest.size())
      msgs.push_back({{"role", m->role},
                      {"content", json::array({{{"type", "text"}, {"text", m->content}, {"cache_control", {{"type", "ephemeral"}}}}})}});
    else
      msgs.push_back({{"role", m->role}, {"content", m->content}});
  }
  j["messages"] = std::move(msgs);
  j["max_tokens"] = std::max<std::uint32_t>(spec.max_tokens, 1);
  j["stream"] = config.stream;
  if (config.ignore_eos) j["ignore_eos"] = true;
  if (config.session_user && spec.session != 0) j["metadata"] = {{"user_id", session_id(spec, config)}};
  if (!config.extra_body.empty()) j.update(json::parse(config.extra_body));  // checked by parse_extra_body
  return j.dump();
}

}  // namespace

std::string request_body(const RequestSpec& spec, const RunConfig& config) {
  if (config.api == endpoint::Api::kMessages) return messages_body(spec, config);
  json j;
  j["model"] = config.model;
  if (config.api == endpoint::Api::kChat) {
    json msgs = json::array();
    for (const auto& m : spec.messages) msgs.push_back({{"role", m.role}, {"content", m.content}});
    j["messages"] = std::move(msgs);
  } else {
    j["prompt"] = rendered_prompt(spec, config.api);
  }
  j["max_tokens"] = std::max<std::uint32_t>(spec.max_tokens, 1);
  j["stream"] = config.stream;
  if (config.stream && config.include_usage) j["stream_options"] = {{"include_usage", true}};
  if (config.ignore_eos) j["ignore_eos"] = true;
  if (config.session_user && spec.session != 0) j["user"] = session_id(spec, config);
  if (!config.extra_body.empty()) j.update(json::parse(config.extra_body));  // checked by parse_extra_body
  return j.dump();
}

std::size_t requests_at_level(const Schedule& s, int level) {
  return s.requests_per_level ? s.requests_per_level : std::max<std::size_t>(20, 4 * static_cast<std::size_t>(level));
}

std::size_t requests_in_sweep(const Schedule& s) {
  std::size_t total = 0;
  for (int level : s.levels) total += requests_at_level(s, level);
  return total;
}

std::string session_id(const RequestSpec& spec, const RunConfig& config) {
  return spec.session == 0 ? std::string() : fmt::format("cmax-{}-{}", config.seed, spec.session);
}

Result<std::string> parse_extra_body(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return fail("--extra-body: not JSON (give an object, e.g. '{{\"temperature\":0}}')");
  if (!j.is_object()) return fail("--extra-body: a JSON object is needed, not {}", j.type_name());
  for (const char* k : {"model", "messages", "prompt", "stream", "stream_options", "system"})
    if (j.contains(k))
      return fail("--extra-body: \"{}\" is set by cmax (--model, the workload, --no-stream, --no-usage); leave it out", k);
  return j.dump();
}

Result<std::string> header_name(std::string_view header) {
  auto colon = header.find(':');
  if (colon == std::string_view::npos || colon == 0)
    return fail("--header \"{}\": expected \"Name: value\"", header);
  if (header.find_first_of("\r\n") != std::string_view::npos) return fail("--header: a header cannot hold CR or LF");
  std::string name(header.substr(0, colon));
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos))
      return fail("--header \"{}\": \"{}\" is not an HTTP header name", header, name);
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* own : {"host", "content-length", "content-type", "transfer-encoding", "connection"})
    if (lower == own) return fail("--header {}: set by the transport itself; leave it out", name);
  return name;
}

RunResult run_bench(HttpEngine& engine, Workload& workload, const RunConfig& config, const RunHooks& hooks) {
  Runner r(engine, workload, config, hooks);
  return r.run();
}

}  // namespace cmax::loadgen
