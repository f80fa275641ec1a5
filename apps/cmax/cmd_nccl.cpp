// cmax nccl analyze FILE...: read nccl-tests (or cmax-collbench) logs, fit each run's busbw curve,
// name the sizes that fall off it, compare the plateau with the platform's published numbers, and
// chart each run. cmax nccl sweep: run the collectives over node counts and variants through mpirun
// or srun, check the NCCL environment recipe, then analyse what came back.
// Exit codes: 0 every run clean; 1 an anomaly (a dip, a cliff, below reference, poor scaling, wrong
// results); 2 a file could not be read or a step failed (the rest is still analysed and reported);
// 3 usage or environment error.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/cmax/command.h"
#include "core/clock.h"
#include "core/process.h"
#include "core/strings.h"
#include "core/text_file.h"
#include "nccl/analyze.h"
#include "nccl/chart.h"
#include "nccl/collbench_path.h"
#include "nccl/parse.h"
#include "nccl/recipe.h"
#include "nccl/reference.h"
#include "nccl/sweep_plan.h"
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
volatile std::sig_atomic_t g_sweep_stop = 0;
void on_sweep_signal(int) { g_sweep_stop = 1; }

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

struct StepOutcome {
  core::ProcessResult result;
  bool interrupted = false;
};

// Runs one step's launcher, keeping its output (bounded); on a stop request or the step's
// deadline sends SIGTERM to its process group (mpirun and srun then end their ranks), and
// SIGKILL after a grace period.
Result<StepOutcome> run_step(const core::ProcessSpec& spec) {
  auto child = core::Child::spawn(spec);
  if (!child) return Unexpected<Error>{child.error()};
  StepOutcome o;
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + spec.timeout;
  auto keep = [&](std::string& into) {
    return [&into, &o, max = spec.max_output_bytes](std::string_view bytes) {
      const std::size_t room = max > into.size() ? max - into.size() : 0;
      into.append(bytes.substr(0, room));
      if (bytes.size() > room) o.result.truncated = true;
    };
  };
  const core::Child::Sink out = keep(o.result.out), err = keep(o.result.err);
  std::optional<int> status;
  std::optional<std::chrono::steady_clock::time_point> term_sent;
  for (;;) {
    child->pump(std::chrono::milliseconds(100), out, err);
    status = child->wait_exit(std::chrono::milliseconds(0));
    if (status) break;
    const auto now = std::chrono::steady_clock::now();
    if (!term_sent && (g_sweep_stop || now >= deadline)) {
      o.interrupted = g_sweep_stop != 0;
      o.result.timed_out = !o.interrupted;
      child->signal_group(SIGTERM);
      term_sent = now;
    } else if (term_sent && now - *term_sent > std::chrono::seconds(5)) {
      child->signal_group(SIGKILL);
      status = child->wait_exit(std::chrono::milliseconds(2000));
      break;
    }
  }
  while (child->pump(std::chrono::milliseconds(0), out, err)) {
  }
  o.result.wall = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start);
  if (status && WIFEXITED(*status)) o.result.exit_code = WEXITSTATUS(*status);
  else if (status && WIFSIGNALED(*status)) o.result.signal = WTERMSIG(*status);
  return o;
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

json anomaly_json(const nccl::Anomaly& a) {
  json j{{"size_bytes", a.size_bytes},       {"kind", a.kind},
          {"placement", a.placement},         {"measured_gbps", a.measured_gbps},
          {"expected_gbps", a.expected_gbps}, {"detail", a.detail}};
  if (a.nodes > 0) j["nodes"] = a.nodes;
  return j;
}

// One analysed run, and where it came from.
struct Analysed {
  std::string file;
  std::size_t index = 0;  ///< the run's position in its file
  nccl::Run run;
  nccl::RunAnalysis analysis;
  std::string chart;  ///< the SVG's path; "" when not written
  std::string label;  ///< for sweeps: "all_reduce-2n-golden"
  int nodes_hint = 0; ///< for sweeps: the node count the step asked for
  std::string variant;
};

