#pragma once
// What cmax endpoint bench sends: Mooncake trace replay (hash_ids -> deterministic text, so equal
// ids are equal prefixes), multi-turn chat sessions over a shared prefix, or fixed input/output
// lengths. Also the theoretical cache over what was actually sent. Pure (no I/O, no clock).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "endpoint/trace.h"

namespace cmax::loadgen {

struct Message {
  std::string role;
  std::string content;
};

/// One request to send. The runner renders it for the chat API as `messages`, for the completions
/// API as the single message's content (or endpoint::render_chat of several).
struct RequestSpec {
  std::uint64_t index = 0;
  std::uint32_t session = 0;  ///< multi-turn session + 1; 0 none
  std::uint32_t turn = 0;
  double at_s = -1;           ///< the workload's own arrival time (trace timestamps); -1 none
  std::vector<Message> messages;
  std::uint32_t max_tokens = 0;
  std::uint64_t expected_prompt_tokens = 0;  ///< e.g. the trace's input_length; 0 unknown
};

class Workload {
 public:
  virtual ~Workload() = default;
  /// The next request that may be sent now; nullopt when none (every remaining one waits on a
  /// reply, or none is left: see exhausted()).
  virtual std::optional<RequestSpec> next() = 0;
  /// A request finished. Multi-turn: `ok` with the reply text makes the session's next turn
  /// ready; a failure ends the session (counted by the runner). Others ignore it.
  virtual void reply(const RequestSpec& spec, std::string_view text, bool ok) = 0;
  /// No request will ever come again.
  virtual bool exhausted() const = 0;
  /// Whether reply() needs the text (the runner then keeps the streamed content).
  virtual bool wants_reply_text() const { return false; }
  /// How many requests it will produce at most (for the progress line).
  virtual std::size_t total() const = 0;
};

/// `tokens` tokens of deterministic text for block `hash_id`: words " xxxx" of 1-4 lowercase
/// letters, each exactly one token under endpoint::tokenize. block_text(id, n) is a prefix of
/// block_text(id, m) for n < m; different ids give different text (a 64-bit hash apart). `salt`
/// separates runs that must not share a cache (0 = none).
std::string block_text(std::uint64_t hash_id, std::uint32_t tokens, std::uint64_t salt = 0);

struct MooncakeOptions {
  std::size_t max_requests = 0;   ///< 0 = the whole trace
  std::uint32_t max_output_tokens = 0;  ///< cap each request's output_length (0 = none)
  std::uint64_t salt = 0;
};
/// Replays a parsed Mooncake trace: request i is one user message, the concatenation over its
/// hash_ids of block_text(id, 512 or the last block's remainder) (so input_length tokens), with
/// max_tokens = output_length (capped), at_s = its timestamp, expected_prompt_tokens = input_length.
std::unique_ptr<Workload> mooncake_workload(const endpoint::Trace& trace, const MooncakeOptions& options);

struct MultiTurnConfig {
  std::uint32_t sessions = 64;
  std::uint32_t turns = 4;                     ///< per session
  std::uint32_t shared_prefix_tokens = 800;    ///< one system prompt shared by every session
  std::uint32_t user_tokens = 64;              ///< each user message (uniform 0.5x..1.5x)
  std::uint32_t max_tokens = 64;               ///< per reply
  std::uint64_t seed = 1;
};
/// Sessions of `turns` turns: system prompt (shared), then user message, reply, user message...
/// Turn 0 of every session is ready at the start; turn k+1 once turn k's reply arrived (its text is
/// appended as the assistant message). Session s's messages are unique to it (seeded).
std::unique_ptr<Workload> multiturn_workload(const MultiTurnConfig& config);

struct FixedConfig {
  std::size_t requests = 100;
  std::uint32_t input_tokens = 1024;   ///< per request, of which shared_prefix_tokens are the same for all
  std::uint32_t output_tokens = 128;   ///< max_tokens
  std::uint32_t shared_prefix_tokens = 0;
  std::uint64_t seed = 1;
};
/// `requests` single-message requests of exactly input_tokens tokens (under endpoint::tokenize of
/// the content), unique after the shared prefix.
std::unique_ptr<Workload> fixed_workload(const FixedConfig& config);

/// One unlimited global prefix cache over the prompts actually sent, at `block_tokens` under
/// endpoint::tokenize: the upper bound on the hit rate any endpoint with that block size could
/// report for them. A block is a hit when an earlier prompt had the same leading blocks.
class TheoreticalCache {
 public:
  explicit TheoreticalCache(int block_tokens);
  /// Adds one rendered prompt; returns its cached tokens.
  std::uint64_t add(std::string_view prompt);
  std::uint64_t prompt_tokens() const { return prompt_tokens_; }
  std::uint64_t cached_tokens() const { return cached_tokens_; }
  double hit_rate() const { return prompt_tokens_ ? double(cached_tokens_) / double(prompt_tokens_) : 0; }

 private:
  int block_tokens_;
  std::unordered_set<std::uint64_t> seen_;
  std::uint64_t prompt_tokens_ = 0, cached_tokens_ = 0;
};

}  // namespace cmax::loadgen
