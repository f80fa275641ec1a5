// cmax run: the whole rating by a plan. Gathers the facts (harness, nodes, what is installed, what
// the user named), decides which stages run (src/campaign/decide.h), runs each as a child `cmax`
// command into the one run directory with its budget, records every stage in campaign.json after
// it ends, and ends with the scorecard and report.html. Ctrl-C stops the running stage (SIGINT to
// its process group, so it keeps what it measured) and the run; --resume DIR continues it.

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "apps/cmax/audit_flags.h"
#include "apps/cmax/campaign_cmd.h"
#include "apps/cmax/report_page.h"
#include "campaign/budget_text.h"
#include "campaign/decide.h"
#include "campaign/execute.h"
#include "campaign/plan.h"
#include "campaign/resume.h"
#include "campaign/run_lock.h"
#include "campaign/slurm_facts.h"
#include "campaign/state.h"
#include "core/clock.h"
#include "core/process.h"
#include "core/strings.h"
#include "nccl/collbench_path.h"
#include "report/run_dir.h"
#include "sched/slurm_reservation.h"
#include "score/evidence.h"
#include "score/render.h"
#include "score/rubric.h"
#include "score/scorer.h"

namespace cmax::app {
namespace {

namespace fs = std::filesystem;
using campaign::parse_budget;
using campaign::Status;

std::vector<std::string> g_args;
std::atomic<bool> g_stop{false};

extern "C" void on_stop_signal(int) { g_stop.store(true); }

constexpr int kExitClean = 0, kExitFindings = 1, kExitStageFailed = 2, kExitUsage = 3, kExitInterrupted = 130;

// The campaign's own options (and whether each takes a value): not forwarded to the audit stage.
const std::pair<std::string_view, bool> kCampaignOptions[] = {
    {"--plan", true},          {"--budget", true},       {"--allow-disruptive", false}, {"--endpoint", true},
    {"--trace", true},         {"--contract", true},     {"--cmaxd-db", true},          {"--drill-node", true},
    {"--drill-reservation", true}, {"--nccl-tests", true}, {"--resume", true},          {"--stage-arg", true},
    {"--out", true},           {"--overwrite", false},   {"--dry-run", false},          {"--json", false},
    {"--stage", true},         {"--prices", true},       {"--storage-path", true}};

std::vector<std::string> forwardable(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    bool dropped = false;
    for (const auto& [name, value] : kCampaignOptions) {
      if (a == name) {
        dropped = true;
        if (value) ++i;
        break;
      }
      if (value && a.size() > name.size() && a.compare(0, name.size(), name) == 0 && a[name.size()] == '=') {
        dropped = true;
        break;
      }
    }
    if (!dropped) out.push_back(a);
  }
  return out;
}

void progress(std::string_view line) {
  if (::isatty(STDERR_FILENO) == 1) fmt::print(stderr, "\r\033[K{}", line);
}

std::string clock_text(double s) {
  const int t = static_cast<int>(s);
  return t >= 3600 ? fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60) : fmt::format("{}:{:02}", t / 60, t % 60);
}

std::vector<std::string> slurm_env(const CampaignFlags& f) {
  if (f.slurm_conf.empty()) return {};
  return {"SLURM_CONF=" + f.slurm_conf};
}

