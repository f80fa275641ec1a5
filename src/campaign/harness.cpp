#include "campaign/harness.h"

#include <unistd.h>

#include <cstdlib>
#include <vector>

#include <fmt/format.h>

#include "core/process.h"
#include "sched/slurm.h"

namespace cmax::campaign {

HarnessPick pick_harness(const HarnessSigns& s) {
  if (!s.job_id.empty()) return {"slurm", fmt::format("inside Slurm allocation {}", s.job_id)};
  std::vector<std::string> missing;
  if (!s.sinfo) missing.push_back("sinfo is not on PATH");
  if (!s.srun) missing.push_back("srun is not on PATH");
  if (!s.conf_readable)
    missing.push_back(fmt::format("{} is not readable{}", s.conf, s.conf_named ? "" : " (and SLURM_CONF is not set)"));
  if (missing.empty()) return {"slurm", fmt::format("sinfo and srun on PATH and {} readable", s.conf)};
  return {"standalone", fmt::format("no Slurm cluster found: {}", fmt::join(missing, ", "))};
}

Result<HarnessSigns> read_harness_signs(const std::string& slurm_conf_flag) {
  auto named = sched::effective_slurm_conf(slurm_conf_flag);
  if (!named) return Unexpected<Error>{named.error()};
  HarnessSigns s;
  if (const char* job = std::getenv("SLURM_JOB_ID"); job && *job) {
    s.job_id = job;
    return s;
  }
  s.conf_named = !named->empty();
  s.conf = named->empty() ? "/etc/slurm/slurm.conf" : *named;
  s.sinfo = core::find_program("sinfo").has_value();
  s.srun = core::find_program("srun").has_value();
  s.conf_readable = ::access(s.conf.c_str(), R_OK) == 0;
  return s;
}

}  // namespace cmax::campaign
