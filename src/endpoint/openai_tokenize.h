#pragma once
// cmax endpoint serve's stand-in tokenizer: text -> tokens -> the block hash chain the fleet model
// admits. Not any real model's vocabulary: a documented, deterministic rule whose token counts are
// close to a BPE's on English (about 4 bytes a token) and stable for the same text.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cmax::endpoint {

/// Token ids of `text`: a run of word bytes (ASCII letters, digits, any byte >= 0x80) is cut into
/// pieces of at most 4 bytes, and one space right before a run joins its first piece (" the");
/// every other byte (punctuation, newline, a second space) is a token by itself. A token's id is
/// the 64-bit FNV-1a hash of its bytes. Pure.
std::vector<std::uint64_t> tokenize(std::string_view text);

/// The hash chain of the full blocks of `tokens`: block i's hash covers tokens
/// [0, (i+1) x block_tokens), so equal hashes mean equal prefixes. A partial last block has no
/// hash. `block_tokens` must be > 0. Pure.
std::vector<std::uint64_t> block_hashes(std::span<const std::uint64_t> tokens, int block_tokens);

/// One chat message as the server renders it.
struct ChatMessage {
  std::string role;
  std::string content;
};

/// The prompt a chat is rendered to: "<|role|>\n" content "\n" per message, then "<|assistant|>\n"
/// (the generation prompt). A conversation that grows by appending messages keeps its earlier
/// rendering as a prefix, so it shares its prefix blocks. Pure.
std::string render_chat(std::span<const ChatMessage> messages);

/// The deterministic answer text: word i of a fixed list picked by `seed` and i, each word one
/// token (" word") under tokenize(). Pure.
std::string answer_token(std::uint64_t seed, std::size_t i);

/// How long the model's natural answer to a prompt is: 16..128 tokens picked by `seed` (the
/// prompt's hash). A request whose max_tokens is at least this ends with finish_reason "stop".
std::uint32_t natural_answer_tokens(std::uint64_t seed);

/// A 64-bit hash of the whole token sequence (the answer seed; also the default session key).
std::uint64_t sequence_hash(std::span<const std::uint64_t> tokens);

}  // namespace cmax::endpoint
