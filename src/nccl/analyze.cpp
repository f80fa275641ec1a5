#include "nccl/analyze.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>

namespace cmax::nccl {
namespace {

// Sizes under this share of the run's peak are latency-bound (printed 0.00 .. 0.0x): no shape.
constexpr double kTinyShare = 0.01;
// A run needs this many distinct sizes, and busbw rising from its smallest to its largest by more
// than kFlatRatio, to be fitted with a slope; otherwise it is a plateau.
constexpr std::size_t kMinSizesForCurve = 4;
constexpr double kFlatRatio = 0.8;
// time = latency + size / bandwidth makes busbw a logistic in ln(size) with slope 1, i.e. ln 2
// per doubling; the prior keeps runs that do not show their rising edge near it.
constexpr double kSlopePrior = 0.6931471805599453;
constexpr double kSlopePriorSd = 0.25;
constexpr double kMinSlope = 0.05, kMaxSlope = 3.0;
constexpr int kMaxSteps = 50;
constexpr int kMaxRounds = 8;
constexpr int kHuberRounds = 2;
constexpr double kHuberK = 1.345;  // 95% efficiency under normal noise
constexpr double kTukeyC = 4.685;  // 95% efficiency under normal noise
constexpr double kMadToSigma = 1.4826;
constexpr double kNoiseFloor = 0.03;  // repeat runs of nccl-tests differ by a few percent
// busbw never falls as size grows on a healthy run (the tuner picks the fastest protocol for each
// size); a point that falls this far below a smaller size's starts the fit with weight 0, so
// a dip or a cliff cannot pull the first, least robust rounds.
constexpr double kPrescreenFall = 0.075;

// Findings.
constexpr double kNoiseK = 4.5;          // a fall must be this many noise scales ...
constexpr double kMinFall = 0.15;        // ... and at least this share below the fit
constexpr std::size_t kMaxDipSizes = 3;  // longer falls that recover are cliffs
// NCCL switches protocol and algorithm (LL/LL128 -> Simple, Ring -> NVLS/Tree) somewhere in
// 256 KiB - 4 MiB; its cost model often switches a size late, which bends the curve (the "kink")
// by up to ~30% on clean runs (nccl-tests issue 309, 2 nodes: 512 KiB at -29%).
constexpr std::uint64_t kKinkLowBytes = 256 * 1024;
constexpr std::uint64_t kKinkHighBytes = 4 * 1024 * 1024;
constexpr double kKinkCollapse = 0.5;
constexpr double kBelowReference = 0.10;
// A run whose smallest informative size is above this share of the peak starts on the plateau.
constexpr double kFootShare = 0.10;
// Old-format error values from here on get a note (float sums of 16 ranks stay near 1e-6).
constexpr double kOldErrorNote = 1e-3;
constexpr double kPlateauBytes = 1024.0 * 1024 * 1024;  // reference judged on runs reaching 1 GiB

struct Point {
  double x = 0;        // log2(size)
  double ly = 0;       // ln(busbw)
  bool falls = false;  // below the same placement at a smaller size (see kPrescreenFall)
};

double softplus(double z) { return z > 0 ? z + std::log1p(std::exp(-z)) : std::log1p(std::exp(z)); }
double sigmoid(double z) {
  if (z >= 0) return 1 / (1 + std::exp(-z));
  double e = std::exp(z);
  return e / (1 + e);
}

// ln(busbw) of the logistic at x for p = {ln peak, mid, slope}.
double model_ln(const std::array<double, 3>& p, double x) {
  return p[0] - softplus(-p[2] * (x - p[1]));
}

// Median of v (reorders v). v must not be empty.
double median(std::vector<double>& v) {
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  double m = *mid;
  if (v.size() % 2 == 0) m = (m + *std::max_element(v.begin(), mid)) / 2;
  return m;
}

// Solves the symmetric 3x3 system A d = b by Cramer's rule; false when singular.
bool solve3(const std::array<std::array<double, 3>, 3>& a, const std::array<double, 3>& b,
            std::array<double, 3>& d) {
  auto det3 = [](const std::array<std::array<double, 3>, 3>& m) {
    return m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) -
           m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
           m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
  };
  double det = det3(a);
  if (!std::isfinite(det) || std::abs(det) < 1e-300) return false;
  for (int k = 0; k < 3; ++k) {
    auto m = a;
    for (int r = 0; r < 3; ++r) m[r][k] = b[r];
    d[k] = det3(m) / det;
  }
  return std::isfinite(d[0]) && std::isfinite(d[1]) && std::isfinite(d[2]);
}

struct Solver {
  const std::vector<Point>& pts;
  std::vector<double>& w;
  double x_lo, x_hi, ln_peak_lo, ln_peak_hi;
  double prior_weight = 0;  // scale^2 / sd^2 of the slope prior

  void clamp(std::array<double, 3>& p) const {
    p[0] = std::clamp(p[0], ln_peak_lo, ln_peak_hi);
    p[1] = std::clamp(p[1], x_lo, x_hi);
    p[2] = std::clamp(p[2], kMinSlope, kMaxSlope);
  }

  double cost(const std::array<double, 3>& p) const {
    double c = 0;
    for (std::size_t i = 0; i < pts.size(); ++i) {
      double r = pts[i].ly - model_ln(p, pts[i].x);
      c += w[i] * r * r;
    }
    double ds = p[2] - kSlopePrior;
    return c + prior_weight * ds * ds;
  }

  // One Levenberg-Marquardt attempt from p with damping lambda; returns the candidate.
  bool step(const std::array<double, 3>& p, double lambda, std::array<double, 3>& out) const {
    std::array<std::array<double, 3>, 3> h{};
    std::array<double, 3> g{};
    for (std::size_t i = 0; i < pts.size(); ++i) {
      if (w[i] <= 0) continue;
      double dx = pts[i].x - p[1];
      double z = -p[2] * dx;
      double sg = sigmoid(z);
      std::array<double, 3> j{1.0, -sg * p[2], sg * dx};
      double r = pts[i].ly - (p[0] - softplus(z));
      for (int a = 0; a < 3; ++a) {
        g[a] += w[i] * j[a] * r;
        for (int b = a; b < 3; ++b) h[a][b] += w[i] * j[a] * j[b];
      }
    }
    h[2][2] += prior_weight;
    g[2] += prior_weight * (kSlopePrior - p[2]);
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < a; ++b) h[a][b] = h[b][a];
    for (int a = 0; a < 3; ++a) h[a][a] += lambda * std::max(h[a][a], 1e-12);
    std::array<double, 3> d{};
    if (!solve3(h, g, d)) return false;
    for (int a = 0; a < 3; ++a) out[a] = p[a] + d[a];
    clamp(out);
    return true;
  }
};

