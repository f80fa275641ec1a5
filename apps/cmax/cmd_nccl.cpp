// cmax nccl analyze FILE...: read nccl-tests (or cmax-collbench) logs, fit each run's busbw curve,
// name the sizes that fall off it, compare the plateau with the platform's published numbers, and
// chart each run. cmax nccl sweep: run the collectives over node counts and variants through mpirun
// or srun, check the NCCL environment recipe, then analyse what came back.
// Exit codes: 0 every run clean; 1 an anomaly (a dip, a cliff, below reference, poor scaling, wrong
// results); 2 a file could not be read or a step failed (the rest is still analysed and reported);
// 3 usage or environment error.

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/cmax/command.h"
#include "core/clock.h"
#include "core/process.h"
#include "core/strings.h"
#include "core/text_file.h"
#include "nccl/analysed_run.h"
#include "nccl/analyze.h"
#include "nccl/collbench_path.h"
#include "nccl/parse.h"
#include "nccl/recipe.h"
#include "nccl/reference.h"
#include "nccl/sweep_plan.h"
#include "nccl/sweep_run.h"
#include "report/run_dir.h"

extern char** environ;

namespace cmax::app {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;
constexpr int kExitOk = 0, kExitAnomaly = 1, kExitPartial = 2, kExitUsage = 3;
constexpr std::size_t kMaxLogBytes = 64u << 20;  // far above any nccl-tests log; a bound, not a limit

struct NcclFlags {
  std::vector<std::string> files;
  std::string out;
  bool json = false, no_charts = false;
  // sweep
  std::string launcher = "auto", tests_dir, collbench;
  std::string node_counts = "1,2,4,8";
  int ranks_per_node = 8;
  std::string tests = "all_reduce,all_gather,reduce_scatter,alltoall,sendrecv";
  std::string min_bytes = "8", max_bytes = "8G", factor = "2";
  int iters = 20, warmup = 5, step_timeout_s = 1800;
  bool max_bytes_given = false, ranks_given = false;  ///< named on the command line (not the defaults)
  std::vector<std::string> hosts, launcher_args;
  std::string reservation;
  bool no_network = false, no_ring = false, dry_run = false;
  bool resume = false;  ///< keep the steps an earlier, interrupted sweep into --out finished
  std::string sysfs = "/sys", nccl_conf;
  std::string fabric;  ///< analyze: the fabric of runs whose log does not show it
  std::string gpu;     ///< analyze: the GPU of runs whose log has no Rank lines
  int nodes = 0;       ///< analyze: the node count of runs whose log does not show it
};

void progress(std::string_view line) {
  if (::isatty(STDERR_FILENO) == 1) fmt::print(stderr, "\r\033[K{}", line);
}

// Ctrl-C and SIGTERM during a sweep: the running step is stopped (its launcher's whole process
// group), what was measured is kept and written.
std::atomic<bool> g_sweep_stop{false};
void on_sweep_signal(int) { g_sweep_stop.store(true); }

// MemAvailable from /proc/meminfo, bytes; 0 when unreadable.
std::uint64_t mem_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

// 2097152 -> "2 MiB", 34767700 -> "33.2 MiB".
std::string human_bytes(double b) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return fmt::format("{:.3g} {}", b, kUnits[u]);
}

