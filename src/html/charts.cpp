#include "html/charts.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <limits>

#include <fmt/format.h>

#include "core/svg_text.h"

namespace cmax::html {
namespace {

using core::xml_text;

// A palette that stays apart in print and for the common colour-vision deficiencies.
constexpr std::array<std::string_view, 8> kPalette{"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd",
                                                   "#8c564b", "#e377c2", "#7f7f7f", "#17becf"};
constexpr std::string_view kFail = "#d62728", kWarn = "#f0a30a", kPass = "#2ca02c", kUnverified = "#9e9e9e",
                           kNotApplicable = "#d9d9d9", kGrid = "#e0e0e0", kInk = "#333333";

void open_svg(std::string& out, double w, double h, std::string_view name, std::string_view label) {
  fmt::format_to(std::back_inserter(out),
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" data-chart=\"{2}\" width=\"{0:.0f}\" height=\"{1:.0f}\" "
                 "viewBox=\"0 0 {0:.0f} {1:.0f}\" font-family=\"sans-serif\" font-size=\"12\" role=\"img\" "
                 "aria-label=\"{3}\">\n<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n",
                 w, h, name, xml_text(label));
}

void text(std::string& out, double x, double y, std::string_view s, std::string_view anchor = "start",
          std::string_view fill = kInk, std::string_view extra = "") {
  fmt::format_to(std::back_inserter(out), "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"{}\" fill=\"{}\"{}>{}</text>\n",
                 x, y, anchor, fill, extra, xml_text(s));
}

void rect(std::string& out, double x, double y, double w, double h, std::string_view fill,
          std::string_view cls = "", std::string_view title = "") {
  fmt::format_to(std::back_inserter(out), "<rect{}{}{} x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"",
                 cls.empty() ? "" : " class=\"", cls, cls.empty() ? "" : "\"", x, y, std::max(w, 0.0),
                 std::max(h, 0.0), fill);
  if (title.empty()) {
    out += "/>\n";
  } else {
    out += "><title>";
    core::append_xml_text(out, title);
    out += "</title></rect>\n";
  }
}

std::string no_data(std::string_view name, std::string_view why) {
  std::string out;
  open_svg(out, 640, 80, name, why);
  text(out, 320, 45, why, "middle", "#777777");
  out += "</svg>\n";
  return out;
}

// "1.5 s", "250 ms", "12 min" for a duration in ms.
std::string duration_label(double ms) {
  if (ms < 1000) return fmt::format("{:.0f} ms", ms);
  if (ms < 120000) return fmt::format("{:g} s", std::round(ms / 100) / 10);
  return fmt::format("{:g} min", std::round(ms / 6000) / 10);
}

}  // namespace

std::string svg_hit_rate(const std::vector<const loadgen::RunView*>& runs) {
  constexpr std::string_view kName = "endpoint-hit-rate";
  if (runs.empty()) return no_data(kName, "no endpoint runs");
  // Two kinds of bar, two colours, used by the bars and by the legend alike.
  struct Kind {
    std::string_view cls, fill, legend;
  };
  constexpr Kind kMeasured{"measured", "#1f77b4", "measured (cached / prompt tokens)"};
  constexpr Kind kTheoretical{"theoretical", "#9ecae1", "theoretical (ideal prefix cache)"};
  auto known = [](double v) { return std::isfinite(v) && v >= 0; };
  // Above by more than rounding: a measured rate the prompts sent cannot give.
  auto above = [&](const loadgen::RunView& r) {
    return known(r.overall.cache_hit_rate) && known(r.theoretical_hit_rate) &&
           r.overall.cache_hit_rate > r.theoretical_hit_rate + 0.005;
  };
  bool any_above = false;
  for (const auto* r : runs) any_above = any_above || above(*r);
  const double label_w = 170, plot_w = 440, right = 130, top = 46, bar_h = 14, gap = 3;
  const double group_h = 2 * (bar_h + gap) + 12;
  const double w = label_w + plot_w + right, h = top + runs.size() * group_h + 34;
  auto px = [&](double rate) { return label_w + std::clamp(rate, 0.0, 1.0) * plot_w; };
  std::string out;
  open_svg(out, w, h, kName, "prefix-cache hit rate per run, measured and theoretical");
  double lx = label_w;
  for (const Kind& k : {kMeasured, kTheoretical}) {
    rect(out, lx, 8, 12, 12, k.fill, fmt::format("swatch {}", k.cls));
    text(out, lx + 16, 18, k.legend, "start", kInk, " font-size=\"11\"");
    lx += 36 + 6.0 * static_cast<double>(k.legend.size());
  }
  if (any_above) {
    fmt::format_to(std::back_inserter(out),
                   "<rect class=\"swatch above\" x=\"{:.1f}\" y=\"26\" width=\"12\" height=\"12\" fill=\"#ffffff\" "
                   "stroke=\"{}\" stroke-width=\"2\"/>\n",
                   label_w, kFail);
    text(out, label_w + 16, 36, "measured above theoretical: not possible on the prompts sent", "start", kFail,
         " font-size=\"11\"");
  }
  for (int v = 0; v <= 100; v += 25) {
    fmt::format_to(std::back_inserter(out),
                   "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"{3}\"/>\n", px(v / 100.0),
                   top - 2, h - 24, kGrid);
    text(out, px(v / 100.0), h - 10, fmt::format("{}%", v), "middle", "#555555", " font-size=\"11\"");
  }
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const loadgen::RunView& r = *runs[i];
    const double gy = top + i * group_h;
    std::string label = r.label.size() > 26 ? r.label.substr(0, 23) + "..." : r.label;
    text(out, label_w - 8, gy + bar_h + gap + 3, label, "end");
    const bool over = above(r);
    for (std::size_t b = 0; b < 2; ++b) {
      const Kind& k = b == 0 ? kMeasured : kTheoretical;
      const double rate = b == 0 ? r.overall.cache_hit_rate : r.theoretical_hit_rate;
      const double y = gy + b * (bar_h + gap);
      if (!known(rate)) {
        text(out, px(0) + 4, y + bar_h - 3, fmt::format("{}: not reported", k.cls), "start", "#888888",
             " font-size=\"11\"");
        continue;
      }
      fmt::format_to(std::back_inserter(out),
                     "<rect class=\"bar {}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"{}><title>",
                     k.cls, px(0), y, std::max(px(rate) - px(0), 1.0), bar_h, k.fill,
                     b == 0 && over ? fmt::format(" stroke=\"{}\" stroke-width=\"2\"", kFail) : std::string());
      core::append_xml_text(out, fmt::format("{}: {} {:.1f}%", r.label, k.cls, rate * 100));
      out += "</title></rect>\n";
      text(out, px(rate) + 4, y + bar_h - 3,
           fmt::format("{:.1f}%{}", rate * 100, b == 0 && over ? " (above theoretical)" : ""), "start",
           b == 0 && over ? kFail : kInk, " font-size=\"11\"");
    }
  }
  out += "</svg>\n";
  return out;
}