struct SizeRow {
  std::uint64_t size = 0;
  double out = 0;
  std::optional<double> in;
};

// The rows by size, latency-bound ones left out (share of `peak`).
std::vector<SizeRow> informative_rows(const Run& run, double peak) {
  std::vector<SizeRow> v;
  v.reserve(run.rows.size());
  for (const auto& r : run.rows) {
    double hi = r.out_of_place.busbw_gbps;
    if (r.in_place) hi = std::max(hi, r.in_place->busbw_gbps);
    if (r.size_bytes == 0 || !(hi > kTinyShare * peak)) continue;
    SizeRow s{r.size_bytes, r.out_of_place.busbw_gbps, std::nullopt};
    if (r.in_place) s.in = r.in_place->busbw_gbps;
    v.push_back(s);
  }
  std::stable_sort(v.begin(), v.end(),
                   [](const SizeRow& a, const SizeRow& b) { return a.size < b.size; });
  return v;
}

double peak_of(const Run& run) {
  double peak = 0;
  for (const auto& r : run.rows) {
    peak = std::max(peak, r.out_of_place.busbw_gbps);
    if (r.in_place) peak = std::max(peak, r.in_place->busbw_gbps);
  }
  return peak;
}

Fit fit_points(const std::vector<SizeRow>& rows) {
  Fit fit;
  std::vector<Point> pts;
  pts.reserve(rows.size() * 2);
  double best_out = 0, best_in = 0;  // the highest busbw at smaller sizes, per placement
  for (const auto& r : rows) {
    double x = std::log2(static_cast<double>(r.size));
    if (r.out > 0) pts.push_back({x, std::log(r.out), r.out < (1 - kPrescreenFall) * best_out});
    if (r.in && *r.in > 0)
      pts.push_back({x, std::log(*r.in), *r.in < (1 - kPrescreenFall) * best_in});
    best_out = std::max(best_out, r.out);
    best_in = std::max(best_in, r.in.value_or(0));
  }
  fit.points = pts.size();
  if (pts.empty()) return fit;
  fit.ok = true;
  std::vector<double> scratch(pts.size());

  // Plateau only: too few sizes to show a shape, or nothing rises.
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& p : pts) lo = std::min(lo, p.ly), hi = std::max(hi, p.ly);
  if (rows.size() < kMinSizesForCurve || std::exp(lo - hi) >= kFlatRatio) {
    for (std::size_t i = 0; i < pts.size(); ++i) scratch[i] = pts[i].ly;
    double ln_peak = median(scratch);
    for (std::size_t i = 0; i < pts.size(); ++i)
      scratch[i] = std::abs(std::expm1(pts[i].ly - ln_peak));
    fit.peak_gbps = std::exp(ln_peak);
    fit.noise = std::max(kNoiseFloor, kMadToSigma * median(scratch));
    fit.plateau_only = true;
    fit.mid_log2 = std::log2(static_cast<double>(rows.front().size));
    fit.slope = 0;
    return fit;
  }

  // Start: peak from the largest sizes, mid where busbw first reaches half of it.
  double x_min = pts.front().x, x_max = pts.back().x;
  double top = 0;
  std::size_t top_sizes = std::min<std::size_t>(3, rows.size());
  for (std::size_t i = rows.size() - top_sizes; i < rows.size(); ++i)
    top = std::max({top, rows[i].out, rows[i].in.value_or(0)});
  double mid = x_min - 1;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    double y = std::max(rows[i].out, rows[i].in.value_or(0));
    if (y >= top / 2) {
      double x1 = std::log2(static_cast<double>(rows[i].size));
      if (i == 0) {
        mid = x1 - 1;
      } else {
        double x0 = std::log2(static_cast<double>(rows[i - 1].size));
        double y0 = std::max(rows[i - 1].out, rows[i - 1].in.value_or(0));
        double t = (std::log(top / 2) - std::log(std::max(y0, 1e-9))) /
                   std::max(std::log(y) - std::log(std::max(y0, 1e-9)), 1e-9);
        mid = x0 + std::clamp(t, 0.0, 1.0) * (x1 - x0);
      }
      break;
    }
  }
  std::array<double, 3> p{std::log(top), mid, kSlopePrior};

  std::vector<double> w(pts.size(), 1.0);
  Solver solver{pts, w, x_min - 12, x_max + 6, hi - std::log(2.0), hi + std::log(50.0)};
  solver.clamp(p);
  int steps = 0;
  double scale = kNoiseFloor;
  for (int round = 0; round < kMaxRounds && steps < kMaxSteps; ++round) {
    for (std::size_t i = 0; i < pts.size(); ++i)
      scratch[i] = std::abs(pts[i].ly - model_ln(p, pts[i].x));
    scale = std::max(kNoiseFloor, kMadToSigma * median(scratch));
    for (std::size_t i = 0; i < pts.size(); ++i) {
      double r = std::abs(pts[i].ly - model_ln(p, pts[i].x));
      if (round < kHuberRounds) {
        double k = kHuberK * scale;
        w[i] = pts[i].falls ? 0.0 : r <= k ? 1.0 : k / r;
      } else {
        double u = r / (kTukeyC * scale);
        w[i] = u < 1 ? (1 - u * u) * (1 - u * u) : 0.0;
      }
    }
    solver.prior_weight = scale * scale / (kSlopePriorSd * kSlopePriorSd);
    std::array<double, 3> start = p;
    double c = solver.cost(p);
    double lambda = 1e-3;
    for (int inner = 0; inner < 8 && steps < kMaxSteps; ++inner) {
      std::array<double, 3> cand{};
      ++steps;
      if (!solver.step(p, lambda, cand)) {
        lambda *= 10;
        continue;
      }
      double cc = solver.cost(cand);
      if (cc < c) {
        bool small = c - cc < 1e-12 * (1 + c);
        p = cand;
        c = cc;
        lambda = std::max(lambda / 3, 1e-9);
        if (small) break;
      } else {
        lambda *= 4;
        if (lambda > 1e8) break;
      }
    }
    double moved =
        std::abs(p[0] - start[0]) + std::abs(p[1] - start[1]) + std::abs(p[2] - start[2]);
    if (round >= kHuberRounds && moved < 1e-7) break;
  }

  fit.peak_gbps = std::exp(p[0]);
  fit.mid_log2 = p[1];
  fit.slope = p[2];
  fit.iterations = steps;
  for (std::size_t i = 0; i < pts.size(); ++i)
    scratch[i] = std::abs(std::expm1(pts[i].ly - model_ln(p, pts[i].x)));
  fit.noise = std::max(kNoiseFloor, kMadToSigma * median(scratch));
  return fit;
}

