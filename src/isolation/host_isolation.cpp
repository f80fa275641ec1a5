// Judging the host isolation facts. Pure: every input is in HostIsolationFacts. Evidence that was
// not read gives unverified with the error; a check whose subject is absent gives not_applicable.
// One file per family of checks: host_gpu.cpp, host_network.cpp, host_users.cpp.

#include "isolation/host_isolation.h"

#include "isolation/host_judge.h"

namespace cmax::isolation {

std::vector<audit::Finding> judge_host_isolation(const HostIsolationFacts& facts) {
  using namespace host_judge;
  return {judge_gpu(facts),  judge_toolkit(facts),   judge_ib(facts),          judge_netns(facts),
          judge_proc(facts), judge_munge_key(facts), judge_munge_socket(facts)};
}

}  // namespace cmax::isolation
