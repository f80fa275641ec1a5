// Deterministic generator for the `cmax sla` bench (issue 10).
// Usage: gen_sla_events EVENTS_CSV CONTRACT_JSON [CHANGES] [NODES] [SEED]
// Writes CHANGES (default 10,000,000) node state changes over NODES (default 100,000) nodes through
// calendar year 2026 as CSV rows `node,start,end,state` in time order (as an export would list them):
// each node alternates "idle" and "down" intervals (down for 10 min to 12 h); some nodes end
// the year still down (open-ended: about 0.5 %). Also writes the matching contract: 18 trays of 4 GPUs per rack
// (NVL72), 1,000 racks per site, rack scope, rack down while 2 trays are, UTC months. The same
// arguments give the same bytes. Counts go to stderr.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

namespace {

struct Row {
  std::int64_t start, end;  // end < 0: open
  std::int32_t node;
  bool down;
};

std::uint64_t next(std::uint64_t& s) {  // splitmix64
  std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void iso(char* out, std::int64_t t) {
  std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  ::gmtime_r(&tt, &tm);
  std::snprintf(out, 80, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                tm.tm_min, tm.tm_sec);
}

std::string node_name(std::int32_t n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "r%05d-t%02d", n / 18 + 1, n % 18 + 1);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: gen_sla_events EVENTS_CSV CONTRACT_JSON [CHANGES] [NODES] [SEED]\n");
    return 3;
  }
  const std::int64_t changes = argc > 3 ? std::atoll(argv[3]) : 10'000'000;
  const std::int32_t nodes = argc > 4 ? std::atoi(argv[4]) : 100'000;
  std::uint64_t seed = argc > 5 ? std::strtoull(argv[5], nullptr, 10) : 1;
  if (changes < 1 || nodes < 1) return 3;
  const std::int64_t year_start = 1767225600, year_end = 1798761600;  // 2026-01-01 .. 2027-01-01 UTC
  std::vector<Row> rows;
  rows.reserve(static_cast<std::size_t>(changes));
  const std::int64_t per_node = changes / nodes;
  for (std::int32_t n = 0; n < nodes; ++n) {
    const std::int64_t count = per_node + (n < changes % nodes ? 1 : 0);
    const std::int64_t mean_up = (year_end - year_start) / std::max<std::int64_t>(1, count);
    std::int64_t t = year_start;
    bool down = next(seed) % 2 == 0;
    for (std::int64_t i = 0; i < count; ++i) {
      const std::int64_t len = down ? 600 + static_cast<std::int64_t>(next(seed) % 43200)
                                    : std::max<std::int64_t>(60, static_cast<std::int64_t>(next(seed) % (2 * mean_up)));
      std::int64_t end = std::min(t + len, year_end);
      const bool last = i + 1 == count;
      if (last) end = (down && n % 100 == 7) ? -1 : year_end;
      rows.push_back({t, end, n, down});
      if (end < 0 || end >= year_end) break;
      t = end;
      down = !down;
    }
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return a.start != b.start ? a.start < b.start : a.node < b.node;
  });
  std::FILE* out = std::fopen(argv[1], "w");
  if (!out) {
    std::perror(argv[1]);
    return 2;
  }
  std::vector<std::string> names(static_cast<std::size_t>(nodes));
  for (std::int32_t n = 0; n < nodes; ++n) names[static_cast<std::size_t>(n)] = node_name(n);
  std::fputs("node,start,end,state,reason\n", out);
  std::int64_t downs = 0, open = 0;
  char a[80], b[80];
  for (const Row& r : rows) {
    iso(a, r.start);
    if (r.end >= 0)
      iso(b, r.end);
    else
      b[0] = 0;
    downs += r.down;
    open += r.end < 0;
    std::fprintf(out, "%s,%s,%s,%s\n", names[static_cast<std::size_t>(r.node)].c_str(), a, b, r.down ? "down" : "idle");
  }
  std::fclose(out);
  std::FILE* c = std::fopen(argv[2], "w");
  if (!c) {
    std::perror(argv[2]);
    return 2;
  }
  std::fprintf(c,
               "{\"schema\": \"cmax.sla-contract/1\", \"name\": \"bench\", \"scope\": \"rack\", \"time_zone\": \"UTC\",\n"
               " \"availability_target_percent\": 99.5, \"gpus_per_node\": 4, \"rack_down\": {\"min_down_nodes\": 2},\n"
               " \"credits\": {\"currency\": \"USD\", \"fee_per_gpu_hour\": 2.4, \"tiers\": [{\"below_percent\": 99.5, "
               "\"credit_percent\": 10}, {\"below_percent\": 99.0, \"credit_percent\": 25}, {\"below_percent\": 95.0, "
               "\"credit_percent\": 50}, {\"below_percent\": 90.0, \"credit_percent\": 100}]},\n"
               " \"cancellation\": {\"below_percent\": 95.0, \"consecutive_months_below_target\": 3},\n"
               " \"topology\": {\"sites\": [");
  const std::int32_t racks = (nodes + 17) / 18;
  for (std::int32_t r = 0; r < racks; ++r) {
    if (r % 1000 == 0) std::fprintf(c, "%s\n  {\"name\": \"site%02d\", \"racks\": [", r ? "]}," : "", r / 1000 + 1);
    const std::int32_t last = std::min(18, nodes - r * 18);
    std::fprintf(c, "%s{\"name\": \"r%05d\", \"nodes\": \"r%05d-t[01-%02d]\"}", r % 1000 ? ", " : "", r + 1, r + 1, last);
  }
  std::fprintf(c, "]}\n ]}}\n");
  std::fclose(c);
  std::fprintf(stderr, "gen_sla_events: %zu rows (%lld down, %lld open-ended) over %d nodes, %d racks\n", rows.size(),
               static_cast<long long>(downs), static_cast<long long>(open), nodes, racks);
  return 0;
}