// "1 MiB", "64 MiB", "12 B", "1.5 GiB": sizes as an operator reads them.
std::string size_text(std::uint64_t bytes) {
  static constexpr std::array<std::string_view, 5> kUnits{"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  std::size_t u = 0;
  while (v >= 1024 && u + 1 < kUnits.size()) v /= 1024, ++u;
  if (v == std::floor(v)) return fmt::format("{} {}", static_cast<std::uint64_t>(v), kUnits[u]);
  return fmt::format("{:.3g} {}", v, kUnits[u]);
}

std::string_view placement_name(bool out) { return out ? "out_of_place" : "in_place"; }

// The larger placement's busbw at a size (out-of-place alone when in-place was not measured).
double larger(const SizeRow& r) { return std::max(r.out, r.in.value_or(0)); }

enum class State { kOk, kLow, kDisagree };

struct Judged {
  State state = State::kOk;
  std::string placement;  // "both" or the placement furthest below
  double measured = 0;
  double expected = 0;
  bool from_fit = true;  // expected is the fit (else the smaller size's busbw)
  double other = -1;     // the other placement's busbw, -1 when absent
  bool kink = false;     // a lag below the curve let through as the protocol switch
  bool local = false;    // found by the local view (mark_local_dips): expected is the neighbours'
  double local_noise = 0;
};

struct Thresholds {
  double fit = kMinFall;   // below the fitted curve
  double step = kMinFall;  // below the next smaller size
};

// How far one placement is below where it should be; `severe` and `low` follow the rules at the
// top of analyze.h.
struct Fall {
  bool severe = false;
  bool low = false;
  bool kink = false;
  bool from_fit = true;
  double expected = 0;
  double ratio = 1;  // measured / expected
};

Fall fall_of(double y, std::optional<double> prev, double fitted, bool in_kink_zone,
             const Thresholds& t) {
  Fall f;
  double below_fit = 1 - y / fitted;
  double below_prev = prev && *prev > 0 ? 1 - y / *prev : 0;
  // In the protocol-switch zone a late switch makes busbw lag the curve while still rising; only
  // a fall below the smaller size (or a collapse) is more than that.
  bool lags = below_fit > t.fit;
  bool by_fit = lags && (!in_kink_zone || below_prev > 0 || below_fit > kKinkCollapse);
  // A fall below the smaller size must also show against the curve: two neighbours can differ
  // by chance when noise moves both placements together.
  bool by_step = below_prev > t.step && below_fit > kMinFall / 2;
  f.kink = lags && !by_fit;
  f.severe = by_fit || by_step;
  f.low = below_fit > t.fit / 2 || below_prev > t.step / 2;
  f.from_fit = by_fit || !by_step || fitted >= *prev;
  f.expected = f.from_fit ? fitted : *prev;
  f.ratio = y / f.expected;
  return f;
}

Judged judge(const SizeRow& r, const SizeRow* prev, double fitted, const Thresholds& t) {
  bool zone = r.size >= kKinkLowBytes && r.size <= kKinkHighBytes;
  Fall fo = fall_of(r.out, prev ? std::optional(prev->out) : std::nullopt, fitted, zone, t);
  Judged j;
  if (!r.in) {
    j.state = fo.severe ? State::kLow : State::kOk;
    j.placement = "out_of_place";
    j.measured = r.out;
    j.expected = fo.expected;
    j.from_fit = fo.from_fit;
    j.kink = fo.kink;
    return j;
  }
  Fall fi = fall_of(*r.in, prev ? prev->in : std::nullopt, fitted, zone, t);
  bool worse_out = fo.severe != fi.severe ? fo.severe : fo.ratio <= fi.ratio;
  const Fall& worse = worse_out ? fo : fi;
  const Fall& other = worse_out ? fi : fo;
  j.placement = placement_name(worse_out);
  j.measured = worse_out ? r.out : *r.in;
  j.other = worse_out ? *r.in : r.out;
  j.expected = worse.expected;
  j.from_fit = worse.from_fit;
  j.kink = fo.kink || fi.kink;
  if (fo.severe && fi.severe) {
    j.state = State::kLow;
    j.placement = "both";
  } else if (worse.severe && other.low) {
    j.state = State::kLow;
  } else if (worse.severe && 1 - j.measured / j.other > t.fit) {
    // One placement off while the other is on the curve, and apart by more than noise allows.
    j.state = State::kDisagree;
  }
  return j;
}

// Relative noise between the two placements of the same size: they measure the same transfer,
// so their spread is the run's noise without any model in it. kNoiseFloor without in-place.
// 1.4826 x MAD of |ln(out / in)| / sqrt 2 over the sizes both placements were measured at, and
// how many those were; nullopt when none.
struct Disagreement {
  double sigma = 0;
  std::size_t sizes = 0;
};
std::optional<Disagreement> placement_disagreement(const std::vector<SizeRow>& rows) {
  std::vector<double> d;
  d.reserve(rows.size());
  for (const auto& r : rows)
    if (r.in && *r.in > 0 && r.out > 0) d.push_back(std::abs(std::log(r.out / *r.in)));
  if (d.empty()) return std::nullopt;
  const std::size_t n = d.size();
  return Disagreement{kMadToSigma * median(d) / std::sqrt(2.0), n};
}

double placement_noise(const std::vector<SizeRow>& rows) {
  auto d = placement_disagreement(rows);
  return d ? std::max(kNoiseFloor, d->sigma) : kNoiseFloor;
}

}  // namespace

