#include "nccl/parse.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

#include "core/strings.h"

namespace cmax::nccl {
namespace {

using core::trim;
using nlohmann::json;

// Ratios from rows below 1 GB/s are mostly rounding (2 decimals); below 0.1 GB/s they are noise.
constexpr double kMinAlgbwForRanks = 1.0;
constexpr double kMinAlgbwForFamily = 0.1;
constexpr double kMinAlgbwToVerify = 0.1;
// The absolute slack when a busbw/algbw ratio is matched against a collective's factor.
constexpr double kFactorSlack = 0.02;
// Old builds print a max error per row; float sums give ~1e-7 on every healthy row.
constexpr double kOldErrorTolerance = 1e-3;
constexpr double kPrintedHalfUlp = 0.005;  // values are printed with 2 decimals
constexpr int kMaxInferredRanks = 1'000'000;
constexpr int kMaxJsonDepth = 64;
constexpr std::size_t kMaxRowLineChars = 1024;  // real rows are ~130 characters
constexpr std::size_t kClipChars = 100;

constexpr std::array<std::string_view, 7> kReductions = {"sum", "prod",   "max",      "min",
                                                         "avg", "mulsum", "premulsum"};

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/// A finite double from the whole token; nullopt for words, "nan", "inf" and partial numbers.
std::optional<double> to_double(std::string_view s) {
  if (s.empty()) return std::nullopt;
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

/// True when the token reads as a number at all (finite or not), so "nan" in a numeric column is
/// a bad value and not a word.
bool numeric_shape(std::string_view s) {
  if (to_double(s)) return true;
  std::string l = core::to_lower(s);
  if (!l.empty() && (l[0] == '-' || l[0] == '+')) l.erase(0, 1);
  return l == "nan" || l == "inf" || l == "infinity" || starts_with(l, "nan(");
}

bool has_exponent(std::string_view s) {
  return s.find_first_of("eE") != std::string_view::npos && to_double(s).has_value();
}

/// "2.28.3" from NCCL_VERSION_CODE 22803 (2.9 and later: X*10000+Y*100+Z; before: X*1000+Y*100+Z).
std::string decode_nccl_code(unsigned long long code) {
  if (code >= 10000) return fmt::format("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100);
  return fmt::format("{}.{}.{}", code / 1000, code % 1000 / 100, code % 100);
}

/// Removes one launcher prefix: srun --label's "12: " (padded " 0: " when there are 10 or more
/// tasks), Open MPI's "[1,0]<stdout>:" or "[host:pid] ", a bare "[0] ", and Ray/SkyPilot's
/// "(head, rank=0, pid=3808) " in front of any of them. Rows never start with these shapes (a row
/// starts with its size, followed by spaces, not ':'), so nothing real is lost.
std::string_view strip_launcher_prefix(std::string_view line) {
  // Ray's worker tag: "(head, rank=0, pid=3808) ", "(worker1, rank=1, pid=4001, ip=10.0.0.2) ".
  if (!line.empty() && line[0] == '(') {
    auto close = line.find(") ");
    if (close != std::string_view::npos && close < 200) {
      std::string_view tag = line.substr(0, close);
      if (tag.find("pid=") != std::string_view::npos || tag.find("rank=") != std::string_view::npos)
        return strip_launcher_prefix(line.substr(close + 2));
    }
  }
  std::size_t lead = 0;
  while (lead < line.size() && lead < 8 && line[lead] == ' ') ++lead;
  std::size_t i = lead;
  while (i < line.size() && i < lead + 12 && is_digit(line[i])) ++i;
  if (i > lead && i < line.size() && line[i] == ':' && (i + 1 == line.size() || line[i + 1] == ' '))
    return line.substr(i + 1);
  if (!line.empty() && line[0] == '[') {
    auto close = line.find(']');
    if (close == std::string_view::npos || close > 256) return line;
    std::string_view rest = line.substr(close + 1);
    for (std::string_view tag : {"<stdout>:", "<stderr>:"})
      if (starts_with(rest, tag)) return rest.substr(tag.size());
    return rest;
  }
  return line;
}

/// The fabric an NCCL INFO line names: "NET/IB : Using [0]mlx5_0:1/RoCE" (RoCE), "NET/IB : Using
/// [0]mlx5_0:1/IB" (IB), "NET/OFI Selected Provider is efa" (EFA; "cxi": Slingshot), the
/// GPUDirectTCPX/FasTrak plugins (TCPX), "NET/Socket : Using" (Socket); "" for any other line.
std::string fabric_in(std::string_view s) {
  auto has = [&](std::string_view n) { return s.find(n) != std::string_view::npos; };
  if (has("GPUDirectTCPX") || has("FasTrak") || has("TCPXO") || has("NET/TCPX")) return "TCPX";
  if (has("NET/OFI") || has("aws-ofi") || has("Libfabric")) {
    if (has("cxi")) return "Slingshot";
    if (has("efa")) return "EFA";
    return {};
  }
  if (has("NET/IB") && has("Using")) return has("/RoCE") ? "RoCE" : (has("/IB") ? "IB" : "");
  if (has("NET/Socket") && has("Using")) return "Socket";
  return {};
}

/// How many devices a "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ..." line lists (the
/// "[N]" before each; the OOB interface after ';' is not one); 0 for any other line.
int nics_in(std::string_view s) {
  auto at = s.find("NET/IB");
  if (at == std::string_view::npos) return 0;
  s.remove_prefix(at);
  if (auto using_at = s.find("Using"); using_at != std::string_view::npos) s.remove_prefix(using_at);
  else return 0;
  s = s.substr(0, s.find(';'));
  int n = 0;
  for (std::size_t i = 0; i + 2 < s.size(); ++i)
    if (s[i] == '[' && s[i + 1] >= '0' && s[i + 1] <= '9') ++n;
  return n;
}

/// The token after `key` in `s` (e.g. the version after "NCCL version "); "" when absent.
std::string_view token_after(std::string_view s, std::string_view key) {
  auto at = s.find(key);
  if (at == std::string_view::npos) return {};
  std::string_view rest = trim(s.substr(at + key.size()));
  return rest.substr(0, rest.find_first_of(" \t"));
}

bool is_reduction(std::string_view redop) {
  return std::find(kReductions.begin(), kReductions.end(), redop) != kReductions.end();
}

/// One run under construction, with what the parser needs beyond the Run itself.
struct Builder {
  Run run;
  bool any = false;              // some line belongs to this run
  bool table = false;            // a column header or a row was seen
  std::optional<bool> has_root;  // from the column header; nullopt: each row says
  std::size_t last_line = 0;
  std::size_t warnings = 0;
  std::set<int> seen_ranks;
  std::optional<unsigned long long> library_code;

  void touch(std::size_t line) {
    if (!any) run.first_line = line;
    any = true;
    last_line = std::max(last_line, line);
  }
  void warn(std::string message) {
    if (warnings++ < kMaxWarningsPerRun) run.warnings.push_back(std::move(message));
  }
};

/// What one placement's numbers say is wrong with them; "" when they are sane.
std::string check_measure(const Measure& m, std::string_view placement) {
  auto bad = [](double v) { return !std::isfinite(v) || v < 0; };
  if (bad(m.time_us))
    return fmt::format("{} time {} is not a non-negative number", placement, m.time_us);
  if (bad(m.algbw_gbps))
    return fmt::format("{} algbw {} is not a non-negative number", placement, m.algbw_gbps);
  if (bad(m.busbw_gbps))
    return fmt::format("{} busbw {} is not a non-negative number", placement, m.busbw_gbps);
  if (m.wrong && bad(*m.wrong))
    return fmt::format("{} #wrong {} is not a non-negative number", placement, *m.wrong);
  return {};
}

/// Why a row cannot be kept (absurd size, negative or non-finite numbers); "" when it can.
std::string check_row(const Row& r) {
  if (r.size_bytes > kMaxRowBytes) return fmt::format("size {} is above 1e18 bytes", r.size_bytes);
  if (r.count > kMaxRowBytes) return fmt::format("count {} is above 1e18", r.count);
  if (r.root && *r.root < -1) return fmt::format("root {} is not a rank", *r.root);
  if (auto why = check_measure(r.out_of_place, "out-of-place"); !why.empty()) return why;
  if (r.in_place)
    if (auto why = check_measure(*r.in_place, "in-place"); !why.empty()) return why;
  return {};
}

struct RowParse {
  std::optional<Row> row;
  std::string reason;       // why not, when row is nullopt
  bool row_shaped = false;  // starts like a row: size count type
};

/// A "YYYY-MM-DD HH:MM:SS" pair as --report_timestamps appends to each row.
bool is_timestamp(std::string_view date, std::string_view time) {
  return date.size() == 10 && date[4] == '-' && date[7] == '-' && time.size() == 8 &&
         time[2] == ':' && time[5] == ':';
}

/// Parses one table row (prefix already stripped). `has_root` is the column header's word; without
/// it the field count decides (see parse.h).
RowParse parse_row(std::string_view line, std::optional<bool> has_root, std::size_t line_no,
                   bool* said_root) {
  RowParse out;
  if (line.size() > kMaxRowLineChars) {
    out.reason = "line too long for a table row";
    return out;
  }
  auto f = core::split_any(line, " \t\r");
  if (f.size() >= 2 && is_timestamp(f[f.size() - 2], f.back())) f.resize(f.size() - 2);
  if (f.size() < 6 || f.size() > 14) {
    out.reason = "not a table row";
    return out;
  }
  auto size = core::parse_uint(f[0]);
  auto count = core::parse_uint(f[1]);
  if ((!size && !numeric_shape(f[0])) || (!count && !numeric_shape(f[1])) || !is_alpha(f[2][0])) {
    out.reason = "not a table row";
    return out;
  }
  out.row_shaped = true;
  if (!size) {
    out.reason = fmt::format("size '{}' is not a byte count", core::clip(f[0], 30));
    return out;
  }
  if (!count) {
    out.reason = fmt::format("count '{}' is not an element count", core::clip(f[1], 30));
    return out;
  }
  Row row;
  row.line = line_no;
  row.size_bytes = *size;
  row.count = *count;
  row.type = std::string(f[2]);
  std::size_t i = 3;
  if (!numeric_shape(f[i])) row.redop = std::string(f[i++]);  // else old alltoall: blank redop
  const std::size_t k = f.size() - i;
  bool root = false;
  if (has_root) {
    root = *has_root;
  } else {
    root = k == 5 || k == 9 ||
           ((k == 4 || k == 8) && !has_exponent(f.back()) && core::parse_int(f[i]).has_value());
  }
  if (root) {
    auto v = core::parse_int(f[i]);
    if (!v || *v < std::numeric_limits<int>::min() || *v > std::numeric_limits<int>::max()) {
      out.reason = fmt::format("root '{}' is not a rank", core::clip(f[i], 30));
      return out;
    }
    row.root = static_cast<int>(*v);
    ++i;
  }
  if (said_root) *said_root = root;
  const std::size_t m = f.size() - i;
  // 5 or 6: a row cut inside its in-place half (a paste, a crash): the out-of-place half is whole.
  const bool cut_in_place = m == 5 || m == 6;
  if (m != 3 && m != 4 && m != 7 && m != 8 && !cut_in_place) {
    out.reason = fmt::format("{} measure fields, expected 8 (or 3, 4, 7)", m);
    return out;
  }
  // The number parse keeps non-finite values so that check_row names them.
  auto num = [&](std::string_view s, double& v) {
    if (auto d = to_double(s)) {
      v = *d;
      return true;
    }
    if (!numeric_shape(s)) return false;
    v = std::numeric_limits<double>::quiet_NaN();
    return true;
  };
  auto measure = [&](std::size_t at, bool with_wrong, Measure& ms) -> bool {
    if (!num(f[at], ms.time_us) || !num(f[at + 1], ms.algbw_gbps) || !num(f[at + 2], ms.busbw_gbps))
      return false;
    if (with_wrong && f[at + 3] != "N/A") {
      double w = 0;
      if (!num(f[at + 3], w)) return false;
      ms.wrong = w;
    }
    return true;
  };
  bool ok = measure(i, m == 4 || m >= 5, row.out_of_place);
  if (ok && m >= 7) {
    Measure ip;
    ok = measure(i + 4, m == 8, ip);
    row.in_place = ip;
  }
  if (!ok) {
    out.reason = "a measure field is not a number";
    return out;
  }
  if (auto why = check_row(row); !why.empty()) {
    out.reason = std::move(why);
    return out;
  }
  if (cut_in_place)
    out.reason = fmt::format("cut inside its in-place half ({} of 8 measure fields): the out-of-place half is read", m);
  out.row = std::move(row);
  return out;
}

/// The #  Rank line's facts; nullopt when the line has no rank number or no host.
std::optional<RankInfo> parse_rank_line(std::string_view body) {
  // body: "Rank  0 Group  0 Pid  13919 on pt01 device  0 [0000:04:00] NVIDIA H100 80GB HBM3"
  auto f = core::split_any(body, " \t");
  if (f.size() < 2 || f[0] != "Rank") return std::nullopt;
  auto rank = core::parse_int(f[1]);
  if (!rank || *rank < 0 || *rank > std::numeric_limits<int>::max()) return std::nullopt;
  RankInfo info;
  info.rank = static_cast<int>(*rank);
  std::size_t dev_at = f.size();
  for (std::size_t i = 2; i + 1 < f.size(); ++i) {
    if (f[i] == "on" && info.host.empty()) info.host = std::string(f[i + 1]);
    if (f[i] == "device" && dev_at == f.size()) {
      dev_at = i + 1;
      if (auto d = core::parse_int(f[i + 1]); d && *d >= 0 && *d <= 1'000'000)
        info.device = static_cast<int>(*d);
    }
  }
  if (info.host.empty()) return std::nullopt;
  // After the device number: an optional [pci] in any form, then the GPU name to the end.
  if (dev_at < f.size()) {
    std::string_view rest = trim(body.substr(f[dev_at].data() + f[dev_at].size() - body.data()));
    if (!rest.empty() && rest[0] == '[') {
      auto close = rest.find(']');
      if (close != std::string_view::npos) {
        info.pci = std::string(trim(rest.substr(1, close - 1)));
        rest = trim(rest.substr(close + 1));
      }
    }
    info.gpu = std::string(rest);
  }
  return info;
}

struct Ratios {
  double median = 0;
  double best_algbw = 0;  // the most precisely printed placement
  double best_busbw = 0;
  std::size_t n = 0;
  std::size_t below = 0;  // placements with busbw < algbw
  std::size_t above = 0;  // placements with busbw > algbw
};

/// busbw/algbw over every placement with algbw >= `min_algbw`.
Ratios ratios(const Run& r, double min_algbw) {
  std::vector<double> v;
  Ratios out;
  auto add = [&](const Measure& m) {
    if (m.algbw_gbps < min_algbw || m.algbw_gbps <= 0) return;
    v.push_back(m.busbw_gbps / m.algbw_gbps);
    out.below += m.busbw_gbps < m.algbw_gbps;
    out.above += m.busbw_gbps > m.algbw_gbps;
    if (m.algbw_gbps > out.best_algbw) {
      out.best_algbw = m.algbw_gbps;
      out.best_busbw = m.busbw_gbps;
    }
  };
  for (const auto& row : r.rows) {
    add(row.out_of_place);
    if (row.in_place) add(*row.in_place);
  }
  out.n = v.size();
  if (v.empty()) return out;
  std::sort(v.begin(), v.end());
  out.median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  return out;
}

bool factor_fits(Collective c, int ranks, double f) {
  return std::abs(busbw_factor(c, ranks) - f) <= std::max(kFactorSlack, 0.02 * f);
}

/// The collective the rows' busbw/algbw and redop point to (rule in parse.h); kUnknown if unsure.
Collective infer_collective(const Run& r) {
  if (r.rows.empty()) return Collective::kUnknown;
  Ratios q = ratios(r, kMinAlgbwForRanks);
  if (q.n == 0) q = ratios(r, kMinAlgbwForFamily);
  if (q.n == 0) return Collective::kUnknown;
  const std::string& redop = r.rows.front().redop;
  const double f = q.median;
  Collective c = Collective::kUnknown;
  // Every placement on one side of 1 decides the family; a single tie (2-rank all_reduce,
  // broadcast, or rounding at large n) leaves it unknown.
  if (is_reduction(redop) && q.above == q.n && f < 2) c = Collective::kAllReduce;
  if (f > 0 && q.below == q.n) {
    if (is_reduction(redop))
      c = Collective::kReduceScatter;
    else if (redop.empty() || redop == "none") {
      // all_gather and alltoall share the (n-1)/n factor and the "none" redop. nccl-tests measures
      // alltoall out of place only: its in-place #wrong is "N/A" (or there are no in-place
      // columns); all_gather checks both. Old builds print an error value for both: all_gather,
      // the one posted far more often.
      // Old builds have an error column for both; their column header tells them apart: alltoall
      // kept a (blank) "redop" column, all_gather had none.
      // By most rows: a paste's last row can be cut before its in-place #wrong.
      std::size_t checked = 0, unchecked = 0;
      for (const auto& row : r.rows) {
        bool both = row.out_of_place.wrong.has_value() && row.in_place && row.in_place->wrong.has_value();
        ++(both ? checked : unchecked);
      }
      if (r.old_format)
        c = r.redop_column.value_or(false) ? Collective::kAllToAll : Collective::kAllGather;
      else
        c = unchecked >= checked ? Collective::kAllToAll : Collective::kAllGather;
    }
  }
  if (c != Collective::kUnknown && r.ranks > 0 && !factor_fits(c, r.ranks, f))
    return Collective::kUnknown;
  return c;
}

/// n from busbw/algbw = f for `c`: 2/(2-f) (all_reduce) or 1/(1-f) ((n-1)/n collectives); nullopt
/// for factor-1 collectives and out-of-range f.
/// The limit of busbw/algbw as n grows: 2 for all_reduce, 1 for the (n-1)/n collectives, 0 (no
/// inverse) for the factor-1 ones.
double factor_limit(Collective c) {
  if (c == Collective::kAllReduce) return 2.0;
  return busbw_factor(c, 2) == 0.5 ? 1.0 : 0.0;
}

std::optional<double> ranks_for_factor(Collective c, double f) {
  const double top = factor_limit(c);
  if (top == 0 || f < 0 || f >= top) return std::nullopt;
  return top / (top - f);
}

void infer_ranks(Builder& b) {
  Run& r = b.run;
  Ratios q = ratios(r, kMinAlgbwForRanks);
  if (q.n == 0 || q.best_busbw <= 0) {
    if (factor_limit(r.collective) > 0 && !r.rows.empty())
      b.warn("ranks unknown: no Rank lines and no row with algbw >= 1 GB/s to infer them from");
    return;
  }
  auto center = ranks_for_factor(r.collective, q.median);
  if (!center) return;
  // The best row's rounding (2 decimals in each of algbw and busbw) bounds how well f is known.
  const double df = q.median * kPrintedHalfUlp * (1 / q.best_algbw + 1 / q.best_busbw);
  auto lo = ranks_for_factor(r.collective, q.median - df);
  auto hi = ranks_for_factor(r.collective, q.median + df);
  auto whole = [](const std::optional<double>& n) {
    return n ? std::lround(std::min(*n, 1e9)) : -1L;
  };
  if (!lo || !hi || whole(lo) != whole(hi)) {
    b.warn(fmt::format(
        "ranks not inferred: no Rank lines, and busbw/algbw = {:.4f} fits {} to {} ranks at the "
        "printed 2 decimals",
        q.median, lo ? std::to_string(whole(lo)) : "1", hi ? std::to_string(whole(hi)) : "any"));
    return;
  }
  const double n = std::round(*center);
  if (n < 2 || n > kMaxInferredRanks || !factor_fits(r.collective, static_cast<int>(n), q.median))
    return;
  r.ranks = static_cast<int>(n);
  r.ranks_inferred = true;
}

void verify_rows(Builder& b) {
  Run& r = b.run;
  const bool verify = r.ranks > 0 && !r.ranks_inferred && r.collective != Collective::kUnknown;
  const double k = busbw_factor(r.collective, r.ranks);
  auto check = [&](const Row& row, const Measure& m, std::string_view placement) {
    if (verify && m.algbw_gbps >= kMinAlgbwToVerify) {
      const double expect = m.algbw_gbps * k;
      if (std::abs(expect - m.busbw_gbps) > std::max(0.02, 0.02 * m.busbw_gbps))
        b.warn(fmt::format(
            "busbw mismatch at size {} ({}, line {}): printed {:.2f} GB/s, but algbw {:.2f} x "
            "{:.4f} ({} on {} ranks) = {:.2f}",
            row.size_bytes, placement, row.line, m.busbw_gbps, m.algbw_gbps, k,
            collective_name(r.collective), r.ranks, expect));
    }
    if (!m.wrong) return;
    if (r.old_format && *m.wrong > kOldErrorTolerance)
      b.warn(fmt::format("error {:g} at size {} ({}) is above the {:g} tolerance", *m.wrong,
                         row.size_bytes, placement, kOldErrorTolerance));
    else if (!r.old_format && *m.wrong > 0)
      b.warn(
          fmt::format("{:g} wrong results at size {} ({})", *m.wrong, row.size_bytes, placement));
  };
  for (const auto& row : r.rows) {
    check(row, row.out_of_place, "out-of-place");
    if (row.in_place) check(row, *row.in_place, "in-place");
  }
}

/// Fills the derived facts (ranks, hosts, collective, checks) once a run's lines are all read.
Run finish_run(Builder& b) {
  Run& r = b.run;
  if (!r.rank_info.empty()) {
    r.ranks = static_cast<int>(std::min<std::size_t>(r.rank_info.size(), kMaxInferredRanks));
    // A paste that elides ranks ("#  Rank  0 ...", "......", "#  Rank 63 ...") still names the
    // highest: the run had at least that many.
    const RankInfo* highest = &r.rank_info.front();
    for (const auto& info : r.rank_info)
      if (info.rank > highest->rank) highest = &info;
    const bool elided = highest->rank + 1 > r.ranks && highest->rank < kMaxInferredRanks;
    if (elided) {
      b.warn(fmt::format("{} Rank line(s) but rank {} is printed: ranks elided in the log; counting {}",
                         r.rank_info.size(), highest->rank, highest->rank + 1));
      r.ranks = highest->rank + 1;
    }
    std::unordered_map<std::string, std::size_t> gpu_count;
    std::set<std::string> hosts;
    std::size_t best = 0;
    for (const auto& info : r.rank_info) {
      if (hosts.insert(info.host).second) r.hosts.push_back(info.host);
      // Ties go to the name seen first: only a strictly larger count replaces it.
      if (!info.gpu.empty() && ++gpu_count[info.gpu] > best) {
        best = gpu_count[info.gpu];
        r.gpu_model = info.gpu;
      }
    }
    r.nodes = static_cast<int>(r.hosts.size());
    // The hosts of elided ranks are not printed: the hosts seen are a lower bound. Launchers place
    // ranks in blocks (local rank = device), so the last rank's device + 1 is the GPUs per node;
    // the count follows when it divides the ranks, else the node count is unknown (0).
    if (elided) {
      const int per_node = highest->device + 1;
      const int inferred = per_node > 0 && r.ranks % per_node == 0 ? r.ranks / per_node : 0;
      if (inferred >= r.nodes) {
        b.warn(fmt::format("counting {} node(s): rank {} is device {} on its host, so {} GPU(s) a node", inferred,
                           highest->rank, highest->device, per_node));
        r.nodes = inferred;
      } else {
        b.warn(fmt::format("node count unknown: ranks are elided and rank {} (device {}) does not say how "
                           "many GPUs a node has; declare it with --nodes",
                           highest->rank, highest->device));
        r.nodes = 0;
      }
    }
  }
  if (r.nccl_version.empty() && b.library_code) r.nccl_version = decode_nccl_code(*b.library_code);
  if (!r.test.empty()) r.collective = collective_from_name(r.test);
  if (r.collective == Collective::kUnknown) {
    r.collective = infer_collective(r);
    if (r.test.empty() && r.collective != Collective::kUnknown)
      r.test = std::string(collective_name(r.collective)) + "_perf";
  }
  if (r.ranks == 0 && r.collective != Collective::kUnknown) infer_ranks(b);
  verify_rows(b);
  if (b.warnings > kMaxWarningsPerRun)
    r.warnings.push_back(fmt::format("... and {} more warnings", b.warnings - kMaxWarningsPerRun));
  return std::move(r);
}

/// The text format: a line-by-line state machine over runs.
class TextParser {
 public:
  ParsedLog log;
  std::size_t lines = 0;
  std::size_t first_header_line = 0;  // of a header that never got a table, for the error

  void line(std::string_view raw, std::size_t no) {
    ++lines;
    std::string_view s = raw;
    // An indented launcher tag ("        [1,0]<stdout>:").
    if (auto lead = s.find_first_not_of(" \t"); lead != std::string_view::npos && lead > 0 && lead <= 16 && s[lead] == '[')
      s.remove_prefix(lead);
    const bool bare_rank_tag = s.size() > 2 && s[0] == '[' && is_digit(s[1]);
    for (int i = 0; i < 2; ++i) s = strip_launcher_prefix(s);
    // MPI's "[0]" tag repeated inside a row written in pieces ("... -1[0]    1626.5 ... 0[0] ...").
    if (bare_rank_tag && s.find('[') != std::string_view::npos) {
      scratch_.clear();
      for (std::size_t i = 0; i < s.size();) {
        if (s[i] == '[') {
          std::size_t j = i + 1;
          while (j < s.size() && is_digit(s[j])) ++j;
          if (j > i + 1 && j < s.size() && s[j] == ']') {
            scratch_ += ' ';
            i = j + 1;
            continue;
          }
        }
        scratch_ += s[i++];
      }
      s = scratch_;
    }
    s = trim(s);
    if (s.empty()) return;
    if (s[0] == '#') return comment(s, no);
    if (s.find("NCCL INFO") != std::string_view::npos ||
        s.find("NCCL WARN") != std::string_view::npos || starts_with(s, "NCCL version")) {
      if (cur_.run.fabric.empty()) cur_.run.fabric = fabric_in(s);
      if (cur_.run.nics == 0) cur_.run.nics = nics_in(s);
      if (auto v = token_after(s, "NCCL version "); !v.empty() && is_digit(v[0])) {
        if (cur_.run.nccl_version.empty()) cur_.run.nccl_version = std::string(v);
        if (!cur_.table) cur_.touch(no);
      }
      return;
    }
    if (starts_with(s, "Run-") && s.find("Starting command") != std::string_view::npos) {
      if (cur_.any) close();
      return;
    }
    bool said_root = false;
    RowParse p = parse_row(s, cur_.has_root, no, &said_root);
    if (p.row) {
      if (!p.reason.empty()) cur_.warn(fmt::format("line {}: {}", no, p.reason));
      if (!cur_.table && !cur_.has_root) cur_.run.old_format = !said_root;
      cur_.table = true;
      cur_.touch(no);
      cur_.run.rows.push_back(std::move(*p.row));
      return;
    }
    if (cur_.table || p.row_shaped)
      cur_.warn(fmt::format("line {}: skipped, {}: {}", no, p.reason, core::clip(s, kClipChars)));
  }

  void end() {
    if (cur_.any) close();
  }

 private:
  Builder cur_;
  std::string scratch_;  // a line with its mid-row rank tags removed
  std::size_t dropped_ = 0;

  // A header fact arriving after a table (or repeating one already held) starts the next run.
  void header_fact(std::size_t no, bool repeats) {
    if (cur_.table || (cur_.any && repeats)) close();
    cur_.touch(no);
    if (first_header_line == 0) first_header_line = no;
  }

  void comment(std::string_view s, std::size_t no) {
    std::string_view body = trim(s.substr(1));
    if (starts_with(body, "nccl-tests version")) {
      header_fact(no, !cur_.run.tests_version.empty() || !cur_.run.header.empty() ||
                          !cur_.run.test.empty());
      cur_.run.tests_version = std::string(token_after(body, "nccl-tests version "));
      if (auto code = core::parse_uint(token_after(body, "nccl-library=")))
        cur_.library_code = *code;
    } else if (starts_with(body, "cmax-collbench version")) {
      header_fact(no, !cur_.run.backend.empty() || !cur_.run.header.empty() || !cur_.run.test.empty());
      cur_.run.backend = std::string(token_after(body, " backend "));
    } else if (starts_with(body, "Collective test starting:")) {
      header_fact(no, !cur_.run.test.empty() || !cur_.run.header.empty());
      cur_.run.test = std::string(trim(body.substr(body.find(':') + 1)));
    } else if (starts_with(body, "nThread")) {
      header_fact(no, !cur_.run.header.empty());
      cur_.run.header = std::string(s);
    } else if (starts_with(body, "Rank ")) {
      auto info = parse_rank_line(body);
      if (!info) return;
      header_fact(no, false);
      if (cur_.seen_ranks.insert(info->rank).second) cur_.run.rank_info.push_back(std::move(*info));
    } else if (starts_with(body, "Out of bounds values")) {
      if (!cur_.table) return;
      cur_.touch(no);
      if (auto n = core::parse_uint(token_after(body, ":"))) cur_.run.out_of_bounds = *n;
    } else if (starts_with(body, "Collective test concluded:")) {
      // After the footer (v2.17 on): it names the collective of the run just closed, which a paste
      // that starts mid-table has no other word for.
      std::string name(trim(body.substr(body.find(':') + 1)));
      if (!log.runs.empty() && !cur_.table && collective_from_name(name) != Collective::kUnknown &&
          log.runs.back().test != name) {
        Run& last = log.runs.back();
        last.test = name;
        last.collective = collective_from_name(name);
      }
    } else if (starts_with(body, "Avg bus bandwidth")) {
      if (!cur_.table) return;
      cur_.touch(no);
      if (auto v = to_double(token_after(body, ":")); v && *v >= 0)
        cur_.run.avg_busbw_reported = *v;
      cur_.run.complete = true;
      close();
    } else if (starts_with(body, "size")) {
      auto f = core::split_any(body, " \t");
      bool bw = std::find(f.begin(), f.end(), "busbw") != f.end() ||
                std::find(f.begin(), f.end(), "algbw") != f.end();
      if (f.size() < 4 || f[1] != "count" || !bw) return;
      if (cur_.table) close();
      cur_.touch(no);
      cur_.table = true;
      cur_.has_root = std::find(f.begin(), f.end(), "root") != f.end();
      cur_.run.redop_column = std::find(f.begin(), f.end(), "redop") != f.end();
      cur_.run.old_format = !*cur_.has_root;
    }
  }

  void close() {
    if (cur_.table) {
      if (!cur_.run.complete) {
        const std::size_t last = cur_.run.rows.empty() ? cur_.last_line : cur_.run.rows.back().line;
        cur_.run.warnings.insert(cur_.run.warnings.begin(),
                                 fmt::format("truncated: no footer after line {}", last));
      }
      log.runs.push_back(finish_run(cur_));
    } else if (!cur_.run.header.empty() || !cur_.run.rank_info.empty() || !cur_.run.test.empty()) {
      if (dropped_++ < kMaxWarningsPerRun)
        log.warnings.push_back(fmt::format(
            "lines {}-{}: a header but no table; the test may have failed before its first size",
            cur_.run.first_line, cur_.last_line));
    }
    cur_ = Builder{};
  }
};

// ---- JSON (-J) ----

/// Deepest bracket nesting outside strings; the depth guard keeps hostile input off the stack.
int json_depth(std::string_view text) {
  int depth = 0, worst = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"')
      in_string = true;
    else if (c == '[' || c == '{')
      worst = std::max(worst, ++depth);
    else if (c == ']' || c == '}')
      --depth;
  }
  return worst;
}

const json* field(const json& o, std::initializer_list<const char*> keys) {
  if (!o.is_object()) return nullptr;
  for (const char* k : keys)
    if (auto it = o.find(k); it != o.end() && !it->is_null()) return &*it;
  return nullptr;
}

/// A finite number from a JSON number or numeric string ("    -1", "12.5"); nullopt otherwise.
std::optional<double> jnum(const json* v) {
  if (!v) return std::nullopt;
  if (v->is_number()) {
    double d = v->get<double>();
    return std::isfinite(d) ? std::optional<double>(d) : std::nullopt;
  }
  if (v->is_string()) return to_double(trim(v->get_ref<const std::string&>()));
  return std::nullopt;
}

std::optional<unsigned long long> juint(const json* v) {
  if (!v) return std::nullopt;
  if (v->is_number_unsigned()) return v->get<unsigned long long>();
  if (v->is_number_integer()) {
    auto i = v->get<long long>();
    return i >= 0 ? std::optional<unsigned long long>(i) : std::nullopt;
  }
  if (v->is_string()) return core::parse_uint(v->get_ref<const std::string&>());
  if (auto d = jnum(v); d && *d >= 0 && *d <= 1e18 && std::floor(*d) == *d)
    return static_cast<unsigned long long>(*d);
  return std::nullopt;
}

std::string jstr(const json* v) {
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

/// One placement from a nested object (`o` = the "out_of_place" value) or from `row` with key
/// prefix `pre` ("oop_", "ip_", "" for unprefixed); nullopt when it has no bandwidth.
std::optional<Measure> jmeasure(const json& o, const std::string& pre, bool* bad) {
  auto key = [&](const char* k) { return pre + k; };
  auto get = [&](std::initializer_list<const char*> ks) -> const json* {
    for (const char* k : ks)
      if (auto* v = field(o, {key(k).c_str()})) return v;
    return nullptr;
  };
  const json* alg = get({"alg_bw", "algbw", "algbw_gbps"});
  const json* bus = get({"bus_bw", "busbw", "busbw_gbps"});
  const json* time = get({"time", "cpu_time", "time_us"});
  if (!alg && !bus && !time) return std::nullopt;
  Measure m;
  auto a = jnum(alg), b = jnum(bus), t = jnum(time);
  if (!a || !b || !t) {
    *bad = true;
    return std::nullopt;
  }
  m.time_us = *t;
  m.algbw_gbps = *a;
  m.busbw_gbps = *b;
  if (const json* w = get({"nwrong", "wrong", "#wrong", "error"})) {
    if (auto wv = jnum(w))
      m.wrong = *wv;
    else if (!(w->is_string() && trim(w->get_ref<const std::string&>()) == "N/A"))
      *bad = true;
  }
  return m;
}

void json_run(const json& doc, const json& rows, std::size_t index, ParsedLog& log) {
  Builder b;
  Run& r = b.run;
  r.first_line = 1;
  b.table = true;
  if (auto* v = field(doc, {"nccl_version"})) {
    if (auto code = juint(v); code && v->is_number())
      r.nccl_version = decode_nccl_code(*code);
    else
      r.nccl_version = jstr(v);
  }
  r.test = jstr(field(doc, {"test", "collective"}));
  if (const json* args = field(doc, {"args"});
      r.test.empty() && args && args->is_array() && !args->empty()) {
    std::string a0 = jstr(&(*args)[0]);
    r.test = a0.substr(a0.rfind('/') == std::string::npos ? 0 : a0.rfind('/') + 1);
  }
  if (collective_from_name(r.test) == Collective::kUnknown) r.test.clear();
  const json* devices = field(doc, {"devices"});
  if (!devices)
    if (const json* cfg = field(doc, {"config"})) devices = field(*cfg, {"devices"});
  if (devices && devices->is_array()) {
    for (const auto& d : *devices) {
      auto rank = juint(field(d, {"rank"}));
      std::string host = jstr(field(d, {"hostname", "host"}));
      if (!rank || *rank > static_cast<unsigned>(std::numeric_limits<int>::max()) || host.empty())
        continue;
      RankInfo info;
      info.rank = static_cast<int>(*rank);
      info.host = host;
      if (auto dev = juint(field(d, {"device"})); dev && *dev <= 1'000'000)
        info.device = static_cast<int>(*dev);
      info.pci = jstr(field(d, {"device_hex", "pci"}));
      info.gpu = jstr(field(d, {"device_info", "gpu"}));
      if (b.seen_ranks.insert(info.rank).second) r.rank_info.push_back(std::move(info));
    }
  }
  std::size_t i = 0;
  for (const auto& jr : rows) {
    ++i;
    if (!jr.is_object()) {
      b.warn(fmt::format("run {} row {}: skipped, not an object", index, i));
      continue;
    }
    Row row;
    row.line = i;
    auto size = juint(field(jr, {"size", "size_bytes"}));
    auto count = juint(field(jr, {"count"}));
    bool bad = !size || !count;
    row.size_bytes = size.value_or(0);
    row.count = count.value_or(0);
    row.type = jstr(field(jr, {"type"}));
    row.redop = std::string(trim(jstr(field(jr, {"redop"}))));
    if (auto root = jnum(field(jr, {"root"})); root && *root >= -1 && *root <= 1e9)
      row.root = static_cast<int>(*root);
    std::optional<Measure> oop, ip;
    if (const json* o = field(jr, {"out_of_place", "oop"}); o && o->is_object())
      oop = jmeasure(*o, "", &bad);
    else if (!(oop = jmeasure(jr, "oop_", &bad)))
      oop = jmeasure(jr, "", &bad);
    if (const json* o = field(jr, {"in_place", "ip"}); o && o->is_object())
      ip = jmeasure(*o, "", &bad);
    else
      ip = jmeasure(jr, "ip_", &bad);
    // nccl-tests writes out_of_place: null for in-place-only rows; the Row keeps out-of-place.
    if (!oop && ip) std::swap(oop, ip);
    if (!oop) bad = true;
    std::string why = bad ? "a size, count or measure is missing or not a number" : "";
    if (!bad) {
      row.out_of_place = *oop;
      row.in_place = ip;
      why = check_row(row);
    }
    if (!why.empty()) {
      b.warn(fmt::format("run {} row {}: skipped, {}", index, i, why));
      continue;
    }
    r.rows.push_back(std::move(row));
  }
  if (const json* oob = field(doc, {"out_of_bounds"}))
    if (auto n = juint(oob->is_object() ? field(*oob, {"count"}) : oob)) r.out_of_bounds = *n;
  if (const json* avg = field(doc, {"average_bus_bandwidth", "avg_bus_bandwidth"})) {
    if (auto v = jnum(avg->is_object() ? field(*avg, {"bandwidth"}) : avg); v && *v >= 0)
      r.avg_busbw_reported = *v;
    r.complete = true;
  } else {
    r.warnings.push_back(
        "truncated: the JSON document has no average_bus_bandwidth (the run did not finish)");
  }
  log.runs.push_back(finish_run(b));
}

const json* rows_of(const json& doc) {
  const json* rows = field(doc, {"results", "rows", "data"});
  return rows && rows->is_array() ? rows : nullptr;
}

// rccl-tests' --output_format json: one object per size and placement, a line each:
// {"#wrong":"0","algBw":0.05,"busBw":0.08,"gpus":4,"inPlace":0,"name":"AllReduce","redop":"sum",
//  "size":1024,"time":19.18,"type":"float"}. Read into the flat rows json_run() knows; nullopt when
// the text is not that.
std::optional<ParsedLog> parse_json_lines(std::string_view text) {
  std::map<std::uint64_t, json> by_size;
  std::string name, gpus;
  std::size_t objects = 0;
  for (std::string_view rest = text; !rest.empty();) {
    auto nl = rest.find('\n');
    std::string_view line = trim(rest.substr(0, nl));
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
    if (line.empty()) continue;
    if (line.size() > 4096 || line[0] != '{') return std::nullopt;
    json o = json::parse(line.begin(), line.end(), nullptr, false);
    if (o.is_discarded() || !o.is_object() || !o.contains("busBw") || !o.contains("size") || !o["size"].is_number_unsigned())
      return std::nullopt;
    ++objects;
    const std::uint64_t size = o["size"].get<std::uint64_t>();
    json& row = by_size[size];
    row["size"] = size;
    if (o.contains("type")) row["type"] = o["type"];
    // rccl-tests' lines carry no element count: the size over the type's width.
    const std::string type = o.contains("type") && o["type"].is_string() ? o["type"].get<std::string>() : "float";
    const std::uint64_t width = type.find("64") != std::string::npos || type == "double"  ? 8
                                : type.find("16") != std::string::npos || type == "half" ? 2
                                : type.find("8") != std::string::npos                    ? 1
                                                                                         : 4;
    row["count"] = size / width;
    if (o.contains("redop")) row["redop"] = o["redop"];
    const bool in_place = o.contains("inPlace") && o["inPlace"].is_number_integer() && o["inPlace"].get<long long>() == 1;
    const std::string pre = in_place ? "ip_" : "oop_";
    for (auto [from, to] : {std::pair<const char*, const char*>{"time", "time"}, {"algBw", "algbw"}, {"busBw", "busbw"}})
      if (o.contains(from)) row[pre + to] = o[from];
    if (o.contains("#wrong")) {
      const json& w = o["#wrong"];
      if (w.is_number()) row[pre + "wrong"] = w;
      else if (w.is_string() && !w.get<std::string>().empty() && std::isdigit(static_cast<unsigned char>(w.get<std::string>()[0])))
        row[pre + "wrong"] = std::strtod(w.get<std::string>().c_str(), nullptr);
    }
    if (name.empty() && o.contains("name") && o["name"].is_string()) name = o["name"].get<std::string>();
    if (o.contains("gpus") && o["gpus"].is_number_unsigned()) gpus = std::to_string(o["gpus"].get<std::uint64_t>());
  }
  if (objects == 0) return std::nullopt;
  // "AllReduce" -> "all_reduce_perf".
  std::string test;
  for (char ch : name) {
    if (std::isupper(static_cast<unsigned char>(ch)) && !test.empty()) test += '_';
    test += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  if (test == "all_to_all") test = "alltoall";
  json rows = json::array();
  for (auto& [size, row] : by_size) rows.push_back(std::move(row));
  json doc = {{"test", test.empty() ? std::string() : test + "_perf"}};
  ParsedLog log;
  json_run(doc, rows, 1, log);
  if (log.runs.empty()) return std::nullopt;
  if (!gpus.empty() && log.runs.front().rank_info.empty()) {
    log.runs.front().ranks = static_cast<int>(std::min<std::uint64_t>(std::strtoull(gpus.c_str(), nullptr, 10), kMaxInferredRanks));
    log.runs.front().ranks_inferred = false;
  }
  return log;
}

Result<ParsedLog> parse_json(std::string_view text) {
  if (auto lines = parse_json_lines(text)) return std::move(*lines);
  if (json_depth(text) > kMaxJsonDepth)
    return fail(
        "no nccl-tests table found: a JSON document nested deeper than {} levels, which no "
        "nccl-tests -J file is",
        kMaxJsonDepth);
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded())
    return fail(
        "no nccl-tests table found: the input starts like JSON but does not parse (a -J file "
        "cut short by a crash?); pass the text output instead");
  ParsedLog log;
  if (doc.is_object()) {
    if (const json* rows = rows_of(doc)) json_run(doc, *rows, 1, log);
  } else if (doc.is_array()) {
    bool documents = !doc.empty() && std::all_of(doc.begin(), doc.end(), [](const json& d) {
      return d.is_object() && rows_of(d) != nullptr;
    });
    if (documents) {
      std::size_t i = 0;
      for (const auto& d : doc) json_run(d, *rows_of(d), ++i, log);
    } else if (!doc.empty() && doc[0].is_object() && field(doc[0], {"size", "size_bytes"})) {
      json_run(json::object(), doc, 1, log);
    }
  }
  if (log.runs.empty())
    return fail(
        "no nccl-tests table found: the JSON document has no \"results\" array of rows (is it an "
        "nccl-tests -J file?)");
  return log;
}

bool looks_like_json(std::string_view text) {
  text = trim(text);
  if (text.empty()) return false;
  if (text[0] == '{') return true;
  // "[1,0]<stdout>:" and "[0] NCCL INFO" also start with '['; JSON arrays hold '{', '[' or nothing.
  if (text[0] != '[') return false;
  std::string_view rest = trim(text.substr(1));
  return !rest.empty() && (rest[0] == '{' || rest[0] == '[' || rest[0] == ']');
}

}  // namespace

Result<ParsedLog> parse_nccl_tests(std::string_view text) {
  try {
    if (trim(text).empty()) return fail("no nccl-tests table found: the input is empty");
    if (looks_like_json(text)) return parse_json(text);
    TextParser p;
    std::size_t no = 0;
    while (!text.empty()) {
      auto nl = text.find('\n');
      p.line(text.substr(0, nl), ++no);
      if (nl == std::string_view::npos) break;
      text.remove_prefix(nl + 1);
    }
    p.end();
    if (!p.log.runs.empty()) return std::move(p.log);
    if (p.first_header_line != 0)
      return fail(
          "no nccl-tests table found: a header at line {} but no rows; the test may have failed "
          "before its first size (look for NCCL WARN lines)",
          p.first_header_line);
    return fail(
        "no nccl-tests table found: none of {} lines is a table row or column header; expected "
        "nccl-tests output (all_reduce_perf ...) or its -J JSON",
        p.lines);
  } catch (const std::exception& e) {
    // Only allocation failure can land here; the parser itself does not throw.
    return fail("parse nccl-tests output: {}", e.what());
  }
}

}  // namespace cmax::nccl
