#include "sla/json_out.h"

#include <charconv>
#include <cmath>

#include <nlohmann/json.hpp>

namespace cmax::sla {
namespace {

// Bytes nlohmann copies unescaped: printable ASCII but the quote and the backslash.
bool plain(std::string_view s) {
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') return false;
  }
  return true;
}

}  // namespace

std::string JsonOut::quote(std::string_view s) {
  if (plain(s)) {
    std::string q;
    q.reserve(s.size() + 2);
    q += '"';
    q += s;
    q += '"';
    return q;
  }
  // The rare string with escapes or UTF-8 takes nlohmann's own path, so both agree byte for byte.
  return nlohmann::json(std::string(s)).dump();
}

void JsonOut::quote_into(std::string_view s) {
  if (plain(s)) {
    out_ += '"';
    out_ += s;
    out_ += '"';
  } else {
    out_ += quote(s);
  }
}

void JsonOut::element() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (counts_.empty()) return;
  out_ += counts_.back()++ == 0 ? "\n" : ",\n";
  out_.append(2 * counts_.size(), ' ');
}

void JsonOut::open(char bracket) {
  element();
  out_ += bracket;
  counts_.push_back(0);
}

void JsonOut::close(char bracket) {
  const std::uint32_t n = counts_.back();
  counts_.pop_back();
  if (n > 0) {
    out_ += '\n';
    out_.append(2 * counts_.size(), ' ');
  }
  out_ += bracket;
}

void JsonOut::key(std::string_view k) {
  element();
  quote_into(k);
  out_ += ": ";
  after_key_ = true;
}

void JsonOut::value(std::string_view s) {
  element();
  quote_into(s);
}

void JsonOut::value(std::int64_t v) {
  element();
  char buf[24];
  out_.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}

void JsonOut::value(std::uint64_t v) {
  element();
  char buf[24];
  out_.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}

void JsonOut::value(double v) {
  element();
  if (!std::isfinite(v)) {
    out_ += "null";
    return;
  }
  // nlohmann's own shortest form (Grisu2, ".0" on integral values, "1e+16" past 15 digits).
  char buf[64];
  out_.append(buf, nlohmann::detail::to_chars(buf, buf + sizeof buf, v));
}

void JsonOut::value(bool v) {
  element();
  out_ += v ? "true" : "false";
}

void JsonOut::null() {
  element();
  out_ += "null";
}

void JsonOut::raw(std::string_view json) {
  element();
  out_ += json;
}

}  // namespace cmax::sla