double fit_busbw_gbps(const Fit& fit, double size_bytes) {
  if (!fit.ok || !(size_bytes > 0)) return 0;
  if (fit.plateau_only) return fit.peak_gbps;
  double x = std::log2(size_bytes);
  return fit.peak_gbps * sigmoid(fit.slope * (x - fit.mid_log2));
}

Fit fit_run(const Run& run) { return fit_points(informative_rows(run, peak_of(run))); }

namespace {

std::string basis_text(const Judged& j, const SizeRow* prev) {
  if (j.local)
    return fmt::format("the {:.4g} GB/s its two neighbouring sizes put it at (local noise {:.1f}%)",
                       j.expected, 100 * j.local_noise);
  if (j.from_fit || !prev) return fmt::format("the fitted {:.4g} GB/s", j.expected);
  return fmt::format("the {:.4g} GB/s measured at {} (busbw should not fall as size grows)",
                     j.expected, size_text(prev->size));
}

std::string what_text(const Judged& j) {
  if (j.placement == "both") return fmt::format("busbw {:.4g} GB/s (both placements)", j.measured);
  return fmt::format("{} busbw {:.4g} GB/s", j.placement, j.measured);
}

// "; in_place 30.74 GB/s is low too" when one placement leads a fall the other shares.
std::string also_text(const Judged& j) {
  if (j.placement == "both" || j.other < 0) return "";
  return fmt::format(" ({} {:.4g} GB/s, low too)",
                     j.placement == "in_place" ? "out_of_place" : "in_place", j.other);
}

// The local view: a size below the line through its two neighbours, once the fit's own curvature
// is taken out (r = e_i - interpolation of e_{i-1}, e_{i+1}, e = ln(busbw / fit)). A model misfit
// (the protocol switch, a curve that bends more slowly than a logistic) moves neighbours together
// and inflates the fit's noise; it cancels here, so a 13% dip shows on a run whose fit noise is 4%.
// Local noise: 1.4826 x MAD of r over the run / sqrt(1.5) (r of white noise has 1.5 x its
// variance), floored at kLocalNoiseFloor. A size is low when r < -max(kNoiseK x sqrt(1.5) x noise,
// kMinLocalFall) in the larger placement and in each placement measured by half that, its busbw is
// not above the smaller size's (a size that still rises is a late switch, e.g. A3 Mega's TCPXO at
// 16 MiB), both its neighbours are on the curve, it is outside the protocol-switch zone, and it is
// not the first or last size (the first has no left neighbour; the last is a cliff's business).
constexpr double kLocalNoiseFloor = 0.02;
constexpr double kMinLocalFall = 0.10;
constexpr std::size_t kMinLocalSizes = 6;
// With the bar set by the placements, this is its floor: the size-to-size noise both placements
// share (healthy plateaus vary ~1%) is invisible to their disagreement. 2% of it on every size of a
// curve bent 8% off any logistic: 6 false dips in 5,000 runs (1%: none); 12% dips: 19 of 19 found.
constexpr double kMinMeasuredFall = 0.11;
constexpr double kMeasuredNoiseFloor = 0.005;  // placements that agree to the digit still differ this much
constexpr double kMeasuredStep = 0.02;         // a dense sweep's size-to-size wobble on a level stretch
constexpr double kDenseRatio = 1.5;            // consecutive sizes closer than this: a linear (-i) sweep

// The placements' disagreement (1.4826 x MAD of |ln(out / in)| / sqrt 2) over the sizes both were
// measured at, floored at kMeasuredNoiseFloor; nullopt when fewer than kMinLocalSizes have both.
std::optional<double> measured_placement_noise(const std::vector<SizeRow>& rows) {
  auto d = placement_disagreement(rows);
  if (!d || d->sizes < kMinLocalSizes) return std::nullopt;
  return std::max(kMeasuredNoiseFloor, d->sigma);
}

// Row k and its smaller neighbour are closer than kDenseRatio: a linear sweep's sizes.
bool dense_at(const std::vector<SizeRow>& rows, std::size_t k) {
  return k > 0 && rows[k - 1].size > 0 &&
         static_cast<double>(rows[k].size) < kDenseRatio * static_cast<double>(rows[k - 1].size);
}

void mark_local_dips(const std::vector<SizeRow>& rows, const Fit& fit, std::vector<Judged>& judged) {
  const std::size_t n = rows.size();
  if (n < kMinLocalSizes || fit.plateau_only) return;
  auto fitted = [&](std::size_t k) { return fit_busbw_gbps(fit, static_cast<double>(rows[k].size)); };
  auto in_zone = [&](std::size_t k) { return rows[k].size >= kKinkLowBytes && rows[k].size <= kKinkHighBytes; };
  // e of one placement (out, in, or the larger of the two) at row k; NaN when not measured.
  auto e_of = [&](std::size_t k, int which) {
    double v = which == 0 ? rows[k].out : which == 1 ? rows[k].in.value_or(0) : larger(rows[k]);
    double f = fitted(k);
    return v > 0 && f > 0 ? std::log(v / f) : std::numeric_limits<double>::quiet_NaN();
  };
  auto residual = [&](std::size_t k, int which) {
    const double x0 = std::log2(static_cast<double>(rows[k - 1].size));
    const double x1 = std::log2(static_cast<double>(rows[k].size));
    const double x2 = std::log2(static_cast<double>(rows[k + 1].size));
    const double w = x2 > x0 ? (x1 - x0) / (x2 - x0) : 0.5;
    return e_of(k, which) - (e_of(k - 1, which) * (1 - w) + e_of(k + 1, which) * w);
  };
  std::vector<double> r;
  r.reserve(n);
  for (std::size_t k = 1; k + 1 < n; ++k) {
    if (in_zone(k)) continue;
    double v = residual(k, 2);
    if (std::isfinite(v)) r.push_back(std::abs(v));
  }
  if (r.size() < kMinLocalSizes - 2) return;
  double noise = std::max(kLocalNoiseFloor, kMadToSigma * median(r) / std::sqrt(1.5));
  // Issue 37: a curve that bends where no logistic does (a protocol switch, NVLS) inflates r's
  // spread with the model's misfit, not with noise: 4% of it made a 22% bar that a 12% dip both
  // placements show passed under. With both placements measured, the noise that can hide a dip
  // is their disagreement (the same transfer measured twice), so that sets the bar, floored at
  // kMeasuredNoiseFloor; the bar itself never drops under kMinLocalFall.
  double floor = kMinLocalFall;
  if (std::optional<double> measured = measured_placement_noise(rows); measured && *measured < noise) {
    noise = *measured;
    floor = kMinMeasuredFall;
  }
  const double thr = std::max(kNoiseK * std::sqrt(1.5) * noise, floor);
  for (std::size_t k = 1; k + 1 < n; ++k) {
    if (in_zone(k) || judged[k].state != State::kOk || judged[k - 1].state != State::kOk ||
        judged[k + 1].state != State::kOk)
      continue;
    if (!(residual(k, 2) < -thr) || !(residual(k, 0) < -thr / 2)) continue;
    if (rows[k].in && !(residual(k, 1) < -thr / 2)) continue;
    // Still rising over the smaller size: a switch that comes late (TCPXO at 16 MiB, a
    // latency-bound edge), not a fall; busbw never falls as size grows on a healthy run.
    if (larger(rows[k]) > larger(rows[k - 1])) continue;
    // A dense sweep (-i, a linear step) moves little from one size to the next: a size level with
    // the one before it, under the line only because the next one stepped up to a new protocol's
    // level, is the old level's last size, not a dip. A dip falls.
    if (dense_at(rows, k) && larger(rows[k]) > larger(rows[k - 1]) * (1 - std::max(kMeasuredStep, noise))) continue;
    // Where the neighbours put it: their busbw, interpolated the same way.
    const double expected = larger(rows[k]) * std::exp(-residual(k, 2));
    Judged j;
    j.state = State::kLow;
    j.placement = rows[k].in ? "both" : "out_of_place";
    j.measured = larger(rows[k]);  // both are at most this
    j.expected = expected;
    j.from_fit = true;
    j.local = true;
    j.local_noise = noise;
    judged[k] = j;
  }
}

// Dips, cliffs and placement disagreements, in order of size.
void find_falls(const std::vector<SizeRow>& rows, const Fit& fit, int nodes, std::string_view backend,
                RunAnalysis& a) {
  Thresholds thr{std::max(kNoiseK * fit.noise, kMinFall),
                 std::max(kNoiseK * placement_noise(rows), kMinFall)};
  std::vector<Judged> judged;
  judged.reserve(rows.size());
  std::string kinks;
  std::size_t kink_count = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    judged.push_back(judge(rows[i], i ? &rows[i - 1] : nullptr,
                           fit_busbw_gbps(fit, static_cast<double>(rows[i].size)), thr));
    if (judged.back().kink && judged.back().state == State::kOk)
      kinks += fmt::format("{}{}", kink_count++ ? ", " : "", size_text(rows[i].size));
  }
  // Twins: a size next to a low one with the same busbw (within 1%), itself under the fit by half
  // the threshold, is low too. Two sizes with one value get one verdict, not one each.
  auto value = [&](std::size_t k) { return larger(rows[k]); };
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t k = 0; k < rows.size(); ++k) {
      if (judged[k].state != State::kLow) continue;
      for (std::size_t n : {k - 1, k + 1}) {
        if (n >= rows.size() || judged[n].state != State::kOk) continue;  // k - 1 wraps at 0
        const double v = value(n), expected = fit_busbw_gbps(fit, static_cast<double>(rows[n].size));
        if (std::abs(v - value(k)) > 0.01 * value(k) || v > expected * (1 - thr.fit / 2)) continue;
        judged[n] = judged[k];
        judged[n].measured = v;
        judged[n].expected = expected;
        judged[n].from_fit = true;
        judged[n].kink = false;
        changed = true;
      }
    }
  }
  // The first measured size is still on its way up on a healthy curve, and the fit has nothing
  // before it: it is a dip only if it is slow against the size after it too, i.e. it takes longer
  // per operation than that larger size (busbw below next * size / next size).
  if (rows.size() > 1 && judged[0].state == State::kLow) {
    const double first = larger(rows[0]);
    const double second = larger(rows[1]);
    if (first >= second * static_cast<double>(rows[0].size) / static_cast<double>(rows[1].size))
      judged[0].state = State::kOk;
  }
  mark_local_dips(rows, fit, judged);
  if (!kinks.empty())
    a.notes.push_back(
        fmt::format("{} {} the fitted curve by more than {:.0f}% while busbw still "
                    "rises: {}, not a finding",
                    kinks, kink_count == 1 ? "lags" : "lag", 100 * thr.fit,
                    backend == "mpi" ? "the MPI library switching algorithms by message size"
                                     : "the normal protocol switch (LL/Ring -> Simple/NVLS)"));
  for (std::size_t i = 0; i < rows.size();) {
    const Judged& j = judged[i];
    const SizeRow* prev = i ? &rows[i - 1] : nullptr;
    if (j.state == State::kDisagree) {
      a.anomalies.push_back(
          {rows[i].size, "placement_disagreement", j.placement, j.measured, j.expected,
           fmt::format("{}: {} busbw {:.4g} GB/s is {:.0f}% below {} while the other placement is "
                       "on the curve at {:.4g} GB/s",
                       size_text(rows[i].size), j.placement, j.measured,
                       100 * (1 - j.measured / j.expected), basis_text(j, prev), j.other),
           nodes});
      ++i;
      continue;
    }
    if (j.state != State::kLow) {
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end + 1 < rows.size() && judged[end + 1].state == State::kLow) ++end;
    std::size_t len = end - i + 1;
    bool to_end = end + 1 == rows.size();
    bool cliff = to_end || len > kMaxDipSizes;
    // A dense sweep's last sizes on one protocol's level, under the fit because the next size
    // steps up to a higher level that stays: nothing fell, nothing recovers to a trend. A note.
    if (!to_end && !j.local && dense_at(rows, i)) {
      double lowest = larger(rows[i]);
      for (std::size_t k = i; k <= end; ++k) lowest = std::min(lowest, larger(rows[k]));
      if (lowest > larger(rows[i - 1]) * (1 - kMeasuredStep)) {
        a.notes.push_back(fmt::format(
            "{}{} holds the level of {} ({:.4g} GB/s) and {} steps up to {:.4g} GB/s: the protocol switch of a "
            "linear sweep, not a dip",
            size_text(rows[i].size), len == 1 ? "" : fmt::format(" to {}", size_text(rows[end].size)),
            size_text(rows[i - 1].size), larger(rows[i - 1]), size_text(rows[end + 1].size), larger(rows[end + 1])));
        i = end + 1;
        continue;
      }
    }
    std::string head =
        len == 1 ? size_text(rows[i].size)
                 : fmt::format("{} to {}", size_text(rows[i].size), size_text(rows[end].size));
    std::string detail =
        cliff ? fmt::format(
                    "from {} on, {} is {:.0f}% below {}{}, and busbw stays low through "
                    "{}{}",
                    size_text(rows[i].size), what_text(j), 100 * (1 - j.measured / j.expected),
                    basis_text(j, prev), also_text(j), size_text(rows[end].size),
                    to_end ? ", the last size measured" : "")
              : fmt::format("{}: {} is {:.0f}% below {}{}; busbw recovers at {}", head,
                            what_text(j), 100 * (1 - j.measured / j.expected), basis_text(j, prev),
                            also_text(j), size_text(rows[end + 1].size));
    a.anomalies.push_back({rows[i].size, cliff ? "cliff" : "dip", j.placement, j.measured,
                           j.expected, std::move(detail), nodes});
    i = end + 1;
  }
}

