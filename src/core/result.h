#pragma once
// cmax::Result<T>: a value or an Error, shaped like std::expected so a move to C++23 is an alias.

#include <cassert>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace cmax {

/// An error message written for an operator: names the action and the resource, then what to do.
struct Error {
  std::string message;
};

/// Wraps an Error for construction of a failed Result, like std::unexpected.
template <class E = Error>
struct Unexpected {
  E error;
};

/// Builds a failed Result from a format string: `return fail("open {}: {}", path, strerror(errno));`
template <class... Args>
Unexpected<Error> fail(fmt::format_string<Args...> format, Args&&... args) {
  return Unexpected<Error>{Error{fmt::format(format, std::forward<Args>(args)...)}};
}

/// A value of type T or an Error. Not thread-safe; cheap to move.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit like expected
  Result(Unexpected<Error> error) : state_(std::in_place_index<1>, std::move(error.error)) {}  // NOLINT

  bool has_value() const { return state_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & {
    assert(has_value());
    return std::get<0>(state_);
  }
  const T& value() const& {
    assert(has_value());
    return std::get<0>(state_);
  }
  T&& value() && {
    assert(has_value());
    return std::get<0>(std::move(state_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const {
    assert(!has_value());
    return std::get<1>(state_);
  }

  template <class U>
  T value_or(U&& fallback) const& {
    return has_value() ? value() : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  std::variant<T, Error> state_;
};

/// Result<void>: success or an Error.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Unexpected<Error> error) : error_(std::move(error.error)), ok_(false) {}  // NOLINT

  bool has_value() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const {
    assert(!ok_);
    return error_;
  }

 private:
  Error error_;
  bool ok_ = true;
};

/// Success value for Result<void>.
inline Result<void> ok() { return {}; }

}  // namespace cmax
