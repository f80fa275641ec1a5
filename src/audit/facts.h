#pragma once
// Facts: typed observations the collectors make about a host, keyed by dotted names
// ("gpu.driver.version"). Each says where it came from, or why it could not be had.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace cmax::audit {

/// present: the value was read. absent: the thing does not exist here (not installed, no such
/// file): an answer. error: the thing may exist but could not be read: no answer.
enum class FactStatus : std::uint8_t { present, absent, error };
std::string_view to_string(FactStatus s);

struct Fact {
  std::string key;
  FactStatus status = FactStatus::absent;
  std::string value;
  std::string source;  ///< "/proc/driver/nvidia/version", "runc --version", "dpkg: runc"
  std::string detail;  ///< why absent or error; free notes otherwise
};

/// A set of facts. Not thread-safe; each collector fills its own and the engine merges them.
class Facts {
 public:
  void present(std::string key, std::string value, std::string source, std::string detail = {});
  void absent(std::string key, std::string source, std::string detail);
  void error(std::string key, std::string source, std::string detail);
  void put(Fact fact);
  /// Adds every fact of `other`; an existing key is kept unless it is absent and the new one not.
  void merge(Facts&& other);

  const Fact* find(std::string_view key) const;
  /// The value when present, else `fallback`.
  std::string_view value_or(std::string_view key, std::string_view fallback = {}) const;
  bool is_present(std::string_view key) const;
  /// Facts whose keys start with `prefix`, in key order.
  std::vector<const Fact*> with_prefix(std::string_view prefix) const;
  /// Every fact, in key order.
  std::vector<const Fact*> all() const;
  std::size_t size() const { return facts_.size(); }

 private:
  std::map<std::string, Fact, std::less<>> facts_;
};

}  // namespace cmax::audit