void print_run(const nccl::AnalysedRun& a) {
  const auto& r = a.run;
  const auto& an = a.analysis;
  fmt::print("{}{}: {} {} ranks{}{} {}\n", a.file, a.label.empty() ? fmt::format(" run {}", a.index + 1) : " " + a.label,
             nccl::collective_name(r.collective), r.ranks, r.ranks_inferred ? " (inferred)" : "",
             r.nodes > 0 ? fmt::format(" on {} node{}", r.nodes, r.nodes == 1 ? "" : "s") : "", r.gpu_model.empty() ? "" : "(" + r.gpu_model + ")");
  fmt::print("  peak busbw {:.2f} GB/s, average {:.2f} GB/s{}; fit {}\n", an.peak_busbw_gbps, an.avg_busbw_gbps,
             r.avg_busbw_reported ? fmt::format(" (log says {:.2f})", *r.avg_busbw_reported) : "",
             !an.fit.ok ? std::string("not possible")
             : an.plateau_gbps
                 ? fmt::format("plateau {:.1f} GB/s, half at {}, noise {:.1f}%", *an.plateau_gbps,
                               human_bytes(std::exp2(an.fit.mid_log2)), an.fit.noise * 100)
                 : fmt::format("plateau not reached by {}, noise {:.1f}%", human_bytes(static_cast<double>(an.plateau_not_reached_by)),
                               an.fit.noise * 100));
  if (an.reference)
    fmt::print("  reference: {} ({}, {})\n",
               an.reference->expected_busbw_gbps ? fmt::format("{:.1f} GB/s expected", *an.reference->expected_busbw_gbps)
                                                 : fmt::format("pass bar {:.1f} GB/s", an.reference->pass_bar_gbps.value_or(0)),
               an.reference->fabric, an.reference->source);
  for (const auto& x : an.anomalies)
    fmt::print("  {:<24} {:>10}  {:>8.2f} GB/s, expected {:.2f}  {}\n", x.kind, human_bytes(static_cast<double>(x.size_bytes)), x.measured_gbps,
               x.expected_gbps, x.detail);
  for (const auto& n : an.notes) fmt::print("  note: {}\n", n);
  for (const auto& w : r.warnings) fmt::print("  warning: {}\n", w);
  fmt::print("  verdict: {}{}\n", an.verdict, a.chart.empty() ? "" : "  chart: " + a.chart);
}

Result<std::string> ensure_dir(const std::string& out, std::string_view kind) {
  const std::string dir =
      out.empty() ? report::default_run_dir(core::format_utc_compact(core::SystemClock().now()) + "-" + std::string(kind)) : out;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return fail("create {}: {}", dir, ec.message());
  return dir;
}

int run_analyze(const NcclFlags& f) {
  auto refs = nccl::builtin_references();
  if (!refs) return fmt::print(stderr, "cmax nccl: {}\n", refs.error().message), kExitUsage;
  json files = json::array();
  std::vector<nccl::AnalysedRun> runs;
  bool partial = false;
  for (const auto& path : f.files) {
    auto text = core::read_text_file(path, kMaxLogBytes, ", not an nccl-tests log");
    auto parsed = text ? nccl::parse_nccl_tests(*text) : Result<nccl::ParsedLog>(Unexpected<Error>{text.error()});
    if (!parsed) {
      files.push_back({{"file", path}, {"error", parsed.error().message}});
      fmt::print(stderr, "cmax nccl: {}: {}\n", path, parsed.error().message);
      partial = true;
      continue;
    }
    files.push_back({{"file", path}, {"runs", parsed->runs.size()}, {"warnings", parsed->warnings}});
    for (std::size_t i = 0; i < parsed->runs.size(); ++i) {
      if (parsed->runs[i].fabric.empty()) parsed->runs[i].fabric = f.fabric;
      if (parsed->runs[i].gpu_model.empty()) parsed->runs[i].gpu_model = f.gpu;
      if (parsed->runs[i].nodes == 0) parsed->runs[i].nodes = f.nodes;
      runs.push_back({path, i, std::move(parsed->runs[i])});
    }
  }
  std::string dir;
  if (!f.no_charts && !runs.empty()) {
    auto d = ensure_dir(f.out, "nccl");
    if (!d) return fmt::print(stderr, "cmax nccl: {}\n", d.error().message), kExitUsage;
    dir = *d;
  }
  std::vector<nccl::ScalingFinding> scaling;
  int code = nccl::analyse_runs(runs, *refs, dir, !f.no_charts && !runs.empty(), scaling) ? kExitAnomaly : kExitOk;
  if (partial && code == kExitOk) code = kExitPartial;
  if (runs.empty()) code = kExitPartial;
  json report{{"schema", "cmax.nccl/1"}, {"files", files}, {"runs", json::array()}, {"scaling", nccl::scaling_json(scaling)}, {"exit_code", code}};
  for (const auto& a : runs) report["runs"].push_back(run_json(a));
  if (!dir.empty()) {
    std::ofstream(fs::path(dir) / "nccl.json") << report.dump(2) << "\n";
    report["run_dir"] = dir;
  }
  if (f.json) {
    fmt::print("{}\n", report.dump(2));
  } else {
    for (const auto& a : runs) print_run(a);
    for (const auto& s : scaling)
      fmt::print("scaling {}: {} at {} nodes: {}\n", s.group, s.anomaly.kind, s.anomaly.nodes > 0 ? s.anomaly.nodes : 0,
                 s.anomaly.detail);
    if (!dir.empty()) fmt::print("run directory: {} (nccl.json, one SVG chart per run)\n", dir);
  }
  return code;
}

