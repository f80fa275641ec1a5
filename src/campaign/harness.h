#pragma once
// Which harness `cmax run --harness auto` uses: Slurm inside an allocation or where a slurm.conf
// and sinfo/srun are present, else this machine alone, saying what was missing. Kubernetes is only
// ever chosen by the flag.

#include <string>

#include "core/result.h"

namespace cmax::campaign {

/// What the choice looks at on this host.
struct HarnessSigns {
  std::string job_id;          ///< SLURM_JOB_ID; "" outside an allocation
  std::string conf;            ///< the slurm.conf that applies
  bool conf_named = false;     ///< conf came from --slurm-conf or SLURM_CONF (not Slurm's default)
  bool conf_readable = false;  ///< conf can be read
  bool sinfo = false, srun = false;  ///< on PATH
};

/// The harness and why ("slurm" or "standalone").
struct HarnessPick {
  std::string harness, why;
};

/// Slurm inside an allocation, or with sinfo, srun and a readable slurm.conf; else standalone,
/// with what was missing. Pure.
HarnessPick pick_harness(const HarnessSigns& signs);

/// Reads this host's signs: SLURM_JOB_ID, sinfo and srun on PATH, and the slurm.conf named by
/// `slurm_conf_flag` or SLURM_CONF (else /etc/slurm/slurm.conf). A named slurm.conf that does not
/// exist is an error, not a reason to fall back: the user meant a cluster.
Result<HarnessSigns> read_harness_signs(const std::string& slurm_conf_flag);

}  // namespace cmax::campaign
