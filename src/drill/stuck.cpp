#include "drill/stuck.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/strings.h"

namespace cmax::drill {
namespace {

std::string none_if_null(std::string_view v) {
  const auto t = core::trim(v);
  return t == "(null)" || t == "none" ? std::string() : std::string(t);
}

std::string_view first_word(std::string_view s) {
  s = core::trim(s);
  return s.substr(0, s.find_first_of(" \t"));
}

}  // namespace

std::map<std::string, std::string, std::less<>> parse_scontrol_config(std::string_view text) {
  std::map<std::string, std::string, std::less<>> out;
  for (auto line : core::split_lines(text)) {
    const auto eq = line.find(" = ");
    if (eq == std::string_view::npos) continue;
    const auto key = core::trim(line.substr(0, eq));
    if (key.empty() || key.find(' ') != std::string_view::npos) continue;
    out.emplace(std::string(key), std::string(core::trim(line.substr(eq + 3))));
  }
  return out;
}

RemediationSetup remediation_setup(const std::map<std::string, std::string, std::less<>>& config) {
  RemediationSetup s;
  s.config_read = !config.empty();
  auto at = [&](std::string_view k) -> std::string {
    auto it = config.find(k);
    return it == config.end() ? std::string() : it->second;
  };
  s.health_check_program = none_if_null(at("HealthCheckProgram"));
  s.health_check_node_state = std::string(core::trim(at("HealthCheckNodeState")));
  // "300 sec"
  if (auto v = core::parse_int(first_word(at("HealthCheckInterval")))) s.health_check_interval_s = *v;
  s.return_to_service = std::string(core::trim(at("ReturnToService")));
  s.reboot_program = none_if_null(at("RebootProgram"));
  return s;
}

std::vector<std::string> health_check_log_lines(std::string_view slurmd_log, std::size_t max) {
  std::vector<std::string> out;
  for (auto line : core::split_lines(slurmd_log)) {
    if (line.find("health_check") == std::string_view::npos) continue;
    out.push_back(core::one_line(core::trim(line), 300));
  }
  if (out.size() > max) out.erase(out.begin(), out.end() - static_cast<std::ptrdiff_t>(max));
  return out;
}

StuckDiagnosis diagnose_stuck(const StuckEvidence& e) {
  StuckDiagnosis d;
  d.stage = e.stage;
  const auto& n = e.node;
  const auto& s = e.setup;
  d.evidence.push_back(fmt::format("{} is {}", n.name, n.state.empty() ? std::string("of unknown state") : n.state));
  if (!n.reason.empty()) {
    std::string who = n.reason_user.empty() ? std::string() : fmt::format(" by {}", n.reason_user);
    std::string when = n.reason_time.empty() ? std::string() : fmt::format(" at {}", n.reason_time);
    d.evidence.push_back(fmt::format("reason \"{}\" set{}{}", n.reason, who, when));
  } else {
    d.evidence.push_back("no reason set");
  }
  for (const auto& r : e.reservations) d.evidence.push_back(fmt::format("held by reservation {}", r));

  const std::string program = s.health_check_program;
  const std::string base = core::to_lower(program.substr(program.rfind('/') + 1));
  const bool nhc = !program.empty() && base.starts_with("nhc");
  const auto states = audit::parse_health_check_states(s.health_check_node_state);
  const bool periodic = s.health_check_interval_s > 0 && !states.start_only && !states.reboot_only;
  const bool runs_on_drained = periodic && states.checks_drained_idle();
  if (!s.config_read) {
    d.evidence.push_back("scontrol show config did not answer: the health check's setup is unknown");
  } else if (program.empty()) {
    d.evidence.push_back("no HealthCheckProgram: nothing in Slurm checks the node or returns it");
  } else {
    d.evidence.push_back(fmt::format("HealthCheckProgram={} HealthCheckNodeState={} HealthCheckInterval={} s "
                                     "ReturnToService={}",
                                     program, s.health_check_node_state.empty() ? "?" : s.health_check_node_state,
                                     s.health_check_interval_s, s.return_to_service.empty() ? "?" : s.return_to_service));
    if (s.program) {
      const auto& a = *s.program;
      std::string what = a.drains ? fmt::format("drains the node (line {})", a.drain_line) : "never drains the node";
      what += a.resumes ? fmt::format(", resumes it (line {})", a.resume_line) : ", never resumes it";
      if (a.skips_drained) what += fmt::format(", exits first on a drained node (line {})", a.skip_line);
      d.evidence.push_back(fmt::format("{} {}", program, what));
    } else if (!s.program_note.empty()) {
      d.evidence.push_back(fmt::format("{}: {}", program, s.program_note));
    }
  }
  for (const auto& l : e.health_check_log) d.evidence.push_back(fmt::format("slurmd: {}", l));

  const std::string resume_cmd = fmt::format("scontrol update NodeName={} State=RESUME", n.name);
  const std::string why_not_run =
      !periodic ? std::string("the health check never runs periodically (HealthCheckInterval=0, START_ONLY or "
                              "REBOOT_ONLY)")
                : fmt::format("HealthCheckNodeState={} never runs it on a drained idle node (only IDLE or ANY do)",
                              s.health_check_node_state);

  if (e.stage == "drained") {
    if (n.draining())
      d.next = "the DRAIN flag is set but jobs still run on the node: it is drained once they end or are requeued";
    else if (!n.drain_flag() && !n.down())
      d.next = "nothing set DRAIN or DOWN: the fault was seen (or not) but no detector took the node out of service";
    return d;
  }
  if (e.stage == "replaced") {
    if (e.reservation.empty()) return d;
    const std::string before = e.spares_before.empty() ? std::string("none")
                                                       : fmt::format("{}", fmt::join(e.spares_before, ", "));
    d.evidence.push_back(fmt::format("idle nodes outside every reservation before the drill: {}", before));
    if (e.spares_now)
      d.evidence.push_back(fmt::format("idle nodes outside every reservation now: {}",
                                       e.spares_now->empty() ? std::string("none") : fmt::format("{}", fmt::join(*e.spares_now, ", "))));
    if (!e.reservation_replaces)
      d.next = fmt::format("reservation {} has no Flags=REPLACE_DOWN: Slurm never swaps a spare in for a drained member",
                           e.reservation);
    else if (e.spares_now && e.spares_now->empty())
      d.next = fmt::format("no idle node was left outside the reservations to replace {} in reservation {} (spares "
                           "before the drill: {}; {}): add spares or return the drained nodes",
                           n.name, e.reservation, e.spares_before.size(), before);
    else if (e.spares_now)
      d.next = fmt::format("idle nodes were there ({}) but Slurm did not swap one in for {}: check that they are in the "
                           "reservation's partition and not reserved elsewhere",
                           fmt::join(*e.spares_now, ", "), n.name);
    return d;
  }
  if (e.stage != "returned") return d;

  if (n.drain_flag() && !n.down() && s.config_read && !program.empty()) {
    if (nhc && first_word(n.reason) != "NHC:") {
      d.loop = fmt::format("NHC is the health check, and it resumes only nodes whose reason starts with \"NHC:\" "
                           "(node-mark-online); {} was drained for another reason (\"{}\"{}), so NHC will never return "
                           "it, however healthy it is",
                           n.name, n.reason, n.reason_user.empty() ? "" : " by " + n.reason_user);
      d.next = fmt::format("the one who drained it resumes it ({}), or the reason is rewritten to start with \"NHC:\"",
                           resume_cmd);
    } else if (nhc && !runs_on_drained) {
      d.loop = fmt::format("NHC drained {} and is the only thing that resumes it, but {}: the node needs the check "
                           "to pass to come back, and the check needs the node back to run",
                           n.name, why_not_run);
    } else if (!nhc && s.program && s.program->resumes && s.program->skips_drained) {
      d.loop = fmt::format("{} is the only thing that resumes {} (line {}), but it exits first when its node is "
                           "drained (line {}): it needs the node healthy before it can run, and must run to make it "
                           "healthy",
                           program, n.name, s.program->resume_line, s.program->skip_line);
    } else if (!nhc && s.program && s.program->resumes && !runs_on_drained) {
      d.loop = fmt::format("{} is the only thing that resumes {} (line {}), but {}: the node needs the check to "
                           "pass to come back, and the check needs the node back to run",
                           program, n.name, s.program->resume_line, why_not_run);
    } else if (s.program && s.program->drains && !s.program->resumes) {
      d.next = fmt::format("{} drains nodes but never resumes one: an operator or another remediation must ({})",
                           program, resume_cmd);
    }
    if (!d.loop.empty() && d.next.empty())
      d.next = fmt::format("an operator resumes it ({}), or slurmd restarts on the node (slurmd runs the health "
                           "check once when it starts, whatever the node's state)",
                           resume_cmd);
  }
  if (d.loop.empty() && n.down() && s.config_read && s.return_to_service != "2" &&
      (core::contains_icase(n.reason, "reboot timed out") || core::contains_icase(n.reason, "unexpectedly rebooted") ||
       core::contains_icase(n.reason, "not responding")))
    d.next = fmt::format("{} is DOWN (\"{}\"), and ReturnToService={} does not return it when slurmd registers again "
                         "(only ReturnToService=2 returns a node DOWN for that reason); {}",
                         n.name, n.reason, s.return_to_service.empty() ? "?" : s.return_to_service, resume_cmd);
  if (d.next.empty())
    d.next = n.drain_flag() || n.down() ? fmt::format("nothing seen here returns it on its own; {}", resume_cmd)
                                        : "the node is back, or in a state the drill does not read as in service";
  return d;
}

}  // namespace cmax::drill