std::vector<int> parse_counts(const std::string& s) {
  std::vector<int> out;
  for (auto p : core::split_any(s, ",")) {
    auto n = core::parse_uint(p);
    if (!n || *n == 0 || *n > 100000) return {};
    out.push_back(static_cast<int>(*n));
  }
  return out;
}

std::vector<std::string> link_layers(const std::string& sysfs) {
  std::vector<std::string> out;
  std::error_code ec;
  const fs::path ib = fs::path(sysfs) / "class" / "infiniband";
  for (const auto& dev : fs::directory_iterator(ib, ec)) {
    std::error_code ec2;
    for (const auto& port : fs::directory_iterator(dev.path() / "ports", ec2)) {
      std::ifstream in(port.path() / "link_layer");
      std::string l;
      if (std::getline(in, l)) out.push_back(std::string(core::trim(l)));
    }
  }
  return out;
}

// The sweep's options from the flags; `notes` says what was adjusted. Errors are usage errors.
Result<nccl::SweepOptions> sweep_options(const NcclFlags& f, std::vector<std::string>& notes) {
  nccl::SweepOptions o;
  const bool in_slurm = std::getenv("SLURM_JOB_ID") != nullptr;
  o.launcher = f.launcher == "srun" || (f.launcher == "auto" && in_slurm) ? nccl::Launcher::kSrun : nccl::Launcher::kMpirun;
  o.node_counts = parse_counts(f.node_counts);
  if (o.node_counts.empty()) return fail("--node-counts {}: expected 1,2,4,...", f.node_counts);
  o.ranks_per_node = f.ranks_per_node;
  o.tests.clear();
  for (auto t : core::split_any(f.tests, ",")) {
    if (nccl::collective_from_name(t) == nccl::Collective::kUnknown)
      return fail("--tests: unknown collective \"{}\"", t);
    o.tests.emplace_back(t);
  }
  o.tests_dir = f.tests_dir;
  o.collbench = f.collbench;
  if (o.tests_dir.empty() && o.collbench.empty()) {
    // cmax-collbench next to this binary, else on PATH.
    if (auto p = nccl::find_collbench()) o.collbench = *p;
    if (o.collbench.empty())
      return fail("give --tests-dir (nccl-tests' build directory) or --collbench PATH");
  }
  o.min_bytes = f.min_bytes;
  o.max_bytes = f.max_bytes;
  o.step_factor = f.factor;
  o.iters = f.iters;
  o.warmup = f.warmup;
  o.hosts = f.hosts;
  o.reservation = f.reservation;
  if (!o.reservation.empty() && o.launcher != nccl::Launcher::kSrun)
    return fail("--reservation is srun's: add --launcher srun");
  o.launcher_args = f.launcher_args;
  // mpirun on this machine alone: as root it needs to be told, and more ranks than cores is fine.
  if (o.launcher == nccl::Launcher::kMpirun && o.hosts.empty()) {
    if (::geteuid() == 0) o.launcher_args.insert(o.launcher_args.begin(), "--allow-run-as-root");
    o.launcher_args.insert(o.launcher_args.begin(), "--oversubscribe");
  }
  o.network_variant = !f.no_network;
  o.ring_variant = !f.no_ring;
  // cmax-collbench holds its buffers in this machine's memory: a plan that cannot fit is cut down
  // to fit when it is the default, and refused with the numbers when the user asked for it.
  if (o.tests_dir.empty()) {
    auto max = nccl::parse_size_bytes(o.max_bytes);
    if (!max) return fail("-e {}: write a size as 8G, 512M, 64K or bytes", o.max_bytes);
    const std::uint64_t avail = mem_available_bytes();
    auto mem = nccl::plan_host_memory(o, *max, avail);
    if (avail > 0 && !mem.fits()) {
      const std::uint64_t fit = mem.largest_fitting();
      const std::string why = fmt::format(
          "cmax-collbench would hold {} ranks x 2 buffers x {} = {} on this machine, which has {} available (cmax "
          "plans at most half)",
          mem.ranks_here, human_bytes(static_cast<double>(*max)), human_bytes(static_cast<double>(mem.needed_bytes)),
          human_bytes(static_cast<double>(avail)));
      if (f.max_bytes_given || f.ranks_given || fit == 0)
        return fail("{}: lower -e (at most {} here) or --ranks-per-node", why,
                          fit ? human_bytes(static_cast<double>(fit)) : std::string("nothing fits"));
      o.max_bytes = std::to_string(fit);
      notes.push_back(fmt::format("{}: -e lowered to {} (name -e to choose)", why, human_bytes(static_cast<double>(fit))));
    }
  }
  return o;
}

