#include "loadgen/prompt_file.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/json_fields.h"
#include "endpoint/openai_tokenize.h"

namespace cmax::loadgen {
namespace {

using json = nlohmann::json;
constexpr std::size_t kMaxWarnings = 5;

void skip(PromptFile& f, std::string why) {
  ++f.skipped;
  if (f.warnings.size() < kMaxWarnings) f.warnings.push_back(std::move(why));
}

std::uint32_t output_of(const json& o) {
  for (const char* key : {"output_tokens", "max_tokens", "output_length"}) {
    auto it = o.find(key);
    if (it != o.end() && it->is_number_unsigned() && it->get<std::uint64_t>() > 0)
      return static_cast<std::uint32_t>(std::min<std::uint64_t>(it->get<std::uint64_t>(), 1u << 20));
  }
  return 0;
}

void read_sharegpt(const json& all, PromptFile& f) {
  f.format = "sharegpt";
  for (std::size_t i = 0; i < all.size(); ++i) {
    const json& c = all[i];
    const std::string id = core::string_field(c, "id");
    const std::string name = id.empty() ? fmt::format("entry {}", i + 1) : fmt::format("entry {} ({})", i + 1, id);
    auto turns = c.is_object() ? c.find("conversations") : c.end();
    if (!c.is_object() || turns == c.end() || !turns->is_array() || turns->size() < 2) {
      skip(f, fmt::format("{}: no \"conversations\" of two turns or more", name));
      continue;
    }
    const json& first = (*turns)[0];
    const json& second = (*turns)[1];
    if (!first.is_object() || !second.is_object()) {
      skip(f, fmt::format("{}: a turn is not an object", name));
      continue;
    }
    const std::string from = core::string_field(first, "from");
    const std::string prompt = core::string_field(first, "value"), reply = core::string_field(second, "value");
    if ((from != "human" && from != "user") || prompt.empty()) {
      skip(f, fmt::format("{}: the first turn is not a human's with a \"value\"", name));
      continue;
    }
    PromptEntry e;
    e.messages.push_back(Message{"user", prompt});
    e.output_tokens = static_cast<std::uint32_t>(std::max<std::size_t>(1, endpoint::tokenize(reply).size()));
    f.entries.push_back(std::move(e));
  }
}

void read_jsonl(std::string_view text, PromptFile& f) {
  f.format = "jsonl";
  std::size_t line_no = 0;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const json o = json::parse(line, nullptr, false);
    if (o.is_discarded() || !o.is_object()) {
      skip(f, fmt::format("line {}: not a JSON object", line_no));
      continue;
    }
    PromptEntry e;
    e.output_tokens = output_of(o);
    if (auto m = o.find("messages"); m != o.end() && m->is_array() && !m->empty()) {
      for (const auto& msg : *m) {
        const std::string role = core::string_field(msg, "role");
        const std::string content = core::string_field(msg, "content");
        if (role.empty()) {
          e.messages.clear();
          break;
        }
        e.messages.push_back(Message{role, content});
      }
    } else {
      std::string p = core::string_field(o, "prompt");
      if (p.empty()) p = core::string_field(o, "text");
      if (!p.empty()) e.messages.push_back(Message{"user", std::move(p)});
    }
    if (e.messages.empty()) {
      skip(f, fmt::format("line {}: no \"prompt\", \"text\" or \"messages\" (a list of {{role, content}})", line_no));
      continue;
    }
    f.entries.push_back(std::move(e));
  }
}

class PromptFileWorkload final : public Workload {
 public:
  PromptFileWorkload(std::vector<PromptEntry> entries, std::size_t requests, std::uint32_t default_out, std::uint32_t cap)
      : entries_(std::move(entries)), default_out_(default_out), cap_(cap) {
    total_ = requests ? std::min(requests, entries_.size()) : entries_.size();
  }
  std::optional<RequestSpec> next() override {
    if (next_ >= total_) return std::nullopt;
    const std::size_t i = next_++;
    RequestSpec spec;
    spec.index = i;
    spec.messages = entries_[i].messages;
    std::uint32_t out = entries_[i].output_tokens ? entries_[i].output_tokens : default_out_;
    if (cap_ > 0) out = std::min(out, cap_);
    spec.max_tokens = std::max<std::uint32_t>(1, out);
    return spec;
  }
  void reply(const RequestSpec&, std::string_view, bool) override {}
  bool exhausted() const override { return next_ >= total_; }
  std::size_t total() const override { return total_; }

 private:
  std::vector<PromptEntry> entries_;
  std::uint32_t default_out_, cap_;
  std::size_t total_ = 0, next_ = 0;
};

}  // namespace

Result<PromptFile> parse_prompt_file(std::string_view text) {
  PromptFile f;
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return fail("the prompt file is empty");
  if (text[first] == '[') {
    const json all = json::parse(text, nullptr, false);
    if (all.is_discarded() || !all.is_array())
      return fail("the prompt file starts with '[' but is not a JSON array (ShareGPT is an array of "
                  "{{\"conversations\": [{{\"from\": \"human\", \"value\": ...}}, ...]}})");
    read_sharegpt(all, f);
  } else {
    read_jsonl(text, f);
  }
  if (f.entries.empty())
    return fail("no usable prompt in the file ({} entr{} skipped{}); it reads ShareGPT (a JSON array of "
                "conversations) or JSONL with \"prompt\", \"text\" or \"messages\" per line",
                f.skipped, f.skipped == 1 ? "y" : "ies", f.warnings.empty() ? "" : ": " + f.warnings.front());
  return f;
}

std::unique_ptr<Workload> prompt_file_workload(std::vector<PromptEntry> entries, std::size_t requests,
                                               std::uint32_t default_output_tokens, std::uint32_t max_output_tokens) {
  return std::make_unique<PromptFileWorkload>(std::move(entries), requests, default_output_tokens, max_output_tokens);
}

}  // namespace cmax::loadgen
