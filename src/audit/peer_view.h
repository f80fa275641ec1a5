#pragma once
// The ClusterMAX CLI's verdict beside cmax's. data/peers/clustermax.json (embedded) maps each of
// the peer's checks to cmax's and records, for the checks where the two tools follow different
// policies, the peer's rule (its floors, its ladder, its sysctl wish). From the same facts this
// predicts the peer's result; where it differs from cmax's the finding carries it and the reason.

#include <string>
#include <string_view>
#include <vector>

#include "audit/facts.h"
#include "audit/model.h"
#include "core/result.h"

namespace cmax::audit {

/// One peer check as the map describes it.
struct PeerCheck {
  std::string key;       ///< "securityVersions.runc.status"
  std::string profile;   ///< "versions"
  std::string harness;   ///< "all", "slurm", "slurm,k8s", "k8s"
  bool in_pinned = true;  ///< present in the pinned release
  std::vector<std::string> cmax;  ///< cmax check ids
  std::string relation;  ///< equivalent, policy, partial, meta
  std::string note;
};

struct PeerMap {
  std::string peer, pinned;
  std::vector<PeerCheck> checks;
};

/// The embedded map (data/peers/clustermax.json); errors name the entry at fault.
Result<PeerMap> builtin_peer_map();
Result<PeerMap> parse_peer_map(std::string_view json_text, std::string_view origin);

/// "PASS", "WARNING", "FAIL" or "SKIPPED": how the peer reports what cmax calls `o` (unverified is
/// WARNING, the peer's "unknown").
std::string_view peer_result_of(Outcome o);

/// Fills peer_check/peer_result/peer_why of the findings whose peer verdict, predicted from
/// `facts` by the peer's recorded policy, differs from cmax's. Never fails: a map that does not
/// parse annotates nothing.
void annotate_peer_view(std::vector<Finding>& findings, const Facts& facts);

}  // namespace cmax::audit