// The NCCL environment recipe's findings, from what this sweep would use.
std::vector<nccl::RecipeFinding> recipe_findings(const NcclFlags& f, const nccl::SweepOptions& o) {
  nccl::RecipeInput recipe;
  recipe.nccl_conf_path = !f.nccl_conf.empty() ? f.nccl_conf : std::getenv("NCCL_CONF_FILE") ? std::getenv("NCCL_CONF_FILE") : "/etc/nccl.conf";
  if (auto t = core::read_text_file(recipe.nccl_conf_path, kMaxLogBytes)) recipe.nccl_conf = *t;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    if (!kv.starts_with("NCCL_")) continue;
    auto eq = kv.find('=');
    if (eq != std::string_view::npos) recipe.env[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
  }
  recipe.link_layers = link_layers(f.sysfs);
  recipe.max_nodes = *std::max_element(o.node_counts.begin(), o.node_counts.end());
  return nccl::check_recipe(recipe);
}

int run_sweep(const NcclFlags& f) {
  std::vector<std::string> notes;
  auto opts = sweep_options(f, notes);
  if (!opts) return fmt::print(stderr, "cmax nccl sweep: {}\n", opts.error().message), kExitUsage;
  const nccl::SweepOptions& o = *opts;
  auto steps = nccl::plan_sweep(o);
  if (steps.empty()) return fmt::print(stderr, "cmax nccl sweep: nothing to run (node counts above the hosts given?)\n"), kExitUsage;
  for (const auto& n : notes) fmt::print(stderr, "cmax nccl sweep: {}\n", n);

  const auto findings = recipe_findings(f, o);

  if (f.dry_run) {
    for (const auto& fi : findings) fmt::print("recipe {}: {}\n", fi.level, fi.message);
    for (const auto& s : steps) fmt::print("{}: {}\n", s.log_name, core::describe_argv(s.argv));
    return kExitOk;
  }
  auto dir = ensure_dir(f.out, "nccl-sweep");
  if (!dir) return fmt::print(stderr, "cmax nccl sweep: {}\n", dir.error().message), kExitUsage;
  auto refs = nccl::builtin_references();
  if (!refs) return fmt::print(stderr, "cmax nccl: {}\n", refs.error().message), kExitUsage;

  nccl::SweepRunOptions ro;
  ro.plan = o;
  ro.steps = std::move(steps);
  ro.dir = *dir;
  ro.step_timeout = std::chrono::seconds(f.step_timeout_s);
  ro.resume = f.resume;
  ro.charts = !f.no_charts;
  ro.findings = findings;
  ro.notes = notes;
  ro.stop = &g_sweep_stop;
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  nccl::SweepHooks hooks;
  hooks.on_start = [](std::size_t i, std::size_t n, const nccl::SweepStep& s) {
    progress(fmt::format("cmax nccl sweep [{}/{}] {} on {} node{} ({})...", i + 1, n, s.test, s.nodes,
                         s.nodes == 1 ? "" : "s", s.variant));
  };
  // Off a terminal, one line per finished step (no progress line there).
  hooks.on_done = [tty](std::size_t i, std::size_t n, const nccl::SweepStepRecord& r) {
    if (tty) return;
    if (r.kept) fmt::print(stderr, "cmax nccl sweep: [{}/{}] {}: kept from the earlier sweep\n", i + 1, n, r.step);
    else fmt::print(stderr, "cmax nccl sweep: [{}/{}] {}: {:.1f} s, {}\n", i + 1, n, r.step, r.wall_s, r.error.empty() ? "ok" : r.error);
  };
  hooks.on_warning = [](const std::string& step, const std::string& w) { fmt::print(stderr, "cmax nccl sweep: {}: {}\n", step, w); };
  g_sweep_stop.store(false);
  struct sigaction sa {}, old_int {}, old_term {};
  sa.sa_handler = on_sweep_signal;
  ::sigaction(SIGINT, &sa, &old_int);
  ::sigaction(SIGTERM, &sa, &old_term);
  const auto r = nccl::run_sweep(ro, *refs, nccl::process_launcher(&g_sweep_stop), hooks);
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  progress("");
  if (r.interrupted)
    fmt::print(stderr, "cmax nccl sweep: interrupted after {} of {} steps; what was measured is analysed and written\n",
               r.steps.size(), ro.steps.size());
  if (f.json) {
    fmt::print("{}\n", r.report);
  } else {
    for (const auto& fi : findings) fmt::print("recipe {}: {}\n", fi.level, fi.message);
    for (const auto& s : r.steps)
      if (!s.error.empty()) fmt::print("{}: {}\n", s.step, s.error);
    for (const auto& a : r.runs) print_run(a);
    for (const auto& s : r.scaling) fmt::print("scaling {}: {}: {}\n", s.group, s.anomaly.kind, s.anomaly.detail);
    fmt::print("run directory: {} (nccl.json, a log and an SVG chart per step)\n", *dir);
  }
  return r.exit_code;
}

}  // namespace

