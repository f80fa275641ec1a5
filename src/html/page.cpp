#include "html/page.h"

#include <algorithm>
#include <array>
#include <iterator>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "audit/attention.h"
#include "core/svg_text.h"
#include "html/charts.h"
#include "score/compare.h"

namespace cmax::html {
namespace {

using core::xml_text;

// Kept short and dependency-free: system fonts, one column that narrows to a phone, tables that
// scroll sideways instead of overflowing, charts that scale, and a print layout without the nav.
constexpr std::string_view kStyle = R"css(
:root{--ink:#222;--muted:#666;--line:#ddd;--fail:#d62728;--warn:#b26a00;--pass:#2c7a2c;--unv:#777}
*{box-sizing:border-box}
body{margin:0 auto;max-width:1080px;padding:16px;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:#fff}
h1{font-size:1.6em;margin:.2em 0}h2{font-size:1.35em;border-bottom:2px solid var(--ink);padding-bottom:.2em;margin-top:1.6em}
h3{font-size:1.1em;margin-top:1.4em}
.meta,.note{color:var(--muted);font-size:.9em}
nav{font-size:.9em;margin:.5em 0 1em}nav a{margin-right:.8em;white-space:nowrap}
a{color:#1f5fa8}
.chart{margin:.6em 0;overflow-x:auto}.chart svg{max-width:100%;height:auto;display:block}
.scroll{overflow-x:auto}
table{border-collapse:collapse;font-size:.9em;margin:.4em 0}th,td{border-bottom:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.tier{display:inline-block;font-size:1.25em;font-weight:600;padding:.25em .7em;border-radius:6px;background:#eee;margin:.3em 0}
.tier.Platinum{background:#e5e4e2}.tier.Gold{background:#f6e27a}.tier.Silver{background:#d7dbe0}.tier.Bronze{background:#e3b98f}.tier.Underperform{background:#f4b4b4}
.outcome{display:inline-block;min-width:5.5em;font-weight:600;font-size:.8em;text-transform:uppercase}
.fail .outcome,.o-fail{color:var(--fail)}.warn .outcome,.o-warn{color:var(--warn)}.pass .outcome,.o-pass{color:var(--pass)}.unverified .outcome,.o-unverified,.o-not_applicable{color:var(--unv)}
article.finding{border-left:4px solid var(--line);padding:.3em .8em;margin:.6em 0;background:#fafafa}
article.finding.fail{border-color:var(--fail)}article.finding.warn{border-color:#f0a30a}
article.finding h4{margin:.1em 0;font-size:1em}article.finding code{font-size:.9em}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.1em .8em;margin:.3em 0}dt{color:var(--muted)}dd{margin:0;overflow-wrap:anywhere}
pre.wide{white-space:pre;overflow-wrap:normal}pre{white-space:pre-wrap;overflow-wrap:anywhere;font-size:.85em;background:#f6f6f6;padding:.4em}
details{margin:.5em 0}summary{cursor:pointer;color:#1f5fa8}
ul.warnings li{color:var(--warn)}
.alert{border-left:4px solid #f0a30a;background:#fff6e0;padding:.4em .8em;margin:.6em 0}.alert strong{color:var(--warn);text-transform:uppercase;font-size:.85em;margin-right:.4em}
@media (max-width:600px){body{padding:8px;font-size:14px}dl{grid-template-columns:1fr}dt{font-weight:600}.chart svg{max-width:none;width:560px}}
@media print{nav{display:none}body{max-width:none;padding:0;font-size:11pt}section.run{break-before:page}.chart,article.finding,table{break-inside:avoid}a{color:inherit;text-decoration:none}}
)css";

class Writer {
 public:
  Page page;

  void raw(std::string_view s) { page.html += s; }
  void esc(std::string_view s) { core::append_xml_text(page.html, s); }
  template <typename... Args>
  void f(fmt::format_string<Args...> format, Args&&... args) {
    fmt::format_to(std::back_inserter(page.html), format, std::forward<Args>(args)...);
  }
  // A chart already tagged data-chart=NAME (the report's own, or a stage's tagged here).
  void chart(std::string_view svg, std::string_view name, std::string_view caption, std::string_view id = "") {
    page.charts.emplace_back(name);
    if (id.empty()) raw("<figure class=\"chart\">\n");
    else f("<figure class=\"chart\" id=\"{}\">\n", id);
    raw(svg);
    if (!caption.empty()) {
      raw("<figcaption class=\"note\">");
      esc(caption);
      raw("</figcaption>\n");
    }
    raw("</figure>\n");
  }
  void section_start(const std::string& id, std::string_view title, int level) {
    page.sections.push_back(id);
    f("<h{} id=\"{}\">", level, id);
    esc(title);
    f("</h{}>\n", level);
  }
  void kv(std::string_view key, std::string_view value) {
    if (value.empty()) return;
    raw("<dt>");
    esc(key);
    raw("</dt><dd>");
    esc(value);
    raw("</dd>\n");
  }
};

std::string pct(double v) { return fmt::format("{:.0f}%", v * 100); }

std::string score_text(const std::optional<double>& s) { return s ? fmt::format("{:.1f}", *s) : "--"; }

constexpr std::array<audit::Outcome, 5> kOutcomeOrder{audit::Outcome::fail, audit::Outcome::warn,
                                                      audit::Outcome::unverified, audit::Outcome::pass,
                                                      audit::Outcome::not_applicable};

// A cluster run names one check on many nodes CHECK@NODE; the page shows each check once, with
// its nodes grouped by what was observed, so 512 nodes do not make 512 copies of the same text.
struct CheckGroup {
  std::string id;                             ///< the check without @NODE
  std::vector<const audit::Finding*> members;  ///< worst outcome first
  audit::Outcome worst = audit::Outcome::not_applicable;
};


std::vector<CheckGroup> group_findings(const std::vector<audit::Finding>& findings) {
  std::vector<CheckGroup> groups;
  std::map<std::string, std::size_t, std::less<>> index;
  for (const auto& f : findings) {
    std::string_view id = f.check_id;
    if (auto at = id.find('@'); at != std::string_view::npos) id = id.substr(0, at);
    auto it = index.find(id);
    if (it == index.end()) {
      it = index.emplace(std::string(id), groups.size()).first;
      groups.push_back({std::string(id), {}, f.outcome});
    }
    auto& g = groups[it->second];
    g.members.push_back(&f);
    if (audit::attention_rank(f.outcome) > audit::attention_rank(g.worst)) g.worst = f.outcome;
  }
  for (auto& g : groups)
    std::stable_sort(g.members.begin(), g.members.end(), [](const audit::Finding* a, const audit::Finding* b) {
      return audit::attention_rank(a->outcome) > audit::attention_rank(b->outcome);
    });
  std::stable_sort(groups.begin(), groups.end(), [](const CheckGroup& a, const CheckGroup& b) {
    const auto& fa = *a.members.front();
    const auto& fb = *b.members.front();
    return fa.category != fb.category ? fa.category < fb.category : a.id < b.id;
  });
  return groups;
}

std::string_view target_of(const audit::Finding& f) {
  std::string_view id = f.check_id;
  auto at = id.find('@');
  return at == std::string_view::npos ? std::string_view() : id.substr(at + 1);
}

// What a group's targets are: probed addresses ("10.0.0.5:3000", cmax audit isolation) or nodes
// (a cluster run's CHECK@NODE).
std::string_view target_noun(const CheckGroup& g) {
  for (const auto* m : g.members)
    if (target_of(*m).find(':') != std::string_view::npos) return "address";
  return "node";
}

// "1 node", "12 nodes", "3 addresses".
std::string count_of(std::size_t n, std::string_view noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : (noun == "address" ? "es" : "s"));
}

// Members that name a target; a summary finding without one (an isolation probe's) is not counted.
std::size_t targeted(const CheckGroup& g) {
  return static_cast<std::size_t>(
      std::count_if(g.members.begin(), g.members.end(), [](const audit::Finding* m) { return !target_of(*m).empty(); }));
}

// "n1, n2, n3 and 509 more".
std::string list_targets(const std::vector<std::string_view>& targets) {
  constexpr std::size_t kShown = 12;
  std::string out;
  for (std::size_t i = 0; i < targets.size() && i < kShown; ++i) {
    if (i) out += ", ";
    out += targets[i];
  }
  if (targets.size() > kShown) out += fmt::format(" and {} more", targets.size() - kShown);
  return out;
}

void finding_article(Writer& w, const CheckGroup& g) {
  const audit::Finding& f = *g.members.front();  // the worst: its evidence and remediation are shown
  const auto outcome = audit::to_string(g.worst);
  w.f("<article class=\"finding {}\"><h4><span class=\"outcome\">{}</span> <code>", outcome, outcome);
  w.esc(g.members.size() == 1 ? f.check_id : g.id);
  w.raw("</code> ");
  w.esc(f.title);
  w.raw("</h4>\n<dl>\n");
  w.kv("category", audit::category_title(f.category));
  if (g.members.size() > 1) {
    // Nodes by (outcome, observed): each distinct answer once, with the nodes that gave it.
    std::vector<std::pair<const audit::Finding*, std::vector<std::string_view>>> answers;
    for (const auto* m : g.members) {
      auto it = std::find_if(answers.begin(), answers.end(), [&](const auto& a) {
        return a.first->outcome == m->outcome && a.first->observed == m->observed;
      });
      if (it == answers.end()) answers.push_back({m, {target_of(*m)}});
      else it->second.push_back(target_of(*m));
    }
    const std::string_view noun = target_noun(g);
    w.f("<dt>{}</dt><dd><ul>\n", noun == "address" ? "addresses" : "nodes");
    for (const auto& [m, targets] : answers) {
      if (targets.size() == 1 && targets.front().empty()) {  // the summary of a probe over many addresses
        w.f("<li><span class=\"o-{}\">{}</span> in all", audit::to_string(m->outcome), audit::to_string(m->outcome));
        if (!m->observed.empty()) {
          w.raw(": ");
          w.esc(m->observed);
        }
        w.raw("</li>\n");
        continue;
      }
      w.f("<li><span class=\"o-{}\">{}</span> on {}", audit::to_string(m->outcome), audit::to_string(m->outcome),
          count_of(targets.size(), noun));
      if (!m->observed.empty()) {
        w.raw(", observed ");
        w.esc(m->observed);
      }
      w.raw(": ");
      w.esc(list_targets(targets));
      w.raw("</li>\n");
    }
    w.raw("</ul></dd>\n");
  } else {
    w.kv("observed", f.observed);
  }
  w.kv("expected", f.expected);
  if (!f.evidence_source.empty() || !f.evidence_value.empty())
    w.kv("evidence", f.evidence_value.empty() ? f.evidence_source
                                              : fmt::format("{}: {}", f.evidence_source, f.evidence_value));
  w.kv("why", f.reason);
  w.kv("what to do", f.remediation);
  w.kv("criterion", f.criterion);
  if (!f.cves.empty()) {
    std::string cves;
    for (const auto& c : f.cves) cves += (cves.empty() ? "" : ", ") + c;
    w.kv("CVEs", cves);
  }
  if (!f.links.empty()) {
    w.raw("<dt>links</dt><dd>");
    for (const auto& l : f.links) {
      // Links are for the reader to follow; nothing is fetched (the page's CSP forbids it).
      w.raw("<a rel=\"noreferrer\" href=\"");
      w.esc(l);
      w.raw("\">");
      w.esc(l);
      w.raw("</a> ");
    }
    w.raw("</dd>\n");
  }
  w.raw("</dl></article>\n");
}

void findings_section(Writer& w, const RunReport& r, const std::string& id) {
  w.section_start(id, fmt::format("Findings ({})", r.findings.size()), 3);
  if (r.findings.empty()) {
    w.raw("<p class=\"note\">results.json holds no findings.</p>\n");
    return;
  }
  w.chart(svg_findings(r.findings), "findings", "Findings per category, by outcome (hover a segment for counts).");
  const auto groups = group_findings(r.findings);
  std::array<std::vector<const CheckGroup*>, 5> by{};
  for (const auto& g : groups) by[static_cast<std::size_t>(g.worst)].push_back(&g);
  for (auto o : {audit::Outcome::fail, audit::Outcome::warn})
    for (const auto* g : by[static_cast<std::size_t>(o)]) finding_article(w, *g);
  // The rest as compact tables: unverified says what evidence is missing, pass what was seen.
  for (auto o : {audit::Outcome::unverified, audit::Outcome::pass, audit::Outcome::not_applicable}) {
    const auto& v = by[static_cast<std::size_t>(o)];
    if (v.empty()) continue;
    w.f("<details class=\"o-{0}\"{1}><summary>{2} {0}</summary>\n<div class=\"scroll\"><table><tr><th>check</th>"
        "<th>category</th><th>title</th><th>observed</th><th>evidence</th><th>why</th></tr>\n",
        audit::to_string(o), o == audit::Outcome::unverified ? " open" : "", v.size());
    for (const auto* g : v) {
      const audit::Finding& f = *g->members.front();
      w.raw("<tr><td><code>");
      w.esc(g->members.size() == 1 ? f.check_id : g->id);
      w.raw("</code>");
      if (g->members.size() > 1) w.f(" <span class=\"note\">({})</span>", count_of(targeted(*g), target_noun(*g)));
      w.raw("</td><td>");
      w.esc(audit::category_title(f.category));
      w.raw("</td><td>");
      w.esc(f.title);
      w.raw("</td><td>");
      w.esc(f.observed);
      w.raw("</td><td>");
      w.esc(f.evidence_source);
      w.raw("</td><td>");
      w.esc(f.reason);
      w.raw("</td></tr>\n");
    }
    w.raw("</table></div></details>\n");
  }
}

// The report stage is "running" in campaign.json while cmax run renders this page: the page
// existing is that stage done, so it is never shown as still running.
std::string_view shown_status(const StageView& st) {
  return st.kind == "report" && st.status == "running" ? std::string_view("done") : std::string_view(st.status);
}

// One line for the stage table: why it did not run, what went wrong, or what it ran on.
std::string stage_line(const StageView& st) {
  if (!st.run || st.status == "skipped") return st.todo.empty() ? st.reason : st.reason + " · to run it: " + st.todo;
  if (!st.error.empty()) return st.error;
  if (st.kind == "report") return "this page";
  if (st.status == "pending") return "not started";
  if (st.status == "running") return "did not finish (the run was stopped during it)";
  return st.targets;
}

// "3 (usage or environment)"; "" for a stage that did not run or whose process never exited.
std::string stage_exit(const StageView& st) {
  if (!st.run || st.status == "skipped") return "";
  if (st.exit_code >= 0) return fmt::format("{} ({})", st.exit_code, stage_exit_meaning(st.kind, st.exit_code));
  if (st.status == "failed" || st.status == "timed_out" || st.status == "interrupted") return "none (did not exit)";
  return "";
}

// The stage's log as a link, only when the file is there (score and report run inside cmax run
// and write none).
void stage_log(Writer& w, const RunReport& r, const StageView& st) {
  if (!st.log_exists) return;
  w.raw("<a href=\"");
  w.esc(r.href_base + st.log);
  w.raw("\">");
  w.esc(st.log);
  w.raw("</a>");
}

// cmax run's stages: one section each, run or not, with what it did or why it did not run.
void stages_section(Writer& w, const RunReport& r, const CampaignView& v, const std::string& id) {
  w.section_start(id, fmt::format("Stages (plan {}{})", v.plan, v.interrupted ? ", interrupted" : ""), 3);
  w.raw("<p class=\"meta\">");
  w.esc(fmt::format("{} · started {}{}{}", v.origin, v.started_at,
                    v.finished_at.empty() ? "" : " · finished " + v.finished_at,
                    v.resumes > 0 ? fmt::format(" · resumed {} time{}", v.resumes, v.resumes == 1 ? "" : "s") : ""));
  w.raw("</p>\n<div class=\"scroll\"><table class=\"stages\">\n<tr><th>stage</th><th>status</th><th>exit</th>"
        "<th class=\"num\">time</th><th>what happened</th><th>log</th></tr>\n");
  for (const auto& st : v.stages) {
    const std::string_view status = shown_status(st);
    const char* cls = status == "done" ? (st.exit_code > 0 ? "o-warn" : "o-pass")
                      : status == "skipped" || status == "pending" ? "o-unverified"
                                                                   : "o-fail";
    w.f("<tr><td><a href=\"#{}-{}\">", id, st.id);
    w.esc(st.id);
    w.f("</a></td><td class=\"{}\">", cls);
    w.esc(status);
    w.raw("</td><td>");
    w.esc(stage_exit(st));
    w.raw("</td><td class=\"num\">");
    w.esc(st.seconds > 0 ? fmt::format("{:.1f} s", st.seconds) : "");
    w.raw("</td><td>");
    w.esc(stage_line(st));
    w.raw("</td><td>");
    stage_log(w, r, st);
    w.raw("</td></tr>\n");
  }
  w.raw("</table></div>\n");
  for (const auto& st : v.stages) {
    const std::string sid = fmt::format("{}-{}", id, st.id);
    w.f("<section class=\"stage\" id=\"{}\">\n", sid);
    w.page.sections.push_back(sid);
    w.f("<h4>");
    w.esc(fmt::format("{}: {}{}", st.id, shown_status(st), st.disruptive ? " (disruptive)" : ""));
    w.raw("</h4>\n<dl>\n");
    w.kv(st.run ? "what" : "why it did not run", st.reason);
    if (st.run) w.kv("on", st.targets);
    w.kv("to run it", st.todo);
    w.kv("what went wrong", st.error);
    w.kv("exit", stage_exit(st));
    if (st.seconds > 0) w.kv("time", fmt::format("{:.1f} s", st.seconds));
    if (st.run) w.kv("documents", fmt::format("{}", fmt::join(st.documents, ", ")));
    if (st.log_exists) {
      w.raw("<dt>log</dt><dd>");
      stage_log(w, r, st);
      w.raw("</dd>\n");
    }
    w.raw("</dl>\n</section>\n");
  }
}

void scorecard_section(Writer& w, const RunReport& r, const score::Rubric& rubric, const std::string& id) {
  const auto& c = r.card;
  w.section_start(id, "Scorecard", 3);
  w.f("<div class=\"tier {}\">{} · {} · confidence {}</div>\n", xml_text(c.tier), xml_text(c.tier),
      score_text(c.total), pct(c.confidence));
  if (!c.tier_reasons.empty()) {
    w.raw("<ul>\n");
    for (const auto& reason : c.tier_reasons) {
      w.raw("<li>");
      w.esc(reason);
      w.raw("</li>\n");
    }
    w.raw("</ul>\n");
  }
  w.chart(svg_scorecard({&c}, rubric), "scorecard",
          fmt::format("Rubric {} {} ({}): docs/score.md gives the formulas; missing evidence lowers the confidence, "
                      "never the score.",
                      rubric.name, rubric.version, rubric.origin));
  if (!c.move_up.empty()) {
    w.f("<h4>What would move this cluster up{}</h4>\n<ol>\n",
        c.next_tier ? fmt::format(" to {} ({:.1f} points short)", xml_text(*c.next_tier), c.needed) : "");
    std::size_t shown = 0;
    for (const auto& s : c.move_up) {
      if (++shown > 12) break;
      w.raw("<li>");
      w.esc(s.text);
      if (s.kind == score::Suggestion::Kind::fix && s.gain > 0) w.f(" <span class=\"note\">(+{:.1f} points)</span>", s.gain);
      if (s.kind == score::Suggestion::Kind::evidence && s.confidence_gain > 0)
        w.f(" <span class=\"note\">(+{} confidence)</span>", pct(s.confidence_gain));
      w.raw("</li>\n");
    }
    w.raw("</ol>\n");
  }
  w.raw("<details><summary>Every rubric item and its evidence</summary>\n<div class=\"scroll\"><table><tr><th>category</th>"
        "<th>item</th><th class=\"num\">weight</th><th class=\"num\">points</th><th>why</th></tr>\n");
  for (const auto& cat : c.categories)
    for (const auto& item : cat.items) {
      w.raw("<tr><td>");
      w.esc(audit::category_title(cat.category));
      w.raw("</td><td>");
      w.esc(item.title.empty() ? item.id : item.title);
      w.f("</td><td class=\"num\">{:g}</td><td class=\"num\">{}</td><td>", item.weight, score_text(item.points));
      w.esc(item.reason);
      w.raw("</td></tr>\n");
    }
  w.raw("</table></div></details>\n");
}

void cluster_section(Writer& w, const ClusterView& v, const std::string& id) {
  w.section_start(id, fmt::format("Nodes ({}, {})", v.nodes.size(), v.harness), 3);
  w.raw("<div class=\"scroll\"><table><tr><th>node</th><th>status</th><th class=\"num\">s</th><th class=\"num\">pass</th>"
        "<th class=\"num\">warn</th><th class=\"num\">fail</th><th>kernel log</th><th>failing / why</th></tr>\n");
  for (const auto& n : v.nodes) {
    w.raw("<tr><td>");
    w.esc(n.node);
    w.f("</td><td class=\"{}\">", n.status == "ok" ? "o-pass" : "o-fail");
    w.esc(n.status);
    w.f("</td><td class=\"num\">{:.2f}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>",
        n.seconds, n.pass, n.warn, n.fail);
    w.esc(n.worst_action.empty() ? "-" : n.worst_action);
    w.raw("</td><td>");
    std::string why = n.detail;
    for (const auto& x : n.failing) why += (why.empty() ? "" : ", ") + x;
    w.esc(why);
    w.raw("</td></tr>\n");
  }
  w.raw("</table></div>\n");
}

void scan_section(Writer& w, const ScanView& v, const std::string& id) {
  w.section_start(id, fmt::format("Kernel log ({} incidents, {} need action)", v.total, v.actionable), 3);
  if (!v.sources.empty()) {
    std::string s;
    for (const auto& x : v.sources) s += (s.empty() ? "" : ", ") + x;
    w.raw("<p class=\"note\">Read: ");
    w.esc(s);
    w.raw("</p>\n");
  }
  if (!v.drills.empty()) {
    w.raw("<p class=\"note\">Fault drills' lines (cmax drill), shown apart and never counted as faults: ");
    w.esc(fmt::format("{}", fmt::join(v.drills, "; ")));
    w.raw(".</p>\n");
  }
  if (v.incidents.empty()) {
    w.raw("<p>No incidents.</p>\n");
    return;
  }
  constexpr std::size_t kRowsOpen = 25;  // the rest, milder, behind a click
  const char* header =
      "<div class=\"scroll\"><table><tr><th>node</th><th>kind</th><th>code</th><th>device</th><th>action</th>"
      "<th class=\"num\">count</th><th>first / last seen</th><th>sample</th></tr>\n";
  w.raw(header);
  for (std::size_t n = 0; n < v.incidents.size(); ++n) {
    const auto& i = v.incidents[n];
    if (n == kRowsOpen) {
      w.f("</table></div>\n<details><summary>{} more, milder or resolved</summary>\n", v.incidents.size() - n);
      w.raw(header);
    }
    w.raw("<tr><td>");
    w.esc(i.node);
    w.raw("</td><td>");
    w.esc(i.kind);
    w.f("</td><td>{}</td><td>", i.code ? fmt::format("{}", *i.code) : "");
    w.esc(i.device);
    w.raw("</td><td>");
    w.esc(i.action);
    if (i.resolved) w.raw(" (resolved)");
    if (!i.reason.empty() && i.reason != "catalog") {
      w.raw("<br><span class=\"note\">");
      w.esc(i.reason);
      w.raw("</span>");
    }
    w.f("</td><td class=\"num\">{}</td><td>", i.count);
    w.esc(i.first_seen);
    if (!i.last_seen.empty() && i.last_seen != i.first_seen) {
      w.raw(" – ");
      w.esc(i.last_seen);
    }
    w.raw("</td><td><code>");
    w.esc(i.sample);
    w.raw("</code></td></tr>\n");
  }
  w.raw("</table></div>\n");
  if (v.incidents.size() > kRowsOpen) w.raw("</details>\n");
  if (v.total > v.incidents.size())
    w.f("<p class=\"note\">The {} most severe of {} incidents; scan.json has them all.</p>\n", v.incidents.size(), v.total);
}

std::string_view verdict_class(std::string_view verdict) {
  if (verdict == "pass") return "o-pass";
  if (verdict == "warn") return "o-warn";
  if (verdict == "fail") return "o-fail";
  return "o-unverified";
}

// busbw in GB/s to four significant digits: 365.8 on a GPU fabric, 0.0607 on a CPU one.
std::string gbps(double v) { return fmt::format("{:.4g}", v); }

// NCCL: a summary table of every run and a scaling table first, so that a sweep of many steps
// reads at a glance; the charts after them, one closed group per collective.
void nccl_section(Writer& w, const NcclView& v, const std::string& id) {
  w.section_start(id, fmt::format("NCCL ({} run{})", v.runs.size(), v.runs.size() == 1 ? "" : "s"), 3);
  std::map<std::string, int, std::less<>> verdicts;
  std::size_t anomalies = 0;
  for (const auto& r : v.runs) {
    ++verdicts[r.verdict.empty() ? "unknown" : r.verdict];
    anomalies += r.anomalies.size();
  }
  std::string counts;
  for (const auto& [verdict, n] : verdicts) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, verdict);
  w.raw("<p>");
  w.esc(fmt::format("{} run{}{}; {} anomal{}; {} scaling flag{}. busbw in GB/s (10^9 bytes/s): the highest "
                    "measured in each run, never the fitted curve's.",
                    v.runs.size(), v.runs.size() == 1 ? "" : "s", counts.empty() ? "" : ": " + counts, anomalies,
                    anomalies == 1 ? "y" : "ies", v.scaling.size(), v.scaling.size() == 1 ? "" : "s"));
  w.raw("</p>\n");
  for (const auto& f : v.failed_steps) {
    w.raw("<p class=\"o-fail\">");
    w.esc(fmt::format("step {} ({}{}): no result: {}", f.step, f.test,
                      f.nodes > 0 ? fmt::format(", {} node{}", f.nodes, f.nodes == 1 ? "" : "s") : "", f.error));
    w.raw("</p>\n");
  }
  if (!v.runs.empty()) {
    w.raw("<div class=\"scroll\"><table class=\"nccl-summary\"><tr><th>step</th><th>collective</th>"
          "<th class=\"num\">nodes</th><th class=\"num\">ranks</th><th>variant</th>"
          "<th class=\"num\">peak busbw measured</th><th class=\"num\">reference</th>"
          "<th class=\"num\">anomalies</th><th>verdict</th></tr>\n");
    for (std::size_t i = 0; i < v.runs.size(); ++i) {
      const auto& r = v.runs[i];
      w.f("<tr><td><a href=\"#{}-chart-{}\">", id, i);
      w.esc(r.step.empty() ? r.file : r.step);
      w.raw("</a></td><td>");
      w.esc(r.collective);
      // A step's node count; the hosts its log shows when they differ (ranks packed on fewer hosts).
      const int nodes = r.step_nodes > 0 ? r.step_nodes : r.nodes;
      w.f("</td><td class=\"num\">{}{}</td><td class=\"num\">{}</td><td>", nodes > 0 ? fmt::format("{}", nodes) : "-",
          r.step_nodes > 0 && r.nodes > 0 && r.nodes != r.step_nodes
              ? fmt::format(" <span class=\"note\">({} host{} seen)</span>", r.nodes, r.nodes == 1 ? "" : "s")
              : "",
          r.ranks > 0 ? fmt::format("{}", r.ranks) : "-");
      w.esc(r.variant.empty() ? "-" : r.variant);
      w.f("</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num{}\">{}</td><td class=\"{}\">",
          gbps(r.peak_busbw_gbps), r.expected_busbw_gbps ? gbps(*r.expected_busbw_gbps) : "-",
          r.anomalies.empty() ? "" : " o-warn", r.anomalies.size(), verdict_class(r.verdict));
      w.esc(r.verdict);
      w.raw("</td></tr>\n");
    }
    w.raw("</table></div>\n");
  }
  const NcclScalingTable t = nccl_scaling_table(v);
  if (!t.rows.empty()) {
    w.raw("<h4>Scaling: peak busbw measured (GB/s) by node count</h4>\n<div class=\"scroll\">"
          "<table class=\"nccl-scaling\"><tr><th>collective</th><th>variant</th>");
    for (int n : t.node_counts) w.f("<th class=\"num\">{} node{}</th>", n, n == 1 ? "" : "s");
    w.raw("</tr>\n");
    for (const auto& row : t.rows) {
      w.raw("<tr><td>");
      w.esc(row.collective);
      w.raw("</td><td>");
      w.esc(row.variant.empty() ? "-" : row.variant);
      w.raw("</td>");
      for (const auto& c : row.cells) {
        const std::string value = c.peak_busbw_gbps ? gbps(*c.peak_busbw_gbps) : "-";
        if (!c.expected_gbps) {
          w.f("<td class=\"num\">{}</td>", value);
          continue;
        }
        w.raw("<td class=\"num o-warn\" title=\"");
        w.esc(c.detail);
        w.f("\">{}{}</td>", value, *c.expected_gbps > 0 ? fmt::format(" (expected {})", gbps(*c.expected_gbps)) : " (poor)");
      }
      w.raw("</tr>\n");
    }
    w.raw("</table></div>\n");
    if (!v.scaling.empty()) {
      w.raw("<ul>\n");
      for (const auto& s : v.scaling) {
        w.raw("<li class=\"o-warn\">");
        w.esc(s.detail.empty() ? fmt::format("{}: {} at {} nodes", s.group, s.kind, s.nodes) : s.detail);
        w.raw("</li>\n");
      }
      w.raw("</ul>\n");
    }
  }
  // The charts, grouped by collective and closed: the tables above say which to open.
  std::vector<std::string> collectives;
  for (const auto& r : v.runs)
    if (std::find(collectives.begin(), collectives.end(), r.collective) == collectives.end())
      collectives.push_back(r.collective);
  for (const auto& coll : collectives) {
    std::size_t charts = 0, flagged = 0;
    std::set<int> nodes;
    for (const auto& r : v.runs)
      if (r.collective == coll) {
        ++charts;
        flagged += r.anomalies.size();
        if (r.step_nodes > 0 || r.nodes > 0) nodes.insert(r.step_nodes > 0 ? r.step_nodes : r.nodes);
      }
    w.raw("<details class=\"nccl-charts\"><summary>");
    w.esc(fmt::format("{}: {} chart{}{}{}", coll.empty() ? "unknown collective" : coll, charts, charts == 1 ? "" : "s",
                      nodes.empty() ? "" : fmt::format(" ({} node{})", fmt::join(nodes, ", "),
                                                       nodes.size() == 1 && *nodes.begin() == 1 ? "" : "s"),
                      flagged ? fmt::format(" · {} anomal{}", flagged, flagged == 1 ? "y" : "ies") : ""));
    w.raw("</summary>\n");
    for (std::size_t i = 0; i < v.runs.size(); ++i) {
      const auto& r = v.runs[i];
      if (r.collective != coll) continue;
      const std::string anchor = fmt::format("{}-chart-{}", id, i);
      std::string caption = fmt::format(
          "{}{} · {} ranks · {} nodes{} · measured peak {} GB/s{}{} · verdict {} · {}", r.collective,
          r.variant.empty() ? "" : " (" + r.variant + ")", r.ranks,
          r.step_nodes > 0 && r.step_nodes != r.nodes ? fmt::format("{} ({} seen)", r.step_nodes, r.nodes)
                                                      : fmt::format("{}", r.nodes),
          r.gpu.empty() ? "" : " · " + r.gpu,
          gbps(r.peak_busbw_gbps),
          r.expected_busbw_gbps ? fmt::format(" (reference {})", gbps(*r.expected_busbw_gbps)) : "",
          r.fit_peak_gbps ? fmt::format(" · fitted model's peak {} GB/s (a fit, not measured)", gbps(*r.fit_peak_gbps)) : "",
          r.verdict, r.step.empty() ? r.file : r.step);
      if (!r.svg.empty()) {
        w.chart(tag_chart(nccl_measured_legend(r.svg, r.peak_busbw_gbps), "nccl"), "nccl", caption, anchor);
      } else {
        w.f("<p class=\"o-warn\" id=\"{}\">", anchor);
        w.esc(fmt::format("{}: chart missing: {}", r.file, r.svg_error));
        w.raw("</p>\n");
      }
      if (!r.anomalies.empty()) {
        w.raw("<ul>\n");
        for (const auto& a : r.anomalies) {
          w.raw("<li>");
          w.esc(a);
          w.raw("</li>\n");
        }
        w.raw("</ul>\n");
      }
    }
    w.raw("</details>\n");
  }
}

void drill_section(Writer& w, const DrillView& v, const std::string& id) {
  w.section_start(id, fmt::format("Fault drill: {}", v.scenario), 3);
  w.raw("<p>");
  w.esc(v.title);
  if (!v.expect.empty()) {
    w.raw(" <span class=\"note\">(expected action: ");
    w.esc(v.expect);
    w.raw(")</span>");
  }
  w.raw("</p>\n");
  w.chart(svg_drill_timeline(v), "drill",
          "Each dot is the first poll that saw the stage; the band before it is the interval the stage happened in.");
  // The stages the drill waited for; "returned" only when it was asked to wait for it.
  w.raw("<div class=\"scroll\"><table><tr><th>node</th><th>stage</th><th>verdict</th><th class=\"num\">seen by</th>"
        "<th class=\"num\">not before</th><th>how</th></tr>\n");
  for (const auto& n : v.nodes)
    for (const auto& s : n.stages) {
      if (!s.awaited) continue;
      w.raw("<tr><td>");
      w.esc(n.node);
      w.raw("</td><td>");
      w.esc(s.stage);
      w.f("</td><td class=\"o-{}\">", s.verdict == "ok" ? "pass" : s.verdict == "slow" || s.verdict == "never" ? "fail" : "unverified");
      w.esc(s.verdict);
      if (s.reached)
        w.f("</td><td class=\"num\">{:.1f} ms</td><td class=\"num\">{:.1f} ms</td><td>", s.at_ms, s.lower_ms);
      else
        w.raw("</td><td></td><td></td><td>");
      w.esc(s.how);
      w.raw("</td></tr>\n");
    }
  w.raw("</table></div>\n");
  for (const auto& n : v.nodes) {
    if (n.detector_by.empty() || n.detector_by == "none") continue;
    w.f("<p class=\"{}\">", n.detector_owner == "rater" ? "o-warn" : "note");
    w.esc(n.detector_owner == "rater"
              ? fmt::format("{}: detected by {}, which the rater started: not the provider's stack, so its times are not "
                            "credited to the provider.",
                            n.node, n.detector_by)
              : fmt::format("{}: detected by {}.", n.node, n.detector_by));
    w.raw("</p>\n");
  }
}

void sla_section(Writer& w, const SlaView& v, const std::string& id) {
  w.section_start(id, "Availability (SLA)", 3);
  w.raw("<p>");
  w.esc(fmt::format("Contract {}: scope {}, target {:g}%. Credits owed: {:.2f} {}. {} {} had downtime{}; "
                    "the worst are shown.",
                    v.contract, v.scope, v.target_percent, v.credit_total, v.currency, v.entities_with_downtime,
                    v.entities_with_downtime == 1 ? v.scope : v.scope + "s",
                    v.entities_excluded_only > 0
                        ? fmt::format(" ({} more only had excluded time: maintenance, force majeure or drills)",
                                      v.entities_excluded_only)
                        : std::string()));
  w.raw("</p>\n");
  if (!v.drills.empty()) {
    w.raw("<p>Fault drills, excluded from downtime and from the time owed:</p><ul>\n");
    for (const auto& d : v.drills) {
      w.raw("<li>");
      w.esc(d);
      w.raw("</li>\n");
    }
    w.raw("</ul>\n");
  }
  w.chart(svg_availability(v), "availability", "Each cell: availability that month (hover for GPU-hours and credits).");
  if (!v.cancellations.empty()) {
    w.raw("<p class=\"o-fail\">Cancellation rights:</p><ul>\n");
    for (const auto& c : v.cancellations) {
      w.raw("<li>");
      w.esc(c);
      w.raw("</li>\n");
    }
    w.raw("</ul>\n");
  }
}

void endpoint_section(Writer& w, const std::vector<const RunReport*>& with_bench) {
  w.section_start("endpoints", "Inference endpoints", 2);
  std::vector<const loadgen::RunView*> benches;
  for (const auto* r : with_bench) benches.push_back(&*r->bench);
  // What bench.json warns of (a measured hit rate above the achievable one, ...) before any number.
  for (const auto* r : with_bench)
    for (const auto& x : r->bench_warnings) {
      w.raw("<p class=\"alert\"><strong>warning</strong> ");
      if (with_bench.size() > 1) {
        w.esc(r->bench->label);
        w.raw(": ");
      }
      w.esc(x);
      w.raw("</p>\n");
    }
  std::vector<loadgen::RunView> runs;
  for (const auto* b : benches) runs.push_back(*b);
  const auto cells = loadgen::compare_cells(runs);
  w.raw("<div class=\"scroll\"><table class=\"endpoints\"><tr>");
  for (std::size_t c = 0; c < cells.heads.size(); ++c) {
    w.raw(c == 0 ? "<th>" : "<th class=\"num\">");
    w.esc(cells.heads[c]);
    w.raw("</th>");
  }
  w.raw("</tr>\n");
  for (const auto& row : cells.rows) {
    w.raw("<tr>");
    for (std::size_t c = 0; c < row.size(); ++c) {
      w.raw(c == 0 ? "<td>" : "<td class=\"num\">");
      w.esc(row[c]);
      w.raw("</td>");
    }
    w.raw("</tr>\n");
  }
  w.raw("</table></div>\n");
  for (const auto& n : cells.notes) {
    w.raw("<p class=\"note\">");
    w.esc(n);
    w.raw("</p>\n");
  }
  w.chart(tag_chart(loadgen::svg_latency_vs_concurrency(runs), "endpoint-latency"), "endpoint-latency",
          "Time to first token against concurrency, p50 and p99.");
  w.chart(svg_hit_rate(benches), "endpoint-hit-rate",
          "Prefix-cache hit rate measured (cached / prompt tokens) beside the workload's theoretical rate.");
  const bool any_bill = std::any_of(benches.begin(), benches.end(), [](const auto* b) { return b->has_bill; });
  if (any_bill) {
    w.chart(tag_chart(loadgen::svg_cost(runs), "endpoint-cost"), "endpoint-cost",
            "Cost per million tokens as measured, and at the reference hit rate.");
  } else {
    // Nothing to draw: say what would give a bill rather than show an empty frame.
    w.raw("<p class=\"note endpoint-cost-none\">Cost: no prices given: pass --prices FILE to cmax endpoint bench "
          "(cmax run --prices FILE).</p>\n");
  }
  for (const auto* b : benches)
    if (b->has_bill && !b->bill.arithmetic.empty()) {
      w.f("<details><summary>The bill of {}, with the arithmetic</summary><pre>", xml_text(b->label));
      for (const auto& line : b->bill.arithmetic) {
        w.esc(line);
        w.raw("\n");
      }
      w.raw("</pre></details>\n");
    }
}

void compare_section(Writer& w, const std::vector<RunReport>& runs, const score::Rubric& rubric) {
  std::vector<score::ScoreCard> cards;
  std::vector<const score::ScoreCard*> ptrs;
  for (const auto& r : runs) cards.push_back(r.card);
  for (const auto& c : cards) ptrs.push_back(&c);
  auto ranking = score::rank_runs(cards);
  w.section_start("compare", "Side by side", 2);
  w.raw("<div class=\"scroll\"><table><tr><th>rank</th><th>run</th><th>tier</th><th class=\"num\">total</th>"
        "<th class=\"num\">confidence</th></tr>\n");
  for (const auto& e : ranking.entries) {
    const auto& c = cards[e.run];
    w.f("<tr><td>{}{}</td><td><a href=\"#run-{}\">", e.rank ? fmt::format("{}", *e.rank) : "-", e.tie ? " (tie)" : "", e.run);
    w.esc(c.label);
    w.raw("</a></td><td>");
    w.esc(c.tier);
    w.f("</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n", score_text(c.total), pct(c.confidence));
  }
  w.raw("</table></div>\n");
  // The category scores side by side: a column per run, headed by its name.
  w.raw("<div class=\"scroll\"><table class=\"by-category\"><tr><th>category</th>");
  for (const auto& c : cards) {
    w.raw("<th class=\"num\">");
    w.esc(c.label);
    w.raw("</th>");
  }
  w.raw("</tr>\n");
  for (std::size_t k = 0; k < audit::kCategoryCount; ++k) {
    w.raw("<tr><td>");
    w.esc(audit::category_title(static_cast<audit::Category>(k)));
    w.raw("</td>");
    for (const auto& c : cards) {
      const auto* cat = k < c.categories.size() ? &c.categories[k] : nullptr;
      w.f("<td class=\"num\">{}</td>", cat ? score_text(cat->score) : std::string("-"));
    }
    w.raw("</tr>\n");
  }
  w.raw("</table></div>\n");
  for (const auto& n : ranking.notes) {
    w.raw("<p class=\"note\">");
    w.esc(n);
    w.raw("</p>\n");
  }
  w.chart(svg_scorecard(ptrs, rubric), "scorecard", "Category scores of every run.");
}

}  // namespace

Page render_page(const std::vector<RunReport>& runs, const score::Rubric& rubric, const PageMeta& meta) {
  Writer w;
  std::size_t findings = 0;
  for (const auto& r : runs) findings += r.findings.size();
  w.page.html.reserve(64 * 1024 + findings * 700);
  std::string title = runs.size() == 1 ? runs[0].label : fmt::format("{} runs", runs.size());
  w.raw("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        // The page fetches nothing and runs nothing; the browser is told so.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "img-src data:\">\n<title>cmax report: ");
  w.esc(title);
  w.raw("</title>\n<style>");
  w.raw(kStyle);
  w.raw("</style>\n</head>\n<body>\n<header><h1>cmax report</h1>\n<p class=\"meta\">");
  w.esc(fmt::format("{} · generated {} by cmax {} · rubric {} {}", title, meta.generated_at, meta.cmax_version,
                    rubric.name, rubric.version));
  w.raw("</p></header>\n<nav>");
  if (runs.size() > 1) w.raw("<a href=\"#compare\">side by side</a>");
  for (std::size_t i = 0; i < runs.size(); ++i) {
    w.f("<a href=\"#run-{}\">", i);
    w.esc(runs[i].label);
    w.raw("</a>");
  }
  std::vector<const RunReport*> benches;
  for (const auto& r : runs)
    if (r.bench) benches.push_back(&r);
  if (!benches.empty()) w.raw("<a href=\"#endpoints\">endpoints</a>");
  w.raw("</nav>\n");
  if (runs.size() > 1) compare_section(w, runs, rubric);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    const std::string id = fmt::format("run-{}", i);
    w.f("<section class=\"run\" id=\"{}\">\n", id);
    w.page.sections.push_back(id);
    w.raw("<h2>");
    w.esc(r.label);
    w.raw("</h2>\n<p class=\"meta\">");
    w.esc(fmt::format("{}{}", r.dir, r.host.empty() ? "" : " · host " + r.host));
    w.raw("</p>\n");
    scorecard_section(w, r, rubric, id + "-score");
    if (r.campaign) stages_section(w, r, *r.campaign, id + "-stages");
    findings_section(w, r, id + "-findings");
    if (r.cluster) cluster_section(w, *r.cluster, id + "-nodes");
    if (r.scan) scan_section(w, *r.scan, id + "-scan");
    if (r.nccl) nccl_section(w, *r.nccl, id + "-nccl");
    if (r.drill) drill_section(w, *r.drill, id + "-drill");
    if (r.sla) sla_section(w, *r.sla, id + "-sla");
    if (!r.warnings.empty()) {
      w.raw("<h3>Warnings</h3>\n<ul class=\"warnings\">\n");
      for (const auto& x : r.warnings) {
        w.raw("<li>");
        w.esc(x);
        w.raw("</li>\n");
      }
      w.raw("</ul>\n");
    }
    w.raw("</section>\n");
  }
  if (!benches.empty()) endpoint_section(w, benches);
  w.raw("<footer class=\"note\"><p>Every score links back to its evidence above; the rubric is data "
        "(data/rubric.json) and docs/score.md gives the formulas.</p></footer>\n</body>\n</html>\n");
  return std::move(w.page);
}

}  // namespace cmax::html
