#include "loadgen/workload.h"

#include <algorithm>
#include <deque>

#include "endpoint/openai_tokenize.h"

namespace cmax::loadgen {
namespace {

constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15ull;
// One word is at most " xxxx".
constexpr std::size_t kMaxWordBytes = 5;

// Ids of the generated (non-trace) texts. The unique ones are hashes of a tag and indices, so they
// are 64-bit random-looking and do not meet a trace's small sequential ids.
constexpr std::uint64_t kMultiTurnSystemId = 0x5157'e3c0'de00'0001ull;
constexpr std::uint64_t kFixedPrefixId = 0xf1ed'9ef1'0000'0001ull;
constexpr std::uint64_t kUserTag = 0x05e2'0000'0000'0000ull;
constexpr std::uint64_t kFixedTag = 0xf1ed'0000'0000'0000ull;
constexpr std::uint64_t kTraceTailTag = 0x7a11'0000'0000'0000ull;
constexpr std::uint64_t kLengthTag = 0x1e9e'0000'0000'0000ull;

// splitmix64's finaliser: a bijection on 64 bits with good avalanche.
constexpr std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

constexpr std::uint64_t combine(std::uint64_t h, std::uint64_t v) {
  return mix(h ^ (v + kGolden + (h << 6) + (h >> 2)));
}

constexpr unsigned char kLetters[16] = {1, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4};

// Appends block_text(id, tokens, salt) to `out` without a temporary. For a fixed salt, id -> base
// is a bijection, and word i is splitmix64's i-th output from that base, so different ids differ
// from the first word on (but for the ~12 bits of collision entropy a word has) and the text of n
// tokens is a prefix of the text of m > n tokens.
void append_block(std::string& out, std::uint64_t id, std::uint32_t tokens, std::uint64_t salt) {
  if (tokens == 0) return;
  const std::uint64_t base = mix(id + mix(salt ^ kGolden));
  const std::size_t start = out.size();
  out.resize(start + std::size_t{tokens} * kMaxWordBytes);
  char* p = out.data() + start;
  for (std::uint32_t i = 0; i < tokens; ++i) {
    const std::uint64_t h = mix(base + (std::uint64_t{i} + 1) * kGolden);
    // Top 4 bits: the length (1 letter 1/16, 2 letters 3/16, 3 letters 4/16, 4 letters 8/16: short
    // words repeat too often to tell ids apart, and English averages about 4 bytes a token); four
    // 15-bit fields below: the letters (multiply-shift, no modulo).
    const unsigned letters = kLetters[h >> 60];
    *p++ = ' ';
    for (unsigned j = 0; j < letters; ++j)
      *p++ = static_cast<char>('a' + (((h >> (15 * j)) & 0x7fff) * 26 >> 15));
  }
  out.resize(static_cast<std::size_t>(p - out.data()));
}

// The token length of a generated message: mean * uniform[0.5, 1.5), at least 1; deterministic in
// `key` (not a sequential RNG, so it does not depend on the order turns are handed out).
std::uint32_t around(std::uint32_t mean, std::uint64_t key) {
  const double u = static_cast<double>(mix(key) >> 11) * 0x1.0p-53;
  return std::max<std::uint32_t>(1,
                                 static_cast<std::uint32_t>(static_cast<double>(mean) * (0.5 + u)));
}

class MooncakeWorkload final : public Workload {
 public:
  MooncakeWorkload(const endpoint::Trace& trace, const MooncakeOptions& o)
      : block_tokens_(static_cast<std::uint32_t>(std::max(1, trace.block_tokens))),
        max_output_tokens_(o.max_output_tokens),
        salt_(o.salt) {
    // A copy of just the requests it will send, so the trace need not outlive the workload. Texts
    // are built in next(): construction is a copy of the ids.
    const std::size_t n =
        o.max_requests ? std::min(o.max_requests, trace.requests.size()) : trace.requests.size();
    requests_.reserve(n);
    std::size_t blocks = 0;
    for (std::size_t i = 0; i < n; ++i) blocks += trace.requests[i].block_count;
    hashes_.reserve(blocks);
    for (std::size_t i = 0; i < n; ++i) {
      auto r = trace.requests[i];
      const auto ids = trace.blocks(r);
      r.first_block = static_cast<std::uint32_t>(hashes_.size());
      hashes_.insert(hashes_.end(), ids.begin(), ids.end());
      requests_.push_back(r);
    }
  }

