#include "support/slurm_cluster.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include "core/strings.h"
#include "core/unique_fd.h"
#include "sched/slurm_parse.h"
#include "support/munge.h"
#include "support/ports.h"

namespace cmax::test {
namespace {

constexpr std::string_view kPrograms[] = {"slurmctld", "slurmd", "scontrol", "sinfo",
                                          "munged",    "munge",  "mungekey", "runuser"};
constexpr int kAttempts = 3;
std::string conf_text(const std::filesystem::path& dir, int ctld_port,
                      const std::vector<std::string>& nodes,
                      const std::vector<std::string>& extra) {
  auto d = dir.string();
  std::string conf = fmt::format(
      "ClusterName=cmaxtest\nSlurmctldHost=localhost\nSlurmctldPort={}\nSlurmUser=root\nSlurmdUser="
      "root\n"
      "AuthType=auth/munge\nStateSaveLocation={}/state\nSlurmdSpoolDir={}/spool-%n\n"
      "SlurmctldPidFile={}/slurmctld.pid\nSlurmdPidFile={}/slurmd-%n.pid\n"
      "SlurmctldLogFile={}/log/slurmctld.log\nSlurmdLogFile={}/log/slurmd-%n.log\n"
      "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nSelectType=select/cons_tres\n"
      "SelectTypeParameters=CR_Core\nMpiDefault=none\nReturnToService=2\nSlurmdTimeout=10\n"
      "JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/"
      "none\nMailProg=/bin/true\n",
      ctld_port, d, d, d, d, d, d);
  std::string list;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    conf += fmt::format(
        "NodeName={} NodeHostname=localhost NodeAddr=127.0.0.1 Port={} CPUs=2 RealMemory=1000\n",
        nodes[i], ctld_port + 1 + static_cast<int>(i));
    list += (i ? "," : "") + nodes[i];
  }
  conf += fmt::format("PartitionName=batch Nodes={} Default=YES MaxTime=INFINITE State=UP\n", list);
  for (const auto& line : extra) conf += line + "\n";
  return conf;
}

std::string tail_of(const std::filesystem::path& path) { return tail_of_file(path.string()); }

}  // namespace

std::optional<std::string> SlurmCluster::unavailable() {
  if (::geteuid() != 0)
    return "a Slurm test cluster needs root (slurmd, and munged set up as user munge)";
  for (auto p : kPrograms)
    if (!find_system_program(p))
      return fmt::format("{} is not installed: run scripts/setup-deps --test (slurm-wlm, munge)",
                         p);
  return std::nullopt;
}

Result<std::unique_ptr<SlurmCluster>> SlurmCluster::start_trial() {
  auto c = start({.nodes = 4, .spares = 2});
  if (!c) return c;
  auto r = (*c)->scontrol({"create", "reservation", "ReservationName=train", "StartTime=now", "Duration=600",
                           "Users=root", "NodeCnt=4", "Flags=REPLACE_DOWN"});
  if (!r) return Unexpected<Error>{r.error()};
  if (r->exit_code != 0) return fail("scontrol create reservation train: {}{}", r->out, r->err);
  return c;
}

