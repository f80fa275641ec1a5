// cmax audit isolation --scope CIDR|HOST... [--ports LIST] [--kube-api URL] [--dry-run] [--json]
// What a tenant can reach from here: probes the named scopes and the metadata
// address, and asks the Kubernetes API what this identity may do.

#include "apps/cmax/cmd_audit_isolation.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>

#include "apps/cmax/audit_flags.h"
#include "isolation/isolation.h"
#include "report/audit_json.h"
#include "report/run_dir.h"
#include "report/sarif.h"
#include "report/terminal.h"
#include "sched/kubeconfig.h"
#include "sched/kubernetes.h"
#include "sched/kubernetes_parse.h"

namespace cmax::app {
namespace {

struct IsolationState {
  std::vector<std::string> scopes;
  std::vector<std::string> ports;
  std::size_t max_hosts = isolation::kDefaultMaxHosts;
  int concurrency = 256;
  int timeout_ms = 1000;
  int deadline_s = 120;
  double rate = 4000;
  bool no_metadata = false;
  bool dry_run = false;
  std::string sarif_path;
  std::string out;  ///< run directory: isolation.json there too
  std::string kube_api;
  std::string kube_token_file;
  std::string kube_ca_file;
  std::string kube_namespace;
  std::string kubeconfig;
  std::string kube_context;
  bool no_kube = false;
  std::string egress_canary;
  bool no_host = false;
  AuditFlags render;
};

constexpr const char *kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

bool readable(const std::string &path) { return static_cast<bool>(std::ifstream(path)); }

// The service account's namespace file, else "default".
std::string default_namespace() {
  std::ifstream in(std::string(kServiceAccountDir) + "/namespace");
  std::string ns;
  if (in) std::getline(in, ns);
  while (!ns.empty() && (ns.back() == '\n' || ns.back() == '\r' || ns.back() == ' '))
    ns.pop_back();
  return ns.empty() ? "default" : ns;
}

// Where the Kubernetes checks ask, in kubectl's order: --kube-api; else --kubeconfig, $KUBECONFIG
// or ~/.kube/config (when it exists); else the in-cluster service account; else nowhere
// (not_applicable). An error for --kube-api, --kubeconfig or --kube-context values that cannot
// work; a default kubeconfig that cannot be used makes the checks not_applicable with a note.
Result<void> set_kube(const IsolationState &s, isolation::IsolationOptions &o,
                      std::vector<std::string> &notes) {
  if (s.no_kube) {
    o.kube_off_reason = "not asked: --no-kube";
    return {};
  }
  sched::KubernetesOptions api;
  std::string config_ns;
  const bool explicit_config = !s.kubeconfig.empty() || !s.kube_context.empty();
  auto files = sched::kubeconfig_files(s.kubeconfig, std::getenv("KUBECONFIG"), std::getenv("HOME"));
  const bool config_exists =
      std::any_of(files.begin(), files.end(), [](const std::string &f) { return readable(f); });
  if (s.kube_api.empty() && (explicit_config || config_exists)) {
    auto choice = sched::load_kubeconfig(files, s.kube_context);
    if (!choice) {
      if (explicit_config) return Unexpected<Error>{choice.error()};
      notes.push_back(fmt::format("{}; the Kubernetes checks are not asked (pass --kube-api, or --no-kube)",
                                  choice.error().message));
      o.kube_off_reason = "the kubeconfig found cannot be used: " + choice.error().message;
      return {};
    }
    api = sched::to_options(*choice);
    if (auto e = sched::kube::parse_api_url(api.api_url); !e)
      return fail("kubeconfig {}: server {}: {}", choice->source, api.api_url, e.error().message);
    if (!s.kube_token_file.empty()) {
      api.token_path = s.kube_token_file;
      api.token.clear();
    }
    if (!s.kube_ca_file.empty()) {
      api.ca_path = s.kube_ca_file;
      api.ca_pem.clear();
    }
    config_ns = choice->ns;
    notes.push_back(fmt::format("asking the Kubernetes API {} ({})", api.api_url, choice->source));
  } else if (!s.kube_api.empty()) {
    api.api_url = s.kube_api;
    if (auto e = sched::kube::parse_api_url(api.api_url); !e)
      return fail("--kube-api {}: {}", s.kube_api, e.error().message);
    std::string sa_token = std::string(kServiceAccountDir) + "/token";
    api.token_path = !s.kube_token_file.empty() ? s.kube_token_file
                     : readable(sa_token)       ? sa_token
                                                : std::string();
    if (!s.kube_ca_file.empty()) api.ca_path = s.kube_ca_file;
  } else if (std::getenv("KUBERNETES_SERVICE_HOST") != nullptr) {
    auto in = sched::KubernetesOptions::in_cluster();
    if (!in) return Unexpected<Error>{in.error()};
    api = std::move(*in);
    if (!s.kube_token_file.empty()) api.token_path = s.kube_token_file;
    if (!s.kube_ca_file.empty()) api.ca_path = s.kube_ca_file;
  } else {
    return {};
  }
  isolation::KubeCheckOptions kube;
  kube.api = std::move(api);
  kube.api.timeout = std::chrono::milliseconds(std::max(s.timeout_ms, 2000));
  kube.ns = !s.kube_namespace.empty() ? s.kube_namespace
            : !config_ns.empty()       ? config_ns
                                       : default_namespace();
  o.kube = std::move(kube);
  return {};
}

int run(const IsolationState &s) {
  isolation::IsolationOptions o;
  o.scopes = s.scopes;
  o.ports = s.ports;
  o.max_hosts = s.max_hosts;
  o.metadata = !s.no_metadata;
  o.prober.concurrency = s.concurrency;
  o.prober.connect_timeout = std::chrono::milliseconds(s.timeout_ms);
  o.prober.io_timeout = std::chrono::milliseconds(s.timeout_ms);
  o.prober.deadline = std::chrono::seconds(s.deadline_s);
  o.prober.rate_per_s = s.rate;
  o.egress_canary = s.egress_canary;
  o.host_checks = !s.no_host;
  std::vector<std::string> notes;
  if (auto k = set_kube(s, o, notes); !k) return environment_error(k.error().message);
  for (const auto &n : notes) fmt::print(stderr, "cmax: {}\n", n);
  notes.clear();
  if (s.dry_run) {
    auto plan = isolation::make_plan(o);
    if (!plan) return environment_error(plan.error().message);
    fmt::print("{}", isolation::render_plan(*plan, o.prober));
    if (o.kube)
      fmt::print(
          "Kubernetes: would ask {} (namespace {}): a SelfSubjectRulesReview per namespace, {} "
          "SelfSubjectAccessReviews, {} pod creates with dryRun=All (nothing is created), and lists "
          "StorageClasses and the namespace's PersistentVolumeClaims (ReadWriteMany storage)\n",
          o.kube->api.api_url, o.kube->ns, isolation::dangerous_permissions().size(),
          isolation::risky_pods().size());
    else
      fmt::print("Kubernetes: not asked: {}\n", o.kube_off_reason);
    if (o.host_checks)
      fmt::print(
          "Host: would read /dev/nvidia* (each opened and closed at once), "
          "/etc/nvidia-container-runtime/config.toml, /sys/class/infiniband/*/ports/*/pkeys, "
          "/proc/*/ns/net and status, /proc/mounts, /etc/munge and /run/munge (nothing is changed)\n");
    else
      fmt::print("Host: not read: --no-host\n");
    return audit::kExitOk;
  }
  raise_fd_limit();  // one socket per probe in flight
  auto report = isolation::run_isolation(o, &notes);
  if (!report) return environment_error(report.error().message);
  for (const auto &n : notes) fmt::print(stderr, "cmax: {}\n", n);
  int code = audit::exit_code_for(report->findings);
  if (!s.sarif_path.empty()) {
    std::ofstream out(s.sarif_path, std::ios::binary | std::ios::trunc);
    if (!out || !(out << report::render_sarif(*report)))
      return environment_error(
          fmt::format("write SARIF to {}: cannot write the file", s.sarif_path));
  }
  if (!s.out.empty()) {
    auto w = report::write_stage_document(s.out, "isolation.json", report::audit_to_json(*report, code));
    if (!w) return environment_error(w.error().message);
  }
  if (s.render.json)
    fmt::print("{}", report::audit_to_json(*report, code));
  else
    fmt::print("{}", report::render_audit_terminal(*report, code, to_terminal_options(s.render)));
  return code;
}

}  // namespace

SubcommandRunner setup_audit_isolation(CLI::App &audit) {
  auto s = std::make_shared<IsolationState>();
  auto *sub = audit.add_subcommand(
      "isolation", "What a tenant can reach from here: probe named scopes (read-only)");
  sub->description(
      "Probes the scopes you name (and the link-local metadata address 169.254.169.254) for\n"
      "services a tenant should not reach: TCP connect, then one unauthenticated read-only\n"
      "request where a service is found (GET over HTTP or TLS; for IPMI one session-less UDP\n"
      "query). Nothing outside --scope is probed; credentials are never sent or requested.\n"
      "On this host it also reads (never changes) what isolates the tenant: GPU device nodes it can\n"
      "open beyond its allocation, the container toolkit's NVIDIA_VISIBLE_DEVICES rule, InfiniBand\n"
      "partition keys, the network namespace and /proc visibility, and munge's key and socket.\n"
      "With --egress-canary URL, one GET to a server you own tells whether egress is open.\n"
      "With --kube-api, a kubeconfig (--kubeconfig, $KUBECONFIG, ~/.kube/config), or inside a pod,\n"
      "it also asks the Kubernetes API what this identity may do\n"
      "(SelfSubjectRulesReview, SelfSubjectAccessReviews, pod creates with dryRun=All: nothing "
      "is created).\n"
      "A probe that could not run is unverified, never a pass.\n"
      "Exit codes: 0 no fail; 1 a check failed; 2 a security "
      "check failed; 3 usage or environment error.");
  sub->add_option("--scope", s->scopes,
                  "IPv4 address, CIDR block or host name to probe (repeat, or a,b)")
      ->delimiter(',');
  sub->add_option("--ports", s->ports,
                  "Ports or service names to probe, e.g. 3000,9090 or "
                  "grafana,ray (default: every default "
                  "service; redfish and ipmi are opt-in, for BMC ranges)")
      ->delimiter(',');
  sub->add_option("--max-hosts", s->max_hosts, "Refuse scopes holding more addresses than this")
      ->check(CLI::Range(1, 1 << 20));
  sub->add_option("--concurrency", s->concurrency, "Connects in flight at most")
      ->check(CLI::Range(1, 4096));
  sub->add_option("--timeout-ms", s->timeout_ms,
                  "Per-probe connect timeout, and again for the answer")
      ->check(CLI::Range(50, 60000));
  sub->add_option("--deadline-s", s->deadline_s, "The whole run at most this long")
      ->check(CLI::Range(1, 3600));
  sub->add_option("--rate", s->rate, "Connects started per second at most")
      ->check(CLI::Range(1.0, 100000.0));
  sub->add_flag("--no-metadata", s->no_metadata, "Do not probe 169.254.169.254");
  sub->add_flag("--dry-run", s->dry_run,
                "Print the plan (addresses, ports, the request per service) "
                "and probe nothing");
  sub->add_option("--sarif", s->sarif_path,
                  "Also write the security findings as SARIF 2.1.0 to FILE");
  sub->add_option("--out", s->out,
                  "Also write isolation.json (schema cmax.audit/1) into this run directory (created if missing);\n"
                  "cmax score and cmax report read it beside the run's results.json");
  sub->add_option("--kube-api", s->kube_api,
                  "Kubernetes API server to ask what this identity may do (default: the "
                  "in-cluster service account's, when running in a pod)");
  sub->add_option("--kube-token-file", s->kube_token_file,
                  "Bearer token to ask with (default: the service account's token)");
  sub->add_option("--kube-ca-file", s->kube_ca_file,
                  "CA bundle of the API server (default: the service account's ca.crt)");
  sub->add_option("--namespace", s->kube_namespace,
                  "The tenant's namespace (default: the kubeconfig context's, else the service account's, else "
                  "default)");
  sub->add_option("--kubeconfig", s->kubeconfig,
                  "kubeconfig to take the API server, CA and token from (default: $KUBECONFIG, "
                  "else ~/.kube/config when it exists; bearer tokens only)");
  sub->add_option("--kube-context", s->kube_context, "kubeconfig context (default: current-context)");
  sub->add_flag("--no-kube", s->no_kube, "Do not ask the Kubernetes API anything");
  sub->add_flag("--no-host", s->no_host,
                "Skip the host-side checks (GPU device nodes beyond the allocation, the container "
                "toolkit's envvar rule, IB partitions, network and /proc namespaces, munge)");
  sub->add_option("--egress-canary", s->egress_canary,
                  "http(s) URL of a server you own: one GET (no credentials, no redirects, the "
                  "environment's proxy honoured) to learn whether this tenant reaches it");
  add_render_flags(*sub, s->render);
  return {sub, [s] { return run(*s); }};
}

}  // namespace cmax::app
