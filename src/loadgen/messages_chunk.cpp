#include "loadgen/messages_chunk.h"

#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>


namespace cmax::loadgen {
namespace {

using json = nlohmann::json;

/// Counts above this are not token counts (and would stop being exact as doubles downstream).
constexpr std::int64_t kMaxCount = std::int64_t{1} << 53;
constexpr std::size_t kMaxSnippetBytes = 120;

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// An error type or stop reason worth keeping: short printable ASCII ("overloaded_error").
std::string token_or_empty(const json& o, const char* key) {
  const auto it = o.find(key);
  if (it == o.end() || !it->is_string()) return {};
  const auto& s = it->get_ref<const std::string&>();
  if (s.size() > 64) return {};
  for (unsigned char c : s)
    if (c < 0x21 || c > 0x7E) return {};
  return s;
}

// Reads one usage object into `acc`; false with `why` on a count that is not one.
bool merge_usage(const json& u, MessagesUsage& acc, std::string& why) {
  if (!u.is_object()) return true;  // null or absent: nothing reported
  struct Slot {
    const char* key;
    std::int64_t* into;
  };
  const Slot slots[] = {{"input_tokens", &acc.input},
                        {"cache_read_input_tokens", &acc.cache_read},
                        {"cache_creation_input_tokens", &acc.cache_creation},
                        {"output_tokens", &acc.output}};
  for (const auto& s : slots) {
    const auto it = u.find(s.key);
    if (it == u.end() || it->is_null()) continue;
    if (!it->is_number_integer() || it->get<std::int64_t>() < 0 || it->get<std::int64_t>() > kMaxCount ||
        (it->is_number_unsigned() && it->get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxCount))) {
      why = fmt::format("usage.{} is not a token count", s.key);
      return false;
    }
    *s.into = it->get<std::int64_t>();
  }
  return true;
}

bool has_usage_fields(const json& u) {
  if (!u.is_object()) return false;
  for (const char* k : {"input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "output_tokens"})
    if (auto it = u.find(k); it != u.end() && !it->is_null()) return true;
  return false;
}

void read_error(const json& j, std::string_view data, ChunkInfo& info) {
  info.is_error = true;
  info.error_message = error_body_message(data);
  if (const auto e = j.find("error"); e != j.end() && e->is_object()) info.error_type = token_or_empty(*e, "type");
}

Result<json> parse_object(std::string_view text, std::string_view what) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return fail("{} is not JSON: {}", what, one_line_utf8(text, kMaxSnippetBytes));
  if (!j.is_object()) return fail("{} is not a JSON object: {}", what, one_line_utf8(text, kMaxSnippetBytes));
  return j;
}

// The field of a content block or delta that holds its generated tokens, by the block's type;
// nullptr for types that carry none (signature_delta, an image).
const char* text_field(std::string_view type) {
  return type == "text" || type == "text_delta"           ? "text"
         : type == "thinking" || type == "thinking_delta" ? "thinking"
         : type == "input_json_delta"                     ? "partial_json"
                                                          : nullptr;
}

// The text of one content block or delta, by its type; `counts` false for blocks that carry no
// generated tokens.
std::string_view block_text(const json& b, bool& counts) {
  counts = false;
  if (!b.is_object()) return {};
  const auto t = b.find("type");
  if (t == b.end() || !t->is_string()) return {};
  const char* key = text_field(t->get_ref<const std::string&>());
  if (key == nullptr) return {};
  const auto v = b.find(key);
  if (v == b.end() || !v->is_string()) return {};
  counts = true;
  return v->get_ref<const std::string&>();
}

// The one event of a stream that comes once per token, content_block_delta, read without a DOM
// when it is written plainly: no whitespace, the keys type, index and delta in any order (Anthropic
// writes type first, vLLM's pydantic models delta before index, cmax serve sorts them), the delta
// holding its type and that type's text field (text_field), N plain digits, and
// strings of printable ASCII without escapes. Anything else (an escape, UTF-8, a space, another
// key, a repeated key) is not read here and goes to the DOM parser, so both give the same
// ChunkInfo (fuzz/sse_fuzz.cpp checks it on every input).
class PlainScanner {
 public:
  explicit PlainScanner(std::string_view d) : d_(d) {}
  bool eat(char c) {
    if (i_ >= d_.size() || d_[i_] != c) return false;
    ++i_;
    return true;
  }
  bool at_end() const { return i_ == d_.size(); }
  // A string of printable ASCII without escapes.
  bool string(std::string_view& out) {
    if (!eat('"')) return false;
    const std::size_t from = i_;
    while (i_ < d_.size() && d_[i_] != '"') {
      const char c = d_[i_];
      if (c < 0x20 || c > 0x7E || c == '\\') return false;
      ++i_;
    }
    if (i_ >= d_.size()) return false;
    out = d_.substr(from, i_ - from);
    ++i_;
    return true;
  }
  // A non-negative integer as JSON writes it (no leading zero), short enough to be exact.
  bool digits() {
    const std::size_t from = i_;
    while (i_ < d_.size() && i_ - from < 18 && d_[i_] >= '0' && d_[i_] <= '9') ++i_;
    const std::size_t n = i_ - from;
    return n > 0 && !(n > 1 && d_[from] == '0') && !(i_ < d_.size() && d_[i_] >= '0' && d_[i_] <= '9');
  }

 private:
  std::string_view d_;
  std::size_t i_ = 0;
};

// {"type":"text_delta","text":"..."}: the type and the one field text_field names for it, keys in
// either order.
bool plain_delta(PlainScanner& p, std::string_view& text) {
  if (!p.eat('{')) return false;
  std::string_view type, value, value_key;
  bool has_type = false, has_value = false;
  do {
    std::string_view key;
    if (!p.string(key) || !p.eat(':')) return false;
    if (key == "type") {
      if (has_type || !p.string(type)) return false;
      has_type = true;
    } else {
      if (has_value || !p.string(value)) return false;
      value_key = key;
      has_value = true;
    }
  } while (p.eat(','));
  if (!p.eat('}') || !has_type || !has_value) return false;
  const char* field = text_field(type);
  if (field == nullptr || value_key != field) return false;
  text = value;
  return true;
}

bool fast_content_delta(std::string_view d, bool want_text, ChunkInfo& info) {
  PlainScanner p(d);
  if (!p.eat('{')) return false;
  std::string_view text;
  bool has_type = false, has_index = false, has_delta = false;
  do {
    std::string_view key;
    if (!p.string(key) || !p.eat(':')) return false;
    if (key == "type") {
      std::string_view type;
      if (has_type || !p.string(type) || type != "content_block_delta") return false;
      has_type = true;
    } else if (key == "index") {
      if (has_index || !p.digits()) return false;
      has_index = true;
    } else if (key == "delta") {
      if (has_delta || !plain_delta(p, text)) return false;
      has_delta = true;
    } else {
      return false;
    }
  } while (p.eat(','));
  if (!p.eat('}') || !p.at_end() || !has_type || !has_delta) return false;
  info.has_content = !text.empty();
  if (want_text) info.content = std::string(text);
  return true;
}

}  // namespace

Usage MessagesUsage::usage() const {
  Usage u;
  if (input < 0 && output < 0) return u;
  u.present = true;
  const auto at_least_0 = [](std::int64_t v) { return static_cast<std::uint64_t>(v < 0 ? 0 : v); };
  u.prompt_tokens = at_least_0(input) + at_least_0(cache_read) + at_least_0(cache_creation);
  u.completion_tokens = at_least_0(output);
  u.cached_tokens = at_least_0(cache_read);
  u.cache_creation_tokens = at_least_0(cache_creation);
  u.cache_source = cache_read >= 0 || cache_creation >= 0 ? CacheSource::kAnthropic : CacheSource::kNone;
  return u;
}

Result<ChunkInfo> parse_messages_event(std::string_view event, std::string_view data, bool want_text,
                                       MessagesUsage& acc) {
  ChunkInfo info;
  if (fast_content_delta(data, want_text, info)) return info;
  return detail::parse_messages_event_dom(event, data, want_text, acc);
}

Result<ChunkInfo> detail::parse_messages_event_dom(std::string_view event, std::string_view data, bool want_text,
                                                   MessagesUsage& acc) {
  ChunkInfo info;
  if (trim(data) == "[DONE]") {  // vLLM's /v1/messages ends with OpenAI's terminator
    info.done = true;
    return info;
  }
  auto parsed = parse_object(data, "stream event");
  if (!parsed) return Unexpected<Error>{parsed.error()};
  const json& j = *parsed;
  std::string type = token_or_empty(j, "type");
  if (type.empty()) type = std::string(event);
  if (type.empty()) return fail("stream event without a \"type\": {}", one_line_utf8(data, kMaxSnippetBytes));

  std::string why;
  bool usage_seen = false;
  if (type == "error") {
    read_error(j, data, info);
  } else if (type == "message_start") {
    const auto m = j.find("message");
    if (m != j.end() && m->is_object()) {
      info.id = token_or_empty(*m, "id");
      if (const auto u = m->find("usage"); u != m->end()) {
        if (!merge_usage(*u, acc, why)) return fail("message_start: {}", why);
        usage_seen = has_usage_fields(*u);
      }
    }
  } else if (type == "content_block_delta" || type == "content_block_start") {
    const auto d = j.find(type == "content_block_delta" ? "delta" : "content_block");
    bool counts = false;
    const auto text = d == j.end() ? std::string_view() : block_text(*d, counts);
    if (counts && !text.empty()) {
      info.has_content = true;
      if (want_text) info.content = std::string(text);
    }
  } else if (type == "message_delta") {
    if (const auto d = j.find("delta"); d != j.end() && d->is_object()) info.finish_reason = token_or_empty(*d, "stop_reason");
    if (const auto u = j.find("usage"); u != j.end()) {
      if (!merge_usage(*u, acc, why)) return fail("message_delta: {}", why);
      usage_seen = has_usage_fields(*u);
    }
  } else if (type == "message_stop") {
    info.done = true;
  }
  // ping, content_block_stop and types this reader does not know carry nothing it keeps.
  if (usage_seen) info.usage = acc.usage();
  return info;
}

Result<ChunkInfo> parse_messages_body(std::string_view body, bool want_text) {
  auto parsed = parse_object(body, "response body");
  if (!parsed) return Unexpected<Error>{parsed.error()};
  const json& j = *parsed;
  ChunkInfo info;
  const std::string type = token_or_empty(j, "type");
  if (type == "error" || (type.empty() && j.contains("error"))) {
    read_error(j, body, info);
    return info;
  }
  if (type != "message")
    return fail("response body: no \"type\":\"message\" (nor an error): not a Messages API response: {}",
                one_line_utf8(body, kMaxSnippetBytes));
  info.id = token_or_empty(j, "id");
  info.finish_reason = token_or_empty(j, "stop_reason");
  if (const auto c = j.find("content"); c != j.end() && c->is_array()) {
    for (const auto& b : *c) {
      bool counts = false;
      const auto text = block_text(b, counts);
      if (!counts || text.empty()) continue;
      info.has_content = true;
      if (want_text) info.content += text;
    }
  }
  if (const auto u = j.find("usage"); u != j.end()) {
    MessagesUsage acc;
    std::string why;
    if (!merge_usage(*u, acc, why)) return fail("response body: {}", why);
    info.usage = acc.usage();
  }
  return info;
}

}  // namespace cmax::loadgen