// Collapses: what the fit never sees, because their busbw is under kTinyShare of the peak and they
// are left out of it. Two views of each size, not only busbw against the fit:
//  - time: a size that takes kCollapseTimes as long per operation as a larger size does (a larger
//    message is never faster by that much on a healthy run; 256 KiB at 12 ms after 0.3 ms at
//    128 KiB, an all_gather at 70 ms an operation at 2-8 MiB);
//  - after the peak: a size past the one where busbw peaked that falls below kCollapseShare of
//    the peak (busbw never falls that far once the fabric is saturated; a gather that collapses at
//    6 GiB, a sweep that falls from 3.54 to 0.13 GB/s from 256 KiB on).
constexpr double kCollapseTimes = 3.0;
constexpr double kCollapseMinUs = 50.0;  // below this, timer resolution and launch jitter
constexpr double kCollapseShare = 0.25;
// A run that ends below this never left the latency-bound sizes: its curve is not judged.
constexpr std::uint64_t kMinJudgedBytes = 1024 * 1024;

void find_collapses(const Run& run, RunAnalysis& a) {
  struct T {
    std::uint64_t size;
    double time_us, busbw;
  };
  std::vector<T> v;
  for (const auto& r : run.rows) {
    if (r.size_bytes == 0) continue;
    double t = r.out_of_place.time_us, b = r.out_of_place.busbw_gbps;
    if (r.in_place) t = std::min(t, r.in_place->time_us), b = std::max(b, r.in_place->busbw_gbps);
    if (std::isfinite(t) && t > 0) v.push_back({r.size_bytes, t, b});
  }
  std::stable_sort(v.begin(), v.end(), [](const T& x, const T& y) { return x.size < y.size; });
  if (v.size() < 2) return;
  std::vector<char> flagged(v.size(), 0);
  std::vector<std::string> why(v.size());
  // The fastest time at any larger size, from the right.
  std::vector<std::size_t> fastest_after(v.size(), v.size());
  for (std::size_t i = v.size() - 1; i-- > 0;) {
    std::size_t k = fastest_after[i + 1];
    fastest_after[i] = (k == v.size() || v[i + 1].time_us <= v[k].time_us) ? i + 1 : k;
  }
  for (std::size_t i = 0; i + 1 < v.size(); ++i) {
    const T& later = v[fastest_after[i]];
    if (v[i].time_us > kCollapseTimes * later.time_us && v[i].time_us - later.time_us > kCollapseMinUs) {
      flagged[i] = 1;
      why[i] = fmt::format("{:.4g} us per operation, {:.0f}x the {:.4g} us of the larger {}", v[i].time_us,
                           v[i].time_us / later.time_us, later.time_us, size_text(later.size));
    }
  }
  std::size_t peak_at = 0;
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v[i].busbw > v[peak_at].busbw) peak_at = i;
  const double peak = v[peak_at].busbw;
  for (std::size_t i = peak_at + 1; i < v.size() && peak > 0; ++i)
    if (v[i].busbw < kCollapseShare * peak && !flagged[i]) {
      flagged[i] = 1;
      why[i] = fmt::format("busbw {:.3g} GB/s after {:.4g} GB/s at {}: past the peak, busbw fell to {:.1f}% of it",
                           v[i].busbw, peak, size_text(v[peak_at].size), 100 * v[i].busbw / peak);
    }
  for (std::size_t i = 0; i < v.size();) {
    if (!flagged[i]) {
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end + 1 < v.size() && flagged[end + 1]) ++end;
    // A dip or cliff the fit reported at these sizes is this collapse: said once, as a collapse.
    const std::uint64_t lo = v[i].size, hi = v[end].size;
    a.anomalies.erase(std::remove_if(a.anomalies.begin(), a.anomalies.end(),
                                     [&](const Anomaly& an) {
                                       return (an.kind == "dip" || an.kind == "cliff") && an.size_bytes >= lo &&
                                              an.size_bytes <= hi;
                                     }),
                      a.anomalies.end());
    {
      double low = v[i].busbw;
      for (std::size_t k = i; k <= end; ++k) low = std::min(low, v[k].busbw);
      std::string head = i == end ? size_text(v[i].size) : fmt::format("{} to {}", size_text(v[i].size), size_text(v[end].size));
      // A group at the first measured size is a slow first size (a warn): the start-up cost of the
      // first operation, or a real fault; past the first size it is a collapse (a fail).
      const bool first = i == 0;
      a.anomalies.push_back(
          {v[i].size, first ? "slow_first_size" : "collapse", "both", low, peak,
           fmt::format("{}: {} {:.3g} GB/s ({:.2g}% of the run's peak {:.4g} GB/s); {}{}", head,
                       first ? "the first size measured is slow per operation against larger sizes, at" : "collapse to", low,
                       peak > 0 ? 100 * low / peak : 0.0, peak, why[i],
                       end + 1 == v.size() ? ", through the last size measured" : ""),
           run.nodes});
    }
    i = end + 1;
  }
}

