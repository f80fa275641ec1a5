#include "drill/reservation_restore.h"

#include <algorithm>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/process.h"
#include "core/strings.h"
#include "drill/watch.h"
#include "sched/slurm_parse.h"

namespace cmax::drill {
namespace {

std::set<std::string> node_set(const sched::Reservation& r) { return {r.nodes.begin(), r.nodes.end()}; }

std::string joined(const std::vector<std::string>& v) { return fmt::format("{}", fmt::join(v, ",")); }

}  // namespace

std::vector<std::vector<std::string>> restore_reservation_commands(const sched::Reservation& before,
                                                                   const sched::Reservation& now) {
  if (node_set(before) == node_set(now)) return {};
  if (!before.has_flag("REPLACE_DOWN"))
    return {{"update", "ReservationName=" + before.name, "Nodes=" + joined(before.nodes)}};
  // Delete and create again: everything the reservation was defined by, nodes by count (Slurm
  // picks them, as it did the first time).
  std::vector<std::string> create = {"create", "reservation", "ReservationName=" + before.name, "StartTime=now"};
  if (!before.end_time.empty()) create.push_back("EndTime=" + before.end_time);
  if (!before.users.empty()) create.push_back("Users=" + joined(before.users));
  if (!before.accounts.empty()) create.push_back("Accounts=" + joined(before.accounts));
  if (!before.partition.empty()) create.push_back("PartitionName=" + before.partition);
  create.push_back(fmt::format("NodeCnt={}", before.node_cnt));
  std::vector<std::string> flags;
  for (const auto& f : before.flags)
    if (f != "SPEC_NODES") flags.push_back(f);
  if (!flags.empty()) create.push_back("Flags=" + joined(flags));
  return {{"delete", "ReservationName=" + before.name}, std::move(create)};
}

nlohmann::json reservation_to_json(const sched::Reservation& r) {
  return {{"name", r.name},         {"nodes", r.nodes},         {"node_cnt", r.node_cnt},   {"flags", r.flags},
          {"state", r.state},       {"start_time", r.start_time}, {"end_time", r.end_time}, {"partition", r.partition},
          {"users", r.users},       {"accounts", r.accounts}};
}

Result<sched::Reservation> reservation_from_json(const nlohmann::json& j) {
  try {
    sched::Reservation r;
    r.name = j.at("name").get<std::string>();
    r.nodes = j.at("nodes").get<std::vector<std::string>>();
    r.node_cnt = j.at("node_cnt").get<int>();
    r.flags = j.value("flags", std::vector<std::string>{});
    r.state = j.value("state", std::string());
    r.start_time = j.value("start_time", std::string());
    r.end_time = j.value("end_time", std::string());
    r.partition = j.value("partition", std::string());
    r.users = j.value("users", std::vector<std::string>{});
    r.accounts = j.value("accounts", std::vector<std::string>{});
    if (r.name.empty() || r.node_cnt <= 0) return fail("a reservation without a name or node count");
    return r;
  } catch (const nlohmann::json::exception& e) {
    return fail("read the reservation drill.json recorded: {}", e.what());
  }
}

Result<RestoreResult> restore_reservation(const sched::SlurmOptions& options, const sched::Reservation& before) {
  auto now = read_reservation(options, before.name);
  if (!now) return fail("restore reservation {}: {}", before.name, now.error().message);
  auto commands = restore_reservation_commands(before, *now);
  if (commands.empty()) return RestoreResult{false, fmt::format("reservation {}: as before ({})", before.name, joined(before.nodes))};
  const std::string change = fmt::format("{} -> {}", joined(now->nodes), joined(before.nodes));
  if (commands.front().front() == "delete") {
    // A reservation with jobs in it cannot go: deleting it would end their claim.
    auto jobs = core::run_process({{"squeue", "-h", "-R", before.name, "-o", "%i %T"}, options.timeout, 1u << 16,
                                   options.conf_path.empty() ? std::vector<std::string>{}
                                                             : std::vector<std::string>{"SLURM_CONF=" + options.conf_path}});
    if (!jobs || jobs->timed_out || jobs->exit_code != 0)
      return fail("restore reservation {}: list its jobs (squeue -R {}): {}", before.name, before.name,
                  jobs ? core::clip(core::trim(jobs->err), 200) : jobs.error().message);
    if (!core::trim(jobs->out).empty())
      return RestoreResult{false, fmt::format("reservation {}: not restored ({} wanted): jobs run in it ({}); Slurm "
                                              "22.05 can only restore a REPLACE_DOWN reservation by deleting it, so do it "
                                              "when they end: cmax drill cleanup again",
                                              before.name, change, core::clip(core::trim(jobs->out), 120))};
  }
  // A node just resumed is NOT_RESPONDING until its slurmd registers again (well under a second
  // here), and a reservation created meanwhile passes it over: wait for the nodes to come back.
  if (!options.dry_run) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (const auto& node : before.nodes) {
      if (now->contains(node)) continue;
      for (;;) {
        auto out = sched::run_scontrol(options, {options.scontrol, "-o", "show", "node", node});
        auto st = out ? sched::parse_scontrol_node(*out) : Result<sched::NodeState>(Unexpected<Error>{out.error()});
        if (st && !st->not_responding() && !st->drain_flag() && !st->down()) break;
        if (std::chrono::steady_clock::now() >= deadline) break;  // restored without it; the summary says so
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    }
  }
  if (options.dry_run) {
    std::vector<std::string> shown;
    for (const auto& c : commands) shown.push_back("scontrol " + fmt::format("{}", fmt::join(c, " ")));
    return RestoreResult{false, fmt::format("reservation {}: would restore ({}): {}", before.name, change, fmt::join(shown, "; "))};
  }
  for (const auto& c : commands) {
    std::vector<std::string> argv = {options.scontrol};
    argv.insert(argv.end(), c.begin(), c.end());
    auto r = sched::run_scontrol(options, argv);
    if (!r) return fail("restore reservation {} ({}): scontrol {}: {}", before.name, change, c.front(), r.error().message);
  }
  auto after = read_reservation(options, before.name);
  if (!after) return fail("restore reservation {}: read it back: {}", before.name, after.error().message);
  if (node_set(*after) != node_set(before))
    return RestoreResult{true, fmt::format("reservation {}: recreated with {} (Slurm chose them; it held {} before the drill)",
                                           before.name, joined(after->nodes), joined(before.nodes))};
  return RestoreResult{true, fmt::format("reservation {}: restored ({})", before.name, change)};
}

}  // namespace cmax::drill
