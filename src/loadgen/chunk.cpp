#include "loadgen/chunk.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "loadgen/chunk_reference.h"

// How it is built: one Extractor reads the few fields we want from a stream of JSON events (SAX).
// Two readers drive it: a small strict reader written for the common case, and nlohmann's SAX
// parser. The small reader stops ("bails") on anything it does not handle exactly as nlohmann does
// (a syntax error, a negative or long integer, a \u surrogate escape, a BOM, deep nesting); the
// input is then read again by nlohmann from the start. Where it does not bail it emits the events
// nlohmann would, in the same order, so both give the same ChunkInfo or the same error.
// fuzz/sse_fuzz.cpp checks that claim on every input against detail::parse_json_nlohmann.

namespace cmax::loadgen {
namespace {

using detail::JsonDoc;

/// Counts above this are not token counts (and would stop being exact as doubles downstream).
constexpr std::uint64_t kMaxCount = std::uint64_t{1} << 53;
constexpr std::size_t kMaxMessageBytes = 300;
constexpr std::size_t kMaxSnippetBytes = 120;
constexpr std::string_view kDone = "[DONE]";

bool json_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && json_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && json_space(s.back())) s.remove_suffix(1);
  return s;
}

// Length of the well-formed UTF-8 sequence (Unicode table 3-7, as nlohmann checks it) at p, 0 when
// it is not one.
std::size_t utf8_length(const unsigned char* p, const unsigned char* end) {
  const auto in = [&](std::size_t i, unsigned lo, unsigned hi) {
    return p + i < end && p[i] >= lo && p[i] <= hi;
  };
  const unsigned c = p[0];
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return in(1, 0x80, 0xBF) ? 2 : 0;
  if (c == 0xE0) return in(1, 0xA0, 0xBF) && in(2, 0x80, 0xBF) ? 3 : 0;
  if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) return in(1, 0x80, 0xBF) && in(2, 0x80, 0xBF) ? 3 : 0;
  if (c == 0xED) return in(1, 0x80, 0x9F) && in(2, 0x80, 0xBF) ? 3 : 0;
  if (c == 0xF0) return in(1, 0x90, 0xBF) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
  if (c >= 0xF1 && c <= 0xF3) return in(1, 0x80, 0xBF) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
  if (c == 0xF4) return in(1, 0x80, 0x8F) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
  return 0;
}

// One line of at most `max_bytes` (>= 3): runs of whitespace and control bytes become one space,
// bytes that are not UTF-8 become '?', and a cut never splits a character ("..." marks it).
std::string one_line(std::string_view s, std::size_t max_bytes) {
  std::string out;
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  bool space = false, cut = false;
  while (p < end) {
    if (*p <= 0x20 || *p == 0x7F) {
      space = !out.empty();
      ++p;
      continue;
    }
    const std::size_t n = utf8_length(p, end);
    if (out.size() + (space ? 1 : 0) + (n > 0 ? n : 1) > max_bytes) {
      cut = true;
      break;
    }
    if (space) out.push_back(' ');
    space = false;
    if (n > 0) {
      out.append(reinterpret_cast<const char*>(p), n);
      p += n;
    } else {
      out.push_back('?');
      ++p;
    }
  }
  if (cut) {
    while (out.size() > max_bytes - 3) {
      while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80) out.pop_back();
      if (!out.empty()) out.pop_back();
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += "...";
  }
  return out;
}

std::string_view doc_name(JsonDoc doc) { return doc == JsonDoc::kStream ? "stream event" : "response body"; }

// What a value at some place of the document means to us.
enum class Field : std::uint8_t {
  kNone,  // not ours: skipped, whatever its type
  kRoot,
  kId,
  kObject,
  kChoices,
  kUsage,
  kError,
  kTopMessage,  // "message"/"type"/"code" beside "object":"error" (vLLM's and SGLang's ErrorResponse)
  kTopType,
  kTopCode,
  kChoice,
  kDelta,
  kMessage,
  kText,
  kFinishReason,
  kContent,
  kReasoning,
  kPromptTokens,
  kCompletionTokens,
  kPromptDetails,
  kCachedTokens,
  kCacheRead,
  kCacheCreation,
  kCacheHit,
  kErrorMessage,
  kErrorType,
  kErrorCode,
};

