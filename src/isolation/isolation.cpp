#include "isolation/isolation.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>

#include "audit/attention.h"
#include "core/strings.h"
#include "isolation/egress.h"
#include "isolation/finding.h"
#include "isolation/ipmi.h"

namespace cmax::isolation {
namespace {

using audit::Finding;
using audit::Outcome;

constexpr std::string_view kCriterion = "Security: tenant isolation (services a tenant can reach)";
constexpr std::string_view kExpected =
    "not reachable from a tenant, or refuses requests without credentials";
constexpr std::size_t kListedAddresses = 8;

std::string endpoint(Ipv4 addr, std::uint16_t port) {
  return fmt::format("{}:{}", format_ipv4(addr), port);
}

Finding base_finding(const Service &s) {
  Finding f = security_finding(service_check_id(s), std::string(s.title), kCriterion);
  f.expected = std::string(kExpected);
  if (!s.cve.empty()) f.cves.emplace_back(s.cve);
  f.description = std::string(s.description);
  f.remediation = std::string(s.remediation);
  return f;
}

// Is this result a fact about reachability (an answer), rather than a probe
// that could not run?
bool not_reachable(const Service &s, const ProbeResult &r) {
  if (r.reach == Reach::closed || r.reach == Reach::filtered || r.reach == Reach::unreachable)
    return true;
  // No route to the metadata address is itself the answer: this host cannot
  // reach it.
  return s.metadata_only && r.reach == Reach::error && r.error_number == ENETUNREACH;
}

Verdict judge_open(const Service &s, const ProbeResult &r, const ProberOptions &bounds) {
  auto ms = static_cast<double>(r.connect_time.count()) / 1000.0;
  switch (s.request) {
    case Request::connect_only:
      return {s.when_open, fmt::format("TCP port open (connected in {:.1f} ms); nothing sent", ms)};
    case Request::udp:
      return s.classify_bytes ? s.classify_bytes(r.answer)
                              : Verdict{Outcome::warn, "UDP port answered"};
    case Request::https_get:
      if (!r.tls_error.empty())
        return {Outcome::unverified, fmt::format("TCP port open; no TLS session: {}", r.tls_error)};
      break;
    case Request::http_get:
      break;
  }
  auto answer = parse_http_answer(r.answer, r.answer_closed);
  if (!answer) {
    if (r.answer.empty())
      return {Outcome::unverified,
              r.answer_timed_out ? fmt::format("TCP port open; no HTTP answer within {} ms",
                                               bounds.io_timeout.count())
                                 : std::string("TCP port open; closed without an HTTP answer")};
    return {Outcome::unverified,
            fmt::format("TCP port open; the answer is not HTTP: {}", core::one_line(r.answer, 60))};
  }
  return s.classify(*answer);
}

struct ServiceTally {
  std::map<Reach, int> reach;
  Outcome worst = Outcome::pass;
  std::vector<std::string> answered;  // "10.0.0.5 (fail)"
  std::vector<std::string> problems;  // "10.0.0.9: no route ..."
  int probes = 0;
};

std::string list_some(const std::vector<std::string> &items) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < kListedAddresses; ++i)
    out += (i ? ", " : "") + items[i];
  if (items.size() > kListedAddresses)
    out += fmt::format(" and {} more", items.size() - kListedAddresses);
  return out;
}

Finding summary_finding(const Service &s, const ServiceTally &t, bool deadline_hit) {
  Finding f = base_finding(s);
  f.outcome = t.probes == 0 ? Outcome::unverified : t.worst;
  auto count = [&](Reach r) {
    auto it = t.reach.find(r);
    return it == t.reach.end() ? 0 : it->second;
  };
  f.observed = fmt::format(
      "{} probed: {} open, {} closed, {} no answer, {} unreachable, {} could "
      "not be probed",
      t.probes == 1 ? "1 address" : fmt::format("{} addresses", t.probes), count(Reach::open),
      count(Reach::closed), count(Reach::filtered), count(Reach::unreachable),
      count(Reach::error) + count(Reach::skipped));
  f.evidence_source = fmt::format("{} on port {}", describe_request(s), s.port);
  if (!t.answered.empty()) f.evidence_value = "open: " + list_some(t.answered);
  if (f.outcome == Outcome::unverified) {
    if (!t.problems.empty())
      f.reason = fmt::format("{} of {} probes could not run, so reachability there is unknown: {}",
                             t.problems.size(), t.probes, list_some(t.problems));
    else
      f.reason =
          "an open port's answer could not be judged (see the "
          "per-address findings)";
    if (deadline_hit)
      f.reason += "; the global deadline passed (raise --deadline-s or narrow --scope)";
  } else if (f.outcome == Outcome::pass) {
    f.reason = count(Reach::open) > 0 ? "every open port refused the request without credentials"
                                      : "nothing answered on this port";
  } else {
    f.reason = "reachable from here: see the per-address findings";
  }
  return f;
}

}  // namespace