std::string nccl_measured_legend(std::string_view svg, double measured_peak_gbps) {
  std::string out(svg);
  const auto legend = out.find("<g class=\"legend\">");
  if (legend == std::string::npos) return out;
  const auto legend_end = out.find("</g>", legend);
  if (legend_end == std::string::npos) return out;
  // The fit's entry: ">fit (peak 377.1 GB/s)<" or ">fit, plateau (peak ...)<".
  const auto fit = out.find(">fit", legend);
  if (fit == std::string::npos || fit > legend_end) return out;
  const auto fit_end = out.find('<', fit);
  if (fit_end == std::string::npos || fit_end > legend_end) return out;
  const std::string_view entry(out.data() + fit + 1, fit_end - fit - 1);
  if (entry.find("(peak ") == std::string_view::npos) return out;
  const std::string relabelled = entry.find("plateau") != std::string_view::npos ? "fit, plateau (model curve)"
                                                                                   : "fit (model curve)";
  out.replace(fit + 1, fit_end - fit - 1, relabelled);
  // The measured peak as one more line under the legend's last, the box grown to hold it.
  const auto end = out.find("</g>", legend);
  const auto last_text = out.rfind("<text x=\"", end);
  const auto box = out.find("<rect ", legend);
  if (last_text == std::string::npos || last_text < legend || box == std::string::npos || box > end) return out;
  const double x = std::strtod(out.c_str() + last_text + 9, nullptr);
  const auto y_at = out.find("y=\"", last_text);
  const auto h_at = out.find("height=\"", box);
  if (y_at == std::string::npos || y_at > end || h_at == std::string::npos || h_at > end) return out;
  const double y = std::strtod(out.c_str() + y_at + 3, nullptr) + 16;
  const auto h_end = out.find('"', h_at + 8);
  const double height = std::strtod(out.c_str() + h_at + 8, nullptr) + 16;
  std::string line = fmt::format("<text class=\"measured-peak\" x=\"{:.1f}\" y=\"{:.1f}\" font-weight=\"bold\">", x, y);
  core::append_xml_text(line, fmt::format("measured peak {:.4g} GB/s", measured_peak_gbps));
  line += "</text>\n";
  out.insert(end, line);
  out.replace(h_at + 8, h_end - h_at - 8, fmt::format("{:g}", height));
  // Wide enough for the new line in bold.
  if (const auto w_at = out.find("width=\"", box); w_at != std::string::npos && w_at < h_at) {
    const auto w_end = out.find('"', w_at + 7);
    const double width = std::strtod(out.c_str() + w_at + 7, nullptr);
    if (width < 215) out.replace(w_at + 7, w_end - w_at - 7, "215");
  }
  return out;
}

