#pragma once
// The drill's real world: Slurm through scontrol and srun, or Kubernetes through its API server,
// and this machine's /dev/kmsg.

#include <memory>

#include "core/result.h"
#include "drill/run_options.h"
#include "drill/site.h"
#include "sched/kubernetes.h"
#include "sched/slurm.h"

namespace cmax::drill {

/// The Kubernetes options of `options`: in-cluster unless kube_api is given. `timeout_ms` bounds
/// each request; `dry_run` makes the scheduler's mutating calls plans.
struct KubeFlags {
  std::string api, token, ca;
};
Result<sched::KubernetesOptions> kube_options(const KubeFlags& flags, int timeout_ms, bool dry_run);

/// This machine's host name, without its domain.
std::string short_hostname();

/// The site for `options` (the scheduler it names). On Slurm the slurm.conf every child reads is
/// resolved first (the flag, else SLURM_CONF): a named file that is missing is an error at once.
/// `dry_run`: the scheduler's resume and drain only say what they would do.
Result<std::unique_ptr<Site>> make_live_site(const RunOptions& options, const KubeFlags& kube,
                                             int scontrol_timeout_ms, bool dry_run = false);

}  // namespace cmax::drill