Result<Plan> make_plan(const IsolationOptions &o) {
  Plan plan;
  plan.metadata_address = o.metadata_address;
  for (const auto &text : o.scopes) {
    auto scope = parse_scope(core::trim(text));
    if (!scope) return Unexpected<Error>{scope.error()};
    plan.scopes.push_back(std::move(*scope));
  }
  auto hosts = expand_scopes(plan.scopes, o.max_hosts, o.resolver);
  if (!hosts) return Unexpected<Error>{hosts.error()};
  plan.hosts = std::move(*hosts);

  std::vector<const Service *> chosen;
  for (const auto &p : o.ports) {
    for (auto piece : core::split_any(p, ", ")) {
      const Service *s = find_service(piece);
      if (!s || s->metadata_only) {
        std::string known;
        for (const auto &k : all_services())
          if (!k.metadata_only)
            known += fmt::format("{}{} ({})", known.empty() ? "" : ", ", k.port, k.key);
        return fail(
            "read --ports {}: no such service; name ports or services "
            "from the table: {}",
            piece, known);
      }
      if (std::find(chosen.begin(), chosen.end(), s) == chosen.end()) chosen.push_back(s);
    }
  }
  for (const auto &s : all_services()) {
    if (s.metadata_only) {
      if (o.metadata)
        plan.metadata = &s;
      else
        plan.skipped.push_back(&s);
      continue;
    }
    bool take = o.ports.empty() ? s.by_default
                                : std::find(chosen.begin(), chosen.end(), &s) != chosen.end();
    (take && !plan.hosts.empty() ? plan.services : plan.skipped).push_back(&s);
  }
  if (!o.egress_canary.empty())
    if (auto ok = check_canary_url(o.egress_canary); !ok) return Unexpected<Error>{ok.error()};
  plan.egress_canary = o.egress_canary;

  // Port-major order spreads the connects of one moment over many hosts.
  for (const auto *s : plan.services)
    for (Ipv4 h : plan.hosts) {
      plan.probes.push_back({s, h});
      plan.targets.push_back({h, s->port, build_request(*s, endpoint(h, s->port)), wire_of(*s)});
    }
  if (plan.metadata) {
    plan.probes.push_back({plan.metadata, plan.metadata_address});
    plan.targets.push_back({plan.metadata_address, plan.metadata->port,
                            build_request(*plan.metadata, format_ipv4(plan.metadata_address))});
  }
  return plan;
}