// What is true before any stage runs. Slurm facts come from sinfo and scontrol, bounded.
Result<campaign::Facts> gather_facts(const CampaignFlags& f, const HarnessChoice& h, const std::string& dir,
                                     std::vector<std::string>& notes) {
  campaign::Facts facts;
  facts.harness = h.harness;
  facts.harness_why = h.why;
  facts.cmax = core::self_executable().value_or("cmax");
  facts.out = dir;
  facts.endpoint = f.endpoint;
  facts.contract = f.contract.empty() ? "" : fs::absolute(f.contract).string();
  facts.events = f.cmaxd_db.empty() ? "" : fs::absolute(f.cmaxd_db).string();
  facts.endpoint_trace = f.trace.empty() ? "" : fs::absolute(f.trace).string();
  facts.prices = f.prices.empty() ? "" : fs::absolute(f.prices).string();
  facts.storage_path = f.storage_path.empty() ? "" : fs::absolute(f.storage_path).string();
  facts.allow_disruptive = f.allow_disruptive;
  facts.drill_node = f.drill_node;
  facts.reservation = f.drill_reservation;
  facts.partition = f.partition;
  facts.budget_s = parse_budget(f.budget);
  facts.audit_args = forwardable(f.forwarded);
  // The isolation options go to the isolation stage (the audit's own copy is turned off there).
  for (std::size_t i = 0; i < facts.audit_args.size(); ++i) {
    const std::string& a = facts.audit_args[i];
    if (a == "--isolation-metadata") facts.isolation_metadata = true;
    if (a == "--isolation-scope" && i + 1 < facts.audit_args.size()) facts.isolation_scopes.push_back(facts.audit_args[i + 1]);
    if (a.rfind("--isolation-scope=", 0) == 0) facts.isolation_scopes.push_back(a.substr(18));
  }
  std::error_code ec;
  facts.gpu = fs::exists("/dev/nvidia0", ec);
  // NCCL: nccl-tests named or on PATH; else cmax-collbench beside cmax with mpirun on PATH.
  if (!f.nccl_tests.empty()) {
    facts.nccl_tests_dir = fs::absolute(f.nccl_tests).string();
  } else if (auto p = core::find_program("all_reduce_perf")) {
    facts.nccl_tests_dir = fs::path(*p).parent_path().string();
  } else if (core::find_program("mpirun")) {
    if (auto p = nccl::find_collbench()) facts.collbench = *p;
  }
  if (h.harness != "slurm") {
    char host[256] = {0};
    ::gethostname(host, sizeof host - 1);
    facts.nodes = {host};
    return facts;
  }
  std::vector<std::string> argv{"sinfo", "-h", "-N", "-o", "%N %T %G"};
  if (!f.partition.empty()) argv.insert(argv.begin() + 1, {"-p", f.partition});
  auto s = core::run_process({argv, std::chrono::seconds(10), 4u << 20, slurm_env(f)});
  if (!s || s->timed_out || s->exit_code != 0)
    return fail("list the cluster's nodes ({}): {}; is slurmctld up (`scontrol ping`)?", core::describe_argv(argv),
                !s ? s.error().message : s->timed_out ? "no answer in 10 s" : s->err);
  campaign::add_sinfo_nodes(facts, s->out);
  // Reservations: their idle nodes are not free for the active checks' job, and (with
  // --allow-disruptive) a REPLACE_DOWN one this user may use names the drill's target and spares.
  auto r = core::run_process({{"scontrol", "-o", "show", "reservation"}, std::chrono::seconds(10), 1u << 20, slurm_env(f)});
  if (r && !r->timed_out && r->exit_code == 0) {
    if (auto list = sched::parse_scontrol_reservations(r->out)) {
      const char* user = std::getenv("USER");
      campaign::note_trial_nodes(facts, *list, user ? user : "root");
      sched::drop_reserved_nodes(facts.idle, *list);
      for (auto& n : campaign::note_drill_target(facts, *list, user ? user : "root")) notes.push_back(std::move(n));
    }
  }
  return facts;
}