Result<std::unique_ptr<SlurmCluster>> SlurmCluster::start(SlurmClusterOptions options) {
  if (auto why = unavailable()) return fail("start Slurm cluster: {}", *why);
  if (auto m = ensure_munged(); !m) return fail("start Slurm cluster: {}", m.error().message);

  std::unique_ptr<SlurmCluster> c(new SlurmCluster);
  std::string tmpl = (std::filesystem::temp_directory_path() / "cmax-slurm-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr)
    return fail("start Slurm cluster: mkdtemp {}: {}", tmpl, std::strerror(errno));
  c->dir_ = tmpl;
  for (int i = 1; i <= options.nodes; ++i) c->nodes_.push_back(fmt::format("n{}", i));
  for (int i = 1; i <= options.spares; ++i) c->nodes_.push_back(fmt::format("spare{}", i));
  auto seed =
      options.seed != 0 ? options.seed : port_seed();
  std::mt19937_64 rng(seed);

  for (int attempt = 1;; ++attempt) {
    auto up = c->launch(options, rng());
    if (up) up = c->wait_idle(options.ready_timeout);
    if (up) return c;
    c->stop_daemons();
    if (!c->retry_ || attempt == kAttempts)
      return fail("start Slurm cluster (attempt {} of {}): {}", attempt, kAttempts,
                  up.error().message);
  }
}

Result<void> SlurmCluster::launch(const SlurmClusterOptions& options, std::uint64_t seed) {
  retry_ = false;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec))
    std::filesystem::remove_all(entry, ec);
  std::filesystem::create_directories(dir_ / "state", ec);
  std::filesystem::create_directories(dir_ / "log", ec);
  for (const auto& n : nodes_) std::filesystem::create_directories(dir_ / ("spool-" + n), ec);
  if (ec) return fail("create directories in {}: {}", dir_.string(), ec.message());

  std::mt19937_64 rng(seed);
  auto base = pick_ports(rng, 1 + static_cast<int>(nodes_.size()));
  if (!base) return Unexpected<Error>{base.error()};
  ctld_port_ = static_cast<std::uint16_t>(*base);
  for (const auto& [name, content] : options.files) {
    std::ofstream file(dir_ / name, std::ios::trunc);
    file << content;
    if (!file.flush()) return fail("write {}", (dir_ / name).string());
  }
  std::vector<std::string> extra = options.extra_conf;
  if (options.reboot) {
    // slurmd runs RebootProgram through system(): its parent is sh or slurmd itself, whose command
    // line names the node. It asks the harness (serve_reboots) and returns at once.
    std::filesystem::create_directories(dir_ / "reboot-requests", ec);
    const auto script = dir_ / "reboot.sh";
    std::ofstream out(script, std::ios::trunc);
    out << "#!/bin/sh\n"
           "pid=$PPID\n"
           "for i in 1 2 3; do\n"
           "  node=$(/usr/bin/tr '\\0' ' ' < /proc/$pid/cmdline | /bin/sed -n 's/.*slurmd -D -N \\([^ ]*\\).*/\\1/p')\n"
           "  [ -n \"$node\" ] && break\n"
           "  pid=$(/usr/bin/awk '{print $4}' /proc/$pid/stat)\n"
           "done\n"
           "[ -n \"$node\" ] || exit 1\n"
           ": > " << (dir_ / "reboot-requests").string() << "/\"$node\"\n";
    if (!out.flush()) return fail("write {}", script.string());
    out.close();
    ::chmod(script.c_str(), 0755);
    extra.push_back("RebootProgram=" + script.string());
    extra.push_back("ResumeTimeout=60");
  }
  {
    std::ofstream conf(conf_path(), std::ios::trunc);
    conf << conf_text(dir_, *base, nodes_, extra);
    if (!conf.flush()) return fail("write {}", conf_path());
  }
  {
    // srun --mpi=pmix makes /tmp/spmix_appdir_<uid>_<job>.<step>; job ids restart at 1 in every
    // test cluster, so a directory left by an earlier one would fail the step: keep them here.
    std::filesystem::create_directories(dir_ / "pmix", ec);
    std::ofstream mpi(dir_ / "mpi.conf", std::ios::trunc);
    mpi << "PMIxCliTmpDirBase=" << (dir_ / "pmix").string() << "\n";
    if (!mpi.flush()) return fail("write {}", (dir_ / "mpi.conf").string());
  }

  // -D: in the foreground, as our children, so they are ours to kill; -i: ignore saved state.
  auto ctld = Daemon::start({"slurmctld", "-D", "-i"}, env(), dir_ / "log" / "slurmctld.out");
  if (!ctld) return Unexpected<Error>{ctld.error()};
  std::lock_guard lock(daemons_mu_);
  daemons_.push_back({std::move(*ctld), dir_ / "log" / "slurmctld.log", ""});
  for (const auto& n : nodes_) {
    auto d = start_slurmd(n, false);
    if (!d) return Unexpected<Error>{d.error()};
    daemons_.push_back({std::move(*d), dir_ / "log" / ("slurmd-" + n + ".log"), n});
  }
  if (options.reboot)
    reboot_thread_ = std::jthread([this, down = options.reboot_down](std::stop_token st) { serve_reboots(st, down); });
  return ok();
}

Result<Daemon> SlurmCluster::start_slurmd(const std::string& node, bool new_boot) {
  const auto out = dir_ / "log" / ("slurmd-" + node + ".out");
  if (!new_boot) return Daemon::start({"slurmd", "-D", "-N", node}, env(), out);
  // CLOCK_BOOTTIME of the new time namespace starts near 0: slurmd's sysinfo() uptime is under a
  // second, so its BootTime is now.
  std::ifstream in("/proc/uptime");
  double up = 0;
  in >> up;
  const auto offset = static_cast<long long>(up);
  return Daemon::start({"unshare", "--time", "--boottime", std::to_string(-offset), "slurmd", "-D", "-N", node}, env(),
                       out);
}

