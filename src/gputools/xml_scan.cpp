#include "gputools/xml_scan.h"

#include <fmt/format.h>

#include <charconv>

namespace cmax::gputools {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// XML name characters, simplified: ASCII letters, digits, '_', '-', '.', ':' and any non-ASCII
// byte (a UTF-8 name passes through unchecked; nvidia-smi uses ASCII names only).
bool is_name_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  return (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') || u == '_' ||
         u == '-' || u == '.' || u == ':' || u >= 0x80;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Decodes the predefined entities and character references of `raw` into `out`. Returns an
// empty string on success, else what is wrong.
std::string decode(std::string_view raw, std::string& out) {
  out.reserve(out.size() + raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '&') {
      out += raw[i];
      continue;
    }
    // The longest valid reference is "&#x10FFFF;" (10 bytes); a bound keeps a stray '&' cheap.
    const std::size_t semi = raw.substr(i, 12).find(';');
    if (semi == std::string_view::npos)
      return fmt::format("unterminated entity at '{}'", raw.substr(i, 10));
    const std::string_view name = raw.substr(i + 1, semi - 1);
    i += semi;
    if (name == "lt")
      out += '<';
    else if (name == "gt")
      out += '>';
    else if (name == "amp")
      out += '&';
    else if (name == "quot")
      out += '"';
    else if (name == "apos")
      out += '\'';
    else if (name.size() >= 2 && name[0] == '#') {
      const bool hex = name[1] == 'x' || name[1] == 'X';
      const std::string_view digits = name.substr(hex ? 2 : 1);
      std::uint32_t cp = 0;
      auto [end, ec] =
          std::from_chars(digits.data(), digits.data() + digits.size(), cp, hex ? 16 : 10);
      if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || cp == 0 ||
          cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return fmt::format("invalid character reference &{};", name);
      append_utf8(out, static_cast<char32_t>(cp));
    } else {
      return fmt::format("unknown entity &{};", name);
    }
  }
  return {};
}

}  // namespace