std::string tag_chart(std::string_view svg, std::string_view name) {
  std::string out(svg);
  auto at = out.find("<svg");
  if (at == std::string::npos) return out;
  out.insert(at + 4, fmt::format(" data-chart=\"{}\"", xml_text(name)));
  return out;
}

std::string svg_scorecard(const std::vector<const score::ScoreCard*>& cards, const score::Rubric& rubric) {
  if (cards.empty()) return no_data("scorecard", "no run scored");
  const double label_w = 150, right = 120, plot_w = 480, top = 48, bar_h = 14, gap = 3;
  const double group_h = cards.size() * (bar_h + gap) + 10;
  const double w = label_w + plot_w + right, h = top + audit::kCategoryCount * group_h + 30;
  std::string out;
  open_svg(out, w, h, "scorecard", "category scores, 0 to 100");
  auto px = [&](double v) { return label_w + std::clamp(v, 0.0, 100.0) / 100 * plot_w; };
  // Grid and tier lines.
  out += "<g class=\"grid\">\n";
  for (int v = 0; v <= 100; v += 25) {
    fmt::format_to(std::back_inserter(out), "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"{3}\"/>\n",
                   px(v), top - 4, h - 24, kGrid);
    text(out, px(v), h - 10, fmt::format("{}", v), "middle", "#555555");
  }
  for (const auto& t : rubric.tiers) {
    if (t.min_total <= 0) continue;
    fmt::format_to(std::back_inserter(out),
                   "<line class=\"tier\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#999999\" "
                   "stroke-dasharray=\"3 3\"/>\n",
                   px(t.min_total), top - 14, h - 24);
    text(out, px(t.min_total), top - 17, t.name, "middle", "#777777", " font-size=\"10\"");
  }
  out += "</g>\n";
  for (int c = 0; c < audit::kCategoryCount; ++c) {
    const double gy = top + c * group_h;
    const auto cat = static_cast<audit::Category>(c);
    text(out, label_w - 8, gy + group_h / 2 + 2, audit::category_title(cat), "end");
    for (std::size_t r = 0; r < cards.size(); ++r) {
      const double y = gy + 4 + r * (bar_h + gap);
      const auto& cs = cards[r]->categories[static_cast<std::size_t>(c)];
      const std::string_view color = kPalette[r % kPalette.size()];
      if (!cs.score) {
        rect(out, px(0), y, plot_w, bar_h, "#f5f5f5", "bar none",
             fmt::format("{}: {} not evaluated (no evidence)", cards[r]->label, audit::category_title(cat)));
        text(out, px(0) + 6, y + bar_h - 3, "not evaluated", "start", "#888888", " font-size=\"11\"");
        continue;
      }
      // Opacity follows confidence: a score on little evidence is drawn lighter.
      fmt::format_to(std::back_inserter(out),
                     "<rect class=\"bar\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\" "
                     "fill-opacity=\"{:.2f}\"><title>",
                     px(0), y, px(*cs.score) - px(0), bar_h, color, 0.35 + 0.65 * cs.confidence);
      core::append_xml_text(out, fmt::format("{}: {} {:.1f} (confidence {:.0f}%)", cards[r]->label,
                                             audit::category_title(cat), *cs.score, cs.confidence * 100));
      out += "</title></rect>\n";
      text(out, px(*cs.score) + 4, y + bar_h - 3, fmt::format("{:.0f} · {:.0f}%", *cs.score, cs.confidence * 100),
           "start", kInk, " font-size=\"11\"");
    }
  }
  if (cards.size() > 1) {
    double ly = 8;
    for (std::size_t r = 0; r < cards.size(); ++r, ly += 14) {
      rect(out, w - right + 8, ly, 10, 10, kPalette[r % kPalette.size()]);
      text(out, w - right + 22, ly + 9, cards[r]->label, "start", kInk, " font-size=\"11\"");
    }
  }
  text(out, 8, 14, "score 0-100 · confidence (bar opacity) · dashed: the tiers' minimum total", "start",
       "#555555", " font-size=\"11\"");
  out += "</svg>\n";
  return out;
}

