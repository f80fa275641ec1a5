#pragma once
// `cmax audit isolation`: what a tenant can reach from here. Plans probes over
// the scopes the user names (plus the metadata address), runs them with bounded
// concurrency, rate and time, and judges each answer into audit findings
// (category security) with the three-way result.

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "audit/audit.h"
#include "core/clock.h"
#include "core/result.h"
#include "core/host.h"
#include "isolation/host_isolation.h"
#include "isolation/kube_checks.h"
#include "isolation/prober.h"
#include "isolation/scope.h"
#include "isolation/services.h"

namespace cmax::isolation {

struct IsolationOptions {
  std::vector<std::string> scopes;  ///< --scope values; may be empty (then only the metadata probe)
  std::vector<std::string> ports;   ///< service keys or port numbers; empty: every default service
  std::size_t max_hosts = kDefaultMaxHosts;
  bool metadata = true;                      ///< probe 169.254.169.254 (--no-metadata turns it off)
  Ipv4 metadata_address = kMetadataAddress;  ///< a test seam; the CLI never changes it
  ProberOptions prober;
  Resolver resolver;                   ///< null: getaddrinfo
  const core::Clock *clock = nullptr;  ///< null: the system clock
  /// Where the Kubernetes permission checks ask; null: they are not_applicable
  /// with kube_off_reason.
  std::optional<KubeCheckOptions> kube;
  std::string kube_off_reason =
      "no Kubernetes API configured (--kube-api, a kubeconfig, or in-cluster service account)";
  /// --egress-canary: one GET to this URL after the probes; empty: not asked (not_applicable).
  std::string egress_canary;
  std::chrono::milliseconds egress_timeout{5000};
  /// The host-side checks (isolation.host.*); false (--no-host): not_applicable.
  bool host_checks = true;
  const core::HostRoot *host = nullptr;  ///< null: the live machine ("/")
  std::optional<HostIsolationEnv> env;   ///< null: this process's (current_env())
};

/// One planned probe: which service on which address (index-aligned with
/// Plan::targets).
struct PlannedProbe {
  const Service *service = nullptr;
  Ipv4 addr = 0;
};

/// What a run will probe. Nothing outside it is touched.
struct Plan {
  std::vector<Scope> scopes;
  std::vector<Ipv4> hosts;                ///< the scopes' addresses, sorted, unique
  std::vector<const Service *> services;  ///< the services probed on `hosts`
  std::vector<const Service *>
      skipped;                        ///< table services left out (not in --ports, --no-metadata)
  const Service *metadata = nullptr;  ///< the metadata service when probed
  Ipv4 metadata_address = kMetadataAddress;
  std::vector<PlannedProbe> probes;
  std::vector<ProbeTarget> targets;
  std::string egress_canary;  ///< the one egress GET, or empty
};

/// Builds the plan; fails on a bad scope, an unknown port, a scope over
/// max_hosts (naming --max-hosts), or a bad --egress-canary URL. Resolves host
/// names (DNS) and nothing else. An empty plan is valid: the host-side checks
/// and the canary still run.
Result<Plan> make_plan(const IsolationOptions &options);

/// The plan for --dry-run: scopes, host count, services with their one request,
/// bounds.
std::string render_plan(const Plan &plan, const ProberOptions &bounds);

/// Pure: findings for a finished run. One per (service, address) that accepted
/// the connection and one summary per service (not_applicable for table
/// services not probed).
std::vector<audit::Finding> judge(const Plan &plan, const ProbeRun &run,
                                  const ProberOptions &bounds);

/// One line per problem worth telling an operator on stderr (unroutable scopes,
/// deadline hit).
std::vector<std::string> run_notes(const Plan &plan, const ProbeRun &run);

/// Plans, probes and judges; the report's findings are judge()'s, its facts
/// describe the run (isolation.hosts, isolation.probes, isolation.wall_ms,
/// ...). Fails only as make_plan fails or when the event loop cannot start.
Result<audit::AuditReport> run_isolation(const IsolationOptions &options,
                                         std::vector<std::string> *notes = nullptr);

}  // namespace cmax::isolation