  std::optional<RequestSpec> next() override {
    if (next_ >= requests_.size()) return std::nullopt;
    const std::size_t i = next_++;
    const auto& r = requests_[i];
    RequestSpec spec;
    spec.index = i;
    spec.at_s = r.arrival_s;
    std::uint32_t out = r.output_tokens;
    if (max_output_tokens_ && out > max_output_tokens_) out = max_output_tokens_;
    spec.max_tokens = std::max<std::uint32_t>(1, out);
    // The trace's own count. The chat rendering adds a few template tokens ("<|user|>\n" before,
    // "\n<|assistant|>\n" after) that the trace does not count, so a server's prompt_tokens is
    // this plus its template's tokens.
    spec.expected_prompt_tokens = r.input_tokens;
    spec.messages.push_back(Message{"user", content(r, i)});
    return spec;
  }

  void reply(const RequestSpec&, std::string_view, bool) override {}
  bool exhausted() const override { return next_ >= requests_.size(); }
  std::size_t total() const override { return requests_.size(); }

 private:
  // Exactly input_tokens tokens: block k gets min(block_tokens, what is left), so the last block
  // is the partial remainder. An inconsistent request is clamped, not refused: with fewer tokens
  // than its blocks need, the trailing blocks get none; with more than its blocks cover, the
  // excess is unique to the request (no id says it is shared).
  std::string content(const endpoint::TraceRequest& r, std::size_t index) const {
    std::string text;
    text.reserve(std::size_t{r.input_tokens} * kMaxWordBytes);
    std::uint32_t left = r.input_tokens;
    for (std::uint32_t k = 0; k < r.block_count && left > 0; ++k) {
      const std::uint32_t take = std::min(left, block_tokens_);
      append_block(text, hashes_[r.first_block + k], take, salt_);
      left -= take;
    }
    if (left > 0) append_block(text, combine(kTraceTailTag, index), left, salt_);
    return text;
  }

  std::uint32_t block_tokens_;
  std::uint32_t max_output_tokens_;
  std::uint64_t salt_;
  std::vector<endpoint::TraceRequest> requests_;
  std::vector<std::uint64_t> hashes_;
  std::size_t next_ = 0;
};

class MultiTurnWorkload final : public Workload {
 public:
  explicit MultiTurnWorkload(const MultiTurnConfig& c)
      : config_(c), sessions_(c.turns ? c.sessions : 0) {
    // One system message for all (no copy per session); none when there is no shared prefix, as an
    // empty one would still add template tokens.
    if (c.shared_prefix_tokens)
      system_ = Message{"system", block_text(kMultiTurnSystemId, c.shared_prefix_tokens, c.seed)};
    for (std::uint32_t s = 0; s < sessions_.size(); ++s) {
      // Bounded: a config with a huge turn count must not reserve for it up front.
      sessions_[s].history.reserve(std::min<std::size_t>(std::size_t{2} * c.turns, 16));
      sessions_[s].content_tokens = c.shared_prefix_tokens;
      ready_.push_back(s);
    }
  }

  std::optional<RequestSpec> next() override {
    if (ready_.empty()) return std::nullopt;
    const std::uint32_t s = ready_.front();
    ready_.pop_front();
    auto& session = sessions_[s];
    const std::uint32_t turn = session.turn;
    const std::uint64_t key = combine(combine(kUserTag, s), turn);
    const std::uint32_t tokens = around(config_.user_tokens, key ^ kLengthTag);
    session.history.push_back(Message{"user", block_text(key, tokens, config_.seed)});
    session.content_tokens += tokens;
    session.in_flight = true;
    RequestSpec spec;
    spec.index = issued_++;
    spec.session = s + 1;
    spec.turn = turn;
    spec.messages.reserve(session.history.size() + 1);
    if (config_.shared_prefix_tokens) spec.messages.push_back(system_);
    spec.messages.insert(spec.messages.end(), session.history.begin(), session.history.end());
    spec.max_tokens = config_.max_tokens;
    // The messages' content under endpoint::tokenize, template tokens not counted (as for a trace).
    spec.expected_prompt_tokens = session.content_tokens;
    return spec;
  }