std::string svg_findings(const std::vector<audit::Finding>& findings) {
  if (findings.empty()) return no_data("findings", "no findings");
  struct Counts {
    std::array<int, 5> by{};  // pass warn fail not_applicable unverified (audit::Outcome order)
    int total() const { return by[0] + by[1] + by[2] + by[3] + by[4]; }
  };
  std::array<Counts, audit::kCategoryCount> counts{};
  for (const auto& f : findings)
    ++counts[static_cast<std::size_t>(f.category)].by[static_cast<std::size_t>(f.outcome)];
  int most = 1;
  for (const auto& c : counts) most = std::max(most, c.total());
  const double label_w = 150, plot_w = 480, right = 60, top = 30, row = 22;
  const double w = label_w + plot_w + right, h = top + audit::kCategoryCount * row + 16;
  std::string out;
  open_svg(out, w, h, "findings", "findings per category by outcome");
  // Drawn in the order a reader acts on them.
  struct Part {
    audit::Outcome outcome;
    std::string_view color, name;
  };
  constexpr std::array<Part, 5> kParts{Part{audit::Outcome::fail, kFail, "fail"}, Part{audit::Outcome::warn, kWarn, "warn"},
                                       Part{audit::Outcome::unverified, kUnverified, "unverified"},
                                       Part{audit::Outcome::pass, kPass, "pass"},
                                       Part{audit::Outcome::not_applicable, kNotApplicable, "not applicable"}};
  double lx = label_w;
  for (const auto& p : kParts) {
    rect(out, lx, 8, 10, 10, p.color);
    text(out, lx + 14, 17, p.name, "start", kInk, " font-size=\"11\"");
    lx += 24 + 7.0 * static_cast<double>(p.name.size());
  }
  for (int c = 0; c < audit::kCategoryCount; ++c) {
    const auto cat = static_cast<audit::Category>(c);
    const double y = top + c * row;
    text(out, label_w - 8, y + 14, audit::category_title(cat), "end");
    double x = label_w;
    const auto& k = counts[static_cast<std::size_t>(c)];
    for (const auto& p : kParts) {
      int n = k.by[static_cast<std::size_t>(p.outcome)];
      if (n == 0) continue;
      double bw = plot_w * n / most;
      rect(out, x, y + 3, bw, row - 6, p.color, std::string("seg ") + std::string(p.name),
           fmt::format("{}: {} {}", audit::category_title(cat), n, p.name));
      x += bw;
    }
    text(out, x + 4, y + 14, k.total() ? fmt::format("{}", k.total()) : "none", "start", "#555555", " font-size=\"11\"");
  }
  out += "</svg>\n";
  return out;
}