void find_wrong_results(const Run& run, RunAnalysis& a) {
  bool row_wrong = false;
  if (!run.old_format) {
    for (const auto& r : run.rows) {
      auto check = [&](const std::optional<Measure>& m, std::string_view placement) {
        if (!m || !m->wrong || !(*m->wrong > 0)) return;
        row_wrong = true;
        a.anomalies.push_back({r.size_bytes, "wrong_results", std::string(placement), m->busbw_gbps,
                               m->busbw_gbps,
                               fmt::format("{} {}: {:g} wrong values; the collective returned "
                                           "corrupt data: isolate the node(s) and check GPU "
                                           "memory (Xid, ECC) and NIC health",
                                           size_text(r.size_bytes), placement, *m->wrong),
                               run.nodes});
      };
      check(r.out_of_place, "out_of_place");
      check(r.in_place, "in_place");
    }
  } else {
    // Old builds print the largest relative error, not a count; nccl-tests compares it with a
    // tolerance that depends on the type and the rank count and reports the verdict in the footer.
    double worst = 0;
    for (const auto& r : run.rows) {
      worst = std::max(worst, r.out_of_place.wrong.value_or(0));
      if (r.in_place) worst = std::max(worst, r.in_place->wrong.value_or(0));
    }
    if (worst >= kOldErrorNote)
      a.notes.push_back(fmt::format(
          "the old-format error column reaches {:g}; nccl-tests judges "
          "it against its own tolerance (the footer's out-of-bounds "
          "count: {})",
          worst,
          run.out_of_bounds ? fmt::format("{}", *run.out_of_bounds) : std::string("not printed")));
  }
  if (!row_wrong && run.out_of_bounds && *run.out_of_bounds > 0)
    a.anomalies.push_back({0, "wrong_results", "", 0, 0,
                           fmt::format("nccl-tests counted {} out-of-bounds values: the collective "
                                       "returned corrupt data; isolate the node(s) and check GPU "
                                       "memory (Xid, ECC) and NIC health",
                                       *run.out_of_bounds),
                           run.nodes});
}