json run_json(const Analysed& a) {
  const auto& r = a.run;
  const auto& an = a.analysis;
  json anomalies = json::array();
  for (const auto& x : an.anomalies) anomalies.push_back(anomaly_json(x));
  json j{{"file", a.file},
         {"index", a.index},
         {"test", r.test},
         {"collective", std::string(nccl::collective_name(r.collective))},
         {"ranks", r.ranks},
         {"ranks_inferred", r.ranks_inferred},
         {"nodes", r.nodes},
         {"hosts", r.hosts},
         {"gpu", r.gpu_model},
         {"nccl_version", r.nccl_version},
         {"rows", r.rows.size()},
         {"complete", r.complete},
         {"fabric", r.fabric.empty() ? json(nullptr) : json(r.fabric)},
         {"nics", r.nics > 0 ? json(r.nics) : json(nullptr)},
         {"backend", r.backend.empty() ? json(nullptr) : json(r.backend)},
         {"peak_busbw_gbps", an.peak_busbw_gbps},
         {"avg_busbw_gbps", an.avg_busbw_gbps},
         {"avg_busbw_reported", r.avg_busbw_reported ? json(*r.avg_busbw_reported) : json(nullptr)},
         {"fit",
          {{"ok", an.fit.ok}, {"plateau_only", an.fit.plateau_only}, {"peak_gbps", an.fit.peak_gbps},
           {"plateau_gbps", an.plateau_gbps ? json(*an.plateau_gbps) : json(nullptr)},
           {"plateau_not_reached_by", an.plateau_gbps || !an.fit.ok ? json(nullptr) : json(an.plateau_not_reached_by)},
           {"mid_log2", an.fit.mid_log2}, {"slope", an.fit.slope}, {"noise", an.fit.noise}, {"points", an.fit.points}}},
         {"anomalies", anomalies},
         {"notes", an.notes},
         {"warnings", r.warnings},
         {"verdict", an.verdict},
         {"chart", a.chart.empty() ? json(nullptr) : json(a.chart)}};
  if (an.reference) {
    const auto& ref = *an.reference;
    j["reference"] = {{"gpu", ref.gpu},
                      {"fabric", ref.fabric},
                      {"collective", ref.collective},
                      {"variant", ref.variant},
                      {"expected_busbw_gbps", ref.expected_busbw_gbps ? json(*ref.expected_busbw_gbps) : json(nullptr)},
                      {"pass_bar_gbps", ref.pass_bar_gbps ? json(*ref.pass_bar_gbps) : json(nullptr)},
                      {"source", ref.source}};
  } else {
    j["reference"] = nullptr;
  }
  if (!a.label.empty()) {
    j["step"] = a.label;
    j["variant"] = a.variant;
  }
  return j;
}