XmlScanner::XmlScanner(std::string_view doc, std::size_t max_depth)
    : doc_(doc), max_depth_(max_depth) {
  if (doc_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;  // a UTF-8 byte order mark
}

Unexpected<Error> XmlScanner::error(std::string_view what) const {
  return fail("line {} (offset {}): {}", line_, pos_, what);
}

void XmlScanner::advance(std::size_t n) {
  n = std::min(n, doc_.size() - pos_);
  for (std::size_t i = 0; i < n; ++i) line_ += doc_[pos_ + i] == '\n';
  pos_ += n;
}

bool XmlScanner::skip_past(std::string_view end) {
  const std::size_t at = doc_.find(end, pos_);
  if (at == std::string_view::npos) return false;
  advance(at + end.size() - pos_);
  return true;
}

Result<std::optional<XmlEvent>> XmlScanner::next() {
  if (failed_)
    return fail("line {} (offset {}): the scan stopped at an earlier error", line_, pos_);
  if (pending_close_) {
    std::optional<XmlEvent> out = std::move(pending_close_);
    pending_close_.reset();
    return out;
  }
  while (true) {
    if (pos_ >= doc_.size()) {
      if (!stack_.empty()) {
        failed_ = true;
        return error(fmt::format("unexpected end of input: <{}> is not closed (truncated output?)",
                                 stack_.back()));
      }
      if (!root_seen_) {
        failed_ = true;
        return error("no root element");
      }
      return std::optional<XmlEvent>{};
    }
    auto r = doc_[pos_] == '<' ? markup() : text_run();
    if (!r) {
      failed_ = true;
      return r;
    }
    if (*r) return r;  // otherwise something skipped: a comment, a prolog, whitespace
  }
}

Result<std::optional<XmlEvent>> XmlScanner::markup() {
  const std::string_view rest = doc_.substr(pos_);
  if (rest.starts_with("<?")) {
    if (!skip_past("?>")) return error("unterminated processing instruction");
    return std::optional<XmlEvent>{};
  }
  if (rest.starts_with("<!--")) {
    if (!skip_past("-->")) return error("unterminated comment");
    return std::optional<XmlEvent>{};
  }
  if (rest.starts_with("<![CDATA[")) {
    if (stack_.empty()) return error("CDATA outside the root element");
    XmlEvent ev;
    ev.line = line_;
    const std::size_t end = rest.find("]]>");
    if (end == std::string_view::npos) return error("unterminated CDATA section");
    ev.text = std::string(rest.substr(9, end - 9));
    advance(end + 3);
    return std::optional<XmlEvent>{std::move(ev)};
  }
  if (rest.starts_with("<!")) {
    if (root_seen_) return error("a declaration after the root element started");
    // DOCTYPE with an optional internal subset in brackets; quotes may hide '>' or ']'.
    int brackets = 0;
    char quote = 0;
    for (std::size_t i = 2; i < rest.size(); ++i) {
      const char c = rest[i];
      if (quote) {
        if (c == quote) quote = 0;
      } else if (c == '"' || c == '\'') {
        quote = c;
      } else if (c == '[') {
        ++brackets;
      } else if (c == ']') {
        --brackets;
      } else if (c == '>' && brackets <= 0) {
        advance(i + 1);
        return std::optional<XmlEvent>{};
      }
    }
    return error("unterminated declaration (<!DOCTYPE ...>)");
  }
  if (rest.starts_with("</")) return close_tag();
  return open_tag();
}

Result<std::optional<XmlEvent>> XmlScanner::open_tag() {
  if (root_seen_ && stack_.empty()) return error("a second root element");
  if (stack_.size() >= max_depth_)
    return error(fmt::format("elements nested deeper than {}", max_depth_));
  XmlEvent ev;
  ev.kind = XmlEvent::Kind::open;
  ev.line = line_;
  std::size_t i = pos_ + 1;
  while (i < doc_.size() && is_name_char(doc_[i])) ++i;
  ev.name = std::string(doc_.substr(pos_ + 1, i - pos_ - 1));
  if (ev.name.empty()) return error("expected an element name after '<'");
  bool self_closing = false;
  while (true) {
    while (i < doc_.size() && is_space(doc_[i])) ++i;
    if (i >= doc_.size()) return error(fmt::format("unterminated tag <{}", ev.name));
    if (doc_[i] == '>') {
      ++i;
      break;
    }
    if (doc_[i] == '/') {
      if (i + 1 >= doc_.size() || doc_[i + 1] != '>')
        return error(fmt::format("stray '/' in tag <{}>", ev.name));
      self_closing = true;
      i += 2;
      break;
    }
    const std::size_t key_start = i;
    while (i < doc_.size() && is_name_char(doc_[i])) ++i;
    std::string key(doc_.substr(key_start, i - key_start));
    if (key.empty()) return error(fmt::format("unexpected '{}' in tag <{}>", doc_[i], ev.name));
    while (i < doc_.size() && is_space(doc_[i])) ++i;
    if (i >= doc_.size() || doc_[i] != '=')
      return error(fmt::format("attribute {} of <{}> has no '=' and value", key, ev.name));
    ++i;
    while (i < doc_.size() && is_space(doc_[i])) ++i;
    if (i >= doc_.size() || (doc_[i] != '"' && doc_[i] != '\''))
      return error(fmt::format("attribute {} of <{}> has an unquoted value", key, ev.name));
    const char quote = doc_[i++];
    const std::size_t end = doc_.find(quote, i);
    if (end == std::string_view::npos)
      return error(fmt::format("unterminated value of attribute {}", key));
    const std::string_view raw = doc_.substr(i, end - i);
    if (raw.find('<') != std::string_view::npos)
      return error(fmt::format("'<' in the value of attribute {}", key));
    for (const auto& [k, v] : ev.attributes)
      if (k == key) return error(fmt::format("duplicate attribute {} in <{}>", key, ev.name));
    std::string value;
    if (auto bad = decode(raw, value); !bad.empty()) return error(bad);
    ev.attributes.emplace_back(std::move(key), std::move(value));
    i = end + 1;
  }
  advance(i - pos_);
  root_seen_ = true;
  if (self_closing) {
    pending_close_ = XmlEvent{XmlEvent::Kind::close, ev.name, {}, {}, ev.line};
  } else {
    stack_.push_back(ev.name);
  }
  return std::optional<XmlEvent>{std::move(ev)};
}

Result<std::optional<XmlEvent>> XmlScanner::close_tag() {
  std::size_t i = pos_ + 2;
  while (i < doc_.size() && is_name_char(doc_[i])) ++i;
  std::string name(doc_.substr(pos_ + 2, i - pos_ - 2));
  while (i < doc_.size() && is_space(doc_[i])) ++i;
  if (name.empty() || i >= doc_.size() || doc_[i] != '>')
    return error(fmt::format("malformed closing tag </{}", name));
  if (stack_.empty()) return error(fmt::format("closing tag </{}> without an open element", name));
  if (stack_.back() != name)
    return error(
        fmt::format("closing tag </{}> does not match the open <{}>", name, stack_.back()));
  stack_.pop_back();
  XmlEvent ev{XmlEvent::Kind::close, std::move(name), {}, {}, line_};
  advance(i + 1 - pos_);
  return std::optional<XmlEvent>{std::move(ev)};
}

Result<std::optional<XmlEvent>> XmlScanner::text_run() {
  const std::size_t end = std::min(doc_.find('<', pos_), doc_.size());
  const std::string_view raw = doc_.substr(pos_, end - pos_);
  if (stack_.empty()) {
    if (!trim(raw).empty())
      return error(root_seen_ ? "text after the root element" : "text before the root element");
    advance(raw.size());
    return std::optional<XmlEvent>{};
  }
  XmlEvent ev;
  ev.line = line_;
  if (auto bad = decode(raw, ev.text); !bad.empty()) return error(bad);
  advance(raw.size());
  return std::optional<XmlEvent>{std::move(ev)};
}

const XmlElement* XmlElement::child(std::string_view child_name) const {
  for (const auto& c : children)
    if (c.name == child_name) return &c;
  return nullptr;
}

const XmlElement* XmlElement::find(std::string_view path) const {
  const XmlElement* at = this;
  while (at && !path.empty()) {
    const std::size_t slash = path.find('/');
    at = at->child(path.substr(0, slash));
    path = slash == std::string_view::npos ? std::string_view{} : path.substr(slash + 1);
  }
  return at;
}

std::optional<std::string_view> XmlElement::attribute(std::string_view key) const {
  for (const auto& [k, v] : attributes)
    if (k == key) return std::string_view(v);
  return std::nullopt;
}

Result<XmlElement> parse_xml(std::string_view doc, std::string_view what, std::size_t max_depth) {
  XmlScanner scanner(doc, max_depth);
  std::vector<XmlElement> open;  // the explicit stack: no recursion however deep the input
  std::optional<XmlElement> root;
  while (true) {
    auto ev = scanner.next();
    if (!ev) return fail("{}: {}", what, ev.error().message);
    if (!*ev) break;
    XmlEvent& e = **ev;
    switch (e.kind) {
      case XmlEvent::Kind::open:
        open.push_back(XmlElement{std::move(e.name), std::move(e.attributes), {}, {}, e.line});
        break;
      case XmlEvent::Kind::text:
        open.back().text += e.text;
        break;
      case XmlEvent::Kind::close: {
        XmlElement done = std::move(open.back());
        open.pop_back();
        done.text = std::string(trim(done.text));
        if (open.empty())
          root = std::move(done);
        else
          open.back().children.push_back(std::move(done));
        break;
      }
    }
  }
  if (!root) return fail("{}: no root element", what);
  return std::move(*root);
}

}  // namespace cmax::gputools