void judge_reference(const Run& run, const std::vector<SizeRow>& rows,
                     const std::vector<Reference>& refs, std::string_view variant, RunAnalysis& a) {
  const Reference* ref = find_reference(refs, run, variant);
  if (!ref) {
    if (!run.gpu_model.empty() && run.nodes > 1 && run.fabric.empty())
      a.notes.push_back(fmt::format("no reference: the fabric of this {}-node run is unknown (no NCCL INFO NET line); "
                                    "declare it (--fabric IB|RoCE|EFA|TCPX|Slingshot) to judge the peak",
                                    run.nodes));
    else if (!run.gpu_model.empty() && run.nodes > 0)
      a.notes.push_back(fmt::format("no reference for {} {} on {} node(s), {}{}: the peak is not judged",
                                    run.gpu_model, collective_name(run.collective), run.nodes,
                                    run.nodes == 1 ? std::string("within one node") : run.fabric,
                                    variant == "default" ? "" : fmt::format(" ({} variant)", variant)));
    return;
  }
  a.reference = *ref;
  double peak = 0;
  std::uint64_t peak_size = 0;
  for (const auto& r : rows) {
    double y = std::max(r.out, r.in.value_or(0));
    if (y >= peak) peak = y, peak_size = r.size;
  }
  if (static_cast<double>(rows.back().size) < kPlateauBytes) {
    a.notes.push_back(
        fmt::format("the largest size, {}, is below 1 GiB: the plateau is not "
                    "measured, so the run is not judged against {} ({})",
                    size_text(rows.back().size), ref->source, ref->fabric));
    return;
  }
  if (ref->pass_bar_gbps && peak < *ref->pass_bar_gbps) {
    a.anomalies.push_back({peak_size, "below_reference", "", peak, *ref->pass_bar_gbps,
                           fmt::format("peak busbw {:.4g} GB/s is under the pass bar {:.4g} GB/s "
                                       "({}, {}); check the NCCL setup and the fabric",
                                       peak, *ref->pass_bar_gbps, ref->source, ref->fabric),
                           run.nodes});
  } else if (ref->expected_busbw_gbps && peak < (1 - kBelowReference) * *ref->expected_busbw_gbps) {
    a.anomalies.push_back(
        {peak_size, "below_reference", "", peak, *ref->expected_busbw_gbps,
         fmt::format("peak busbw {:.4g} GB/s is {:.0f}% below the {:.4g} GB/s expected for {} on "
                     "{} node(s), {} ({}); check the NCCL setup and the fabric",
                     peak, 100 * (1 - peak / *ref->expected_busbw_gbps), *ref->expected_busbw_gbps,
                     ref->gpu, run.nodes, ref->fabric, ref->source),
         run.nodes});
  }
}

}  // namespace

