#include "loadgen/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <nlohmann/json.hpp>
#include <system_error>

#include "core/text_file.h"
#include "core/svg_text.h"

namespace cmax::loadgen {
namespace {

using nlohmann::json;

constexpr std::string_view kBenchSchema = "cmax.endpoint.bench/1";
constexpr std::string_view kCompareSchema = "cmax.endpoint.compare/1";
constexpr std::size_t kMaxBenchBytes = std::size_t{64} << 20;
constexpr std::string_view kRunHint =
    "pass a run directory written by cmax endpoint bench (it holds bench.json)";

// ---- reading -----------------------------------------------------------------------------------

// The name of the directory a run lives in: "runs/x/" and "runs/x/bench.json" both give "x".
std::string run_dir_name(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(dir, ec);
  if (ec) abs = dir;
  abs = abs.lexically_normal();
  if (abs.filename().empty()) abs = abs.parent_path();
  return abs.filename().string();
}

Result<RunView> parse_bench(const std::string& where, const std::string& text,
                            const std::string& dir_name) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    return fail("parse {}: not JSON ({}); {}", where, e.what(), kRunHint);
  }
  if (!j.is_object())
    return fail("parse {}: expected a JSON object, got {}; {}", where, j.type_name(), kRunHint);
  auto schema = j.find("schema");
  if (schema == j.end())
    return fail("parse {}: no schema field, so not a bench.json; {}", where, kRunHint);
  if (!schema->is_string() || schema->get<std::string>() != kBenchSchema)
    return fail("parse {}: schema is {}, expected \"{}\"; {}", where, schema->dump(), kBenchSchema,
                kRunHint);

