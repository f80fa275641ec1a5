#include "cluster/frame.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

namespace cmax::cluster {
namespace {

constexpr std::string_view kMagic = "@cmax1 ";
constexpr std::size_t kMaxOther = 4096;
constexpr std::size_t kMaxLine = 2 * kFrameChunk + 64;  // longer than any frame line

// "  3: rest" -> (3, "rest"); anything else -> (-1, whole line).
std::pair<int, std::string_view> split_label(std::string_view line) {
  std::size_t i = 0;
  while (i < line.size() && line[i] == ' ') ++i;
  std::size_t digits = i;
  while (digits < line.size() && line[digits] >= '0' && line[digits] <= '9') ++digits;
  if (digits == i || digits + 1 >= line.size() || line[digits] != ':' || line[digits + 1] != ' ') return {-1, line};
  int task = 0;
  auto [p, ec] = std::from_chars(line.data() + i, line.data() + digits, task);
  if (ec != std::errc() || p != line.data() + digits) return {-1, line};
  return {task, line.substr(digits + 2)};
}

template <class T>
bool parse_number(std::string_view s, T& out, int base = 10) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, base);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

std::uint64_t fnv1a64(std::string_view bytes) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string encode_frames(std::string_view node, std::string_view document) {
  std::string out;
  out.reserve(document.size() + document.size() / kFrameChunk * 10 + 128);
  out += fmt::format("{}B {} {} {:016x}\n", kMagic, node.empty() ? "-" : node, document.size(), fnv1a64(document));
  for (std::size_t i = 0; i < document.size(); i += kFrameChunk) {
    out += kMagic;
    out += "D ";
    out += document.substr(i, kFrameChunk);
    out += '\n';
  }
  out += kMagic;
  out += "E\n";
  return out;
}

void FrameDecoder::feed(std::string_view bytes) {
  while (!bytes.empty()) {
    auto nl = bytes.find('\n');
    if (nl == std::string_view::npos) {
      // Bounded: a line longer than any frame is noise; keep only its start.
      if (pending_.size() < kMaxLine) pending_.append(bytes.substr(0, kMaxLine - pending_.size()));
      return;
    }
    if (pending_.empty()) {
      // The same clip as a line that arrives in pieces, so the result does not depend on them.
      line(bytes.substr(0, std::min(nl, kMaxLine)));
    } else {
      if (pending_.size() < kMaxLine) pending_.append(bytes.substr(0, std::min(nl, kMaxLine - pending_.size())));
      line(pending_);
      pending_.clear();
    }
    bytes.remove_prefix(nl + 1);
  }
}

void FrameDecoder::line(std::string_view text) {
  if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
  // Plain variables, not a structured binding: clang 14 cannot capture one in the lambda below.
  const auto labelled = split_label(text);
  const int task = labelled.first;
  auto rest = labelled.second;
  if (!rest.starts_with(kMagic)) {
    auto& o = other_[task];
    if (o.size() < kMaxOther && !rest.empty()) {
      o.append(rest.substr(0, kMaxOther - o.size()));
      o += '\n';
    }
    return;
  }
  rest.remove_prefix(kMagic.size());
  auto& t = tasks_[task];
  auto report = [&](std::string error) {
    FramedDocument d{task, t.node, error.empty() ? std::move(t.data) : std::string(), std::move(error)};
    t = Partial{};
    on_document_(std::move(d));
  };
  if (rest.starts_with("B ")) {
    if (t.open) report("a new document began before the last one ended (truncated output)");
    auto f = rest.substr(2);
    auto s1 = f.find(' ');
    auto s2 = s1 == std::string_view::npos ? s1 : f.find(' ', s1 + 1);
    std::size_t bytes = 0;
    std::uint64_t hash = 0;
    if (s2 == std::string_view::npos || !parse_number(f.substr(s1 + 1, s2 - s1 - 1), bytes) ||
        !parse_number(f.substr(s2 + 1), hash, 16)) {
      t = Partial{};
      t.node = std::string(f.substr(0, std::min(s1, f.size())));
      report(fmt::format("malformed begin frame \"{}\"", f.substr(0, 120)));
      return;
    }
    t = Partial{std::string(f.substr(0, s1)), {}, bytes, hash, true};
    if (bytes > max_bytes_) report(fmt::format("document of {} bytes is over the {}-byte limit", bytes, max_bytes_));
    else t.data.reserve(std::min<std::size_t>(bytes, 1u << 20));  // announced, not yet sent: trust it only so far
    return;
  }
  if (!t.open) return;  // data or end without a begin: a stray line, ignored
  if (rest.starts_with("D ")) {
    auto d = rest.substr(2);
    if (t.data.size() + d.size() > t.expect_bytes) {
      report(fmt::format("more data than the {} bytes announced", t.expect_bytes));
      return;
    }
    t.data.append(d);
    return;
  }
  if (rest == "E") {
    if (t.data.size() != t.expect_bytes)
      return report(fmt::format("document truncated: {} of {} bytes", t.data.size(), t.expect_bytes));
    if (fnv1a64(t.data) != t.expect_hash) return report("document corrupted: hash mismatch");
    return report({});
  }
}

void FrameDecoder::finish() {
  if (!pending_.empty()) {
    line(pending_);
    pending_.clear();
  }
  for (auto& [task, t] : tasks_) {
    if (!t.open) continue;
    FramedDocument d{task, t.node, {}, fmt::format("output ended inside the document ({} of {} bytes)", t.data.size(), t.expect_bytes)};
    t = Partial{};
    on_document_(std::move(d));
  }
}

}  // namespace cmax::cluster
