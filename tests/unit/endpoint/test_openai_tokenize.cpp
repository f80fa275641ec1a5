#include <gtest/gtest.h>

#include <set>

#include "endpoint/openai_tokenize.h"

namespace cmax::endpoint {
namespace {

TEST(OpenAiTokenize, WordsAreCutIntoPiecesOfFourBytesWithTheLeadingSpace) {
  // "Hello" -> "Hell" "o"; " world" -> " wor" "ld"; "!" alone; "\n" alone; "  x" -> " " " x".
  EXPECT_EQ(tokenize("Hello world!").size(), 5u);
  EXPECT_EQ(tokenize("a\nb").size(), 3u);
  EXPECT_EQ(tokenize("  x").size(), 2u);
  EXPECT_EQ(tokenize("").size(), 0u);
  EXPECT_EQ(tokenize(" the"), tokenize(" the"));
  EXPECT_EQ(tokenize(" the").size(), 1u);
  EXPECT_NE(tokenize(" the"), tokenize("the"));
}

TEST(OpenAiTokenize, CountIsStableAndNearFourBytesPerToken) {
  std::string text;
  for (int i = 0; i < 200; ++i) text += "The quick brown fox jumps over the lazy dog. ";
  const auto a = tokenize(text), b = tokenize(text);
  EXPECT_EQ(a, b);
  const double bytes_per_token = static_cast<double>(text.size()) / static_cast<double>(a.size());
  EXPECT_GT(bytes_per_token, 3.0);
  EXPECT_LT(bytes_per_token, 4.5);
}

TEST(OpenAiTokenize, BlockChainCoversFullBlocksAndSharesPrefixes) {
  std::vector<std::uint64_t> t(40);
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = i;
  auto chain = block_hashes(t, 16);
  ASSERT_EQ(chain.size(), 2u);  // the partial third block has no hash
  auto u = t;
  u[35] = 999;  // in the partial block: no effect
  EXPECT_EQ(block_hashes(u, 16), chain);
  u[20] = 999;  // in block 1: block 0 still equal
  auto other = block_hashes(u, 16);
  EXPECT_EQ(other[0], chain[0]);
  EXPECT_NE(other[1], chain[1]);
  u[0] = 999;  // block 0 changes, and with it every later hash
  other = block_hashes(u, 16);
  EXPECT_NE(other[0], chain[0]);
  EXPECT_NE(other[1], chain[1]);
  EXPECT_TRUE(block_hashes(t, 0).empty());
  EXPECT_TRUE(block_hashes(t, 41).empty());
}

TEST(OpenAiTokenize, AGrowingChatKeepsItsRenderingAsAPrefix) {
  std::vector<ChatMessage> chat = {{"system", "You are terse."}, {"user", "Why is the sky blue?"}};
  const auto first = render_chat(chat);
  EXPECT_EQ(first, "<|system|>\nYou are terse.\n<|user|>\nWhy is the sky blue?\n<|assistant|>\n");
  chat.push_back({"assistant", "Rayleigh scattering."});
  chat.push_back({"user", "And sunsets?"});
  const auto second = render_chat(chat);
  EXPECT_EQ(second.substr(0, first.size()), first);
  const auto a = block_hashes(tokenize(first), 4), b = block_hashes(tokenize(second), 4);
  ASSERT_LE(a.size(), b.size());
  // Every full block of the first rendering is a block of the second.
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << i;
}

TEST(OpenAiTokenize, AnswerTokensAreOneTokenEachAndDeterministic) {
  std::string text;
  std::set<std::string> words;
  for (std::size_t i = 0; i < 64; ++i) {
    const auto w = answer_token(42, i);
    EXPECT_EQ(w, answer_token(42, i));
    EXPECT_EQ(tokenize(w).size(), 1u) << w;
    words.insert(w);
    text += w;
  }
  EXPECT_EQ(tokenize(text).size(), 64u);
  EXPECT_GT(words.size(), 10u);
  for (std::uint64_t s = 0; s < 1000; ++s) {
    EXPECT_GE(natural_answer_tokens(s), 16u);
    EXPECT_LE(natural_answer_tokens(s), 128u);
  }
}

}  // namespace
}  // namespace cmax::endpoint
