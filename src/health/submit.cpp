#include "health/submit.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/json_fields.h"
#include "core/process.h"
#include "core/strings.h"
#include "core/text_file.h"
#include "sched/slurm_reservation.h"

namespace cmax::health {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> lines(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    if (!line.empty()) out.emplace_back(line);
  }
  return out;
}

std::string join(std::span<const std::string> words, std::string_view sep) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : std::string(sep)) + w;
  return out;
}

std::vector<std::string> slurm_env(const SubmitOptions& o) {
  std::vector<std::string> env = {"SLURM_TIME_FORMAT=standard"};
  if (!o.slurm_conf.empty()) env.push_back("SLURM_CONF=" + o.slurm_conf);
  return env;
}

// Runs a Slurm client; its stdout, or an error that says what to check.
Result<std::string> run_slurm(const SubmitOptions& o, std::vector<std::string> argv) {
  const std::string what = core::describe_argv(argv);
  auto r = core::run_process({std::move(argv), o.slurm_timeout, 1u << 20, slurm_env(o)});
  if (!r) return fail("{}: {}; is Slurm's client installed on this node?", what, r.error().message);
  if (r->timed_out)
    return fail("{}: no answer in {} ms; is slurmctld up (`scontrol ping`)?", what,
                o.slurm_timeout.count());
  if (r->exit_code != 0) {
    std::string err = r->err;
    while (!err.empty() && err.back() == '\n') err.pop_back();
    return fail("{}: exit {}: {}", what, r->exit_code, err.empty() ? "(no message)" : err);
  }
  return r->out;
}

std::string current_user() {
  if (const passwd* pw = ::getpwuid(::geteuid()); pw && pw->pw_name) return pw->pw_name;
  return std::to_string(::geteuid());
}

std::string utc_stamp() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

}  // namespace

std::string shell_quote(std::string_view word) {
  auto safe = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("/._-=,:+@%").find(c) != std::string_view::npos;
  };
  if (!word.empty() && std::all_of(word.begin(), word.end(), safe)) return std::string(word);
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

std::vector<std::string> parse_idle_nodes(std::string_view sinfo_out) {
  std::vector<std::string> out;
  for (const auto& line : lines(sinfo_out)) {
    auto space = line.find_first_of(" \t");
    if (space == std::string::npos) continue;
    std::string name = line.substr(0, space);
    std::string_view state = std::string_view(line).substr(space);
    while (!state.empty() && (state.front() == ' ' || state.front() == '\t')) state.remove_prefix(1);
    // Exactly "idle", or "reserved" (idle inside an active reservation: a job inside it gets it,
    // one outside never does, so the free scope drops it with the reservation's other nodes):
    // "idle*" is unreachable, "idle~" powered off, "idle#" powering up, "drained" and
    // "idle+drain" are out of service.
    if (state != "idle" && state != "reserved") continue;
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(std::move(name));
  }
  return out;
}

std::vector<std::string> parse_job_ids(std::string_view squeue_out) { return lines(squeue_out); }

std::string describe_not_idle(std::string_view sinfo_out, std::size_t max) {
  std::vector<std::string> busy;
  std::set<std::string> seen;
  for (const auto& line : lines(sinfo_out)) {
    auto space = line.find_first_of(" \t");
    if (space == std::string::npos) continue;
    std::string name = line.substr(0, space);
    std::string state(core::trim(std::string_view(line).substr(space)));
    if (state == "idle" || state == "reserved" || state.empty() || !seen.insert(name).second) continue;
    busy.push_back(name + " " + state);
  }
  if (busy.empty()) return "";
  std::string out;
  for (std::size_t i = 0; i < busy.size() && i < max; ++i) out += (i ? ", " : "") + busy[i];
  if (busy.size() > max) out += fmt::format(" and {} more", busy.size() - max);
  return out;
}