std::string render_plan(const Plan &plan, const ProberOptions &b) {
  std::string out = "cmax audit isolation: plan (dry run, nothing is probed)\n\nScopes:\n";
  if (plan.scopes.empty()) out += "  (none: only the metadata address)\n";
  for (const auto &s : plan.scopes) {
    std::string what =
        s.name.empty() ? fmt::format("{}/{}", format_ipv4(s.base), s.prefix) : "host name";
    out += fmt::format("  {:<24} {}, {} address{}\n", s.text, what, scope_host_count(s),
                       scope_host_count(s) == 1 ? "" : "es");
  }
  out += fmt::format(
      "  {} unique address{} in all\n\nServices (each probed on "
      "every address):\n",
      plan.hosts.size(), plan.hosts.size() == 1 ? "" : "es");
  for (const auto *s : plan.services)
    out += fmt::format("  {:>5}/{}  {:<17} {}\n", s->port, protocol_name(*s), s->key,
                       describe_request(*s));
  if (plan.metadata)
    out += fmt::format("\nMetadata:\n  {}:{}/tcp  {}  (never a credential path)\n",
                       format_ipv4(plan.metadata_address), plan.metadata->port,
                       describe_request(*plan.metadata));
  out += plan.egress_canary.empty()
             ? "\nEgress canary: not asked (--egress-canary URL)\n"
             : fmt::format("\nEgress canary: one GET {} (no credentials, no redirects)\n",
                           plan.egress_canary);
  if (!plan.skipped.empty()) {
    out += "\nNot probed:";
    for (const auto *s : plan.skipped) out += fmt::format(" {}({})", s->key, s->port);
    out += "\n";
  }
  auto worst_s = static_cast<double>(plan.targets.size()) / std::max(1.0, b.rate_per_s) +
                 static_cast<double>((b.connect_timeout + b.io_timeout).count()) / 1000.0;
  out += fmt::format(
      "\nBounds: {} probes, at most {} in flight, {:.0f} connects/s, connect "
      "timeout {} ms, answer timeout {} ms, "
      "answers read up to {} bytes, whole run at most {} s (about {:.1f} s if "
      "every probe is slow).\n",
      plan.targets.size(), b.concurrency, b.rate_per_s, b.connect_timeout.count(),
      b.io_timeout.count(), b.max_answer_bytes,
      std::chrono::duration_cast<std::chrono::seconds>(b.deadline).count(),
      std::min(worst_s, static_cast<double>(b.deadline.count()) / 1000.0));
  return out;
}

std::vector<Finding> judge(const Plan &plan, const ProbeRun &run, const ProberOptions &bounds) {
  std::vector<Finding> per_target;
  std::map<const Service *, ServiceTally> tallies;
  for (std::size_t i = 0; i < plan.probes.size() && i < run.results.size(); ++i) {
    const auto &p = plan.probes[i];
    const auto &s = *p.service;
    const auto &r = run.results[i];
    auto &t = tallies[&s];
    ++t.probes;
    ++t.reach[r.reach];
    if (not_reachable(s, r)) continue;
    if (r.reach != Reach::open) {
      if (audit::attention_rank(Outcome::unverified) > audit::attention_rank(t.worst))
        t.worst = Outcome::unverified;
      t.problems.push_back(fmt::format("{}: {}", format_ipv4(p.addr), r.detail));
      continue;
    }
    Verdict v = judge_open(s, r, bounds);
    if (audit::attention_rank(v.outcome) > audit::attention_rank(t.worst)) t.worst = v.outcome;
    t.answered.push_back(fmt::format("{} ({})", format_ipv4(p.addr), audit::to_string(v.outcome)));
    Finding f = base_finding(s);
    f.check_id += "@" + endpoint(p.addr, s.port);
    f.outcome = v.outcome;
    f.observed = v.observed;
    switch (s.request) {
      case Request::http_get:
        f.evidence_source = fmt::format("GET http://{}{}", endpoint(p.addr, s.port), s.path);
        f.evidence_value = core::one_line(r.answer, 200);
        break;
      case Request::https_get:
        f.evidence_source = fmt::format("GET https://{}{}", endpoint(p.addr, s.port), s.path);
        f.evidence_value = core::one_line(r.answer, 200);
        if (!r.tls_peer.empty())
          f.evidence_value = fmt::format("certificate {}; {}", r.tls_peer, f.evidence_value);
        break;
      case Request::udp:
        f.evidence_source = fmt::format("UDP {}: {}", endpoint(p.addr, s.port), describe_request(s));
        f.evidence_value = hex_bytes(r.answer);
        break;
      case Request::connect_only:
        f.evidence_source = fmt::format("TCP connect {}", endpoint(p.addr, s.port));
        break;
    }
    if (v.outcome == Outcome::unverified)
      f.reason = !r.tls_error.empty()
                     ? "the port is open, but no TLS session came up, so whether it answers "
                       "without credentials is unknown"
                     : "the port is open, but its answer could not be judged";
    per_target.push_back(std::move(f));
  }

  std::vector<Finding> out;
  auto add_summary = [&](const Service *s) {
    auto it = tallies.find(s);
    out.push_back(
        summary_finding(*s, it == tallies.end() ? ServiceTally{} : it->second, run.deadline_hit));
    const std::string prefix = out.back().check_id + "@";
    for (const auto &f : per_target)
      if (f.check_id.starts_with(prefix)) out.push_back(f);
  };
  for (const auto &s : all_services()) {
    if (&s == plan.metadata ||
        std::find(plan.services.begin(), plan.services.end(), &s) != plan.services.end()) {
      add_summary(&s);
    } else {
      Finding f = base_finding(s);
      f.outcome = Outcome::not_applicable;
      f.reason = s.metadata_only      ? "not probed: --no-metadata"
                 : plan.hosts.empty() ? "not probed: no --scope named"
                                      : "not probed: not in --ports";
      out.push_back(std::move(f));
    }
  }
  return out;
}