std::string_view field_name(Field f) {
  switch (f) {
    case Field::kId: return "id";
    case Field::kObject: return "object";
    case Field::kChoices: return "choices";
    case Field::kUsage: return "usage";
    case Field::kError: return "error";
    case Field::kTopMessage: return "message";
    case Field::kTopType: return "type";
    case Field::kTopCode: return "code";
    case Field::kDelta: return "delta";
    case Field::kMessage: return "message";
    case Field::kText: return "text";
    case Field::kFinishReason: return "finish_reason";
    case Field::kContent: return "content";
    case Field::kReasoning: return "reasoning_content";
    case Field::kPromptTokens: return "prompt_tokens";
    case Field::kCompletionTokens: return "completion_tokens";
    case Field::kPromptDetails: return "prompt_tokens_details";
    case Field::kCachedTokens: return "cached_tokens";
    case Field::kCacheRead: return "cache_read_input_tokens";
    case Field::kCacheCreation: return "cache_creation_input_tokens";
    case Field::kCacheHit: return "prompt_cache_hit_tokens";
    case Field::kErrorMessage: return "message";
    case Field::kErrorType: return "type";
    case Field::kErrorCode: return "code";
    default: return "";
  }
}

// The kind of an open container we look inside.
enum class Scope : std::uint8_t { kRoot, kChoices, kChoice, kDelta, kUsage, kDetails, kError };

Field root_key(std::string_view k) {
  switch (k.size()) {
    case 2: return k == "id" ? Field::kId : Field::kNone;
    case 4: return k == "type" ? Field::kTopType : k == "code" ? Field::kTopCode : Field::kNone;
    case 5: return k == "usage" ? Field::kUsage : k == "error" ? Field::kError : Field::kNone;
    case 6: return k == "object" ? Field::kObject : Field::kNone;
    case 7: return k == "choices" ? Field::kChoices : k == "message" ? Field::kTopMessage : Field::kNone;
    default: return Field::kNone;
  }
}

Field choice_key(std::string_view k) {
  switch (k.size()) {
    case 4: return k == "text" ? Field::kText : Field::kNone;
    case 5: return k == "delta" ? Field::kDelta : Field::kNone;
    case 7: return k == "message" ? Field::kMessage : Field::kNone;
    case 13: return k == "finish_reason" ? Field::kFinishReason : Field::kNone;
    default: return Field::kNone;
  }
}

Field delta_key(std::string_view k) {
  if (k == "content") return Field::kContent;
  if (k == "reasoning_content") return Field::kReasoning;
  return Field::kNone;
}

Field usage_key(std::string_view k) {
  if (k == "prompt_tokens") return Field::kPromptTokens;
  if (k == "completion_tokens") return Field::kCompletionTokens;
  if (k == "prompt_tokens_details") return Field::kPromptDetails;
  if (k == "cache_read_input_tokens") return Field::kCacheRead;
  if (k == "cache_creation_input_tokens") return Field::kCacheCreation;
  if (k == "prompt_cache_hit_tokens") return Field::kCacheHit;
  return Field::kNone;
}

Field error_key(std::string_view k) {
  if (k == "message") return Field::kErrorMessage;
  if (k == "type") return Field::kErrorType;
  if (k == "code") return Field::kErrorCode;
  return Field::kNone;
}

// Reads ChunkInfo out of SAX events. Methods return false to stop the reader: the document is
// not what an endpoint may send (failure() says why). Deeper than the fields we read, containers
// are only counted (skip_).
class Extractor {
 public:
  Extractor(JsonDoc doc, bool want_text) : doc_(doc), want_text_(want_text) {}

