#include "core/version.h"

#include <algorithm>
#include <array>
#include <charconv>

#include "core/strings.h"

namespace cmax::core {
namespace {

constexpr std::size_t kMaxParts = 16;
constexpr std::size_t kMaxVersionChars = 256;

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

struct TagName {
  std::string_view name;
  PreTag tag;
};
// Longest names first so "preview" is not read as "pre" + "view".
constexpr std::array<TagName, 7> kTags{{{"preview", PreTag::pre},
                                        {"alpha", PreTag::alpha},
                                        {"beta", PreTag::beta},
                                        {"pre", PreTag::pre},
                                        {"dev", PreTag::dev},
                                        {"rc", PreTag::rc},
                                        {"b", PreTag::beta}}};

// Reads a pre-release tag at the start of `s` ("rc3", "rc.3", "beta-1", "rc"). On success
// advances `s` past it.
bool read_pre(std::string_view& s, PreTag& tag, std::uint64_t& number) {
  for (const auto& t : kTags) {
    if (s.size() < t.name.size()) continue;
    if (to_lower(s.substr(0, t.name.size())) != t.name) continue;
    std::string_view rest = s.substr(t.name.size());
    // The tag must end the token or be followed by a number or separator, not more letters
    // ("1.0-debian" is a suffix, not "dev").
    if (!rest.empty() && is_alpha(rest[0])) continue;
    if (t.name == "b" && (rest.empty() || !is_digit(rest[0]))) continue;
    std::string_view num = rest;
    if (!num.empty() && (num[0] == '.' || num[0] == '-' || num[0] == '_') && num.size() > 1 && is_digit(num[1]))
      num.remove_prefix(1);
    std::size_t n = 0;
    while (n < num.size() && is_digit(num[n])) ++n;
    number = 0;
    if (n > 0) {
      if (n > 19) return false;
      std::from_chars(num.data(), num.data() + n, number);
      rest = num.substr(n);
    }
    tag = t.tag;
    s = rest;
    return true;
  }
  return false;
}

// dpkg's character order: '~' before everything (even the end), then the end, then letters,
// then everything else.
int dpkg_order(int c) {
  if (is_digit(static_cast<char>(c))) return 0;
  if (is_alpha(static_cast<char>(c))) return c;
  if (c == '~') return -1;
  if (c) return c + 256;
  return 0;
}

// dpkg's verrevcmp from lib/dpkg/version.c, over string_views.
int verrevcmp(std::string_view a, std::string_view b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    int first_diff = 0;
    while ((i < a.size() && !is_digit(a[i])) || (j < b.size() && !is_digit(b[j]))) {
      int ac = i < a.size() ? dpkg_order(static_cast<unsigned char>(a[i])) : 0;
      int bc = j < b.size() ? dpkg_order(static_cast<unsigned char>(b[j])) : 0;
      if (ac != bc) return ac - bc;
      ++i;
      ++j;
    }
    while (i < a.size() && a[i] == '0') ++i;
    while (j < b.size() && b[j] == '0') ++j;
    while (i < a.size() && is_digit(a[i]) && j < b.size() && is_digit(b[j])) {
      if (!first_diff) first_diff = a[i] - b[j];
      ++i;
      ++j;
    }
    if (i < a.size() && is_digit(a[i])) return 1;
    if (j < b.size() && is_digit(b[j])) return -1;
    if (first_diff) return first_diff;
  }
  return 0;
}

struct DpkgParts {
  std::uint64_t epoch = 0;
  std::string_view upstream;
  std::string_view revision;
};

DpkgParts split_dpkg(std::string_view v) {
  DpkgParts p;
  v = trim(v);
  auto colon = v.find(':');
  if (colon != std::string_view::npos) {
    auto e = parse_uint(v.substr(0, colon));
    if (e) {
      p.epoch = *e;
      v.remove_prefix(colon + 1);
    }
  }
  auto dash = v.rfind('-');
  if (dash != std::string_view::npos) {
    p.upstream = v.substr(0, dash);
    p.revision = v.substr(dash + 1);
  } else {
    p.upstream = v;
  }
  return p;
}

}  // namespace

Result<Version> parse_version(std::string_view text) {
  std::string_view s = trim(text);
  if (s.empty()) return fail("not a version: empty string");
  if (s.size() > kMaxVersionChars) return fail("not a version: {} characters is too long", s.size());
  Version v;
  v.text = std::string(s);
  if (s.size() > 1 && (s[0] == 'v' || s[0] == 'V' || s[0] == 'R' || s[0] == 'r') && is_digit(s[1]))
    s.remove_prefix(1);
  // Epoch: digits then ':' at the start.
  {
    std::size_t n = 0;
    while (n < s.size() && is_digit(s[n])) ++n;
    if (n > 0 && n < s.size() && s[n] == ':') {
      auto e = parse_uint(s.substr(0, n));
      if (!e) return fail("not a version: epoch in '{}' is out of range", clip(v.text, 60));
      v.epoch = *e;
      s.remove_prefix(n + 1);
    }
  }
  if (s.empty() || !is_digit(s[0])) return fail("not a version: '{}' does not start with a number", clip(v.text, 60));
  while (!s.empty() && is_digit(s[0])) {
    std::size_t n = 0;
    while (n < s.size() && is_digit(s[n])) ++n;
    if (n > 19) return fail("not a version: component of {} digits in '{}'", n, clip(v.text, 60));
    std::uint64_t part = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + n, part);
    if (ec != std::errc()) return fail("not a version: component out of range in '{}'", clip(v.text, 60));
    if (v.parts.size() == kMaxParts) return fail("not a version: more than {} components in '{}'", kMaxParts, clip(v.text, 60));
    v.parts.push_back(part);
    s.remove_prefix(n);
    if (s.size() > 1 && s[0] == '.' && is_digit(s[1])) {
      s.remove_prefix(1);
      continue;
    }
    break;
  }
  // A pre-release directly ("1.4.0rc3") or after one separator ("-rc.3", "~rc3", ".beta1").
  {
    std::string_view probe = s;
    if (!probe.empty() && (probe[0] == '-' || probe[0] == '~' || probe[0] == '.' || probe[0] == '_'))
      probe.remove_prefix(1);
    PreTag tag;
    std::uint64_t number = 0;
    if (!probe.empty() && is_alpha(probe[0]) && read_pre(probe, tag, number)) {
      v.pre_tag = tag;
      v.pre_number = number;
      s = probe;
    }
  }
  v.suffix = std::string(s);
  return v;
}

