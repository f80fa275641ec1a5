#pragma once
// A streaming writer of pretty-printed JSON into one string, byte-identical to nlohmann's
// dump(2) of the same tree (two-space indent, "key": value, [] and {} when empty, numbers as
// nlohmann prints them): a report of tens of MB is written without building a tree of it first.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cmax::sla {

class JsonOut {
 public:
  /// Appends to `out`, which must outlive the writer. Not thread-safe.
  explicit JsonOut(std::string& out) : out_(out) {}

  /// Opens an object or array as the next value (after key() inside an object).
  void begin_object() { open('{'); }
  void begin_array() { open('['); }
  /// Closes the innermost open object or array.
  void end_object() { close('}'); }
  void end_array() { close(']'); }
  /// The key of the next member of the innermost object; `k` is escaped like any string.
  void key(std::string_view k);

  /// The next value: a string (escaped), an integer, a double as nlohmann prints it (null when
  /// not finite), a bool, or null.
  void value(std::string_view s);
  void value(const char* s) { value(std::string_view(s)); }
  void value(std::int64_t v);
  void value(std::uint64_t v);
  void value(std::int32_t v) { value(static_cast<std::int64_t>(v)); }
  void value(double v);
  void value(bool v);
  void null();
  /// A value already rendered as JSON text (an escaped string with its quotes, from quote()).
  void raw(std::string_view json);

  /// `s` as a JSON string literal with its quotes, escaped as nlohmann escapes it (throws
  /// nlohmann's type_error on invalid UTF-8, as its dump does).
  static std::string quote(std::string_view s);

 private:
  void open(char bracket);
  void close(char bracket);
  void element();  // separator and indent before a value in an array, or before a key
  void quote_into(std::string_view s);

  std::string& out_;
  std::vector<std::uint32_t> counts_;  // elements written so far per open container
  bool after_key_ = false;
};

}  // namespace cmax::sla
