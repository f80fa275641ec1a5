#pragma once
// The audit: collect facts from a host, judge them with the check table, return the findings.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "audit/facts.h"
#include "audit/floors.h"
#include "audit/model.h"
#include "core/clock.h"
#include "core/result.h"

namespace cmax::audit {

struct AuditOptions {
  std::string host_root = "/";
  std::optional<std::string> min_versions_file;  ///< nullopt: the built-in floors
  std::optional<Harness> harness;                ///< nullopt: detect
  std::chrono::milliseconds command_timeout{3000};
  std::optional<std::string> path_env;  ///< PATH for tools; nullopt: this process's
  const core::Clock* clock = nullptr;   ///< nullptr: the system clock
  std::optional<std::string> enroot_import_image;  ///< run `enroot import` of this image (pulls it)
  std::chrono::milliseconds enroot_import_timeout{300000};
};

struct AuditReport {
  std::string started_at;   ///< RFC 3339 UTC
  std::string finished_at;
  std::chrono::microseconds duration{0};
  std::string host;         ///< hostname of the audited host
  std::string host_root;
  Harness harness = kStandalone;
  std::string floors_origin;
  std::string floors_updated;
  Facts facts;
  std::vector<Finding> findings;
};

/// Loads the floors (built-in or file) as the options say.
Result<Floors> load_floors(const AuditOptions& options);

/// Runs the whole audit. Fails only for environment errors (bad floors file, missing host root);
/// every problem with the host itself becomes a finding.
Result<AuditReport> run_audit(const AuditOptions& options);

/// The harness these facts describe: Slurm when a slurm.conf and Slurm's client tools are present,
/// Kubernetes when running in a pod or a kubelet config is present, else standalone. (Cluster-wide
/// harnesses arrive with `cmax run` across a cluster; this is the node-level view.)
Harness detect_harness(const Facts& facts);

/// Documented exit codes: 0 no fail, 1 a fail, 2 a security fail. (3 is usage/environment.)
int exit_code_for(const std::vector<Finding>& findings);

inline constexpr int kExitOk = 0;
inline constexpr int kExitFail = 1;
inline constexpr int kExitSecurityFail = 2;
inline constexpr int kExitUsage = 3;

}  // namespace cmax::audit
