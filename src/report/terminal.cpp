#include "report/terminal.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/scorecard.h"

namespace cmax::report {
namespace {

using audit::Outcome;

std::string_view tag(Outcome o) {
  switch (o) {
    case Outcome::pass: return "PASS";
    case Outcome::warn: return "WARN";
    case Outcome::fail: return "FAIL";
    case Outcome::not_applicable: return "N/A ";
    case Outcome::unverified: return "UNVR";
  }
  return "?";
}

std::string_view color_of(Outcome o) {
  switch (o) {
    case Outcome::pass: return "\033[32m";
    case Outcome::warn: return "\033[33m";
    case Outcome::fail: return "\033[31;1m";
    case Outcome::not_applicable: return "\033[2m";
    case Outcome::unverified: return "\033[35m";
  }
  return "";
}

std::string paint(std::string_view text, std::string_view color, bool on) {
  return on ? fmt::format("{}{}\033[0m", color, text) : std::string(text);
}

void detail(std::string& out, std::string_view label, std::string_view value) {
  if (!value.empty()) out += fmt::format("         {:<12}{}\n", label, value);
}

std::string tally(const CategoryScore& c) {
  return fmt::format("pass {}  warn {}  fail {}  n/a {}  unverified {}", c.count(Outcome::pass),
                     c.count(Outcome::warn), c.count(Outcome::fail), c.count(Outcome::not_applicable),
                     c.count(Outcome::unverified));
}

}  // namespace

std::string render_audit_terminal(const audit::AuditReport& r, int exit_code, const TerminalOptions& opt) {
  std::string out = fmt::format("cmax audit: host {}, harness {}, {} checks in {:.2f} s (floors: {}{})\n", r.host,
                                audit::harness_name(r.harness), r.findings.size(), r.duration.count() / 1e6,
                                r.floors_origin, r.floors_updated.empty() ? "" : ", updated " + r.floors_updated);
  if (r.host_root != "/") out += fmt::format("host root: {}\n", r.host_root);
  for (const auto& cat : score_categories(r.findings)) {
    if (cat.total() == 0) continue;
    out += fmt::format("\n{}  ({})\n", paint(audit::category_title(cat.category), "\033[1m", opt.color), tally(cat));
    for (const auto& f : r.findings) {
      if (f.category != cat.category) continue;
      if (!opt.show_not_applicable && f.outcome == Outcome::not_applicable) continue;
      std::string observed = f.observed;
      if (observed.empty() && (f.outcome == Outcome::not_applicable || f.outcome == Outcome::unverified))
        observed = f.reason;
      if (observed.size() > 70) observed = observed.substr(0, 67) + "...";
      out += fmt::format("  {} {:<46} {}\n", paint(tag(f.outcome), color_of(f.outcome), opt.color), f.check_id,
                         observed);
      if (opt.verbosity >= 1) {
        detail(out, "check", f.title);
        detail(out, "observed", f.observed);
        detail(out, "expected", f.expected);
        detail(out, "reason", f.reason);
        if (!f.peer_result.empty())
          detail(out, "ClusterMAX", fmt::format("{} says {}; cmax differs: {}", f.peer_check, f.peer_result, f.peer_why));
      }
      if (opt.verbosity >= 2) {
        detail(out, "evidence", f.evidence_source);
        detail(out, "value", f.evidence_value);
        if (!f.cves.empty()) detail(out, "CVEs", fmt::format("{}", fmt::join(f.cves, ", ")));
        for (const auto& l : f.links) detail(out, "link", l);
        detail(out, "criterion", f.criterion);
      }
      if (opt.verbosity >= 3) {
        detail(out, "about", f.description);
        if (f.outcome == Outcome::warn || f.outcome == Outcome::fail) detail(out, "fix", f.remediation);
      }
    }
  }
  auto totals = outcome_totals(r.findings);
  out += fmt::format("\n{} checks: {} pass, {} warn, {} fail, {} not applicable, {} unverified; exit {}\n",
                     r.findings.size(), totals[0], totals[1], totals[2], totals[3], totals[4], exit_code);
  if (opt.verbosity == 0 && (totals[1] + totals[2] + totals[4]) > 0)
    out += "Use -v for expected values and reasons, -vv for evidence and CVEs, -vvv for remediation.\n";
  return out;
}

namespace {

// Which commands bring evidence for a category, for the line of a category this run did not judge.
std::string_view judged_by(audit::Category c) {
  switch (c) {
    case audit::Category::security:
    case audit::Category::lifecycle:
    case audit::Category::orchestration:
    case audit::Category::monitoring: return "cmax run / cmax audit on a node that answers";
    case audit::Category::storage: return "cmax run, cmax check --active";
    case audit::Category::networking: return "cmax run, cmax nccl sweep";
    case audit::Category::reliability: return "cmax check, cmax drill run";
    case audit::Category::pricing: return "cmax endpoint bench";
    case audit::Category::partnerships: return "no machine check: the provider's attestations";
    case audit::Category::availability: return "cmax run on a cluster, cmax sla";
  }
  return "";
}

}  // namespace

std::string render_scorecard_terminal(const audit::AuditReport& r, const TerminalOptions& opt) {
  std::string out = "\nScorecard (score = (pass + 0.5 x warn) / (pass + warn + fail); docs/scorecard.md)\n";
  for (const auto& cat : score_categories(r.findings)) {
    std::string score = cat.score ? fmt::format("{:5.1f}%", *cat.score * 100) : std::string("   --  ");
    std::string line = cat.total() == 0
                           ? fmt::format("not evaluated: nothing in this run judged it ({})", judged_by(cat.category))
                           : tally(cat);
    std::string_view color = !cat.score ? "\033[2m" : *cat.score >= 0.9 ? "\033[32m" : *cat.score >= 0.6 ? "\033[33m" : "\033[31m";
    out += fmt::format("  {:<14} {}  {}\n", audit::category_title(cat.category), paint(score, color, opt.color), line);
  }
  return out;
}

}  // namespace cmax::report
