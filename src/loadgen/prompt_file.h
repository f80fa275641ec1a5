#pragma once
// Prompts from a file, in the formats users bring from the peers' benchmarks:
//  - ShareGPT (vLLM bench's `sharegpt`, AIPerf's): a JSON array of {"id", "conversations":
//    [{"from": "human", "value": ...}, {"from": "gpt", "value": ...}, ...]}. As vLLM does, the
//    first turn is the prompt and the second's length (in the serve tokenizer's tokens) the
//    output; a conversation of fewer than two turns, or not opened by human/user, is skipped.
//  - JSONL, one object a line: "prompt" (vLLM's custom dataset), "text" (AIPerf's single_turn) or
//    "messages" (an OpenAI chat list of {role, content}); the output from "output_tokens",
//    "max_tokens" or "output_length" when given.
// Pure: text in, entries and a count of what was skipped (with the first few reasons) out.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "loadgen/workload.h"

namespace cmax::loadgen {

struct PromptEntry {
  std::vector<Message> messages;  ///< one user message, or the file's chat list
  std::uint32_t output_tokens = 0;  ///< 0: the file gave none (the caller's default applies)
};

struct PromptFile {
  std::string format;  ///< "sharegpt" or "jsonl"
  std::vector<PromptEntry> entries;
  std::size_t skipped = 0;
  std::vector<std::string> warnings;  ///< the first few skipped entries, each named
};

/// Fails when nothing usable is in `text`, saying which formats are read.
Result<PromptFile> parse_prompt_file(std::string_view text);

/// The entries in file order, at most `requests` of them (0 = all); max_tokens = the entry's
/// output (else `default_output_tokens`), capped by `max_output_tokens` when > 0.
std::unique_ptr<Workload> prompt_file_workload(std::vector<PromptEntry> entries, std::size_t requests,
                                               std::uint32_t default_output_tokens, std::uint32_t max_output_tokens);

}  // namespace cmax::loadgen