  RunView v;
  auto str = [&](const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  v.label = str("provider");
  if (v.label.empty()) v.label = dir_name;
  v.model = str("model");
  v.endpoint = str("endpoint");
  if (auto it = j.find("interrupted"); it != j.end() && it->is_boolean())
    v.interrupted = it->get<bool>();

  auto overall = j.find("overall");
  if (overall == j.end() || !overall->is_object())
    return fail("parse {}: no \"overall\" summary; the run may have been written by an older cmax",
                where);
  auto summary = summary_from_json(*overall);
  if (!summary) return fail("parse {}: overall: {}", where, summary.error().message);
  v.overall = std::move(*summary);

  if (auto levels = j.find("levels"); levels != j.end() && !levels->is_null()) {
    if (!levels->is_array())
      return fail("parse {}: levels must be an array, got {}", where, levels->type_name());
    for (std::size_t i = 0; i < levels->size(); ++i) {
      const json& level = (*levels)[i];
      auto c = level.is_object() ? level.find("concurrency") : level.end();
      if (!level.is_object() || c == level.end() || !c->is_number_integer())
        return fail("parse {}: levels[{}] needs an integer \"concurrency\"", where, i);
      auto s = level.find("summary");
      if (s == level.end() || !s->is_object())
        return fail("parse {}: levels[{}] needs a \"summary\" object", where, i);
      auto ls = summary_from_json(*s);
      if (!ls) return fail("parse {}: levels[{}]: {}", where, i, ls.error().message);
      v.levels.emplace_back(c->get<int>(), std::move(*ls));
    }
    std::stable_sort(v.levels.begin(), v.levels.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
  }

  if (auto w = j.find("workload"); w != j.end() && w->is_object())
    if (auto t = w->find("theoretical_hit_rate"); t != w->end() && t->is_number())
      v.theoretical_hit_rate = t->get<double>();

  if (auto cost = j.find("cost"); cost != j.end() && !cost->is_null()) {
    auto bill = bill_from_json(*cost);
    if (!bill) return fail("parse {}: cost: {}", where, bill.error().message);
    v.bill = std::move(*bill);
    v.has_bill = true;
  }
  return v;
}

// ---- numbers as text ---------------------------------------------------------------------------

double fin(double x) { return std::isfinite(x) ? x : 0; }
bool known(double x) { return std::isfinite(x) && x >= 0; }

std::string pct_or_dash(double h) { return known(h) ? fmt::format("{:.1f}%", 100 * h) : "-"; }

std::string ms_or_dash(const LatencyStats& s, double LatencyStats::*field) {
  double x = s.*field;
  if (s.count == 0 || !std::isfinite(x)) return "-";
  if (x < 10) return fmt::format("{:.2f}", x);
  if (x < 1000) return fmt::format("{:.1f}", x);
  return fmt::format("{:.0f}", x);
}

// Dollars per million tokens: four significant digits around the usual range.
std::string money(double x) {
  if (!std::isfinite(x)) return "-";
  if (x >= 100) return fmt::format("{:.1f}", x);
  if (x >= 1) return fmt::format("{:.3f}", x);
  if (x >= 0.001 || x == 0) return fmt::format("{:.4f}", x);
  return fmt::format("{:.2e}", x);
}

// The run's $/Mtok at the reference hit rate: the same tokens, so it scales with the bill.
double reference_per_mtok(const RunView& r) {
  const Bill& b = r.bill;
  if (b.run_usd > 0) return fin(b.usd_per_mtok * b.run_usd_at_reference / b.run_usd);
  double tokens = static_cast<double>(r.overall.prompt_tokens) +
                  static_cast<double>(r.overall.completion_tokens);
  return tokens > 0 ? fin(b.run_usd_at_reference / tokens * 1e6) : 0;
}

std::string clip_label(std::string_view s, std::size_t max_chars) {
  if (s.size() <= max_chars) return std::string(s);
  // Cut on a UTF-8 character boundary so the result stays valid text.
  std::size_t cut = max_chars - 3;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return std::string(s.substr(0, cut)) + "...";
}

// ---- SVG ---------------------------------------------------------------------------------------

constexpr std::array<std::string_view, 10> kPalette = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                                       "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                                                       "#bcbd22", "#17becf"};
constexpr std::string_view kInk = "#333333";
constexpr double kWidth = 920;
constexpr double kLeft = 80, kRight = 240, kTop = 56, kPlotH = 340;
constexpr double kPlotW = kWidth - kLeft - kRight;
constexpr double kRowH = 18;
constexpr std::size_t kLegendChars = 28, kAxisChars = 16, kNoteChars = 110;
constexpr int kMaxXLabels = 12;

std::string_view color_of(std::size_t i) { return kPalette[i % kPalette.size()]; }

struct YScale {
  double hi = 1, step = 0.2;
  double py(double y) const { return kTop + kPlotH - std::clamp(fin(y) / hi, 0.0, 1.05) * kPlotH; }
};

YScale y_scale(double top) {
  top = fin(top);
  if (top <= 0) top = 1;
  top = std::min(top, 1e12);  // a corrupt value should not make the ticks run away
  double step = core::nice_tick_step(top * 1.05);
  return {std::ceil(top * 1.05 / step) * step, step};
}

// Notes wrapped to lines of about kNoteChars, split at ", ".
std::vector<std::string> wrap(const std::string& text) {
  std::vector<std::string> lines;
  std::string line;
  std::size_t start = 0;
  while (start <= text.size()) {
    auto comma = text.find(", ", start);
    std::string piece =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma + 2 - start);
    if (!line.empty() && line.size() + piece.size() > kNoteChars)
      lines.push_back(std::move(line)), line.clear();
    line += piece;
    if (comma == std::string::npos) break;
    start = comma + 2;
  }
  if (!line.empty()) lines.push_back(std::move(line));
  return lines;
}

enum class Swatch { kLine, kDashed, kBar, kPaleBar };
struct LegendEntry {
  Swatch swatch;
  std::string_view color;
  std::string text;
};

// The document being written; `it` appends to `out`, so a Page is neither copied nor moved.
struct Page {
  Page() = default;
  Page(const Page&) = delete;
  Page& operator=(const Page&) = delete;
  std::string out;
  double height = 0;
  std::back_insert_iterator<std::string> it{out};
};

double page_height(std::size_t legend_rows, std::size_t note_lines, double bottom) {
  double h = kTop + kPlotH + bottom + note_lines * kRowH + 12;
  return std::max(h, kTop + 24 + legend_rows * kRowH + 12);
}

void open_page(Page& p, std::string_view title, double height) {
  p.height = height;
  p.out.reserve(8000);
  std::string t = core::xml_text(title);
  fmt::format_to(
      p.it,
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{1:.0f}\" "
      "viewBox=\"0 0 {0:.0f} {1:.0f}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<title>{2}</title>\n"
      "<rect width=\"{0:.0f}\" height=\"{1:.0f}\" fill=\"#ffffff\"/>\n"
      "<text x=\"{3:.1f}\" y=\"24\" font-size=\"16\" text-anchor=\"middle\">{2}</text>\n",
      kWidth, height, t, kWidth / 2);
}

// Horizontal grid, the plot frame, y tick labels and the y axis title.
void y_axis(Page& p, const YScale& y, std::string_view unit_prefix, std::string_view unit_suffix,
            std::string_view title) {
  int ticks = static_cast<int>(std::lround(y.hi / y.step));
  p.out += "<g class=\"grid\" stroke=\"#e0e0e0\" stroke-width=\"1\">\n";
  for (int i = 0; i <= ticks; ++i)
    fmt::format_to(p.it, "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>\n", kLeft,
                   y.py(i * y.step), kLeft + kPlotW, y.py(i * y.step));
  p.out += "</g>\n<g class=\"axes\" fill=\"#333333\">\n";
  fmt::format_to(p.it,
                 "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\" "
                 "stroke=\"{}\"/>\n",
                 kLeft, kTop, kPlotW, kPlotH, kInk);
  for (int i = 0; i <= ticks; ++i)
    fmt::format_to(p.it, "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}{:g}{}</text>\n",
                   kLeft - 6, y.py(i * y.step) + 4, unit_prefix, i * y.step, unit_suffix);
  p.out += "<text transform=\"translate(18 ";
  fmt::format_to(p.it, "{:.1f}) rotate(-90)\" text-anchor=\"middle\">", kTop + kPlotH / 2);
  core::append_xml_text(p.out, title);
  p.out += "</text>\n</g>\n";
}

void x_title(Page& p, std::string_view title, double y) {
  fmt::format_to(
      p.it, "<text class=\"x-title\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"{}\">",
      kLeft + kPlotW / 2, y, kInk);
  core::append_xml_text(p.out, title);
  p.out += "</text>\n";
}

// The legend in the column right of the plot.
void legend(Page& p, const std::vector<LegendEntry>& entries) {
  double x = kLeft + kPlotW + 16, y = kTop + 12;
  fmt::format_to(
      p.it,
      "<g class=\"legend\">\n<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
      "fill=\"#ffffff\" stroke=\"#cccccc\"/>\n",
      x - 6, y - 12, kRight - 22, entries.size() * kRowH + 8);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const LegendEntry& e = entries[i];
    double cy = y + i * kRowH;
    switch (e.swatch) {
      case Swatch::kLine:
      case Swatch::kDashed:
        fmt::format_to(
            p.it,
            "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
            "stroke-width=\"2\"{}/>\n",
            x, cy, x + 22, cy, e.color,
            e.swatch == Swatch::kDashed ? " stroke-dasharray=\"6 4\"" : "");
        break;
      case Swatch::kBar:
      case Swatch::kPaleBar:
        fmt::format_to(p.it,
                       "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"22\" height=\"10\" fill=\"{}\" "
                       "fill-opacity=\"{}\" stroke=\"{}\"/>\n",
                       x, cy - 5, e.color, e.swatch == Swatch::kPaleBar ? "0.3" : "1", e.color);
        break;
    }
    fmt::format_to(p.it, "<text x=\"{:.1f}\" y=\"{:.1f}\">", x + 28, cy + 4);
    core::append_xml_text(p.out, clip_label(e.text, kLegendChars));
    p.out += "</text>\n";
  }
  p.out += "</g>\n";
}

