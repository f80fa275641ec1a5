#include "json_out.h"

#include <cmath>
#include <cstdio>

namespace gpucheck {

namespace {

void quote(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void indent(std::string& out, int depth) { out.append(static_cast<std::size_t>(depth) * 2, ' '); }

}  // namespace

Json::Json(const std::vector<std::string>& v) : kind_(Kind::array) {
  for (const auto& s : v) items_.emplace_back(s);
}

Json& Json::operator[](const std::string& key) {
  if (kind_ == Kind::null) kind_ = Kind::object;
  for (auto& [k, v] : members_)
    if (k == key) return v;
  members_.emplace_back(key, Json());
  return members_.back().second;
}

bool Json::contains(const std::string& key) const {
  for (const auto& m : members_)
    if (m.first == key) return true;
  return false;
}

std::string Json::string_at(const std::string& key) const {
  for (const auto& [k, v] : members_)
    if (k == key && v.kind_ == Kind::string) return v.s_;
  return {};
}

void Json::push_back(Json v) {
  if (kind_ == Kind::null) kind_ = Kind::array;
  items_.push_back(std::move(v));
}

std::string Json::dump() const {
  std::string out;
  write(out, 0);
  return out;
}

void Json::write(std::string& out, int depth) const {
  char buf[64];
  switch (kind_) {
    case Kind::null: out += "null"; break;
    case Kind::boolean: out += b_ ? "true" : "false"; break;
    case Kind::integer: out += std::to_string(i_); break;
    case Kind::unsigned_integer: out += std::to_string(u_); break;
    case Kind::real:
      if (!std::isfinite(d_)) {
        out += "null";
      } else {
        std::snprintf(buf, sizeof buf, "%.10g", d_);
        out += buf;
      }
      break;
    case Kind::string: quote(out, s_); break;
    case Kind::array:
      if (items_.empty()) {
        out += "[]";
        break;
      }
      out += "[\n";
      for (std::size_t i = 0; i < items_.size(); ++i) {
        indent(out, depth + 1);
        items_[i].write(out, depth + 1);
        out += i + 1 < items_.size() ? ",\n" : "\n";
      }
      indent(out, depth);
      out += ']';
      break;
    case Kind::object:
      if (members_.empty()) {
        out += "{}";
        break;
      }
      out += "{\n";
      for (std::size_t i = 0; i < members_.size(); ++i) {
        indent(out, depth + 1);
        quote(out, members_[i].first);
        out += ": ";
        members_[i].second.write(out, depth + 1);
        out += i + 1 < members_.size() ? ",\n" : "\n";
      }
      indent(out, depth);
      out += '}';
      break;
  }
}

}  // namespace gpucheck