  bool start_object() {
    if (skip_ > 0) return enter_skipped();
    const Field f = target();
    switch (f) {
      case Field::kRoot: return push(Scope::kRoot, f);
      case Field::kChoice: return push(Scope::kChoice, f);
      case Field::kDelta:
      case Field::kMessage: return push(Scope::kDelta, f);
      case Field::kUsage:
        clear_usage();
        usage_present_ = true;
        return push(Scope::kUsage, f);
      case Field::kPromptDetails:
        seen_[kSlotCached] = false;
        return push(Scope::kDetails, f);
      case Field::kError:
        info_.is_error = true;
        info_.error_message.clear();
        info_.error_type.clear();
        info_.error_code.clear();
        return push(Scope::kError, f);
      default:
        if (lenient(f)) return enter_skipped();
        return wrong_type(f, "an object");
    }
  }

  bool start_array() {
    if (skip_ > 0) return enter_skipped();
    const Field f = target();
    if (f == Field::kChoices) {
      choices_seen_ = true;
      return push(Scope::kChoices, f);
    }
    if (f == Field::kError) {
      set_error_value("");
      return enter_skipped();
    }
    if (lenient(f)) return enter_skipped();
    if (f == Field::kRoot) {
      wrong_type(f, "an array");
      return enter_skipped();
    }
    return wrong_type(f, "an array");
  }

  bool end_container() {
    if (skip_ > 0) {
      --skip_;
    } else {
      --depth_;
    }
    return true;
  }

  bool key(std::string_view k) {
    if (skip_ > 0) return true;
    Level& top = stack_[depth_ - 1];
    switch (top.scope) {
      case Scope::kRoot: top.key = root_key(k); break;
      case Scope::kChoice: top.key = choice_key(k); break;
      case Scope::kDelta: top.key = delta_key(k); break;
      case Scope::kUsage: top.key = usage_key(k); break;
      case Scope::kDetails: top.key = k == "cached_tokens" ? Field::kCachedTokens : Field::kNone; break;
      case Scope::kError: top.key = error_key(k); break;
      case Scope::kChoices: break;  // arrays have no keys
    }
    return true;
  }

  bool string(std::string_view s) {
    if (skip_ > 0) return true;
    const Field f = target();
    switch (f) {
      case Field::kId: info_.id.assign(s); return true;
      case Field::kObject: object_is_error_ = s == "error"; return true;
      case Field::kTopMessage: top_message_.assign(s); return true;
      case Field::kTopType: top_type_.assign(s); return true;
      case Field::kTopCode: top_code_.assign(s); return true;
      case Field::kError: set_error_value(s); return true;
      case Field::kText:
      case Field::kContent:
      case Field::kReasoning:
        if (!s.empty()) {
          info_.has_content = true;
          if (want_text_) info_.content.append(s);
        }
        return true;
      case Field::kFinishReason:
        if (choice_index() == 0) info_.finish_reason.assign(s);
        return true;
      case Field::kErrorMessage: info_.error_message.assign(s); return true;
      case Field::kErrorType: info_.error_type.assign(s); return true;
      case Field::kErrorCode: info_.error_code.assign(s); return true;
      default:
        if (lenient(f)) return true;
        return wrong_type(f, "a string");
    }
  }

  bool number_unsigned(std::uint64_t v) {
    if (skip_ > 0) return true;
    const Field f = target();
    if (const int slot = count_slot(f); slot >= 0) {
      if (v > kMaxCount) return fail_with(fmt::format("{} is {}, more than any real token count", path(f), v));
      counts_[slot] = v;
      seen_[slot] = true;
      return true;
    }
    if (f == Field::kTopCode || f == Field::kErrorCode) return code(f, std::to_string(v));
    return scalar(f, "a number");
  }

  bool number_integer(std::int64_t v) {
    if (skip_ > 0) return true;
    const Field f = target();
    if (const int slot = count_slot(f); slot >= 0) {
      if (v < 0) return fail_with(fmt::format("{} is {}: a token count cannot be negative", path(f), v));
      counts_[slot] = static_cast<std::uint64_t>(v);  // "-0"
      seen_[slot] = true;
      return true;
    }
    if (f == Field::kTopCode || f == Field::kErrorCode) return code(f, std::to_string(v));
    return scalar(f, "a number");
  }