  void reply(const RequestSpec& spec, std::string_view text, bool ok) override {
    // A reply that is not for a session's request in flight (unknown session, stale turn, a second
    // reply) is ignored: it must not advance or end anything.
    if (spec.session == 0 || spec.session > sessions_.size()) return;
    auto& session = sessions_[spec.session - 1];
    if (!session.in_flight || session.done || spec.turn != session.turn) return;
    session.in_flight = false;
    if (!ok) {
      finish(session);
      return;
    }
    session.history.push_back(Message{"assistant", std::string(text)});
    session.content_tokens += endpoint::tokenize(text).size();
    if (++session.turn >= config_.turns) {
      finish(session);
      return;
    }
    ready_.push_back(spec.session - 1);
  }

  bool exhausted() const override { return finished_ == sessions_.size(); }
  bool wants_reply_text() const override { return true; }
  std::size_t total() const override { return std::size_t{config_.sessions} * config_.turns; }

 private:
  struct Session {
    std::vector<Message> history;  // after the system message
    std::uint64_t content_tokens = 0;
    std::uint32_t turn = 0;  // the turn in flight, or the next one to send
    bool in_flight = false;
    bool done = false;
  };

  void finish(Session& session) {
    session.done = true;
    // The history is no longer needed; a long run with many sessions should not keep it.
    std::vector<Message>().swap(session.history);
    ++finished_;
  }

  MultiTurnConfig config_;
  Message system_;
  std::vector<Session> sessions_;
  std::deque<std::uint32_t> ready_;  // session indices, FIFO
  std::size_t finished_ = 0;
  std::uint64_t issued_ = 0;
};

class FixedWorkload final : public Workload {
 public:
  explicit FixedWorkload(const FixedConfig& c)
      : config_(c), shared_tokens_(std::min(c.shared_prefix_tokens, c.input_tokens)) {
    prefix_ = block_text(kFixedPrefixId, shared_tokens_, c.seed);
  }

  std::optional<RequestSpec> next() override {
    if (next_ >= config_.requests) return std::nullopt;
    const std::size_t i = next_++;
    RequestSpec spec;
    spec.index = i;
    std::string text;
    text.reserve(std::size_t{config_.input_tokens} * kMaxWordBytes);
    text = prefix_;
    // Words are one token each and start with a space, so prefix + rest is exactly input_tokens.
    append_block(text, combine(kFixedTag, i), config_.input_tokens - shared_tokens_, config_.seed);
    spec.messages.push_back(Message{"user", std::move(text)});
    spec.max_tokens = config_.output_tokens;
    spec.expected_prompt_tokens = config_.input_tokens;
    return spec;
  }

  void reply(const RequestSpec&, std::string_view, bool) override {}
  bool exhausted() const override { return next_ >= config_.requests; }
  std::size_t total() const override { return config_.requests; }

 private:
  FixedConfig config_;
  std::uint32_t shared_tokens_;
  std::string prefix_;
  std::size_t next_ = 0;
};

}  // namespace

std::string block_text(std::uint64_t hash_id, std::uint32_t tokens, std::uint64_t salt) {
  std::string out;
  append_block(out, hash_id, tokens, salt);
  return out;
}

std::unique_ptr<Workload> mooncake_workload(const endpoint::Trace& trace,
                                            const MooncakeOptions& options) {
  return std::make_unique<MooncakeWorkload>(trace, options);
}

std::unique_ptr<Workload> multiturn_workload(const MultiTurnConfig& config) {
  return std::make_unique<MultiTurnWorkload>(config);
}

std::unique_ptr<Workload> fixed_workload(const FixedConfig& config) {
  return std::make_unique<FixedWorkload>(config);
}

// A block size below 1 is taken as 1 (block_hashes needs > 0).
TheoreticalCache::TheoreticalCache(int block_tokens) : block_tokens_(std::max(1, block_tokens)) {}

std::uint64_t TheoreticalCache::add(std::string_view prompt) {
  const auto tokens = endpoint::tokenize(prompt);
  const auto chain = endpoint::block_hashes(tokens, block_tokens_);
  // Block i's hash covers the whole prefix up to it, so the set of chain hashes is a prefix cache;
  // counting stops at the first miss all the same, as a KV cache reuses only a leading run.
  std::size_t hits = 0;
  while (hits < chain.size() && seen_.contains(chain[hits])) ++hits;
  seen_.insert(chain.begin() + static_cast<std::ptrdiff_t>(hits), chain.end());
  const std::uint64_t cached = std::uint64_t{hits} * static_cast<std::uint64_t>(block_tokens_);
  prompt_tokens_ += tokens.size();
  cached_tokens_ += cached;
  return cached;
}

}  // namespace cmax::loadgen
