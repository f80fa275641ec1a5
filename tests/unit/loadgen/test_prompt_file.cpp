// Prompt files (loadgen/prompt_file.h): ShareGPT as the dataset is, and JSONL in the shapes vLLM's
// custom dataset, AIPerf's single_turn and an OpenAI chat list take.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "endpoint/openai_tokenize.h"
#include "loadgen/prompt_file.h"

namespace {

using cmax::loadgen::parse_prompt_file;

std::string golden(const char* name) {
  std::ifstream in(std::filesystem::path(CMAX_SOURCE_DIR) / "tests/golden/prompt_files" / name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(PromptFile, ShareGptTakesTheFirstHumanTurnAndTheReplysLength) {
  const auto text = golden("sharegpt_dsOTKpn_0.json");
  auto f = parse_prompt_file(text);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->format, "sharegpt");
  ASSERT_EQ(f->entries.size(), 1u);
  const auto& e = f->entries[0];
  ASSERT_EQ(e.messages.size(), 1u);
  EXPECT_EQ(e.messages[0].role, "user");
  EXPECT_EQ(e.messages[0].content.rfind("Why does `dir` command in DOS", 0), 0u);
  EXPECT_GT(e.output_tokens, 100u) << "the reply's length in the serve tokenizer's tokens";

  auto w = cmax::loadgen::prompt_file_workload(f->entries, 0, 128, 64);
  auto spec = w->next();
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->max_tokens, 64u) << "--max-tokens caps it";
  EXPECT_FALSE(w->next());
  EXPECT_TRUE(w->exhausted());
}

TEST(PromptFile, ShareGptConversationsThatCannotBeReplayedAreSkippedAndNamed) {
  auto f = parse_prompt_file(R"([
    {"id": "one-turn", "conversations": [{"from": "human", "value": "hello"}]},
    {"id": "gpt-first", "conversations": [{"from": "gpt", "value": "hi"}, {"from": "human", "value": "x"}]},
    {"id": "ok", "conversations": [{"from": "human", "value": "hello"}, {"from": "gpt", "value": "hi there"}]},
    "not an object"])");
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->entries.size(), 1u);
  EXPECT_EQ(f->skipped, 3u);
  ASSERT_EQ(f->warnings.size(), 3u);
  EXPECT_NE(f->warnings[0].find("one-turn"), std::string::npos) << f->warnings[0];
  EXPECT_EQ(f->entries[0].output_tokens, cmax::endpoint::tokenize("hi there").size());
}

TEST(PromptFile, JsonlReadsPromptTextOrMessagesWithTheirOutputLengths) {
  auto f = parse_prompt_file(
      "{\"prompt\": \"vLLM custom\", \"output_tokens\": 12}\n"
      "\n"
      "{\"text\": \"AIPerf single turn\"}\r\n"
      "{\"messages\": [{\"role\": \"system\", \"content\": \"be brief\"}, {\"role\": \"user\", \"content\": \"hi\"}], "
      "\"max_tokens\": 7}\n"
      "{\"nothing\": 1}\n"
      "not json\n");
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->format, "jsonl");
  ASSERT_EQ(f->entries.size(), 3u);
  EXPECT_EQ(f->entries[0].messages[0].content, "vLLM custom");
  EXPECT_EQ(f->entries[0].output_tokens, 12u);
  EXPECT_EQ(f->entries[1].output_tokens, 0u) << "none given: the caller's default";
  ASSERT_EQ(f->entries[2].messages.size(), 2u);
  EXPECT_EQ(f->entries[2].messages[0].role, "system");
  EXPECT_EQ(f->entries[2].output_tokens, 7u);
  EXPECT_EQ(f->skipped, 2u);
  EXPECT_NE(f->warnings[0].find("line 5"), std::string::npos) << f->warnings[0];

  auto w = cmax::loadgen::prompt_file_workload(f->entries, 2, 128, 0);
  EXPECT_EQ(w->total(), 2u);
  EXPECT_EQ(w->next()->max_tokens, 12u);
  EXPECT_EQ(w->next()->max_tokens, 128u);
  EXPECT_FALSE(w->next());
}

TEST(PromptFile, NothingUsableIsAnErrorThatSaysWhatIsRead) {
  for (const char* bad : {"", "   \n", "[1, 2", "[]", "{\"x\": 1}\n", "[{\"conversations\": []}]"}) {
    auto f = parse_prompt_file(bad);
    ASSERT_FALSE(f) << bad;
    EXPECT_TRUE(f.error().message.find("ShareGPT") != std::string::npos ||
                f.error().message.find("empty") != std::string::npos)
        << f.error().message;
  }
}

}  // namespace