// score: the rubric over the run directory, written as score.json; the card for the terminal.
campaign::StageRun run_score(const std::string& dir, std::string* card) {
  campaign::StageRun r;
  const auto t0 = std::chrono::steady_clock::now();
  auto rubric = score::load_rubric(std::nullopt);
  auto ev = rubric ? score::read_evidence(dir) : Result<score::Evidence>(Unexpected<Error>{rubric.error()});
  if (!ev) {
    r.status = Status::failed;
    r.error = ev.error().message;
    return r;
  }
  auto sc = score::score_run(*rubric, *ev);
  auto w = report::write_stage_document(dir, "score.json", score::score_to_json(*rubric, {sc}, score::rank_runs({sc})));
  if (!w) {
    r.status = Status::failed;
    r.error = w.error().message;
    return r;
  }
  *card = score::render_card(sc, false);
  r.status = Status::done;
  r.exit_code = 0;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

campaign::StageRun run_report(const std::string& dir, std::string* line) {
  campaign::StageRun r;
  const auto t0 = std::chrono::steady_clock::now();
  auto written = try_write_run_report(dir);
  r.status = written ? Status::done : Status::failed;
  if (written) *line = *written;
  else r.error = "no report written: " + written.error().message;
  r.exit_code = written ? 0 : -1;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

int execute(campaign::Campaign& c, const std::string& dir, bool json) {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  std::error_code ec;
  fs::create_directories(fs::path(dir) / "logs", ec);
  if (ec) return environment_error(fmt::format("create {}/logs: {}", dir, ec.message()));
  auto save = [&] {
    if (auto w = campaign::save_campaign(c, dir); !w) fmt::print(stderr, "cmax run: {}\n", w.error().message);
  };
  save();
  const std::size_t n = c.stages.size();
  const auto t_run = std::chrono::steady_clock::now();
  int left_s = 0;
  for (const auto& st : c.stages)
    if (st.decision.run && st.status != Status::done) left_s += st.decision.budget_s;
  std::string card, report_line;
  for (std::size_t i = 0; i < n; ++i) {
    auto& st = c.stages[i];
    const auto& d = st.decision;
    if (!d.run) {
      st.status = Status::skipped;
      continue;
    }
    if (st.status == Status::done) continue;  // --resume: finished before
    if (g_stop.load()) break;
    st.status = Status::running;
    st.started_at = core::format_utc(core::SystemClock().now());
    // Score and report run inside cmax run and write no log of their own.
    st.log = d.in_process ? std::string() : fmt::format("logs/{}.log", d.id);
    save();
    const double elapsed_before = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_run).count();
    campaign::StageRun r;
    progress(fmt::format("cmax run [{}/{}] {} ...", i + 1, n, d.id));
    if (d.kind == campaign::Kind::score) {
      r = run_score(dir, &card);
    } else if (d.kind == campaign::Kind::report) {
      r = run_report(dir, &report_line);
    } else {
      campaign::ExecuteOptions o;
      o.log_path = (fs::path(dir) / st.log).string();
      o.stop = &g_stop;
      o.on_tick = [&](double s, const std::string& last) {
        progress(fmt::format("cmax run [{}/{}] {} {} / {} · at most {} left{}", i + 1, n, d.id, clock_text(s),
                             clock_text(d.budget_s), clock_text(std::max(0.0, left_s - elapsed_before - s)),
                             last.empty() ? "" : " · " + last.substr(0, 60)));
      };
      r = campaign::execute_stage(d, o);
    }
    left_s -= d.budget_s;
    st.status = r.status;
    st.exit_code = r.exit_code;
    st.seconds = r.seconds;
    st.error = r.error;
    st.last_line = r.last_line;
    ++st.attempts;
    // An interrupted attempt's time is not lost: --resume adds it up.
    if (r.status == Status::interrupted) st.interrupted_s += r.seconds;
    save();
    progress("");
    if (!json)
      fmt::print(stderr, "cmax run [{}/{}] {}: {} in {:.1f} s{}{}\n", i + 1, n, d.id, campaign::to_string(r.status),
                 r.seconds,
                 r.exit_code > 0 && r.error.empty()
                     ? fmt::format(" (exit {}: {})", r.exit_code, campaign::exit_label(r.exit_code))
                     : "",
                 r.error.empty() ? "" : " - " + r.error);
    if (r.status == Status::interrupted) break;
  }
  c.interrupted = g_stop.load();
  if (!c.interrupted) c.finished_at = core::format_utc(core::SystemClock().now());
  save();
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);

  if (json) {
    fmt::print("{}", campaign::campaign_to_json(c));
  } else {
    fmt::print("cmax run: plan {} ({}), harness {}\n\n", c.plan_name, c.plan_origin, c.facts.harness);
    for (const auto& st : c.stages) {
      const auto& d = st.decision;
      std::string what = d.run ? (st.error.empty() ? d.targets : st.error) : d.reason;
      const double spent = st.seconds + st.interrupted_s;
      fmt::print("  {:<10} {:<11} {:>8}  {}\n", d.id, campaign::to_string(st.status),
                 spent > 0 ? fmt::format("{:.1f} s", spent) : "", what);
      if (!d.run && !d.todo.empty()) fmt::print("  {:<10} {:<11} {:>8}  to run it: {}\n", "", "", "", d.todo);
    }
    if (!card.empty()) fmt::print("\n{}", card);
    fmt::print("\nRun directory: {} (campaign.json, logs/, one document per stage)\n", dir);
    if (!report_line.empty()) fmt::print("{}", report_line);
  }
  if (c.interrupted) {
    fmt::print(stderr, "cmax run: interrupted; what was measured is kept. Continue with: cmax run --resume {}\n", dir);
    return kExitInterrupted;
  }
  bool ran = false, failed = false, findings = false;
  for (const auto& st : c.stages) {
    if (st.status == Status::done && !st.decision.in_process) ran = true;
    if (st.status == Status::failed || st.status == Status::timed_out) failed = true;
    if (st.status == Status::done && st.exit_code > 0) findings = true;
  }
  if (!ran) {
    fmt::print(stderr, "cmax run: no stage ran to the end; see {}/logs/\n", dir);
    return kExitUsage;
  }
  return failed ? kExitStageFailed : findings ? kExitFindings : kExitClean;
}

}  // namespace