  bool number_float() {
    if (skip_ > 0) return true;
    const Field f = target();
    if (count_slot(f) >= 0)
      return fail_with(fmt::format("{} is not a whole number (a fraction, or too large): a token count must be one",
                                   path(f)));
    return scalar(f, "a number");
  }

  bool boolean() {
    if (skip_ > 0) return true;
    return scalar(target(), "a boolean");
  }

  bool null() {
    if (skip_ > 0) return true;
    const Field f = target();
    // null is "absent" everywhere we look; a later duplicate key wins, as in a DOM.
    switch (f) {
      case Field::kRoot: return wrong_type(f, "null");
      case Field::kChoice: return wrong_type(f, "null");
      case Field::kChoices: choices_seen_ = false; return true;
      case Field::kUsage:
        clear_usage();
        usage_present_ = false;
        return true;
      case Field::kPromptDetails: seen_[kSlotCached] = false; return true;
      case Field::kError:
        // {"error": null} is not an error; a non-null one before it is overruled.
        info_.is_error = false;
        info_.error_message.clear();
        info_.error_type.clear();
        info_.error_code.clear();
        return true;
      case Field::kId: info_.id.clear(); return true;
      case Field::kFinishReason:
        if (choice_index() == 0) info_.finish_reason.clear();
        return true;
      default:
        if (const int slot = count_slot(f); slot >= 0) {
          counts_[slot] = 0;
          seen_[slot] = false;
        }
        return true;
    }
  }

  const std::string& error() const { return error_; }
  bool failed() const { return !error_.empty(); }

  /// After the whole document was read: the result.
  Result<ChunkInfo> finish() {
    if (failed()) return fail("{}", error_);
    if (!root_error_.empty()) return fail("{}", root_error_);
    if (object_is_error_ && !info_.is_error) {
      info_.is_error = true;
      info_.error_message = std::move(top_message_);
      info_.error_type = std::move(top_type_);
      info_.error_code = std::move(top_code_);
    }
    if (info_.is_error) {
      info_.error_message = one_line(info_.error_message, kMaxMessageBytes);
      info_.error_type = one_line(info_.error_type, kMaxMessageBytes);
      info_.error_code = one_line(info_.error_code, kMaxMessageBytes);
    } else if (doc_ == JsonDoc::kBody && !choices_seen_) {
      return fail("response body: no \"choices\" array (nor an \"error\"): not an OpenAI completion");
    }
    if (usage_present_) {
      Usage& u = info_.usage;
      u.present = true;
      u.prompt_tokens = counts_[kSlotPrompt];
      u.completion_tokens = counts_[kSlotCompletion];
      u.cache_creation_tokens = counts_[kSlotCreation];
      if (seen_[kSlotCached]) {
        u.cached_tokens = counts_[kSlotCached];
        u.cache_source = CacheSource::kOpenAi;
      } else if (seen_[kSlotRead] || seen_[kSlotCreation]) {
        u.cached_tokens = counts_[kSlotRead];
        u.cache_source = CacheSource::kAnthropic;
      } else if (seen_[kSlotHit]) {
        u.cached_tokens = counts_[kSlotHit];
        u.cache_source = CacheSource::kDeepSeek;
      }
    }
    return std::move(info_);
  }

 private:
  enum Slot { kSlotPrompt, kSlotCompletion, kSlotCached, kSlotRead, kSlotCreation, kSlotHit, kSlots };
  struct Level {
    Scope scope;
    Field entered;        // the field this container is the value of
    Field key = Field::kNone;  // objects: the field of the key just read
    std::uint32_t index = 0;   // kChoices: elements so far; kChoice: its position
  };
  static constexpr int kMaxDepth = 4;  // root > choices > choice > delta is the deepest we read

  static int count_slot(Field f) {
    switch (f) {
      case Field::kPromptTokens: return kSlotPrompt;
      case Field::kCompletionTokens: return kSlotCompletion;
      case Field::kCachedTokens: return kSlotCached;
      case Field::kCacheRead: return kSlotRead;
      case Field::kCacheCreation: return kSlotCreation;
      case Field::kCacheHit: return kSlotHit;
      default: return -1;
    }
  }

