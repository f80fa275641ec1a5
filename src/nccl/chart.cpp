#include "nccl/chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include "core/svg_text.h"

namespace cmax::nccl {
namespace {

constexpr double kWidth = 860, kHeight = 500;
constexpr double kLeft = 72, kRight = 24, kTop = 56, kBottom = 64;
constexpr double kPlotW = kWidth - kLeft - kRight, kPlotH = kHeight - kTop - kBottom;
constexpr int kMaxXLabels = 12;
constexpr int kFitSamplesPerDoubling = 4;

constexpr std::string_view kOutColor = "#1f77b4";
constexpr std::string_view kInColor = "#ff7f0e";
constexpr std::string_view kFitColor = "#2ca02c";
constexpr std::string_view kFlagColor = "#d62728";
constexpr std::string_view kRefColor = "#555555";

// "8 B", "1 KiB", "64 MiB", "16 GiB" for 2^e bytes.
std::string pow2_label(int e) {
  static constexpr std::array<std::string_view, 5> kUnits{"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = std::clamp(e / 10, 0, static_cast<int>(kUnits.size()) - 1);
  return fmt::format("{} {}", std::uint64_t{1} << (e - 10 * unit), kUnits[unit]);
}

struct Axes {
  double x_lo, x_hi;  // log2 size
  double y_hi;        // GB/s
  double px(double x) const { return kLeft + (x - x_lo) / (x_hi - x_lo) * kPlotW; }
  double py(double y) const { return kTop + kPlotH - std::clamp(y / y_hi, 0.0, 1.05) * kPlotH; }
};

std::string title_of(const Run& run) {
  std::string t(collective_name(run.collective));
  if (run.ranks > 0) t += fmt::format(" · {} ranks", run.ranks);
  if (run.nodes > 0) t += fmt::format(" · {} node{}", run.nodes, run.nodes == 1 ? "" : "s");
  if (!run.gpu_model.empty()) t += fmt::format(" · {}", run.gpu_model);
  return t;
}

// The reference line: the pass bar where the reference has one, else its expected peak.
std::optional<double> reference_line(const RunAnalysis& a) {
  if (!a.reference) return std::nullopt;
  return a.reference->pass_bar_gbps ? a.reference->pass_bar_gbps : a.reference->expected_busbw_gbps;
}

// The axes: x over the sizes measured (whole doublings, at least two), y to a nice tick above the
// peak, the fit (up to 1.5 times the peak) and the reference line. *step: the y tick.
Axes scale(const Run& run, const RunAnalysis& a, double* step) {
  double x_lo = 3, x_hi = 34;
  if (!run.rows.empty()) {
    x_lo = x_hi = std::log2(static_cast<double>(std::max<std::uint64_t>(run.rows.front().size_bytes, 1)));
    for (const auto& r : run.rows) {
      double x = std::log2(static_cast<double>(std::max<std::uint64_t>(r.size_bytes, 1)));
      x_lo = std::min(x_lo, x), x_hi = std::max(x_hi, x);
    }
    x_lo = std::floor(x_lo), x_hi = std::ceil(x_hi);
    if (x_hi - x_lo < 2) x_lo -= 1, x_hi += 1;
  }
  double top = std::max(a.peak_busbw_gbps, 1e-3);
  if (a.fit.ok) top = std::max(top, std::min(a.fit.peak_gbps, 1.5 * a.peak_busbw_gbps));
  if (auto ref = reference_line(a)) top = std::max(top, *ref);
  *step = core::nice_tick_step(top * 1.05);
  return Axes{x_lo, x_hi, std::ceil(top * 1.05 / *step) * *step};
}

// Grid, frame, the power-of-two size labels (at most kMaxXLabels), the busbw labels and titles.
void draw_axes(std::string& out, const Axes& ax, double step) {
  auto it = std::back_inserter(out);
  out += "<g class=\"grid\" stroke=\"#e0e0e0\" stroke-width=\"1\">\n";
  for (double y = 0; y <= ax.y_hi + step / 2; y += step)
    fmt::format_to(it, "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>\n", kLeft, ax.py(y),
                   kLeft + kPlotW, ax.py(y));
  out += "</g>\n<g class=\"axes\" fill=\"#333333\">\n";
  fmt::format_to(it,
                 "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\" "
                 "stroke=\"#333333\"/>\n",
                 kLeft, kTop, kPlotW, kPlotH);
  int span = static_cast<int>(ax.x_hi - ax.x_lo);
  int label_every = 10;
  for (int s : {1, 2, 5, 10})
    if (span / s <= kMaxXLabels) {
      label_every = s;
      break;
    }
  for (int e = static_cast<int>(ax.x_lo); e <= static_cast<int>(ax.x_hi); ++e) {
    if (e < 0 || e % label_every != 0) continue;
    double x = ax.px(e);
    fmt::format_to(it,
                   "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" "
                   "stroke=\"#333333\"/>\n"
                   "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4}</text>\n",
                   x, kTop + kPlotH, kTop + kPlotH + 5, kTop + kPlotH + 19, pow2_label(e));
  }
  for (double y = 0; y <= ax.y_hi + step / 2; y += step)
    fmt::format_to(it, "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{:g}</text>\n", kLeft - 6, ax.py(y) + 4,
                   y);
  fmt::format_to(it,
                 "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">message size (log2 scale)</text>\n"
                 "<text transform=\"translate(18 {:.1f}) rotate(-90)\" text-anchor=\"middle\">busbw "
                 "(GB/s)</text>\n"
                 "</g>\n",
                 kLeft + kPlotW / 2, kHeight - 18, kTop + kPlotH / 2);
}

// The reference peak, labelled mid-plot: the curve is still low there, the legend is to the left.
void draw_reference(std::string& out, const Axes& ax, const Reference& ref, double line) {
  fmt::format_to(std::back_inserter(out),
                 "<g class=\"reference\"><line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" "
                 "stroke=\"{}\" stroke-dasharray=\"6 4\"/>\n"
                 "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"{}\">",
                 kLeft, ax.py(line), kLeft + kPlotW, ax.py(line), kRefColor, kLeft + kPlotW / 2, ax.py(line) - 5,
                 kRefColor);
  core::append_xml_text(
      out, fmt::format("{} {:g} GB/s ({})", ref.pass_bar_gbps ? "pass bar" : "reference", line, ref.source));
  out += "</text></g>\n";
}

// The fitted curve, kFitSamplesPerDoubling points a doubling.
void draw_fit(std::string& out, const Axes& ax, const Fit& fit) {
  out += "<path class=\"fit\" fill=\"none\" stroke=\"";
  out += kFitColor;
  out += "\" stroke-width=\"1.5\" d=\"";
  int samples = static_cast<int>((ax.x_hi - ax.x_lo) * kFitSamplesPerDoubling);
  for (int i = 0; i <= samples; ++i) {
    double x = ax.x_lo + (ax.x_hi - ax.x_lo) * i / samples;
    fmt::format_to(std::back_inserter(out), "{}{:.1f} {:.1f}", i ? " L" : "M", ax.px(x),
                   ax.py(fit_busbw_gbps(fit, std::exp2(x))));
  }
  out += "\"/>\n";
}

// Points: in-place (hollow, larger) under out-of-place (filled) so both stay visible.
void draw_points(std::string& out, const Axes& ax, const Run& run) {
  auto it = std::back_inserter(out);
  out += "<g class=\"points\">\n";
  for (const auto& r : run.rows) {
    double x = ax.px(std::log2(static_cast<double>(std::max<std::uint64_t>(r.size_bytes, 1))));
    if (r.in_place)
      fmt::format_to(it,
                     "<circle class=\"pt ip\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"none\" "
                     "stroke=\"{}\" stroke-width=\"1.5\"><title>{} B in-place {:g} GB/s</title></circle>\n",
                     x, ax.py(r.in_place->busbw_gbps), kInColor, r.size_bytes, r.in_place->busbw_gbps);
    fmt::format_to(it,
                   "<circle class=\"pt oop\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\">"
                   "<title>{} B out-of-place {:g} GB/s</title></circle>\n",
                   x, ax.py(r.out_of_place.busbw_gbps), kOutColor, r.size_bytes, r.out_of_place.busbw_gbps);
  }
  out += "</g>\n";
}

// The flagged sizes: a ring with the anomaly's detail, and its kind above.
void draw_flags(std::string& out, const Axes& ax, const RunAnalysis& a) {
  auto it = std::back_inserter(out);
  out += "<g class=\"flags\">\n";
  for (const auto& an : a.anomalies) {
    if (an.size_bytes == 0) continue;
    double x = ax.px(std::log2(static_cast<double>(an.size_bytes)));
    double y = ax.py(an.measured_gbps);
    fmt::format_to(it,
                   "<circle class=\"flag\" data-size=\"{}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"9\" "
                   "fill=\"none\" stroke=\"{}\" stroke-width=\"2\"><title>",
                   an.size_bytes, x, y, kFlagColor);
    core::append_xml_text(out, an.detail);
    fmt::format_to(it,
                   "</title></circle>\n<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" "
                   "fill=\"{}\" font-weight=\"bold\">",
                   x, std::max(y - 14, kTop + 12), kFlagColor);
    core::append_xml_text(out, an.kind);
    out += "</text>\n";
  }
  out += "</g>\n";
}

// The legend, top left inside the plot (the curve rises to the right, so that corner is free).
void draw_legend(std::string& out, const RunAnalysis& a, bool has_reference) {
  auto it = std::back_inserter(out);
  double lx = kLeft + 12, ly = kTop + 16;
  fmt::format_to(it,
                 "<g class=\"legend\">\n<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"190\" height=\"{}\" "
                 "fill=\"#ffffff\" fill-opacity=\"0.85\" stroke=\"#cccccc\"/>\n",
                 lx - 6, ly - 12, has_reference ? 98 : 82);
  fmt::format_to(it,
                 "<circle cx=\"{0:.1f}\" cy=\"{1:.1f}\" r=\"3\" fill=\"{2}\"/><text x=\"{3:.1f}\" "
                 "y=\"{4:.1f}\">out-of-place</text>\n"
                 "<circle cx=\"{0:.1f}\" cy=\"{5:.1f}\" r=\"5\" fill=\"none\" stroke=\"{6}\" "
                 "stroke-width=\"1.5\"/><text x=\"{3:.1f}\" y=\"{7:.1f}\">in-place</text>\n",
                 lx + 6, ly, kOutColor, lx + 20, ly + 4, ly + 16, kInColor, ly + 20);
  if (a.fit.ok)
    fmt::format_to(it,
                   "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
                   "stroke-width=\"1.5\"/><text x=\"{:.1f}\" y=\"{:.1f}\">fit{} (peak {:.4g} GB/s)</text>\n",
                   lx, ly + 32, lx + 14, ly + 32, kFitColor, lx + 20, ly + 36, a.fit.plateau_only ? ", plateau" : "",
                   a.fit.peak_gbps);
  fmt::format_to(it,
                 "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"6\" fill=\"none\" stroke=\"{}\" "
                 "stroke-width=\"2\"/><text x=\"{:.1f}\" y=\"{:.1f}\">flagged size</text>\n",
                 lx + 6, ly + 48, kFlagColor, lx + 20, ly + 52);
  if (has_reference)
    fmt::format_to(it,
                   "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
                   "stroke-dasharray=\"6 4\"/><text x=\"{:.1f}\" y=\"{:.1f}\">reference peak</text>\n",
                   lx, ly + 64, lx + 14, ly + 64, kRefColor, lx + 20, ly + 68);
  out += "</g>\n";
}

}  // namespace

std::string render_svg(const Run& run, const RunAnalysis& a) {
  std::string out;
  out.reserve(6000 + run.rows.size() * 260 + a.anomalies.size() * 300);
  double step = 1;
  const Axes ax = scale(run, a, &step);
  const std::optional<double> ref_line = reference_line(a);
  std::string title = core::xml_text(title_of(run));
  fmt::format_to(std::back_inserter(out),
                 "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
                 "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"12\">\n"
                 "<title>{2}</title>\n"
                 "<rect width=\"{0}\" height=\"{1}\" fill=\"#ffffff\"/>\n"
                 "<text x=\"{3}\" y=\"24\" font-size=\"16\" text-anchor=\"middle\">{2}</text>\n",
                 kWidth, kHeight, title, kWidth / 2);
  draw_axes(out, ax, step);
  if (ref_line) draw_reference(out, ax, *a.reference, *ref_line);
  if (a.fit.ok) draw_fit(out, ax, a.fit);
  draw_points(out, ax, run);
  draw_flags(out, ax, a);
  draw_legend(out, a, ref_line.has_value());
  out += "</svg>\n";
  return out;
}

}  // namespace cmax::nccl