void set_invocation(int argc, char** argv) {
  g_args.clear();
  // argv[1] is "run" when this is cmax run; keep what follows it.
  for (int i = 2; i < argc; ++i) g_args.emplace_back(argv[i]);
}

const std::vector<std::string>& run_arguments() { return g_args; }

namespace {

// Who holds a run directory's lock, for a second run to be told.
std::string lock_holder() {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  std::string args;
  for (const auto& a : g_args) args += " " + a;
  return fmt::format("pid {} on {} since {}: cmax run{}", ::getpid(), host,
                     core::format_utc(core::SystemClock().now()), core::clip(args, 300));
}

int resume_campaign(const CampaignFlags& f) {
  auto lock = campaign::RunLock::acquire(f.resume, lock_holder());
  if (!lock) return environment_error(lock.error().message);
  auto c = campaign::load_campaign(f.resume);
  if (!c) return environment_error(c.error().message);
  ++c->resumes;
  c->interrupted = false;
  c->finished_at.clear();
  // What did not finish runs again; score and report describe the whole run, so they always do.
  const std::vector<bool> finished = campaign::reopen_stages(*c);
  if (!f.budget.empty()) {
    // A new --budget is the budget of what is left: the stages still to run are fitted into it again.
    auto budget = parse_budget(f.budget);
    if (!budget) return environment_error(fmt::format("--budget {}: use seconds or a duration like 90m, 2h, 1h30m", f.budget));
    campaign::refit_stages(*c, *budget, finished);
  }
  fmt::print(stderr, "cmax run --resume {}: plan {}; ", f.resume, c->plan_name);
  std::vector<std::string> todo;
  for (const auto& st : c->stages)
    if (st.decision.run && st.status != Status::done)
      todo.push_back(st.decision.in_process ? st.decision.id : fmt::format("{} ({} s)", st.decision.id, st.decision.budget_s));
  fmt::print(stderr, "running {}\n", todo.empty() ? std::string("nothing: every stage is done") : fmt::format("{}", fmt::join(todo, ", ")));
  return execute(*c, f.resume, f.json);
}

}  // namespace