std::vector<std::string> run_notes(const Plan &plan, const ProbeRun &run) {
  std::vector<std::string> notes;
  std::map<std::string, int> errors;
  for (std::size_t i = 0; i < plan.probes.size() && i < run.results.size(); ++i) {
    const auto &r = run.results[i];
    if (r.reach == Reach::error && !not_reachable(*plan.probes[i].service, r)) ++errors[r.detail];
  }
  for (const auto &[detail, n] : errors)
    notes.push_back(
        fmt::format("{} probe{} could not run: {}; their findings "
                    "are unverified (check the route "
                    "to the scope, or run where it is reachable)",
                    n, n == 1 ? "" : "s", detail));
  if (run.deadline_hit)
    notes.push_back(
        "the global deadline passed before every probe ran; the "
        "rest are unverified (raise "
        "--deadline-s or narrow --scope)");
  return notes;
}

Result<audit::AuditReport> run_isolation(const IsolationOptions &o,
                                         std::vector<std::string> *notes) {
  core::SystemClock system_clock;
  const core::Clock &clock = o.clock ? *o.clock : system_clock;
  auto plan = make_plan(o);
  if (!plan) return Unexpected<Error>{plan.error()};
  audit::AuditReport report;
  report.started_at = core::format_utc(clock.now());
  report.host_root = "/";
  report.harness = audit::kStandalone;
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) == 0) report.host = name;
  auto run = probe_all(plan->targets, o.prober);
  if (!run) return Unexpected<Error>{run.error()};
  report.findings = judge(*plan, *run, o.prober);
  report.finished_at = core::format_utc(clock.now());
  report.duration = run->wall;
  std::string scopes;
  for (const auto &s : plan->scopes) scopes += (scopes.empty() ? "" : " ") + s.text;
  const std::string source = "cmax audit isolation";
  report.facts.present("isolation.scopes", scopes, source);
  report.facts.present("isolation.hosts", std::to_string(plan->hosts.size()), source);
  report.facts.present("isolation.probes", std::to_string(plan->targets.size()), source);
  report.facts.present("isolation.wall_ms",
                       fmt::format("{:.1f}", static_cast<double>(run->wall.count()) / 1000.0),
                       source);
  report.facts.present("isolation.deadline_hit", run->deadline_hit ? "true" : "false", source);
  if (notes) *notes = run_notes(*plan, *run);
  if (o.host_checks) {
    const core::HostRoot live("/");
    auto facts = collect_host_isolation(o.host ? *o.host : live, o.env ? *o.env : current_env());
    for (auto &f : judge_host_isolation(facts)) report.findings.push_back(std::move(f));
  } else {
    for (auto &f : judge_host_isolation(HostIsolationFacts{})) {
      f.outcome = Outcome::not_applicable;
      f.reason = "not asked: --no-host";
      f.observed.clear();
      f.evidence_value.clear();
      report.findings.push_back(std::move(f));
    }
  }
  report.findings.push_back(judge_egress(
      plan->egress_canary, plan->egress_canary.empty() ? EgressResult{}
                                                       : probe_egress(plan->egress_canary, o.egress_timeout)));
  if (o.kube) {
    sched::KubeClient client(o.kube->api);
    auto kube = run_kube_checks(*o.kube, client);
    for (auto &f : kube.findings) report.findings.push_back(std::move(f));
    for (auto &[key, value] : kube.facts) report.facts.present(key, value, source);
    if (notes)
      for (auto &n : kube.notes) notes->push_back(std::move(n));
  } else {
    for (auto &f : kube_not_applicable(o.kube_off_reason)) report.findings.push_back(std::move(f));
  }
  report.finished_at = core::format_utc(clock.now());
  return report;
}

}  // namespace cmax::isolation