std::string svg_drill_timeline(const DrillView& drill) {
  if (drill.nodes.empty()) return no_data("drill", "no drilled nodes");
  struct StageStyle {
    std::string_view stage, color;
  };
  // In the order a reboot/repair drill passes them; the legend lists those the drill has.
  constexpr std::array<StageStyle, 7> kStages{
      StageStyle{"detected", "#1f77b4"},         StageStyle{"drained", "#ff7f0e"}, StageStyle{"reboot_requested", "#8c564b"},
      StageStyle{"down", "#7f7f7f"},             StageStyle{"rebooted", "#17becf"}, StageStyle{"replaced", "#2ca02c"},
      StageStyle{"returned", "#9467bd"}};
  auto present = [&](std::string_view stage) {
    for (const auto& n : drill.nodes)
      for (const auto& s : n.stages)
        if (s.stage == stage) return true;
    return false;
  };
  auto color_of = [&](std::string_view s) -> std::string_view {
    for (const auto& k : kStages)
      if (k.stage == s) return k.color;
    return "#7f7f7f";
  };
  double x_max = 0;
  bool any_never = false;
  for (const auto& n : drill.nodes)
    for (const auto& s : n.stages) {
      if (s.reached) x_max = std::max(x_max, s.at_ms);
      if (s.verdict == "never" || s.verdict == "slow") {
        any_never = any_never || s.verdict == "never";
        if (s.threshold_ms) x_max = std::max(x_max, *s.threshold_ms);
      }
    }
  x_max = x_max <= 0 ? 1000 : x_max * 1.08;
  const double label_w = 120, plot_w = 560, right = 90, top = 40, row = 30;
  const double w = label_w + plot_w + right, h = top + drill.nodes.size() * row + 40;
  auto px = [&](double ms) { return label_w + std::clamp(ms / x_max, 0.0, 1.0) * plot_w; };
  std::string out;
  open_svg(out, w, h, "drill", "drill timeline: time from injection to each stage, per node");
  // Axis: ~6 ticks of a nice step.
  const double step = core::nice_tick_step(x_max);
  for (double t = 0; t <= x_max + 1e-9; t += step) {
    fmt::format_to(std::back_inserter(out), "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"{3}\"/>\n",
                   px(t), top - 6, h - 34, kGrid);
    text(out, px(t), h - 20, duration_label(t), "middle", "#555555", " font-size=\"11\"");
  }
  text(out, label_w + plot_w / 2, h - 4, "time after the injection began", "middle", "#555555", " font-size=\"11\"");
  double lx = label_w;
  for (const auto& k : kStages) {
    if (!present(k.stage) && k.stage != "detected" && k.stage != "drained" && k.stage != "replaced" &&
        k.stage != "returned")
      continue;
    fmt::format_to(std::back_inserter(out), "<circle cx=\"{:.1f}\" cy=\"13\" r=\"5\" fill=\"{}\"/>\n", lx + 5, k.color);
    text(out, lx + 14, 17, k.stage, "start", kInk, " font-size=\"11\"");
    lx += 30 + 7.0 * static_cast<double>(k.stage.size());
  }
  if (any_never) text(out, lx, 17, "✕ never seen", "start", kFail, " font-size=\"11\"");
  for (std::size_t i = 0; i < drill.nodes.size(); ++i) {
    const auto& n = drill.nodes[i];
    const double cy = top + i * row + row / 2;
    text(out, label_w - 8, cy + 4, n.node, "end");
    fmt::format_to(std::back_inserter(out), "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#cccccc\"/>\n",
                   px(0), cy, px(x_max), cy);
    if (!n.error.empty()) {
      text(out, px(0) + 6, cy + 4, "injection failed: " + n.error, "start", kFail, " font-size=\"11\"");
      continue;
    }
    double never_x = px(x_max) + 6;
    for (const auto& s : n.stages) {
      const std::string_view color = color_of(s.stage);
      if (s.reached) {
        // The stage happened somewhere in (lower_ms, at_ms]: the band; the dot is when it was seen.
        rect(out, px(s.lower_ms), cy - 5, std::max(px(s.at_ms) - px(s.lower_ms), 1.0), 10, color, "uncertainty",
             fmt::format("{} {}: between {} and {}", n.node, s.stage, duration_label(s.lower_ms), duration_label(s.at_ms)));
        fmt::format_to(std::back_inserter(out),
                       "<circle class=\"stage {}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"6\" fill=\"{}\" stroke=\"{}\" "
                       "stroke-width=\"{}\"><title>",
                       xml_text(s.stage), px(s.at_ms), cy, color, s.verdict == "slow" ? kFail : "#ffffff",
                       s.verdict == "slow" ? 3 : 1);
        core::append_xml_text(out, fmt::format("{} {} at {} ({}){}{}", n.node, s.stage, duration_label(s.at_ms),
                                               s.verdict, s.how.empty() ? "" : ": ", s.how));
        out += "</title></circle>\n";
      } else if (s.verdict == "never") {
        text(out, never_x, cy + 4, "✕ " + s.stage, "start", kFail, " font-size=\"11\" class=\"never\"");
        never_x += 14 + 7.0 * static_cast<double>(s.stage.size());
      }
      if (s.threshold_ms && (s.verdict == "slow" || s.verdict == "never"))
        fmt::format_to(std::back_inserter(out),
                       "<line class=\"threshold\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" "
                       "stroke=\"{3}\" stroke-dasharray=\"2 2\"/>\n",
                       px(*s.threshold_ms), cy - 10, cy + 10, kFail);
    }
  }
  out += "</svg>\n";
  return out;
}