int run_campaign(const CampaignFlags& f, const HarnessChoice& h) {
  if (!f.resume.empty()) return resume_campaign(f);
  auto plan = campaign::load_plan(f.plan);
  if (!plan) return environment_error(plan.error().message);
  if (!f.budget.empty() && !parse_budget(f.budget))
    return environment_error(fmt::format("--budget {}: use seconds or a duration like 90m, 2h, 1h30m", f.budget));
  for (const auto& sa : f.stage_args) {
    auto eq = sa.find('=');
    if (eq == std::string::npos || eq == 0)
      return environment_error(fmt::format("--stage-arg {}: write ID=ARGUMENT (nccl=--max-bytes=1M)", sa));
    auto it = std::find_if(plan->stages.begin(), plan->stages.end(),
                           [&](const campaign::StageSpec& s) { return s.id == sa.substr(0, eq); });
    if (it == plan->stages.end())
      return environment_error(fmt::format("--stage-arg {}: plan {} has no stage '{}'", sa, plan->name, sa.substr(0, eq)));
    it->args.push_back(sa.substr(eq + 1));
  }
  core::SystemClock clock;
  std::string dir = f.out.empty() ? report::default_run_dir(core::format_utc_compact(clock.now())) : f.out;
  dir = fs::absolute(dir).lexically_normal().string();
  if (!dir.empty() && dir.back() == '/') dir.pop_back();
  std::vector<std::string> notes;
  auto facts = gather_facts(f, h, dir, notes);
  if (!facts) return environment_error(facts.error().message);
  auto decisions = campaign::decide(*plan, *facts);
  const int needed = campaign::minimum_budget_s(decisions);
  const std::string needs = fmt::format("the plan needs {} s at least (about {} min: each stage's min_s){}", needed,
                                        (needed + 59) / 60,
                                        facts->budget_s ? fmt::format("; --budget {} s", *facts->budget_s) : "");
  if (f.dry_run) {
    for (const auto& n : notes) fmt::print("note: {}\n", n);
    fmt::print("{}", campaign::render_decisions(*plan, *facts, decisions));
    fmt::print("{}\n", needs);
    return 0;
  }
  // A budget that holds no stage runs nothing: refused before the directory is touched, so the
  // same --out is free for the next try.
  const bool any = std::any_of(decisions.begin(), decisions.end(),
                               [](const campaign::Decision& d) { return d.run && !d.in_process; });
  if (!any && facts->budget_s && campaign::minimum_budget_s(decisions) > 0)
    return environment_error(fmt::format("--budget {} s holds no stage: {}; give --budget {} or more", *facts->budget_s,
                                         needs, needed));
  auto lock = campaign::RunLock::acquire(dir, lock_holder());
  if (!lock) return environment_error(lock.error().message);
  std::error_code ec;
  if (fs::exists(fs::path(dir) / campaign::kCampaignFile, ec) && !f.overwrite)
    return environment_error(fmt::format("{} already holds a cmax run (campaign.json): continue it with "
                                         "`cmax run --resume {}`, or pass --overwrite to start over there",
                                         dir, dir));
  for (const auto& n : notes) fmt::print(stderr, "cmax run: {}\n", n);
  if (facts->budget_s && needed > *facts->budget_s) fmt::print(stderr, "cmax run: {}: the last stages are left out\n", needs);
  campaign::Campaign c;
  c.plan_name = plan->name;
  c.plan_origin = plan->origin;
  c.plan_about = plan->about;
  c.facts = *facts;
  c.started_at = core::format_utc(clock.now());
  for (auto& d : decisions) c.stages.push_back({std::move(d)});
  return execute(c, dir, f.json);
}

}  // namespace cmax::app
