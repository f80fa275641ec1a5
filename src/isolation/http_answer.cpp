#include "isolation/http_answer.h"

#include <charconv>

#include "core/strings.h"

namespace cmax::isolation {
namespace {

struct Head {
  int status = 0;
  std::string_view reason;
  std::string_view content_type;
  std::string_view location;
  std::optional<std::size_t> content_length;
  bool chunked = false;
  std::size_t body_offset = 0;
};

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

std::optional<Head> parse_head(std::string_view raw) {
  auto end = raw.find("\r\n\r\n");
  std::size_t sep = 4;
  if (end == std::string_view::npos) {
    end = raw.find("\n\n");
    sep = 2;
  }
  if (end == std::string_view::npos) return std::nullopt;
  Head h;
  h.body_offset = end + sep;
  auto lines = core::split_lines(raw.substr(0, end));
  if (lines.empty()) return std::nullopt;
  std::string_view status_line = core::trim(lines[0]);
  if (status_line.substr(0, 7) != "HTTP/1." || status_line.size() < 12 || status_line[8] != ' ')
    return std::nullopt;
  auto code = status_line.substr(9, 3);
  auto [p, ec] = std::from_chars(code.data(), code.data() + code.size(), h.status);
  if (ec != std::errc() || p != code.data() + 3 || h.status < 100 || h.status > 999)
    return std::nullopt;
  if (status_line.size() > 13) h.reason = core::trim(status_line.substr(13));
  for (std::size_t i = 1; i < lines.size(); ++i) {
    auto colon = lines[i].find(':');
    if (colon == std::string_view::npos) continue;
    auto name = core::trim(lines[i].substr(0, colon));
    auto value = core::trim(lines[i].substr(colon + 1));
    if (iequals(name, "content-type")) {
      h.content_type = core::trim(value.substr(0, value.find(';')));
    } else if (iequals(name, "location")) {
      h.location = value;
    } else if (iequals(name, "content-length")) {
      if (auto n = core::parse_uint(value)) h.content_length = static_cast<std::size_t>(*n);
    } else if (iequals(name, "transfer-encoding")) {
      h.chunked = core::contains_icase(value, "chunked");
    }
  }
  return h;
}

// De-chunks `data`; sets `last` when the terminating zero-size chunk was seen.
std::string dechunk(std::string_view data, bool &last) {
  std::string out;
  last = false;
  while (!data.empty()) {
    auto eol = data.find("\r\n");
    if (eol == std::string_view::npos) break;
    auto size_text = core::trim(data.substr(0, data.substr(0, eol).find(';')));
    std::size_t size = 0;
    auto [p, ec] = std::from_chars(size_text.data(), size_text.data() + size_text.size(), size, 16);
    if (ec != std::errc() || size_text.empty()) break;
    data.remove_prefix(eol + 2);
    if (size == 0) {
      last = true;
      break;
    }
    if (data.size() < size) {
      out.append(data);
      break;
    }
    out.append(data.substr(0, size));
    data.remove_prefix(std::min(data.size(), size + 2));
  }
  return out;
}

}  // namespace

std::optional<HttpAnswer> parse_http_answer(std::string_view raw, bool closed) {
  auto head = parse_head(raw);
  if (!head) return std::nullopt;
  HttpAnswer a;
  a.status = head->status;
  a.reason = std::string(head->reason);
  a.content_type = core::to_lower(head->content_type);
  a.location = std::string(head->location);
  std::string_view body = raw.substr(head->body_offset);
  if (head->chunked) {
    bool last = false;
    a.body = dechunk(body, last);
    a.complete = last;
  } else if (head->content_length) {
    a.body = std::string(body.substr(0, *head->content_length));
    a.complete = body.size() >= *head->content_length;
  } else {
    a.body = std::string(body);
    a.complete = closed || a.status == 204 || a.status == 304 || a.status < 200;
  }
  return a;
}

bool http_answer_complete(std::string_view raw) {
  auto head = parse_head(raw);
  if (!head) return false;
  std::string_view body = raw.substr(head->body_offset);
  if (head->chunked) {
    bool last = false;
    dechunk(body, last);
    return last;
  }
  if (head->content_length) return body.size() >= *head->content_length;
  return head->status == 204 || head->status == 304 || head->status < 200;
}

}  // namespace cmax::isolation