  // Fields whose value we take only when it has the type we want; any other type is ignored.
  static bool lenient(Field f) {
    switch (f) {
      case Field::kNone:
      case Field::kObject:
      case Field::kTopMessage:
      case Field::kTopType:
      case Field::kTopCode:
      case Field::kErrorMessage:
      case Field::kErrorType:
      case Field::kErrorCode: return true;
      default: return false;
    }
  }

  Field target() {
    if (depth_ == 0) return root_done_ ? Field::kNone : (root_done_ = true, Field::kRoot);
    Level& top = stack_[depth_ - 1];
    if (top.scope == Scope::kChoices) {
      element_ = top.index++;
      return Field::kChoice;
    }
    return top.key;
  }

  bool enter_skipped() {
    ++skip_;
    return true;
  }

  bool code(Field f, std::string text) {
    (f == Field::kTopCode ? top_code_ : info_.error_code) = std::move(text);
    return true;
  }

  bool push(Scope scope, Field entered) {
    Level l{scope, entered};
    if (entered == Field::kChoice) l.index = element_;
    stack_[depth_++] = l;
    return true;
  }

  std::uint32_t choice_index() const {
    for (int i = depth_ - 1; i >= 0; --i)
      if (stack_[i].scope == Scope::kChoice) return stack_[i].index;
    return 0;
  }

  void clear_usage() {
    counts_ = {};
    seen_ = {};
  }

  void set_error_value(std::string_view message) {
    info_.is_error = true;
    info_.error_message.assign(message);
    info_.error_type.clear();
    info_.error_code.clear();
  }

  bool scalar(Field f, std::string_view type) {
    if (f == Field::kError) {
      set_error_value("");
      return true;
    }
    if (lenient(f)) return true;
    return wrong_type(f, type);
  }

  // The place of field f under the open containers: "choices[0].delta.content".
  std::string path(Field f) const {
    std::string out;
    const auto add = [&out](Field field, std::uint32_t index) {
      if (field == Field::kChoice) {
        out += fmt::format("[{}]", index);
        return;
      }
      if (!out.empty()) out.push_back('.');
      out += field_name(field);
    };
    for (int i = 1; i < depth_; ++i) add(stack_[i].entered, stack_[i].index);
    add(f, element_);
    return out;
  }

  bool wrong_type(Field f, std::string_view got) {
    if (f == Field::kRoot) {
      // Said only once the text proved to be JSON: "[DONE]x" is "not JSON", not "an array".
      root_error_ = fmt::format("{} is {}, not a JSON object", doc_name(doc_), got);
      return true;
    }
    std::string_view want = "a string or null";
    if (f == Field::kChoices) want = "an array";
    if (f == Field::kChoice) want = "an object";
    if (f == Field::kUsage || f == Field::kDelta || f == Field::kMessage || f == Field::kPromptDetails)
      want = "an object or null";
    if (count_slot(f) >= 0) want = "a non-negative integer or null";
    return fail_with(fmt::format("{} is {}, expected {}", path(f), got, want));
  }

  bool fail_with(std::string message) {
    error_ = fmt::format("{}: {}", doc_name(doc_), message);
    return false;
  }

  JsonDoc doc_;
  bool want_text_;
  ChunkInfo info_;
  std::array<Level, kMaxDepth> stack_{};
  int depth_ = 0;
  std::size_t skip_ = 0;
  std::uint32_t element_ = 0;
  bool root_done_ = false, choices_seen_ = false, usage_present_ = false, object_is_error_ = false;
  std::array<std::uint64_t, kSlots> counts_{};
  std::array<bool, kSlots> seen_{};
  std::string top_message_, top_type_, top_code_;
  std::string error_;
  std::string root_error_;
};