void SlurmCluster::serve_reboots(std::stop_token stop, std::chrono::milliseconds down) {
  const auto requests = dir_ / "reboot-requests";
  while (!stop.stop_requested()) {
    std::error_code ec;
    std::vector<std::string> nodes;
    for (const auto& e : std::filesystem::directory_iterator(requests, ec)) nodes.push_back(e.path().filename().string());
    for (const auto& node : nodes) {
      std::filesystem::remove(requests / node, ec);
      {
        std::lock_guard lock(daemons_mu_);
        for (auto& owned : daemons_)
          if (owned.node == node) owned.daemon.stop();  // the node goes down
      }
      const auto until = std::chrono::steady_clock::now() + down;
      while (!stop.stop_requested() && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (stop.stop_requested()) return;
      auto d = start_slurmd(node, true);
      std::lock_guard lock(daemons_mu_);
      for (auto& owned : daemons_)
        if (owned.node == node && d) owned.daemon = std::move(*d);
      ++reboots_;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

Result<void> SlurmCluster::wait_idle(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string last = "no answer from sinfo";
  while (std::chrono::steady_clock::now() < deadline) {
    {
      std::lock_guard lock(daemons_mu_);
      for (auto& [d, log, node] : daemons_) {
        if (d.running()) continue;
        retry_ = true;  // most likely a port taken between our check and its bind
        return fail("{} ended at start ({}); {}: {}", d.name(), d.exit_status(), log.filename().string(),
                    tail_of(log));
      }
    }
    auto exe = find_system_program("sinfo");
    auto r = core::run_process(
        {{*exe, "-h", "-N", "-o", "%N %T"}, std::chrono::seconds(2), 1u << 16, env()});
    if (r && r->exit_code == 0) {
      last = std::string(core::trim(r->out));
      // A node in two partitions is listed twice: count names, not lines.
      std::set<std::string_view> idle;
      for (auto line : core::split_lines(r->out)) {
        auto sp = line.find(' ');
        if (sp == std::string_view::npos || core::trim(line.substr(sp)) != "idle") continue;
        auto name = line.substr(0, sp);
        if (std::count(nodes_.begin(), nodes_.end(), name) > 0) idle.insert(name);
      }
      if (idle.size() == nodes_.size()) return ok();
    } else if (r) {
      last = std::string(core::trim(r->err));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return fail("nodes not all idle after {} ms; sinfo: {}; slurmctld.log: {}", timeout.count(), last,
              tail_of(dir_ / "log" / "slurmctld.log"));
}

void SlurmCluster::stop_daemons() {
  reboot_thread_ = {};  // stopped and joined: no reboot restarts a slurmd after this
  std::lock_guard lock(daemons_mu_);
  daemons_.clear();
}

Result<void> SlurmCluster::stop_slurmd(std::string_view node) {
  std::lock_guard lock(daemons_mu_);
  for (auto& owned : daemons_) {
    if (owned.node != node) continue;
    owned.daemon.stop();
    return ok();
  }
  return fail("stop slurmd of {}: no such node in this cluster", node);
}

SlurmCluster::~SlurmCluster() {
  reboot_thread_ = {};
  // A job's slurmstepd is not in a daemon's process group: cancel what still runs, and give the
  // steps a moment to end, or their processes outlive the cluster.
  if (auto squeue = find_system_program("squeue"); squeue && !daemons_.empty()) {
    auto q = core::run_process({{*squeue, "-h", "-o", "%i"}, std::chrono::seconds(2), 1u << 16, env()});
    if (q && q->exit_code == 0 && !core::trim(q->out).empty()) {
      if (auto scancel = find_system_program("scancel"))
        (void)core::run_process({{*scancel, "--full", "-u", "root"}, std::chrono::seconds(2), 1u << 16, env()});
      for (int i = 0; i < 60; ++i) {
        auto again = core::run_process({{*squeue, "-h", "-o", "%i"}, std::chrono::seconds(2), 1u << 16, env()});
        if (!again || again->exit_code != 0 || core::trim(again->out).empty()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
  }
  stop_daemons();
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

Result<core::ProcessResult> SlurmCluster::scontrol(std::vector<std::string> args,
                                                   std::chrono::milliseconds timeout) const {
  auto exe = find_system_program("scontrol");
  if (!exe) return fail("run scontrol: not installed");
  args.insert(args.begin(), *exe);
  return core::run_process({std::move(args), timeout, 1u << 20, env()});
}

Result<sched::NodeState> SlurmCluster::state(std::string_view node) const {
  auto r = scontrol({"-o", "show", "node", std::string(node)});
  if (!r) return fail("state of {}: {}", node, r.error().message);
  if (r->exit_code != 0 || r->timed_out)
    return fail("state of {}: scontrol exited {}{}: {}", node, r->exit_code,
                r->timed_out ? " (timed out)" : "", core::trim(r->err));
  auto s = sched::parse_scontrol_node(r->out);
  if (!s) return fail("state of {}: {}", node, s.error().message);
  return s;
}

Result<sched::NodeState> SlurmCluster::wait_for(
    std::string_view node, const std::function<bool(const sched::NodeState&)>& done,
    std::chrono::milliseconds timeout) const {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string last;
  for (;;) {
    auto s = state(node);
    if (s && done(*s)) return s;
    last = s ? s->state : s.error().message;
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return fail("wait for {}: condition not met after {} ms; last seen: {}", node, timeout.count(),
              last);
}

}  // namespace cmax::test