std::string describe_completing(std::string_view squeue_out) {
  std::vector<std::string> jobs;
  for (const auto& line : lines(squeue_out)) {
    auto a = line.find('|');
    auto b = a == std::string::npos ? std::string::npos : line.find('|', a + 1);
    if (b == std::string::npos) continue;
    jobs.push_back(fmt::format("job {} ({}) on {}", line.substr(0, a), line.substr(a + 1, b - a - 1), line.substr(b + 1)));
  }
  if (jobs.empty()) return "";
  return fmt::format("still COMPLETING: {}; Slurm holds a job's nodes until every one of its nodes' slurmd answers, so "
                     "a node whose slurmd is down keeps the healthy ones busy too (`scontrol show node`; "
                     "`scontrol update nodename=NODE state=down reason=...` on the dead node releases them)",
                     join(jobs, ", "));
}

std::vector<std::string> sinfo_argv(std::string_view partition) {
  std::vector<std::string> argv = {"sinfo", "-h", "-N", "-o", "%N %T"};
  if (!partition.empty()) argv.push_back("--partition=" + std::string(partition));
  return argv;
}

std::vector<std::string> squeue_argv(std::string_view user) {
  return {"squeue", "-h",       "--user=" + std::string(user), "--name=" + std::string(kSubmitJobName),
          "--states=PENDING,RUNNING", "-o", "%i"};
}

Result<SubmitPlan> build_submit(const SubmitOptions& o, std::span<const std::string> nodes,
                                std::string_view script_path) {
  if (nodes.empty()) return fail("build the check job: no nodes to run on");
  for (const auto& n : nodes)
    if (n.empty() || n.find_first_of(", \t\n'\"\\") != std::string::npos)
      return fail("build the check job: node name \"{}\" is not a plain Slurm node name", n);
  if (o.cmax_bin.empty() || o.cmax_bin.front() != '/')
    return fail("build the check job: the cmax path \"{}\" must be absolute: every node runs "
                "that file", o.cmax_bin);
  if (o.output_dir.empty() || o.output_dir.front() != '/')
    return fail("build the check job: the output directory \"{}\" must be absolute",
                o.output_dir);
  if (script_path.empty() || script_path.front() != '/')
    return fail("build the check job: the script path \"{}\" must be absolute", script_path);
  if (o.time_limit.count() <= 0) return fail("build the check job: --time must be positive");
  using Named = std::pair<const char*, const std::string*>;
  for (const auto& [flag, value] :
       {Named{"--partition", &o.partition}, Named{"--qos", &o.qos}, Named{"--reservation", &o.reservation}})
    if (value->find_first_of(" \t\n") != std::string::npos)
      return fail("build the check job: {} \"{}\" has blanks", flag, *value);

  std::string dir = fs::path(o.output_dir).lexically_normal().string();
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  // %N is the node's host name and %t the task, one per node: unique also where several slurmd
  // share a host (NodeHostname), where %N alone would make the nodes overwrite each other.
  const std::string per_node = dir + "/cmax-check-%N-%j-%t";
  SubmitPlan p;
  p.script_path = std::string(script_path);
  p.sbatch_argv = {"sbatch",
                   "--parsable",
                   "--job-name=" + std::string(kSubmitJobName),
                   fmt::format("--nice={}", o.nice),
                   fmt::format("--nodes={}", nodes.size()),
                   "--ntasks-per-node=1",
                   "--nodelist=" + join(nodes, ","),
                   fmt::format("--time={}", o.time_limit.count()),
                   // The measurements need the node to themselves; a preempted check is not rerun.
                   "--exclusive",
                   "--no-requeue"};
  if (!o.qos.empty()) p.sbatch_argv.push_back("--qos=" + o.qos);
  if (!o.reservation.empty()) p.sbatch_argv.push_back("--reservation=" + o.reservation);
  if (!o.partition.empty()) p.sbatch_argv.push_back("--partition=" + o.partition);
  // The batch step's own log: not %N, which is the first node's name and would be that node's
  // result file.
  p.sbatch_argv.push_back("--output=" + dir + "/cmax-check-batch-%j.log");
  p.sbatch_argv.push_back(p.script_path);

  std::vector<std::string> srun = {"srun", "--ntasks-per-node=1", "--output=" + per_node + ".out",
                                   "--error=" + per_node + ".err", o.cmax_bin, "check", "--active",
                                   "--json"};
  srun.insert(srun.end(), o.check_args.begin(), o.check_args.end());
  std::string command = "exec";
  for (const auto& w : srun) command += " " + shell_quote(w);
  p.script = fmt::format(
      "#!/bin/sh\n"
      "# Written by `cmax check --submit`: cmax's active health checks on every node of this job,\n"
      "# one task per node. Each node's result: {}/cmax-check-<host>-<job id>-<task>.out\n"
      "# (schema cmax.check.active/1), its log next to it (.err). Every word below is quoted;\n"
      "# nothing is expanded by the shell.\n"
      "set -u\n"
      "{}\n",
      dir, command);
  return p;
}

