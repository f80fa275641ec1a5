#include "endpoint/openai_tokenize.h"

#include <array>

namespace cmax::endpoint {
namespace {

constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ull;
constexpr std::uint64_t kFnvPrime = 0x100000001b3ull;
constexpr std::size_t kMaxPieceBytes = 4;

std::uint64_t fnv1a(std::string_view bytes, std::uint64_t h = kFnvOffset) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= kFnvPrime;
  }
  return h;
}

// splitmix64's finaliser: FNV alone mixes the high bits poorly, and chains compare whole words.
std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

std::uint64_t combine(std::uint64_t h, std::uint64_t v) { return mix(h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6))); }

bool word_byte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0x80;
}

// Words of at most 4 letters, so " word" is one token.
constexpr std::array<std::string_view, 48> kWords = {
    "the",  "gpu",  "node", "rack", "fast", "link", "ring", "all",  "bus",  "fan",  "cool", "hot",
    "job",  "pod",  "nic",  "port", "lane", "pcie", "nvl",  "hbm",  "kv",   "page", "hit",  "miss",
    "warm", "cold", "core", "die",  "chip", "card", "host", "disk", "net",  "ib",   "roce", "mtu",
    "path", "hop",  "leaf", "tor",  "pue",  "watt", "amp",  "volt", "rail", "tray", "slot", "sku"};

}  // namespace

std::vector<std::uint64_t> tokenize(std::string_view text) {
  std::vector<std::uint64_t> out;
  out.reserve(text.size() / 3 + 1);
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t start = i;
    if (c == ' ' && i + 1 < text.size() && word_byte(static_cast<unsigned char>(text[i + 1]))) ++i;
    if (word_byte(static_cast<unsigned char>(text[i]))) {
      std::size_t n = 0;
      while (i < text.size() && n < kMaxPieceBytes && word_byte(static_cast<unsigned char>(text[i]))) {
        ++i;
        ++n;
      }
      out.push_back(fnv1a(text.substr(start, i - start)));
      continue;
    }
    out.push_back(fnv1a(text.substr(i, 1)));
    ++i;
  }
  return out;
}

std::vector<std::uint64_t> block_hashes(std::span<const std::uint64_t> tokens, int block_tokens) {
  std::vector<std::uint64_t> out;
  if (block_tokens <= 0) return out;
  const auto bt = static_cast<std::size_t>(block_tokens);
  out.reserve(tokens.size() / bt);
  std::uint64_t h = kFnvOffset;
  for (std::size_t b = 0; (b + 1) * bt <= tokens.size(); ++b) {
    for (std::size_t t = b * bt; t < (b + 1) * bt; ++t) h = combine(h, tokens[t]);
    out.push_back(h);
  }
  return out;
}

std::string render_chat(std::span<const ChatMessage> messages) {
  std::string out;
  for (const auto& m : messages) {
    out += "<|";
    out += m.role;
    out += "|>\n";
    out += m.content;
    out += '\n';
  }
  out += "<|assistant|>\n";
  return out;
}

std::string answer_token(std::uint64_t seed, std::size_t i) {
  std::string out = " ";
  out += kWords[combine(seed, i) % kWords.size()];
  return out;
}

std::uint32_t natural_answer_tokens(std::uint64_t seed) {
  return 16 + static_cast<std::uint32_t>(mix(seed) % 113);
}

std::uint64_t sequence_hash(std::span<const std::uint64_t> tokens) {
  std::uint64_t h = kFnvOffset;
  for (auto t : tokens) h = combine(h, t);
  return h;
}

}  // namespace cmax::endpoint
