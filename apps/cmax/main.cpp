// cmax: one binary, a table of subcommands. Results go to stdout, logs and errors to stderr.
// Exit codes (docs/exit-codes.md): 0 no fail, 1 a fail, 2 a security fail, 3 usage or environment.

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <csignal>
#include <cstring>
#include <iostream>
#include <string>

#include <fmt/format.h>

#include "apps/cmax/campaign_cmd.h"
#include "apps/cmax/command.h"
#include "audit/audit.h"

namespace cmax::app {

bool stdout_is_tty() { return ::isatty(STDOUT_FILENO) == 1; }

void raise_fd_limit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
}

namespace {

// `cmax report` and `cmax score` build JSON trees of tens of MB (a fleet's results.json, a year of
// SLA months): hundreds of thousands of small allocations, and in a VM every 4 KiB page the heap
// touches first is an expensive fault. glibc backs its heap with transparent huge pages only when
// the tunable is set before the process starts, so these two commands start again once with it
// (measured on a 512-node run: 1.65 s -> 1.0 s). Anything else, or a failed exec, runs as it is.
void reexec_with_huge_page_heap(int argc, char** argv) {
  if (argc < 2 || (std::strcmp(argv[1], "report") != 0 && std::strcmp(argv[1], "score") != 0)) return;
  if (std::getenv("CMAX_HEAP_TUNED")) return;
  std::string tunables = "glibc.malloc.hugetlb=1";
  if (const char* t = std::getenv("GLIBC_TUNABLES"); t && *t) tunables = std::string(t) + ":" + tunables;
  ::setenv("GLIBC_TUNABLES", tunables.c_str(), 1);
  ::setenv("CMAX_HEAP_TUNED", "1", 1);
  ::execv("/proc/self/exe", argv);
}

const Command kCommands[] = {
    {"run", "Rate this cluster: every stage of a plan into one run directory, then the scorecard and report", setup_run},
    {"audit", "Read-only audit against ClusterMAX criteria and version floors", setup_audit},
    {"collect", "This node's facts, kernel-log scan and checks as one JSON document (for cluster runs)", setup_collect},
    {"scan", "Kernel-log signal engine: classify and correlate faults in logs or /dev/kmsg", setup_scan},
    {"check", "Quick node health verdict from the kernel log and probes; Slurm HealthCheckProgram mode", setup_check},
    {"drill", "Fault drills: inject a GPU or node failure and time detection, drain and replacement", setup_drill},
    {"nccl", "NCCL collectives: analyse nccl-tests logs (curve fit, dips, cliffs, scaling) or sweep them", setup_nccl},
    {"endpoint", "Inference endpoints: simulate routing policies and prefix caches over a request trace", setup_endpoint},
    {"sla", "SLA accounting: downtime, availability, credits and cancellation rights per month", setup_sla},
    {"score", "Score the ten ClusterMAX categories from run directories: tier, reasons, what moves it up", setup_score},
    {"report", "Write one self-contained HTML report of run directories: scorecard, findings, charts", setup_report},
    {"floors", "The version floors: show them, or update them from the vendors' security feeds", setup_floors},
    {"version", "Print the cmax version", setup_version},
};

}  // namespace
}  // namespace cmax::app

int main(int argc, char** argv) {
  using namespace cmax::app;
  reexec_with_huge_page_heap(argc, argv);
  // A peer gone mid-write must be a failed write, never a dead cmax: an API server that answers and
  // closes before reading the whole request (kube-apiserver's 401 to a bad token over TLS), a client
  // gone mid-stream (endpoint serve), a server dropping a stream (endpoint bench). Children get the
  // default back (core::run_process resets every signal).
  ::signal(SIGPIPE, SIG_IGN);
  if (argc > 1 && std::strcmp(argv[1], "run") == 0) set_invocation(argc, argv);  // forwarded to its stages
  CLI::App app{
      "cmax tests a GPU cluster the way a rating agency does: a read-only audit against the published\n"
      "ClusterMAX criteria and version floors, kernel-log signals, active health checks, fault drills,\n"
      "NCCL sweeps, inference-endpoint benchmarks, SLA accounting, a transparent scorecard and an HTML\n"
      "report.\n\n"
      "Exit codes: 0 no check failed; 1 a check failed; 2 a security check failed; 3 usage or environment error.",
      "cmax"};
  app.require_subcommand(1);
  app.fallthrough();
  std::vector<std::pair<CLI::App*, Runner>> runners;
  for (const auto& c : kCommands) {
    CLI::App* sub = app.add_subcommand(std::string(c.name), std::string(c.summary));
    runners.emplace_back(sub, c.setup(*sub));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "cmax: " << e.what() << "\nRun 'cmax --help' or 'cmax COMMAND --help' for usage.\n";
    return cmax::audit::kExitUsage;
  }
  for (auto& [sub, runner] : runners)
    if (sub->parsed()) return runner();
  return cmax::audit::kExitUsage;
}