void print_run(const Analysed& a) {
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

std::string chart_name(const Analysed& a) {
  if (!a.label.empty()) return a.label + ".svg";
  return fmt::format("{}-{}.svg", fs::path(a.file).stem().string(), a.index + 1);
}

// Analyses `parsed` runs, writes charts into `dir` (unless no_charts), returns the exit code part.
int analyse_all(std::vector<Analysed>& runs, const std::vector<nccl::Reference>& refs, const std::string& dir,
                bool charts, json& scaling_out) {
  int code = kExitOk;
  for (auto& a : runs) {
    // A sweep's variants are judged against their own numbers (ring against ring).
    a.analysis = nccl::analyze_run(a.run, refs, a.variant == "golden" || a.variant.empty() ? "default" : a.variant);
    if (!a.analysis.anomalies.empty()) code = kExitAnomaly;
    if (charts) {
      const auto path = (fs::path(dir) / chart_name(a)).string();
      std::ofstream out(path);
      out << nccl::render_svg(a.run, a.analysis);
      if (out) a.chart = path;
    }
  }
  // Scaling: the same collective, GPU and variant over node counts, from one directory (a sweep's
  // run directory; logs of different clusters belong in different directories).
  std::map<std::string, std::vector<const nccl::Run*>> groups;
  for (const auto& a : runs)
    if (a.run.nodes > 0)
      groups[fmt::format("{} {}{} in {}", nccl::collective_name(a.run.collective),
                         a.run.gpu_model.empty() ? "unknown GPU" : a.run.gpu_model,
                         a.variant.empty() ? "" : " (" + a.variant + ")", fs::path(a.file).parent_path().string())]
          .push_back(&a.run);
  scaling_out = json::array();
  for (const auto& [key, group] : groups) {
    if (group.size() < 2) continue;
    for (const auto& x : nccl::analyze_scaling(group)) {
      auto j = anomaly_json(x);
      j["group"] = key;
      scaling_out.push_back(j);
      code = kExitAnomaly;
    }
  }
  return code;
}

int run_analyze(const NcclFlags& f) {
  auto refs = nccl::builtin_references();
  if (!refs) return fmt::print(stderr, "cmax nccl: {}\n", refs.error().message), kExitUsage;
  json files = json::array();
  std::vector<Analysed> runs;
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
  json scaling;
  int code = analyse_all(runs, *refs, dir, !f.no_charts && !runs.empty(), scaling);
  if (partial && code == kExitOk) code = kExitPartial;
  if (runs.empty()) code = kExitPartial;
  json report{{"schema", "cmax.nccl/1"}, {"files", files}, {"runs", json::array()}, {"scaling", scaling}, {"exit_code", code}};
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
      fmt::print("scaling {}: {} at {} nodes: {}\n", s["group"].get<std::string>(), s["kind"].get<std::string>(),
                 s.value("nodes", 0), s["detail"].get<std::string>());
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

int run_sweep(const NcclFlags& f) {
  nccl::SweepOptions o;
  const bool in_slurm = std::getenv("SLURM_JOB_ID") != nullptr;
  o.launcher = f.launcher == "srun" || (f.launcher == "auto" && in_slurm) ? nccl::Launcher::kSrun : nccl::Launcher::kMpirun;
  o.node_counts = parse_counts(f.node_counts);
  if (o.node_counts.empty()) return fmt::print(stderr, "cmax nccl sweep: --node-counts {}: expected 1,2,4,...\n", f.node_counts), kExitUsage;
  o.ranks_per_node = f.ranks_per_node;
  o.tests.clear();
  for (auto t : core::split_any(f.tests, ",")) {
    if (nccl::collective_from_name(t) == nccl::Collective::kUnknown)
      return fmt::print(stderr, "cmax nccl sweep: --tests: unknown collective \"{}\"\n", t), kExitUsage;
    o.tests.emplace_back(t);
  }
  o.tests_dir = f.tests_dir;
  o.collbench = f.collbench;
  if (o.tests_dir.empty() && o.collbench.empty()) {
    // cmax-collbench next to this binary, else on PATH.
    if (auto p = nccl::find_collbench()) o.collbench = *p;
    if (o.collbench.empty())
      return fmt::print(stderr, "cmax nccl sweep: give --tests-dir (nccl-tests' build directory) or --collbench PATH\n"),
             kExitUsage;
  }
  o.min_bytes = f.min_bytes;
  o.max_bytes = f.max_bytes;
  o.step_factor = f.factor;
  o.iters = f.iters;
  o.warmup = f.warmup;
  o.hosts = f.hosts;
  o.reservation = f.reservation;
  if (!o.reservation.empty() && o.launcher != nccl::Launcher::kSrun)
    return fmt::print(stderr, "cmax nccl sweep: --reservation is srun's: add --launcher srun\n"), kExitUsage;
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
  std::vector<std::string> notes;
  if (o.tests_dir.empty()) {
    auto max = nccl::parse_size_bytes(o.max_bytes);
    if (!max) return fmt::print(stderr, "cmax nccl sweep: -e {}: write a size as 8G, 512M, 64K or bytes\n", o.max_bytes), kExitUsage;
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
        return fmt::print(stderr, "cmax nccl sweep: {}: lower -e (at most {} here) or --ranks-per-node\n", why,
                          fit ? human_bytes(static_cast<double>(fit)) : std::string("nothing fits")),
               kExitUsage;
      o.max_bytes = std::to_string(fit);
      notes.push_back(fmt::format("{}: -e lowered to {} (name -e to choose)", why, human_bytes(static_cast<double>(fit))));
    }
  }
  auto steps = nccl::plan_sweep(o);
  if (steps.empty()) return fmt::print(stderr, "cmax nccl sweep: nothing to run (node counts above the hosts given?)\n"), kExitUsage;
  for (const auto& n : notes) fmt::print(stderr, "cmax nccl sweep: {}\n", n);

  // The environment recipe, from what this run would use.
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
  const auto findings = nccl::check_recipe(recipe);

  if (f.dry_run) {
    for (const auto& fi : findings) fmt::print("recipe {}: {}\n", fi.level, fi.message);
    for (const auto& s : steps) fmt::print("{}: {}\n", s.log_name, core::describe_argv(s.argv));
    return kExitOk;
  }
  auto dir = ensure_dir(f.out, "nccl-sweep");
  if (!dir) return fmt::print(stderr, "cmax nccl sweep: {}\n", dir.error().message), kExitUsage;
  auto refs = nccl::builtin_references();
  if (!refs) return fmt::print(stderr, "cmax nccl: {}\n", refs.error().message), kExitUsage;

  json steps_json = json::array();
  std::vector<Analysed> runs;
  bool partial = false, interrupted = false;
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  g_sweep_stop = 0;
  struct sigaction sa {}, old_int {}, old_term {};
  sa.sa_handler = on_sweep_signal;
  ::sigaction(SIGINT, &sa, &old_int);
  ::sigaction(SIGTERM, &sa, &old_term);
  // --resume: the steps an earlier sweep into this directory finished (same command, no error,
  // its log still there) are kept, not measured again.
  std::map<std::string, json> finished;
  if (f.resume)
    if (auto prev = core::read_text_file((fs::path(*dir) / "nccl.json").string(), kMaxLogBytes)) {
      auto doc = json::parse(*prev, nullptr, false);
      if (doc.is_object() && doc.contains("sweep") && doc["sweep"].is_object() && doc["sweep"].contains("steps") &&
          doc["sweep"]["steps"].is_array())
        for (const auto& sj : doc["sweep"]["steps"])
          if (sj.is_object() && !sj.contains("error") && sj.value("exit_code", -1) == 0 && sj.contains("step") &&
              sj["step"].is_string())
            finished[sj["step"].get<std::string>()] = sj;
    }
  std::size_t kept = 0;
  for (std::size_t i = 0; i < steps.size() && !g_sweep_stop; ++i) {
    const auto& s = steps[i];
    const fs::path log = fs::path(*dir) / s.log_name;
    const std::string name = s.log_name.substr(0, s.log_name.size() - 4);
    if (auto it = finished.find(name); it != finished.end() && it->second.value("argv", json::array()) == json(s.argv)) {
      if (auto text = core::read_text_file(log.string(), kMaxLogBytes)) {
        if (auto parsed = nccl::parse_nccl_tests(*text); parsed && !parsed->runs.empty()) {
          for (std::size_t k = 0; k < parsed->runs.size(); ++k) {
            Analysed a{log.string(), k, std::move(parsed->runs[k])};
            a.label = name;
            a.nodes_hint = s.nodes;
            a.variant = s.variant;
            if (a.run.nodes == 0) a.run.nodes = s.nodes;
            runs.push_back(std::move(a));
          }
          json sj = it->second;
          sj["kept"] = true;
          steps_json.push_back(sj);
          ++kept;
          if (!tty) fmt::print(stderr, "cmax nccl sweep: [{}/{}] {}: kept from the earlier sweep\n", i + 1, steps.size(), name);
          continue;
        }
      }
    }
    progress(fmt::format("cmax nccl sweep [{}/{}] {} on {} node{} ({})...", i + 1, steps.size(), s.test, s.nodes,
                         s.nodes == 1 ? "" : "s", s.variant));
    core::ProcessSpec spec{s.argv, std::chrono::seconds(f.step_timeout_s), kMaxLogBytes, s.env};
    auto outcome = run_step(spec);
    json sj{{"step", name}, {"test", s.test}, {"nodes", s.nodes},
            {"variant", s.variant}, {"argv", s.argv}, {"env", s.env}, {"log", log.string()}};
    if (!outcome) {
      sj["error"] = outcome.error().message;
      steps_json.push_back(sj);
      partial = true;
      continue;
    }
    core::ProcessResult* r = &outcome->result;
    if (outcome->interrupted) {
      interrupted = true;
      sj["interrupted"] = true;
    }
    std::ofstream(log) << r->out;
    if (!r->err.empty()) std::ofstream(fs::path(*dir) / (s.log_name + ".stderr")) << r->err;
    sj["exit_code"] = r->exit_code;
    sj["wall_s"] = static_cast<double>(r->wall.count()) / 1e6;
    // The launcher's own words, whenever the step did not give a table: they say why.
    const std::string said = core::trim(r->err).empty() ? std::string()
                                                        : fmt::format("; {} said: {}", s.argv.front(), core::clip(core::trim(r->err), 400));
    if (outcome->interrupted)
      sj["error"] = "interrupted (Ctrl-C or SIGTERM): the step's processes were stopped";
    else if (r->timed_out || r->exit_code != 0)
      sj["error"] = r->timed_out ? fmt::format("timed out after {} s (--step-timeout-s){}", f.step_timeout_s, said)
                                 : fmt::format("exited {}{}", r->exit_code, said.empty() ? std::string(" and printed nothing on stderr") : said);
    auto parsed = nccl::parse_nccl_tests(r->out);
    if (!parsed) {
      if (!sj.contains("error")) sj["error"] = parsed.error().message + said;
      partial = true;
    } else {
      for (std::size_t k = 0; k < parsed->runs.size(); ++k) {
        Analysed a{log.string(), k, std::move(parsed->runs[k])};
        a.label = sj["step"].get<std::string>();
        a.nodes_hint = s.nodes;
        a.variant = s.variant;
        if (a.run.nodes == 0) a.run.nodes = s.nodes;
        // Where the ranks really ran: a "4-node" step whose Rank lines name one host is a one-host
        // run, and scaling is judged on the hosts the log shows (run.nodes), not on the step's name.
        if (!a.run.hosts.empty() && static_cast<int>(a.run.hosts.size()) != s.nodes && k == 0) {
          std::string hosts;
          for (const auto& h : a.run.hosts) hosts += (hosts.empty() ? "" : ",") + h;
          sj["ran_on_hosts"] = a.run.hosts;
          sj["warning"] = fmt::format("asked for {} node(s), the ranks ran on {} host(s) ({}): judged as {} node(s)",
                                      s.nodes, a.run.hosts.size(), core::clip(hosts, 200), a.run.hosts.size());
          fmt::print(stderr, "cmax nccl sweep: {}: {}\n", sj["step"].get<std::string>(), sj["warning"].get<std::string>());
        }
        runs.push_back(std::move(a));
      }
      if (sj.contains("error")) partial = true;
    }
    // Off a terminal, one line per finished step (no progress line there).
    if (!tty)
      fmt::print(stderr, "cmax nccl sweep: [{}/{}] {}: {:.1f} s, {}\n", i + 1, steps.size(), sj["step"].get<std::string>(),
                 sj["wall_s"].get<double>(), sj.contains("error") ? sj["error"].get<std::string>() : "ok");
    steps_json.push_back(sj);
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  if (g_sweep_stop) interrupted = true;
  progress("");
  if (interrupted)
    fmt::print(stderr, "cmax nccl sweep: interrupted after {} of {} steps; what was measured is analysed and written\n",
               steps_json.size(), steps.size());
  json scaling;
  int code = analyse_all(runs, *refs, *dir, !f.no_charts, scaling);
  if (partial && code == kExitOk) code = kExitPartial;
  if (interrupted) code = kExitPartial;  // a verdict on part of a sweep is no verdict on the sweep
  json recipe_json = json::array();
  for (const auto& fi : findings) recipe_json.push_back({{"level", fi.level}, {"variable", fi.variable}, {"message", fi.message}});
  json report{{"schema", "cmax.nccl/1"}, {"sweep", {{"launcher", o.launcher == nccl::Launcher::kSrun ? "srun" : "mpirun"},
                                                    {"node_counts", o.node_counts}, {"ranks_per_node", o.ranks_per_node},
                                                    {"hosts", o.hosts}, {"reservation", o.reservation},
                                                    {"steps", steps_json}}},
              {"recipe", recipe_json}, {"runs", json::array()}, {"scaling", scaling}, {"exit_code", code}, {"run_dir", *dir},
              {"interrupted", interrupted}, {"notes", notes}, {"kept_steps", kept}};
  for (const auto& a : runs) report["runs"].push_back(run_json(a));
  std::ofstream(fs::path(*dir) / "nccl.json") << report.dump(2) << "\n";
  if (f.json) {
    fmt::print("{}\n", report.dump(2));
  } else {
    for (const auto& fi : findings) fmt::print("recipe {}: {}\n", fi.level, fi.message);
    for (const auto& s : steps_json)
      if (s.contains("error")) fmt::print("{}: {}\n", s["step"].get<std::string>(), s["error"].get<std::string>());
    for (const auto& a : runs) print_run(a);
    for (const auto& s : scaling)
      fmt::print("scaling {}: {}: {}\n", s["group"].get<std::string>(), s["kind"].get<std::string>(), s["detail"].get<std::string>());
    fmt::print("run directory: {} (nccl.json, a log and an SVG chart per step)\n", *dir);
  }
  return code;
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