void notes(Page& p, const std::vector<std::string>& lines, double y) {
  if (lines.empty()) return;
  p.out += "<g class=\"notes\" fill=\"#555555\">\n";
  for (std::size_t i = 0; i < lines.size(); ++i) {
    fmt::format_to(p.it, "<text x=\"{:.1f}\" y=\"{:.1f}\">", kLeft, y + i * kRowH);
    core::append_xml_text(p.out, lines[i]);
    p.out += "</text>\n";
  }
  p.out += "</g>\n";
}

std::string close_page(Page& p) {
  p.out += "</svg>\n";
  return std::move(p.out);
}

// A frame with the title and a reason in place of the plot.
std::string no_data(std::string_view title, const std::string& note) {
  std::vector<std::string> lines = note.empty() ? std::vector<std::string>{} : wrap(note);
  Page p;
  open_page(p, title, page_height(0, lines.size(), 40));
  fmt::format_to(
      p.it,
      "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\" "
      "stroke=\"#cccccc\"/>\n"
      "<text class=\"no-data\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"16\" "
      "fill=\"#555555\">no data</text>\n",
      kLeft, kTop, kPlotW, kPlotH, kLeft + kPlotW / 2, kTop + kPlotH / 2);
  notes(p, lines, kTop + kPlotH + 28);
  return close_page(p);
}