RunAnalysis analyze_run(const Run& run, const std::vector<Reference>& refs, std::string_view variant) {
  RunAnalysis a;
  if (run.rows.empty()) {
    a.verdict = "no_data";
    a.notes.push_back("no rows: nothing to judge");
    return a;
  }
  double sum = 0;
  std::size_t n = 0;
  for (const auto& r : run.rows) {
    sum += r.out_of_place.busbw_gbps, ++n;
    if (r.in_place) sum += r.in_place->busbw_gbps, ++n;
  }
  a.peak_busbw_gbps = peak_of(run);
  a.avg_busbw_gbps = sum / static_cast<double>(n);
  // One rank of a collective whose busbw is (n-1)/n or 2(n-1)/n of algbw: busbw is 0 by
  // definition, whatever the rows say. Nothing to judge, never a pass.
  if (run.ranks == 1 && busbw_factor(run.collective, 2) > 0) {
    a.verdict = "incomplete";
    a.notes.push_back("1 rank: busbw is 0 by definition for this collective; nothing to judge");
    find_wrong_results(run, a);
    if (!a.anomalies.empty()) a.verdict = "fail";
    return a;
  }

  auto rows = informative_rows(run, a.peak_busbw_gbps);
  a.fit = fit_points(rows);
  if (a.fit.ok) {
    if (a.fit.plateau_only)
      a.notes.push_back(fmt::format(
          "{} size(s), {} to {}, and no rise: fitted a plateau only "
          "({:.4g} GB/s), no curve",
          rows.size(), size_text(rows.front().size), size_text(rows.back().size), a.fit.peak_gbps));
    else if (rows.front().out > kFootShare * a.fit.peak_gbps)
      a.notes.push_back(
          fmt::format("the run starts at {} ({:.0f}% of the fitted peak): its "
                      "rising edge is not measured, so the slope leans on the "
                      "latency-bandwidth model",
                      size_text(rows.front().size), 100 * rows.front().out / a.fit.peak_gbps));
    if (run.rows.back().size_bytes >= kMinJudgedBytes)
      find_falls(rows, a.fit, run.nodes, run.backend, a);
    else
      a.notes.push_back(fmt::format("the run ends at {}, before the bandwidth-bound sizes: dips and cliffs on the "
                                    "latency-bound part alone are timer noise, not judged",
                                    size_text(run.rows.back().size_bytes)));
    const std::uint64_t largest = run.rows.back().size_bytes;
    if (a.fit.plateau_only || fit_busbw_gbps(a.fit, static_cast<double>(largest)) >= 0.9 * a.fit.peak_gbps) {
      // Never above what was measured: a fit that bends late (GB200 NVL72 from 512 MiB) puts its
      // asymptote a few percent past the data's last sizes.
      a.plateau_gbps = std::min(a.fit.peak_gbps, a.peak_busbw_gbps);
    } else {
      a.plateau_not_reached_by = largest;
      a.notes.push_back(fmt::format("the plateau is not reached by {} (the curve is still rising there, at {:.3g} "
                                    "GB/s): no plateau is reported past the measured sizes",
                                    size_text(largest), fit_busbw_gbps(a.fit, static_cast<double>(largest))));
    }
  } else {
    a.notes.push_back("every size is latency-bound (busbw about 0): no curve to judge");
  }
  find_collapses(run, a);
  std::stable_sort(a.anomalies.begin(), a.anomalies.end(),
                   [](const Anomaly& x, const Anomaly& y) { return x.size_bytes < y.size_bytes; });
  find_wrong_results(run, a);
  if (!rows.empty()) judge_reference(run, rows, refs, variant, a);

  a.verdict = "pass";
  for (const auto& an : a.anomalies) {
    if (an.kind == "wrong_results" || an.kind == "below_reference" || an.kind == "collapse")
      a.verdict = "fail";
    else if (a.verdict == "pass")
      a.verdict = "warn";
  }
  // Nothing to judge is never a pass: one rank of a collective whose busbw is 0 by definition, a
  // curve that is latency-bound everywhere, or a table cut off before its footer.
  if (a.verdict == "pass") {
    if (!a.fit.ok) {
      a.verdict = "incomplete";
    } else if (!run.complete && run.rows.back().size_bytes < (64ull << 20)) {
      // Cut off before the sizes where a fabric's bandwidth shows (a paste that ends at 16 GiB
      // without the footer still measured them; one that ends at 512 bytes did not).
      a.verdict = "incomplete";
      a.notes.push_back(fmt::format("the table ends at {} without nccl-tests' footer: the log is cut off before "
                                    "the bandwidth-bound sizes (64 MiB and up), so there is nothing to judge",
                                    size_text(run.rows.back().size_bytes)));
    }
  }
  return a;
}

std::vector<Anomaly> analyze_scaling(const std::vector<const Run*>& runs) {
  // Per node count: the best peak and the size it was reached at.
  std::map<int, std::pair<double, std::uint64_t>> best;
  for (const Run* run : runs) {
    if (!run || run->nodes < 2) continue;
    for (const auto& r : run->rows) {
      double y = std::max(r.out_of_place.busbw_gbps, r.in_place ? r.in_place->busbw_gbps : 0.0);
      auto& b = best[run->nodes];
      if (y > b.first) b = {y, r.size_bytes};
    }
  }
  constexpr double kPerDoubling = 0.75;
  constexpr double kMonotoneSlack = 0.10;
  std::vector<Anomaly> out;
  for (auto it = best.begin(); it != best.end(); ++it) {
    const auto& [m, mb] = *it;
    // Against every smaller count: the worst shortfall is the one reported.
    double worst_ratio = 1;
    Anomaly found;
    for (auto jt = best.begin(); jt != it; ++jt) {
      const auto& [nn, nb] = *jt;
      double allowed = nb.first * std::pow(kPerDoubling, std::log2(static_cast<double>(m) / nn));
      if (mb.first < allowed && mb.first / allowed < worst_ratio) {
        worst_ratio = mb.first / allowed;
        found = {mb.second,
                 "poor_scaling",
                 "",
                 mb.first,
                 allowed,
                 fmt::format("{} nodes peak {:.4g} GB/s is below {:.4g} GB/s, {:.2f}^{:.3g} x the "
                             "{}-node peak {:.4g} GB/s (at most 25% lost per doubling of nodes); "
                             "check the fabric between the added nodes",
                             m, mb.first, allowed, kPerDoubling,
                             std::log2(static_cast<double>(m) / nn), nn, nb.first),
                 m};
      }
    }
    // Against every larger count: a smaller count should not be slower.
    for (auto jt = std::next(it); jt != best.end() && worst_ratio == 1; ++jt) {
      const auto& [nn, nb] = *jt;
      if (mb.first < (1 - kMonotoneSlack) * nb.first) {
        worst_ratio = mb.first / nb.first;
        found = {mb.second,
                 "poor_scaling",
                 "",
                 mb.first,
                 nb.first,
                 fmt::format("{} nodes peak {:.4g} GB/s is more than 10% below the {}-node peak "
                             "{:.4g} GB/s; a smaller job should not be slower: check the {} "
                             "nodes' links",
                             m, mb.first, nn, nb.first, m),
                 m};
      }
    }
    if (worst_ratio < 1) out.push_back(std::move(found));
  }
  return out;
}

}  // namespace cmax::nccl
