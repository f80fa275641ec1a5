#pragma once
// A minimal ordered JSON value for cmax-gpucheck's one output document. The program needs only the
// CUDA toolkit and a C++17 compiler (GPU machines rarely have the project's other dependencies),
// so it carries this instead of nlohmann-json.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gpucheck {

class Json {
 public:
  enum class Kind { null, boolean, integer, unsigned_integer, real, string, array, object };

  Json() = default;
  Json(bool v) : kind_(Kind::boolean), b_(v) {}                               // NOLINT
  Json(int v) : kind_(Kind::integer), i_(v) {}                                // NOLINT
  Json(long long v) : kind_(Kind::integer), i_(v) {}                          // NOLINT
  Json(unsigned long long v) : kind_(Kind::unsigned_integer), u_(v) {}        // NOLINT
  Json(unsigned long v) : kind_(Kind::unsigned_integer), u_(v) {}             // NOLINT
  Json(double v) : kind_(Kind::real), d_(v) {}                                // NOLINT
  Json(std::string v) : kind_(Kind::string), s_(std::move(v)) {}              // NOLINT
  Json(const char* v) : kind_(Kind::string), s_(v) {}                        // NOLINT
  Json(const std::vector<std::string>& v);                                    // NOLINT

  static Json object() { return Json(Kind::object); }
  static Json array() { return Json(Kind::array); }

  /// Object member, inserted (in order) when missing; a null value becomes an object.
  Json& operator[](const std::string& key);
  bool contains(const std::string& key) const;
  /// The member's string, or "" when missing or not a string.
  std::string string_at(const std::string& key) const;
  /// Appends to an array; a null value becomes an array.
  void push_back(Json v);

  /// The document with two-space indentation; NaN and infinities are written as null.
  std::string dump() const;

 private:
  explicit Json(Kind k) : kind_(k) {}
  void write(std::string& out, int depth) const;

  Kind kind_ = Kind::null;
  bool b_ = false;
  long long i_ = 0;
  unsigned long long u_ = 0;
  double d_ = 0;
  std::string s_;
  std::vector<Json> items_;
  std::vector<std::pair<std::string, Json>> members_;
};

}  // namespace gpucheck