std::chrono::minutes job_time_limit(std::size_t checks, std::chrono::milliseconds per_check,
                                    std::chrono::milliseconds gpu_timeout) {
  auto total = per_check * static_cast<long>(checks) + gpu_timeout + std::chrono::seconds(120);
  auto minutes = std::chrono::ceil<std::chrono::minutes>(total);
  return std::max(minutes, std::chrono::minutes(5));
}

Result<SubmitOutcome> submit_active(const SubmitOptions& o) {
  SubmitOutcome out;
  auto idle = run_slurm(o, sinfo_argv(o.partition));
  if (!idle) return Unexpected<Error>{idle.error()};
  out.nodes = parse_idle_nodes(*idle);
  if (!o.reservation.empty()) {
    // Inside a reservation: its idle nodes, and only while it is active (a job in an inactive one
    // waits for its start).
    auto res = run_slurm(o, {"scontrol", "-o", "show", "reservation", o.reservation});
    if (!res) return Unexpected<Error>{res.error()};
    auto r = sched::parse_scontrol_reservation(*res);
    if (!r) return fail("read reservation {}: {}; `scontrol show reservation` lists the names", o.reservation, r.error().message);
    if (r->state != "ACTIVE")
      return fail("reservation {} is {}: a job inside it would wait for its start; name an active one", o.reservation,
                  r->state.empty() ? "not active" : r->state);
    std::erase_if(out.nodes, [&](const std::string& n) { return !r->contains(n); });
  } else if (auto res = run_slurm(o, {"scontrol", "-o", "show", "reservation"})) {
    // sinfo calls a node of an active reservation idle; a job outside the reservation waits for it
    // for ever (ReqNodeNotAvail). Those nodes are not free for a low-priority job: left out.
    if (auto list = sched::parse_scontrol_reservations(*res)) out.held_by_reservations = sched::drop_reserved_nodes(out.nodes, *list);
  }
  if (o.max_nodes > 0 && out.nodes.size() > o.max_nodes) out.nodes.resize(o.max_nodes);
  if (out.nodes.empty()) {
    out.note = !o.reservation.empty() ? fmt::format("no idle node in reservation {}: nothing submitted there", o.reservation)
               : o.partition.empty()  ? "no idle node: nothing submitted"
                                      : fmt::format("no idle node in partition {}: nothing submitted", o.partition);
    if (out.held_by_reservations > 0) out.note += " (idle nodes in active reservations are left out)";
    // Why none is idle: each busy node's state, and a job stuck completing that holds nodes.
    if (auto busy = describe_not_idle(*idle); !busy.empty()) out.note += "; not idle: " + busy;
    if (auto cg = run_slurm(o, {"squeue", "-h", "-t", "COMPLETING", "-o", "%i|%j|%N"}))
      if (auto why = describe_completing(*cg); !why.empty()) out.note += "; " + why;
    return out;
  }
  if (!o.force) {
    auto jobs = run_slurm(o, squeue_argv(current_user()));
    if (!jobs) return Unexpected<Error>{jobs.error()};
    out.existing = parse_job_ids(*jobs);
    if (!out.existing.empty()) {
      out.note = fmt::format("job {} ({}) is already pending or running for {}: nothing submitted; "
                             "wait for it, scancel it, or pass --force",
                             join(out.existing, ", "), kSubmitJobName, current_user());
      return out;
    }
  }
  const std::string script_path =
      (fs::path(o.output_dir) / fmt::format("cmax-check-{}.sbatch", utc_stamp())).string();
  auto plan = build_submit(o, out.nodes, script_path);
  if (!plan) return Unexpected<Error>{plan.error()};
  out.plan = std::move(*plan);
  if (o.dry_run) {
    out.note = "dry run: nothing written, nothing submitted";
    return out;
  }
  std::error_code ec;
  fs::create_directories(o.output_dir, ec);
  if (ec)
    return fail("create {}: {}; give an --output-dir on a filesystem every node can write",
                o.output_dir, ec.message());
  {
    std::ofstream f(out.plan.script_path, std::ios::binary | std::ios::trunc);
    f << out.plan.script;
    f.close();
    if (!f)
      return fail("write {}: {}; give an --output-dir this user can write", out.plan.script_path,
                  std::strerror(errno));
  }
  auto id = run_slurm(o, out.plan.sbatch_argv);
  if (!id) return Unexpected<Error>{id.error()};
  auto ids = lines(*id);
  if (ids.empty()) return fail("sbatch printed no job id; check `squeue --name={}`", kSubmitJobName);
  // --parsable prints "id" or "id;cluster".
  out.job_id = ids.front().substr(0, ids.front().find(';'));
  out.submitted = true;
  return out;
}

}  // namespace cmax::health