// nlohmann's SAX parser driving an Extractor.
class NlohmannSax final : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit NlohmannSax(Extractor& x) : x_(x) {}
  bool null() override { return x_.null(); }
  bool boolean(bool) override { return x_.boolean(); }
  bool number_integer(number_integer_t v) override { return x_.number_integer(v); }
  bool number_unsigned(number_unsigned_t v) override { return x_.number_unsigned(v); }
  bool number_float(number_float_t, const string_t&) override { return x_.number_float(); }
  bool string(string_t& s) override { return x_.string(s); }
  bool binary(binary_t&) override { return true; }  // JSON text has none
  bool start_object(std::size_t) override { return x_.start_object(); }
  bool key(string_t& k) override { return x_.key(k); }
  bool end_object() override { return x_.end_container(); }
  bool start_array(std::size_t) override { return x_.start_array(); }
  bool end_array() override { return x_.end_container(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    syntax_ = e.what();
    return false;
  }
  std::string syntax_;

 private:
  Extractor& x_;
};

// The strict reader for the common case. run(): kDone = the whole text was one JSON value and
// the extractor took it; kStopped = the extractor refused it (final); kBail = read it again with
// nlohmann. It never accepts what nlohmann rejects and never emits an event nlohmann would not.
class FastReader {
 public:
  enum Outcome { kDone, kStopped, kBail };
  FastReader(std::string_view text, Extractor& x)
      : p_(reinterpret_cast<const unsigned char*>(text.data())), end_(p_ + text.size()), x_(x) {}

  Outcome run() {
    // Containers open, innermost last: true = object. Deeper documents go to nlohmann.
    constexpr int kMaxNesting = 64;
    std::uint64_t objects = 0;
    int depth = 0;
    std::string_view s;
  value:
    skip_space();
    if (p_ == end_) return kBail;
    switch (*p_) {
      case '{':
        if (depth == kMaxNesting) return kBail;
        ++p_;
        if (!x_.start_object()) return kStopped;
        objects = (objects << 1) | 1;
        ++depth;
        skip_space();
        if (p_ < end_ && *p_ == '}') {
          ++p_;
          --depth;
          objects >>= 1;
          if (!x_.end_container()) return kStopped;
          goto next;
        }
        goto key;
      case '[':
        if (depth == kMaxNesting) return kBail;
        ++p_;
        if (!x_.start_array()) return kStopped;
        objects <<= 1;
        ++depth;
        skip_space();
        if (p_ < end_ && *p_ == ']') {
          ++p_;
          --depth;
          objects >>= 1;
          if (!x_.end_container()) return kStopped;
          goto next;
        }
        goto value;
      case '"':
        if (!read_string(s)) return kBail;
        if (!x_.string(s)) return kStopped;
        goto next;
      case 't':
        if (!literal("true")) return kBail;
        if (!x_.boolean()) return kStopped;
        goto next;
      case 'f':
        if (!literal("false")) return kBail;
        if (!x_.boolean()) return kStopped;
        goto next;
      case 'n':
        if (!literal("null")) return kBail;
        if (!x_.null()) return kStopped;
        goto next;
      default: {
        const Outcome o = number();
        if (o != kDone) return o;
        goto next;
      }
    }
  key:
    skip_space();
    if (p_ == end_ || *p_ != '"' || !read_string(s)) return kBail;
    if (!x_.key(s)) return kStopped;
    skip_space();
    if (p_ == end_ || *p_ != ':') return kBail;
    ++p_;
    goto value;
  next:
    skip_space();
    if (depth == 0) return p_ == end_ ? kDone : kBail;
    if (p_ == end_) return kBail;
    if (*p_ == ',') {
      ++p_;
      if (objects & 1) goto key;
      goto value;
    }
    if (*p_ == ((objects & 1) ? '}' : ']')) {
      ++p_;
      --depth;
      objects >>= 1;
      if (!x_.end_container()) return kStopped;
      goto next;
    }
    return kBail;
  }

 private:
  void skip_space() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  bool literal(std::string_view word) {
    if (static_cast<std::size_t>(end_ - p_) < word.size()) return false;
    if (std::memcmp(p_, word.data(), word.size()) != 0) return false;
    p_ += word.size();
    return true;
  }

