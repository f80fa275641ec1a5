#include "audit/parse/kv_conf.h"

#include "core/strings.h"

namespace cmax::audit {
namespace {

std::string_view strip_comment(std::string_view line) {
  char quote = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#') {
      return line.substr(0, i);
    }
  }
  return line;
}

}  // namespace

std::vector<KvEntry> parse_kv_conf(std::string_view text) {
  std::vector<KvEntry> out;
  int n = 0;
  for (auto raw : core::split_lines(text)) {
    ++n;
    auto line = core::trim(strip_comment(raw));
    if (line.starts_with("export ")) line = core::trim(line.substr(7));
    auto kv = core::parse_key_value(line);
    if (!kv) continue;
    // A key is one word: "NodeName=n1 CPUs=2" has key NodeName; "foo bar=1" is not an entry.
    if (kv->key.find_first_of(" \t") != std::string_view::npos) continue;
    out.push_back({std::string(kv->key), std::string(core::unquote(kv->value)), n});
  }
  return out;
}

const KvEntry* find_kv(const std::vector<KvEntry>& entries, std::string_view key) {
  const KvEntry* found = nullptr;
  std::string want = core::to_lower(key);
  for (const auto& e : entries)
    if (core::to_lower(e.key) == want) found = &e;
  return found;
}

}  // namespace cmax::audit