namespace cmax::health {

namespace {
// The merged document; `list_jobs` adds the `jobs` array (several jobs' merge), which the one-job
// document has never carried.
MergedResults merge_jobs(const std::vector<JobResults>& jobs, bool list_jobs) {
  using ojson = nlohmann::ordered_json;
  std::string ids, ends;
  ojson job_list = ojson::array();
  for (const auto& j : jobs) {
    ids += (ids.empty() ? "" : ",") + j.job_id;
    ends += (ends.empty() ? "" : ",") + j.job_end;
    job_list.push_back({{"job", j.job_id}, {"reservation", j.reservation}, {"nodes", j.nodes}, {"job_end", j.job_end}});
  }
  ojson doc{{"schema", "cmax.check.active/1"}, {"job", ids}, {"job_end", ends}};
  ojson node_list = ojson::array(), results = ojson::array();
  bool healthy = !jobs.empty();
  std::map<std::string, std::size_t> counts;
  for (const auto& job : jobs) {
    std::set<std::string> reported;
    for (const auto& f : job.files) {
      auto j = ojson::parse(f.text, nullptr, false);
      if (!f.error.empty() || j.is_discarded() || !j.is_object() ||
          core::string_field(j, "schema").rfind("cmax.check.active/", 0) != 0 || !j.contains("results") ||
          !j["results"].is_array()) {
        node_list.push_back({{"file", f.file},
                             {"error", f.error.empty() ? "not a cmax.check.active/1 document (see the .err beside it)"
                                                       : f.error}});
        continue;
      }
      const std::string node = core::string_field(j, "node");
      reported.insert(node);
      const auto h = j.find("healthy");  // a node's file is input: "healthy": "yes" is not healthy
      const bool node_healthy = h != j.end() && h->is_boolean() && h->get<bool>();
      healthy = healthy && node_healthy;
      node_list.push_back({{"node", node}, {"healthy", node_healthy}, {"file", f.file},
                           {"counts", j.value("counts", ojson::object())}});
      for (auto r : j["results"]) {
        if (!r.is_object()) continue;
        const std::string target = core::string_field(r, "target");
        r["target"] = target.empty() ? node : node + ":" + target;
        ++counts[core::string_field(r, "outcome", "unverified")];
        results.push_back(r);
      }
    }
    for (const auto& n : job.nodes) {
      if (reported.count(n)) continue;
      healthy = false;
      ++counts["unverified"];
      results.push_back({{"id", "report"},
                         {"group", "job"},
                         {"target", n},
                         {"category", "reliability"},
                         {"outcome", "unverified"},
                         {"title", "the node's active checks reported"},
                         {"summary", "no result"},
                         {"reason", fmt::format("job {} ended ({}) with no readable result from {}: see "
                                                "cmax-check-{}-{}-*.err and the batch log",
                                                job.job_id, job.job_end, n, n, job.job_id)}});
    }
  }
  doc["healthy"] = healthy;
  doc["nodes"] = std::move(node_list);
  ojson c = ojson::object();
  for (const auto& [k, v] : counts) c[k] = v;
  doc["counts"] = std::move(c);
  doc["results"] = std::move(results);
  if (list_jobs) doc["jobs"] = std::move(job_list);
  return {doc.dump(2) + "\n", healthy};
}
}  // namespace

MergedResults merge_active_results(std::string_view job_id, const std::vector<std::string>& nodes,
                                   const std::vector<NodeResultFile>& files, std::string_view job_end) {
  return merge_jobs({{std::string(job_id), "", nodes, files, std::string(job_end)}}, false);
}

MergedResults merge_active_jobs(const std::vector<JobResults>& jobs) { return merge_jobs(jobs, true); }

Result<std::string> wait_for_job(const SubmitOptions& o, std::string_view job_id, std::chrono::seconds timeout,
                                 const std::atomic<bool>* stop, std::chrono::milliseconds poll) {
  // A slurmctld busy launching a job on hundreds of nodes may not answer one squeue in time (seen
  // at 256 nodes on two cores): that is asked again at the next poll; only kMaxSilent silences in
  // a row, or the wait's own deadline, end the wait.
  constexpr int kMaxSilent = 12;
  const auto until = std::chrono::steady_clock::now() + timeout;
  std::string state = "PENDING";
  int silent = 0;
  for (;;) {
    auto r = core::run_process({{"squeue", "-h", "-j", std::string(job_id), "-o", "%T"}, o.slurm_timeout, 1u << 16,
                                slurm_env(o)});
    if (!r) return fail("squeue -j {}: {}", job_id, r.error().message);
    std::string out = r->out;
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    if (r->timed_out) {  // asked again after the poll interval
      if (++silent >= kMaxSilent || std::chrono::steady_clock::now() >= until)
        return fail("squeue -j {}: no answer in {} ms, {} times in a row; is slurmctld up?", job_id,
                    o.slurm_timeout.count(), silent);
    } else if (r->exit_code != 0 || out.empty()) {
      // A job squeue no longer lists (empty, or "Invalid job id" once it is purged) has ended.
      return state == "PENDING" || state == "RUNNING" ? std::string("COMPLETED") : state;
    } else {
      silent = 0;
      state = out;
    }
    // squeue -j still lists a job that ended, for MinJobAge, in its final state.
    static constexpr std::string_view kEnded[] = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL",
                                                  "PREEMPTED", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"};
    for (auto e : kEnded)
      if (state.rfind(e, 0) == 0) return state;
    const bool stopped = stop && stop->load();
    if (stopped || std::chrono::steady_clock::now() >= until) {
      auto c = core::run_process({{"scancel", std::string(job_id)}, o.slurm_timeout, 1u << 16, slurm_env(o)});
      (void)c;
      return stopped ? fmt::format("{} when cmax was interrupted and cancelled it", state)
                     : fmt::format("{} when cmax stopped waiting after {} s and cancelled it", state, timeout.count());
    }
    for (auto slept = std::chrono::milliseconds(0); slept < poll && !(stop && stop->load());
         slept += std::chrono::milliseconds(50))
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

Result<std::vector<std::string>> queued_check_jobs(const SubmitOptions& o) {
  auto out = run_slurm(o, {"squeue", "-h", "--user=" + current_user(), "--name=" + std::string(kSubmitJobName), "-o", "%i"});
  if (!out) return Unexpected<Error>{out.error()};
  return parse_job_ids(*out);
}

std::vector<NodeResultFile> read_node_results(const std::string& output_dir, std::string_view job_id) {
  std::vector<NodeResultFile> out;
  std::error_code ec;
  const std::string middle = fmt::format("-{}-", job_id);
  for (const auto& e : std::filesystem::directory_iterator(output_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("cmax-check-", 0) != 0 || name.find(middle) == std::string::npos || e.path().extension() != ".out")
      continue;
    NodeResultFile f;
    f.file = e.path().string();
    auto text = core::read_text_file(f.file, 8u << 20);
    if (text) f.text = std::move(*text);
    else f.error = text.error().message;
    out.push_back(std::move(f));
  }
  std::sort(out.begin(), out.end(), [](const NodeResultFile& a, const NodeResultFile& b) { return a.file < b.file; });
  return out;
}

}  // namespace cmax::health