  static bool digit(unsigned char c) { return c >= '0' && c <= '9'; }

  // JSON's number grammar, token boundaries as nlohmann's lexer draws them. Integers nlohmann
  // would read as such (up to 19 digits, or 18 after '-') are emitted; a float is emitted when
  // finite and not denormal-range (nlohmann rejects overflow; from_chars flags both).
  Outcome number() {
    const unsigned char* start = p_;
    const bool negative = *p_ == '-';
    if (negative) ++p_;
    if (p_ == end_) return kBail;
    if (*p_ == '0') {
      ++p_;
    } else if (*p_ >= '1' && *p_ <= '9') {
      while (p_ < end_ && digit(*p_)) ++p_;
    } else {
      return kBail;
    }
    const std::size_t digits = static_cast<std::size_t>(p_ - start) - (negative ? 1 : 0);
    bool is_float = false;
    if (p_ < end_ && *p_ == '.') {
      is_float = true;
      ++p_;
      if (p_ == end_ || !digit(*p_)) return kBail;
      while (p_ < end_ && digit(*p_)) ++p_;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      is_float = true;
      ++p_;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ == end_ || !digit(*p_)) return kBail;
      while (p_ < end_ && digit(*p_)) ++p_;
    }
    if (is_float) {
      double d = 0;
      const auto* first = reinterpret_cast<const char*>(start);
      const auto* last = reinterpret_cast<const char*>(p_);
      const auto r = std::from_chars(first, last, d);
      if (r.ec != std::errc() || r.ptr != last || !std::isfinite(d)) return kBail;
      return x_.number_float() ? kDone : kStopped;
    }
    if (digits > (negative ? 18U : 19U)) return kBail;
    std::uint64_t v = 0;
    for (const unsigned char* q = start + (negative ? 1 : 0); q < p_; ++q) v = v * 10 + (*q - '0');
    if (negative) return x_.number_integer(-static_cast<std::int64_t>(v)) ? kDone : kStopped;
    return x_.number_unsigned(v) ? kDone : kStopped;
  }

  static int hex(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // Four hex digits after "\u" at p_; -1 when malformed.
  long hex4() {
    if (end_ - p_ < 4) return -1;
    long v = 0;
    for (int i = 0; i < 4; ++i) {
      const int h = hex(p_[i]);
      if (h < 0) return -1;
      v = (v << 4) | h;
    }
    p_ += 4;
    return v;
  }

  static void append_utf8(std::string& out, unsigned long cp) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  // p_ at the opening quote. Without escapes the view points into the text; with them it points
  // into scratch_, valid until the next string.
  bool read_string(std::string_view& out) {
    const unsigned char* start = ++p_;
    bool escaped = false;
    for (;;) {
      while (p_ < end_ && *p_ >= 0x20 && *p_ < 0x80 && *p_ != '"' && *p_ != '\\') {
        if (escaped) scratch_.push_back(static_cast<char>(*p_));
        ++p_;
      }
      if (p_ == end_) return false;
      const unsigned char c = *p_;
      if (c == '"') {
        ++p_;
        const auto length = static_cast<std::size_t>(p_ - 1 - start);
        out = escaped ? std::string_view(scratch_) : std::string_view(reinterpret_cast<const char*>(start), length);
        return true;
      }
      if (c < 0x20) return false;  // nlohmann: control characters must be escaped
      if (c >= 0x80) {
        const std::size_t n = utf8_length(p_, end_);
        if (n == 0) return false;
        if (escaped) scratch_.append(reinterpret_cast<const char*>(p_), n);
        p_ += n;
        continue;
      }
      // A backslash: from here on the string is rebuilt in scratch_.
      if (!escaped) {
        scratch_.assign(reinterpret_cast<const char*>(start), static_cast<std::size_t>(p_ - start));
        escaped = true;
      }
      ++p_;
      if (p_ == end_) return false;
      const unsigned char e = *p_++;
      switch (e) {
        case '"': scratch_.push_back('"'); break;
        case '\\': scratch_.push_back('\\'); break;
        case '/': scratch_.push_back('/'); break;
        case 'b': scratch_.push_back('\b'); break;
        case 'f': scratch_.push_back('\f'); break;
        case 'n': scratch_.push_back('\n'); break;
        case 'r': scratch_.push_back('\r'); break;
        case 't': scratch_.push_back('\t'); break;
        case 'u': {
          long cp = hex4();
          if (cp < 0) return false;
          if (cp >= 0xDC00 && cp <= 0xDFFF) return false;  // a lone low surrogate
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
            p_ += 2;
            const long low = hex4();
            if (low < 0xDC00 || low > 0xDFFF) return false;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          append_utf8(scratch_, static_cast<unsigned long>(cp));
          break;
        }
        default: return false;
      }
    }
  }

  const unsigned char* p_;
  const unsigned char* end_;
  Extractor& x_;
  std::string scratch_;
};