std::string joined_labels(const std::vector<std::string>& labels) {
  std::string out;
  for (const auto& l : labels) {
    if (!out.empty()) out += ", ";
    out += clip_label(l, 40);
  }
  return out;
}

// Run labels under bar groups are turned when there are many, so that they do not overlap.
bool turned_labels(std::size_t groups) { return groups > 4; }
double bar_chart_bottom(bool turned) { return turned ? 130 : 56; }
std::size_t group_label_chars(bool turned, double group_w) {
  return turned ? kAxisChars : std::max<std::size_t>(8, static_cast<std::size_t>(group_w / 7));
}

void group_labels(Page& p, const std::vector<std::string>& labels, double group_w) {
  bool turned = turned_labels(labels.size());
  for (std::size_t i = 0; i < labels.size(); ++i) {
    double cx = kLeft + (i + 0.5) * group_w, y = kTop + kPlotH + 16;
    if (turned)
      fmt::format_to(p.it,
                     "<text x=\"{0:.1f}\" y=\"{1:.1f}\" text-anchor=\"end\" transform=\"rotate(-30 "
                     "{0:.1f} {1:.1f})\">",
                     cx, y);
    else
      fmt::format_to(p.it, "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">", cx, y);
    core::append_xml_text(p.out, clip_label(labels[i], group_label_chars(turned, group_w)));
    p.out += "</text>\n";
  }
}

// One bar with its value above (or "n/a" at the baseline when unknown).
void bar(Page& p, double x, double w, const YScale& y, double value, bool is_known,
         std::string_view color, bool pale, const std::string& value_text, const std::string& tip) {
  if (is_known) {
    double top = y.py(value), base = y.py(0);
    fmt::format_to(p.it,
                   "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\" "
                   "fill-opacity=\"{}\" "
                   "stroke=\"{}\"><title>",
                   x, top, w, std::max(base - top, 0.0), color, pale ? "0.3" : "1", color);
    core::append_xml_text(p.out, tip);
    fmt::format_to(
        p.it,
        "</title></rect>\n<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"10\">",
        x + w / 2, top - 4);
    core::append_xml_text(p.out, value_text);
    p.out += "</text>\n";
  } else {
    fmt::format_to(p.it,
                   "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"10\" "
                   "fill=\"#555555\">n/a<title>",
                   x + w / 2, y.py(0) - 4);
    core::append_xml_text(p.out, tip);
    p.out += "</title></text>\n";
  }
}

bool plottable(const std::pair<int, Summary>& level) {
  return level.first > 0 && level.second.ttft.count > 0 &&
         std::isfinite(level.second.ttft.p50_ms) && std::isfinite(level.second.ttft.p99_ms);
}

json level_json(const std::pair<int, Summary>& level) {
  return {{"concurrency", level.first}, {"summary", summary_to_json(level.second)}};
}

// The bill as compare writes it. RunView keeps no price sheet, so provider, kind and prices are
// not known here and are left out (see bill_to_json for the full object).
json cost_json(const RunView& r) {
  json j = bill_to_json(PriceSheet{}, r.bill);
  j.erase("provider");
  j.erase("kind");
  j.erase("prices");
  if (!std::isfinite(r.bill.input_usd_per_mtok_effective))
    j["input_usd_per_mtok_effective"] = nullptr;
  return j;
}

}  // namespace