int compare_versions(const Version& a, const Version& b) {
  if (a.epoch != b.epoch) return a.epoch < b.epoch ? -1 : 1;
  std::size_t n = std::max(a.parts.size(), b.parts.size());
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t x = i < a.parts.size() ? a.parts[i] : 0;
    std::uint64_t y = i < b.parts.size() ? b.parts[i] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  if (a.pre_tag.has_value() != b.pre_tag.has_value()) return a.pre_tag ? -1 : 1;
  if (a.pre_tag) {
    if (*a.pre_tag != *b.pre_tag) return *a.pre_tag < *b.pre_tag ? -1 : 1;
    if (a.pre_number != b.pre_number) return a.pre_number < b.pre_number ? -1 : 1;
  }
  int c = verrevcmp(a.suffix, b.suffix);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

bool in_train(const Version& v, const Version& train) {
  if (train.parts.empty() || train.parts.size() > v.parts.size()) return false;
  return std::equal(train.parts.begin(), train.parts.end(), v.parts.begin());
}

PackageVersion split_package_version(std::string_view text) {
  PackageVersion out;
  std::string_view v = trim(text);
  if (auto colon = v.find(':'); colon != std::string_view::npos) {
    if (auto e = parse_uint(v.substr(0, colon))) {
      out.epoch = *e;
      v.remove_prefix(colon + 1);
    }
  }
  std::string_view upstream = v, revision;
  if (auto dash = v.rfind('-'); dash != std::string_view::npos) {
    revision = v.substr(dash + 1);
    upstream = v.substr(0, dash);
    // "1.4.0-rc.3", "2.0-beta1": a pre-release of the upstream release, not a packager's revision.
    std::string_view probe = revision;
    PreTag tag;
    std::uint64_t number = 0;
    if (!probe.empty() && is_alpha(probe[0]) && read_pre(probe, tag, number) &&
        (probe.empty() || probe[0] == '.' || is_digit(probe[0]))) {
      upstream = v;
      revision = {};
    }
  }
  out.upstream = std::string(upstream);
  out.revision = std::string(revision);
  return out;
}

Result<Version> parse_package_upstream(std::string_view text) {
  const PackageVersion p = split_package_version(text);
  // A second colon would read as another epoch: no release numbering has one.
  if (p.upstream.find(':') != std::string::npos)
    return fail("not a package version: '{}' has a colon after its epoch", clip(trim(text), 60));
  auto v = parse_version(p.upstream);
  if (!v) return fail("not a package version: '{}': {}", clip(trim(text), 60), v.error().message);
  v->text = std::string(trim(text));
  return v;
}

int dpkg_compare(std::string_view a, std::string_view b) {
  DpkgParts x = split_dpkg(a), y = split_dpkg(b);
  if (x.epoch != y.epoch) return x.epoch < y.epoch ? -1 : 1;
  int c = verrevcmp(x.upstream, y.upstream);
  if (c == 0) c = verrevcmp(x.revision, y.revision);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

std::optional<std::string_view> find_version_token(std::string_view text, std::string_view after_word) {
  if (!after_word.empty()) {
    std::string lower = to_lower(text);
    auto at = lower.find(to_lower(after_word));
    if (at != std::string::npos) text.remove_prefix(at + after_word.size());
  }
  auto token_char = [](char c) {
    return is_digit(c) || is_alpha(c) || c == '.' || c == '-' || c == '+' || c == '~' || c == ':' || c == '_';
  };
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && !token_char(text[i])) ++i;
    std::size_t start = i;
    while (i < text.size() && token_char(text[i])) ++i;
    std::string_view tok = text.substr(start, i - start);
    if (tok.size() > 1 && (tok[0] == 'v' || tok[0] == 'V') && is_digit(tok[1])) tok.remove_prefix(1);
    while (!tok.empty() && (tok.back() == '.' || tok.back() == ':' || tok.back() == '-')) tok.remove_suffix(1);
    if (!tok.empty() && is_digit(tok[0]) && tok.find('.') != std::string_view::npos) {
      std::size_t k = 0;
      while (k < tok.size() && is_digit(tok[k])) ++k;
      if (k < tok.size() && tok[k] == '.' && k + 1 < tok.size() && is_digit(tok[k + 1])) return tok;
    }
  }
  return std::nullopt;
}

}  // namespace cmax::core