Runner setup_nccl(CLI::App& sub) {
  auto f = std::make_shared<NcclFlags>();
  sub.description(
      "NCCL collectives: read nccl-tests logs (or run them), fit each run's bus bandwidth over message\n"
      "size with a robust logistic curve, and name what is wrong: sizes that dip below the curve, a cliff\n"
      "from some size on, out-of-place and in-place disagreeing, a plateau below the platform's published\n"
      "number (data/nccl_reference.json), poor scaling over node counts, wrong results. The protocol switch\n"
      "kink near 1-2 MiB is normal and is not flagged. docs/nccl.md.\n\n"
      "A sweep stops its running step on Ctrl-C or SIGTERM (the launcher's whole process group) and writes\n"
      "nccl.json for the steps done; off a terminal it prints a line per finished step. With cmax-collbench\n"
      "the buffers must fit this machine: a default -e is lowered to fit, a named one that cannot is refused.\n"
      "Exit codes: 0 every run clean; 1 an anomaly; 2 a file could not be read, a sweep step failed, or the\n"
      "sweep was interrupted (the rest is analysed and reported); 3 usage or environment error.");
  sub.require_subcommand(1);
  auto* analyze = sub.add_subcommand("analyze", "Analyse nccl-tests logs: verdict per run, an SVG chart per run");
  analyze->add_option("files", f->files, "nccl-tests output files (srun/MPI prefixes, NCCL INFO lines, several runs per file are fine)")
      ->required();
  analyze->add_option("--out", f->out, "Directory for the charts and nccl.json (default ~/.cmax/runs/<UTC stamp>-nccl/)");
  analyze->add_flag("--no-charts", f->no_charts, "Do not write SVG charts (nor a run directory)");
  analyze->add_option("--fabric", f->fabric,
                      "The inter-node fabric of runs whose log does not show it (no NCCL INFO NET line): IB, RoCE,\n"
                      "EFA, TCPX, Slingshot. A multi-node run of unknown fabric is judged against no reference")
      ->check(CLI::IsMember({"IB", "RoCE", "EFA", "TCPX", "Slingshot", "Socket"}));
  analyze->add_option("--gpu", f->gpu,
                      "The GPU of runs whose log prints no '#  Rank' lines (a pasted tail), as nvidia-smi names it\n"
                      "(\"NVIDIA H100 80GB HBM3\"); without it such a run is judged against no reference");
  analyze->add_option("--nodes", f->nodes,
                      "The node count of runs whose log does not show it (no Rank lines, or ranks elided without\n"
                      "the GPUs a node has); without it such a run is judged against no reference nor scaling")
      ->check(CLI::Range(1, 100000));
  analyze->add_flag("--json", f->json, "Print {\"schema\": \"cmax.nccl/1\", ...} (docs/schemas/nccl.md)");

  auto* sweep = sub.add_subcommand("sweep", "Run the collectives over node counts and variants, then analyse them");
  sweep->add_option("--launcher", f->launcher, "'mpirun', 'srun', or 'auto' (srun inside a Slurm allocation)")
      ->check(CLI::IsMember({"auto", "mpirun", "srun"}))
      ->capture_default_str();
  sweep->add_option("--tests-dir", f->tests_dir, "nccl-tests' build directory (runs DIR/<collective>_perf -g 1)");
  sweep->add_option("--collbench", f->collbench,
                    "cmax-collbench to run instead (CPU fabrics, machines without GPUs; default: the one installed beside cmax)");
  sweep->add_option("--node-counts", f->node_counts, "Node counts to sweep")->capture_default_str();
  sweep->add_option("--ranks-per-node", f->ranks_per_node, "Ranks per node (one per GPU)")->capture_default_str();
  sweep->add_option("--tests", f->tests, "Collectives")->capture_default_str();
  sweep->add_option("-b,--min-bytes", f->min_bytes, "Smallest message")->capture_default_str();
  sweep->add_option("-e,--max-bytes", f->max_bytes, "Largest message")->capture_default_str();
  sweep->add_option("-f,--step-factor", f->factor, "Size multiplier between steps")->capture_default_str();
  sweep->add_option("-n,--iters", f->iters, "Timed iterations per size")->capture_default_str();
  sweep->add_option("-w,--warmup", f->warmup, "Warmup iterations per size")->capture_default_str();
  sweep->add_option("--host", f->hosts,
                    "A host per node, in order (repeat): mpirun's --host, srun's -w (the first n for n nodes);\n"
                    "default: mpirun this machine only, srun wherever Slurm places the step");
  sweep->add_option("--reservation", f->reservation,
                    "srun: run every step inside this Slurm reservation (a trial's nodes are held in one)");
  sweep->add_option("--launcher-arg", f->launcher_args,
                    "An argument for mpirun or srun before the program (repeat): --partition=gpu, --mca ...");
  sweep->add_flag("--no-network-variant", f->no_network, "Skip the NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 runs");
  sweep->add_flag("--no-ring-variant", f->no_ring, "Skip the 2-node NCCL_ALGO=Ring run");
  sweep->add_option("--step-timeout-s", f->step_timeout_s, "Deadline of each step")->capture_default_str();
  sweep->add_option("--nccl-conf", f->nccl_conf, "nccl.conf to check (default $NCCL_CONF_FILE or /etc/nccl.conf)");
  sweep->add_option("--sysfs", f->sysfs, "sysfs root for the RoCE check")->capture_default_str();
  sweep->add_flag("--dry-run", f->dry_run, "Print the recipe findings and the commands; run nothing");
  sweep->add_flag("--resume", f->resume,
                  "Keep the steps an earlier, interrupted sweep into --out finished (same command, exit 0, log\n"
                  "present); measure the rest (cmax run --resume passes it)");
  sweep->add_option("--out", f->out, "Run directory (default ~/.cmax/runs/<UTC stamp>-nccl-sweep/)");
  sweep->add_flag("--no-charts", f->no_charts, "Do not write SVG charts");
  sweep->add_flag("--json", f->json, "Print {\"schema\": \"cmax.nccl/1\", ...}");
  return [f, analyze, sweep]() -> int {
    if (analyze->parsed()) return run_analyze(*f);
    if (sweep->parsed()) {
      f->max_bytes_given = sweep->count("--max-bytes") > 0;
      f->ranks_given = sweep->count("--ranks-per-node") > 0;
      return run_sweep(*f);
    }
    return kExitUsage;
  };
}

}  // namespace cmax::app