Result<RunView> read_bench(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path given(path);
  bool is_dir = fs::is_directory(given, ec);
  fs::path file = is_dir ? given / "bench.json" : given;
  if (!fs::exists(file, ec)) {
    if (is_dir) return fail("read {}: no bench.json in this directory; {}", path, kRunHint);
    return fail("read {}: no such file or directory; {}", path, kRunHint);
  }
  auto text =
      core::read_text_file(file.string(), kMaxBenchBytes,
                           "; a bench.json holds summaries only, so this is probably not one");
  if (!text) return Unexpected<Error>{text.error()};
  auto view = parse_bench(file.string(), *text, run_dir_name(is_dir ? given : given.parent_path()));
  if (view) view->path = path;
  return view;
}

CompareCells compare_cells(const std::vector<RunView>& runs) {
  CompareCells t;
  t.heads = {"run",      "requests", "ok %",      "hit",    "theo",        "TTFT p50",
             "TTFT p99", "TPOT p50", "out tok/s", "$/Mtok", "@ref $/Mtok", "vs ref"};
  bool any_interrupted = false;
  for (const RunView& r : runs) {
    const Summary& s = r.overall;
    std::vector<std::string> row(t.heads.size());
    row[0] = clip_label(r.label, 32) + (r.interrupted ? " *" : "");
    any_interrupted |= r.interrupted;
    row[1] = fmt::format("{}", s.requests);
    row[2] = s.requests > 0 ? fmt::format("{:.1f}", 100.0 * static_cast<double>(s.succeeded) / static_cast<double>(s.requests))
                            : "-";
    row[3] = pct_or_dash(s.cache_hit_rate);
    row[4] = pct_or_dash(r.theoretical_hit_rate);
    row[5] = ms_or_dash(s.ttft, &LatencyStats::p50_ms);
    row[6] = ms_or_dash(s.ttft, &LatencyStats::p99_ms);
    row[7] = ms_or_dash(s.tpot, &LatencyStats::p50_ms);
    row[8] = std::isfinite(s.output_tokens_per_s) ? fmt::format("{:.1f}", s.output_tokens_per_s) : "-";
    if (r.has_bill) {
      row[9] = money(r.bill.usd_per_mtok);
      row[10] = money(reference_per_mtok(r));
      row[11] = r.bill.ratio_to_reference > 0 && std::isfinite(r.bill.ratio_to_reference)
                    ? fmt::format("{:.2f}x", r.bill.ratio_to_reference)
                    : "-";
    } else {
      row[9] = row[10] = row[11] = "-";
    }
    t.rows.push_back(std::move(row));
  }
  // The reference hit rate, when every bill used the same one.
  std::string ref = "the reference hit rate";
  double first = -1;
  bool same = true;
  for (const RunView& r : runs) {
    if (!r.has_bill) continue;
    if (first < 0)
      first = r.bill.reference_hit_rate;
    else if (r.bill.reference_hit_rate != first)
      same = false;
  }
  if (first >= 0 && same) ref += fmt::format(" ({:.1f}%)", 100 * first);
  t.notes.push_back(fmt::format(
      "hit: cached / prompt tokens as reported; theo: best prefix-cache hit rate possible on the prompts sent; TTFT, "
      "TPOT in ms; $/Mtok: bill per million prompt + completion tokens; @ref: the same tokens at {}; vs ref: bill / "
      "bill at reference; -: unknown{}",
      ref, any_interrupted ? "; *: interrupted (partial results)" : ""));
  return t;
}