Result<ChunkInfo> parse_json(std::string_view text, JsonDoc doc, bool want_text) {
  {
    Extractor x(doc, want_text);
    FastReader reader(text, x);
    switch (reader.run()) {
      case FastReader::kDone: return x.finish();
      case FastReader::kStopped: return fail("{}", x.error());
      case FastReader::kBail: break;
    }
  }
  return detail::parse_json_nlohmann(text, doc, want_text);
}

}  // namespace

namespace detail {

// The reference reader (not declared in chunk.h): what parse_json's fast path must agree with.
// fuzz/sse_fuzz.cpp and the unit tests declare it themselves.
Result<ChunkInfo> parse_json_nlohmann(std::string_view text, JsonDoc doc, bool want_text) {
  Extractor x(doc, want_text);
  NlohmannSax sax(x);
  bool ok = false;
  try {
    ok = nlohmann::json::sax_parse(text.begin(), text.end(), &sax);
  } catch (const std::exception& e) {
    sax.syntax_ = e.what();
  }
  if (ok) return x.finish();
  if (x.failed()) return fail("{}", x.error());
  std::string_view why = sax.syntax_;
  // "[json.exception.parse_error.101] parse error at line 1, column 2: ..." -> from "parse error".
  if (const auto close = why.find("] "); !why.empty() && why[0] == '[' && close != std::string_view::npos)
    why.remove_prefix(close + 2);
  return fail("{} is not JSON ({}): {}", doc_name(doc), why, one_line(text, kMaxSnippetBytes));
}

}  // namespace detail

Result<ChunkInfo> parse_stream_data(std::string_view data, bool want_text) {
  if (trim(data) == kDone) {
    ChunkInfo info;
    info.done = true;
    return info;
  }
  return parse_json(data, JsonDoc::kStream, want_text);
}

Result<ChunkInfo> parse_completion_body(std::string_view body, bool want_text) {
  return parse_json(body, JsonDoc::kBody, want_text);
}

std::string one_line_utf8(std::string_view s, std::size_t max_bytes) { return one_line(s, std::max<std::size_t>(max_bytes, 3)); }

std::string error_body_message(std::string_view body) {
  const auto j = nlohmann::json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    const auto string_at = [](const nlohmann::json& o, const char* key) -> const std::string* {
      const auto it = o.find(key);
      return it != o.end() && it->is_string() ? it->get_ptr<const std::string*>() : nullptr;
    };
    if (const auto e = j.find("error"); e != j.end()) {
      if (e->is_string()) return one_line(e->get_ref<const std::string&>(), kMaxMessageBytes);
      if (e->is_object()) {
        if (const auto* m = string_at(*e, "message")) return one_line(*m, kMaxMessageBytes);
      }
    }
    if (const auto* m = string_at(j, "message")) return one_line(*m, kMaxMessageBytes);
    // FastAPI's own errors (a 404 from a vLLM or SGLang route, say): {"detail": "Not Found"}.
    if (const auto* m = string_at(j, "detail")) return one_line(*m, kMaxMessageBytes);
  }
  return one_line(body, kMaxMessageBytes);
}

}  // namespace cmax::loadgen
