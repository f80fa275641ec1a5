#pragma once
// Request traces for the endpoint simulator: the Mooncake JSONL format (kvcache-ai/Mooncake,
// FAST25-release/traces) and a seeded synthetic multi-turn chat workload.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace cmax::endpoint {

/// One request of a trace. Its block hash chain lives in Trace::hashes.
struct TraceRequest {
  double arrival_s = 0;
  std::uint32_t input_tokens = 0;
  std::uint32_t output_tokens = 0;
  std::uint32_t first_block = 0;  ///< index into Trace::hashes
  std::uint32_t block_count = 0;
  std::uint32_t session = 0;      ///< synthetic: session number + 1; Mooncake: 0 (none)
};

struct Trace {
  std::string source;             ///< a path or "synthetic"
  int block_tokens = 512;
  std::vector<TraceRequest> requests;  ///< in arrival order
  std::vector<std::uint64_t> hashes;   ///< all chains, back to back
  std::size_t skipped_lines = 0;       ///< malformed lines left out
  std::vector<std::string> warnings;   ///< the first few skipped lines' errors, naming the line

  std::span<const std::uint64_t> blocks(const TraceRequest& r) const {
    return {hashes.data() + r.first_block, r.block_count};
  }
};

/// Parses Mooncake JSONL: one object per line with `timestamp` (ms), `input_length`,
/// `output_length` and `hash_ids` (ids of 512-token blocks; equal ids at equal positions = equal
/// prefixes; the last block may be partial). Blank lines are ignored; malformed lines are skipped,
/// counted and named in warnings. Fails only when no line is usable. Requests are sorted by
/// arrival (stable).
Result<Trace> parse_mooncake(std::string_view text);

/// A multi-turn chat workload. Every session starts with one shared system prompt; each turn
/// appends a user message to the session's history and sends the whole history, then appends
/// the reply. Block hashes are chained over that content, so a turn's prompt shares every full
/// block of the previous turn's prompt and reply; the last, partial block is unique to the turn.
struct SyntheticConfig {
  int sessions = 200;
  int turns = 6;                       ///< per session
  std::uint32_t system_tokens = 2048;  ///< shared by all sessions
  std::uint32_t user_tokens = 400;     ///< mean user message (uniform 0.5x..1.5x)
  std::uint32_t output_tokens = 250;   ///< mean reply (uniform 0.5x..1.5x)
  double session_rate_per_s = 1.0;     ///< Poisson arrivals of new sessions
  double think_s = 20;                 ///< mean gap after a reply before the next turn (exponential)
  double reply_s = 5;                  ///< assumed reply time before the think gap
  int block_tokens = 512;
  std::uint64_t seed = 1;
};
/// Generates the workload above; deterministic in `config`.
Trace synthetic_trace(const SyntheticConfig& config);

}  // namespace cmax::endpoint