std::string compare_table(const std::vector<RunView>& runs) {
  const CompareCells t = compare_cells(runs);
  std::vector<std::size_t> width(t.heads.size());
  for (std::size_t c = 0; c < width.size(); ++c) {
    width[c] = t.heads[c].size();
    for (const auto& row : t.rows) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  auto emit = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (std::size_t c = 0; c < width.size(); ++c) {
      if (c == 0)
        line += fmt::format("{:<{}}", cells[c], width[c]);
      else
        line += fmt::format("  {:>{}}", cells[c], width[c]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  };
  emit(t.heads);
  if (t.rows.empty()) out += "(no runs)\n";
  for (const auto& row : t.rows) emit(row);
  for (const auto& n : t.notes) out += n + "\n";
  return out;
}

nlohmann::json compare_json(const std::vector<RunView>& runs) {
  json list = json::array();
  for (const RunView& r : runs) {
    json levels = json::array();
    for (const auto& level : r.levels) levels.push_back(level_json(level));
    list.push_back({{"label", r.label},
                    {"path", r.path},
                    {"model", r.model},
                    {"endpoint", r.endpoint},
                    {"interrupted", r.interrupted},
                    {"theoretical_hit_rate",
                     known(r.theoretical_hit_rate) ? json(r.theoretical_hit_rate) : json()},
                    {"overall", summary_to_json(r.overall)},
                    {"levels", std::move(levels)},
                    {"cost", r.has_bill ? cost_json(r) : json()}});
  }
  return {{"schema", kCompareSchema}, {"runs", std::move(list)}};
}

std::string svg_latency_vs_concurrency(const std::vector<RunView>& runs) {
  constexpr std::string_view kTitle = "TTFT vs concurrency";
  std::vector<std::size_t> plotted;
  std::vector<std::string> skipped;
  double x_lo = 0, x_hi = 0, y_top = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    bool any = false;
    for (const auto& level : runs[i].levels) {
      if (!plottable(level)) continue;
      double x = std::log2(static_cast<double>(level.first));
      if (!any && plotted.empty()) x_lo = x_hi = x;
      x_lo = std::min(x_lo, x), x_hi = std::max(x_hi, x);
      y_top = std::max({y_top, level.second.ttft.p50_ms, level.second.ttft.p99_ms});
      any = true;
    }
    if (any)
      plotted.push_back(i);
    else
      skipped.push_back(runs[i].label);
  }
  std::string skipped_note =
      skipped.empty() ? "" : "not plotted (no concurrency sweep): " + joined_labels(skipped);
  if (runs.empty()) return no_data(kTitle, "");
  if (plotted.empty()) return no_data(kTitle, skipped_note);

  x_lo = std::floor(x_lo), x_hi = std::ceil(x_hi);
  if (x_hi - x_lo < 1) x_hi = x_lo + 1;
  // Half a doubling of margin either side, so end points are not drawn on the frame.
  auto px = [&](double x) { return kLeft + (x - x_lo + 0.5) / (x_hi - x_lo + 1) * kPlotW; };
  YScale y = y_scale(y_top);

  std::vector<LegendEntry> entries;
  for (std::size_t i : plotted) entries.push_back({Swatch::kLine, color_of(i), runs[i].label});
  entries.push_back({Swatch::kLine, kInk, "p50 (solid)"});
  entries.push_back({Swatch::kDashed, kInk, "p99 (dashed)"});
  std::vector<std::string> note_lines =
      skipped_note.empty() ? std::vector<std::string>{} : wrap(skipped_note);

  Page p;
  open_page(p, kTitle, page_height(entries.size(), note_lines.size(), 56));
  y_axis(p, y, "", "", "TTFT (ms)");
  int span = static_cast<int>(x_hi - x_lo);
  int every = 1;
  while (span / every > kMaxXLabels) every *= 2;
  for (int e = static_cast<int>(x_lo); e <= static_cast<int>(x_hi); e += every)
    fmt::format_to(
        p.it,
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"{3}\"/>\n"
        "<text x=\"{0:.1f}\" y=\"{4:.1f}\" text-anchor=\"middle\" fill=\"{3}\">{5}</text>\n",
        px(e), kTop + kPlotH, kTop + kPlotH + 5, kInk, kTop + kPlotH + 19,
        static_cast<long long>(std::llround(std::exp2(e))));
  x_title(p, "concurrency (requests in flight, log2 scale)", kTop + kPlotH + 42);

  for (std::size_t i : plotted) {
    const RunView& r = runs[i];
    std::string_view color = color_of(i);
    p.out += "<g class=\"series\" data-run=\"";
    core::append_xml_text(p.out, r.label);
    p.out += "\">\n";
    for (bool p99 : {false, true}) {
      fmt::format_to(p.it,
                     "<path class=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{} d=\"",
                     p99 ? "p99" : "p50", color, p99 ? " stroke-dasharray=\"6 4\"" : "");
      bool first = true;
      for (const auto& level : r.levels) {
        if (!plottable(level)) continue;
        double v = p99 ? level.second.ttft.p99_ms : level.second.ttft.p50_ms;
        fmt::format_to(p.it, "{}{:.1f} {:.1f}", first ? "M" : " L", px(std::log2(level.first)),
                       y.py(v));
        first = false;
      }
      p.out += "\"/>\n";
    }
    for (const auto& level : r.levels) {
      if (!plottable(level)) continue;
      double x = px(std::log2(level.first));
      for (bool p99 : {false, true}) {
        double v = p99 ? level.second.ttft.p99_ms : level.second.ttft.p50_ms;
        fmt::format_to(
            p.it, "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\" stroke=\"{}\"><title>",
            x, y.py(v), p99 ? "#ffffff" : color, color);
        core::append_xml_text(p.out, fmt::format("{}: concurrency {}, TTFT {} {:.1f} ms", r.label,
                                       level.first, p99 ? "p99" : "p50", fin(v)));
        p.out += "</title></circle>\n";
      }
    }
    p.out += "</g>\n";
  }
  legend(p, entries);
  notes(p, note_lines, kTop + kPlotH + 64);
  return close_page(p);
}

std::string svg_hit_rate(const std::vector<RunView>& runs) {
  constexpr std::string_view kTitle = "Prefix-cache hit rate: measured vs theoretical";
  if (runs.empty()) return no_data(kTitle, "");
  YScale y{100, 20};
  double group_w = kPlotW / static_cast<double>(runs.size());
  double bar_w = std::min(40.0, group_w * 0.35);

  // One run: the kinds' swatches in its bars' colour (solid measured, pale theoretical); several:
  // the kinds in ink and a colour a run.
  const std::string_view kind_color = runs.size() == 1 ? color_of(0) : kInk;
  std::vector<LegendEntry> entries = {{Swatch::kBar, kind_color, "measured (cached/prompt)"},
                                      {Swatch::kPaleBar, kind_color, "theoretical (ideal cache)"}};
  for (std::size_t i = 0; i < runs.size(); ++i)
    entries.push_back({Swatch::kBar, color_of(i), runs[i].label});
  std::vector<std::string> note_lines = {
      "measured: cached / prompt tokens as the endpoint reported them; theoretical: an unlimited "
      "prefix cache",
      "over the prompts sent; n/a: not reported (no usage, or no theoretical rate in the run)"};

  bool turned = turned_labels(runs.size());
  double bottom = bar_chart_bottom(turned);
  Page p;
  open_page(p, kTitle, page_height(entries.size(), note_lines.size(), bottom));
  y_axis(p, y, "", "%", "hit rate (% of prompt tokens)");
  std::vector<std::string> labels;
  for (const auto& r : runs) labels.push_back(r.label);
  group_labels(p, labels, group_w);
  x_title(p, "run", kTop + kPlotH + bottom - 14);

  for (std::size_t i = 0; i < runs.size(); ++i) {
    const RunView& r = runs[i];
    std::string_view color = color_of(i);
    double cx = kLeft + (i + 0.5) * group_w;
    double measured = r.overall.cache_hit_rate, theo = r.theoretical_hit_rate;
    p.out += "<g class=\"series\" data-run=\"";
    core::append_xml_text(p.out, r.label);
    p.out += "\">\n";
    bar(p, cx - bar_w - 2, bar_w, y, 100 * std::min(fin(measured), 1.0), known(measured), color,
        false, pct_or_dash(measured),
        fmt::format("{}: measured {}", r.label, pct_or_dash(measured)));
    bar(p, cx + 2, bar_w, y, 100 * std::min(fin(theo), 1.0), known(theo), color, true,
        pct_or_dash(theo), fmt::format("{}: theoretical {}", r.label, pct_or_dash(theo)));
    p.out += "</g>\n";
  }
  legend(p, entries);
  notes(p, note_lines, kTop + kPlotH + bottom + 10);
  return close_page(p);
}

std::string svg_cost(const std::vector<RunView>& runs) {
  constexpr std::string_view kTitle =
      "Cost per million tokens: measured vs at the reference hit rate";
  std::vector<std::size_t> billed;
  std::vector<std::string> skipped;
  double top = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (!runs[i].has_bill) {
      skipped.push_back(runs[i].label);
      continue;
    }
    billed.push_back(i);
    top = std::max({top, fin(runs[i].bill.usd_per_mtok), reference_per_mtok(runs[i])});
  }
  std::string skipped_note =
      skipped.empty() ? ""
                      : "not plotted (no bill: run without --prices FILE; cmax run --prices FILE): " +
                            joined_labels(skipped);
  if (runs.empty()) return no_data(kTitle, "");
  if (billed.empty()) return no_data(kTitle, skipped_note);

  YScale y = y_scale(top);
  double group_w = kPlotW / static_cast<double>(billed.size());
  double bar_w = std::min(40.0, group_w * 0.35);
  const std::string_view kind_color = billed.size() == 1 ? color_of(billed.front()) : kInk;
  std::vector<LegendEntry> entries = {{Swatch::kBar, kind_color, "measured hit rate"},
                                      {Swatch::kPaleBar, kind_color, "at reference hit rate"}};
  for (std::size_t i : billed) entries.push_back({Swatch::kBar, color_of(i), runs[i].label});
  std::vector<std::string> note_lines = {
      "the same prompt and completion tokens priced at each run's measured and reference hit rate; "
      "(N.NNx) = bill / bill at reference"};
  if (!skipped_note.empty())
    for (auto& l : wrap(skipped_note)) note_lines.push_back(std::move(l));

  bool turned = turned_labels(billed.size());
  double bottom = bar_chart_bottom(turned);
  Page p;
  open_page(p, kTitle, page_height(entries.size(), note_lines.size(), bottom));
  y_axis(p, y, "$", "", "$ per million tokens (prompt + completion)");
  std::vector<std::string> labels;
  // The ratio is kept whole; only the run's label is shortened to fit.
  std::size_t label_chars = std::max<std::size_t>(group_label_chars(turned, group_w), 16) - 8;
  for (std::size_t i : billed)
    labels.push_back(fmt::format("{} ({:.2f}x)", clip_label(runs[i].label, label_chars),
                                 fin(runs[i].bill.ratio_to_reference)));
  group_labels(p, labels, group_w);
  x_title(p, "run (bill / bill at reference)", kTop + kPlotH + bottom - 14);

  for (std::size_t k = 0; k < billed.size(); ++k) {
    const RunView& r = runs[billed[k]];
    std::string_view color = color_of(billed[k]);
    double cx = kLeft + (k + 0.5) * group_w;
    double measured = fin(r.bill.usd_per_mtok), ref = reference_per_mtok(r);
    p.out += "<g class=\"series\" data-run=\"";
    core::append_xml_text(p.out, r.label);
    p.out += "\">\n";
    bar(p, cx - bar_w - 2, bar_w, y, measured, true, color, false, "$" + money(measured),
        fmt::format("{}: ${}/Mtok at the measured hit rate {}", r.label, money(measured),
                    pct_or_dash(r.bill.measured_hit_rate)));
    bar(p, cx + 2, bar_w, y, ref, true, color, true, "$" + money(ref),
        fmt::format("{}: ${}/Mtok at the reference hit rate {}", r.label, money(ref),
                    pct_or_dash(r.bill.reference_hit_rate)));
    p.out += "</g>\n";
  }
  legend(p, entries);
  notes(p, note_lines, kTop + kPlotH + bottom + 10);
  return close_page(p);
}

}  // namespace cmax::loadgen