std::string svg_availability(const SlaView& sla) {
  if (sla.months.empty()) return no_data("availability", "no months in sla.json");
  const std::size_t months = sla.months.size();
  const double label_w = 150, top = 44, row = 24;
  const double cell_w = months <= 12 ? 52 : std::max(18.0, 624.0 / static_cast<double>(months));
  const std::size_t rows = 1 + sla.entities.size();
  struct Key {
    std::string_view fill, name;
  };
  constexpr std::array<Key, 4> kKeys{Key{"#e8f5e9", "no downtime"}, Key{"#a5d6a7", "downtime, target met"},
                                     Key{"#ffb74d", "below target"}, Key{"#e57373", "credit owed"}};
  const std::string target = fmt::format("target {:g}%", sla.target_percent);
  // The legend sets the width when it is wider than the months: nothing of it is cut off.
  double legend_w = 6.2 * static_cast<double>(target.size());
  for (const auto& k : kKeys) legend_w += 30 + 6.2 * static_cast<double>(k.name.size());
  const double w = std::max(label_w + months * cell_w, label_w + legend_w) + 20, h = top + rows * row + 34;
  std::string out;
  open_svg(out, w, h, "availability", "availability per month against the target");
  for (std::size_t m = 0; m < months; ++m) {
    // "2026-04" -> "Apr" with the year on January and the first column.
    static constexpr std::array<std::string_view, 12> kMonth{"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                             "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    const std::string& key = sla.months[m];
    std::string label = key;
    if (key.size() == 7) {
      int mm = (key[5] - '0') * 10 + (key[6] - '0');
      if (mm >= 1 && mm <= 12) label = std::string(kMonth[static_cast<std::size_t>(mm - 1)]);
      if (m == 0 || mm == 1) text(out, label_w + m * cell_w + 2, top - 22, key.substr(0, 4), "start", "#555555",
                                  " font-size=\"10\"");
    }
    text(out, label_w + (m + 0.5) * cell_w, top - 6, cell_w >= 30 ? label : label.substr(0, 1), "middle", "#555555",
         " font-size=\"11\"");
  }
  auto draw_row = [&](const SlaRow& r, std::size_t i, bool total) {
    const double y = top + i * row;
    text(out, label_w - 8, y + 16, r.name, "end", kInk, total ? " font-weight=\"bold\"" : "");
    for (std::size_t m = 0; m < months; ++m) {
      const double x = label_w + m * cell_w;
      const auto& c = m < r.cells.size() ? r.cells[m] : std::optional<SlaCell>();
      std::string_view fill = "#e8f5e9";  // no downtime that month
      std::string cls = "cell clean", title = fmt::format("{} {}: no downtime", r.name, sla.months[m]);
      std::string label;
      if (c) {
        const bool met = c->availability_percent >= sla.target_percent;
        fill = c->credit > 0 ? "#e57373" : !met ? "#ffb74d" : c->down_gpu_hours > 0 ? "#a5d6a7" : "#e8f5e9";
        cls = c->credit > 0 ? "cell credited" : !met ? "cell below" : "cell met";
        label = c->availability_percent >= 99.995 ? "100" : fmt::format("{:.2f}", c->availability_percent);
        title = fmt::format("{} {}: {:.4f}% available, {:g} GPU-h down, {:g} excluded{}", r.name, sla.months[m],
                            c->availability_percent, c->down_gpu_hours, c->excluded_gpu_hours,
                            c->credit > 0 ? fmt::format(", credit {:.2f} {}", c->credit, sla.currency) : "");
      }
      rect(out, x + 1, y + 1, cell_w - 2, row - 2, fill, cls, title);
      if (!label.empty() && cell_w >= 40) text(out, x + cell_w / 2, y + 16, label, "middle", kInk, " font-size=\"10\"");
    }
  };
  draw_row(sla.total, 0, true);
  for (std::size_t i = 0; i < sla.entities.size(); ++i) draw_row(sla.entities[i], i + 1, false);
  const double ly = h - 14;
  double lx = label_w;
  for (const auto& k : kKeys) {
    rect(out, lx, ly - 9, 10, 10, k.fill);
    text(out, lx + 14, ly, k.name, "start", kInk, " font-size=\"11\"");
    lx += 30 + 6.2 * static_cast<double>(k.name.size());
  }
  text(out, lx, ly, target, "start", "#555555", " font-size=\"11\"");
  out += "</svg>\n";
  return out;
}

}  // namespace cmax::html
