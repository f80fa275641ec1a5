// Storage: a shared filesystem is mounted, and NFS is mounted hard. ClusterMAX category "Storage".

#include <fmt/format.h>

#include "audit/checks/generic.h"
#include "audit/checks/tables.h"

namespace cmax::audit::checks {
namespace {

Verdict pred_nfs_hard(const CheckContext& ctx, const Check& check) {
  const Fact* soft = ctx.facts.find(check.fact);
  if (soft && soft->status == FactStatus::present)
    return verdict(Outcome::warn, soft->value, "hard mounts",
                   "soft NFS mounts return EIO to applications when the server is slow, which corrupts checkpoints");
  return verdict(Outcome::pass, "no soft NFS mount", "hard mounts");
}

std::optional<Verdict> guard_nfs(const CheckContext& ctx, const Check&) {
  if (auto g = unverified_if_not_present(ctx, "storage.fs_types")) return g;
  auto types = ctx.facts.value_or("storage.fs_types");
  if (types.find("nfs") == std::string_view::npos)
    return verdict(Outcome::not_applicable, "no NFS mount", {}, "no NFS filesystem is mounted");
  return std::nullopt;
}

const Check kChecks[] = {
    {"storage.shared_fs", Category::storage, Severity::missing, false, kAnyHarness,
     "A shared filesystem is mounted", "Storage: shared home and data filesystems on every node",
     "Looks in /proc/mounts for NFS, Lustre, GPFS, WEKA, BeeGFS, CephFS, VAST, virtiofs and similar.",
     "Mount the cluster's shared filesystem (home, datasets, checkpoints) on every node.", nullptr, pred_present,
     "storage.shared_mounts", {}, "warn"},
    {"storage.nfs_hard", Category::storage, Severity::config, false, kAnyHarness,
     "NFS mounts are hard mounts", "Storage: shared filesystem configured for reliability",
     "Reads the mount options of NFS mounts in /proc/mounts.",
     "Remount NFS with 'hard' (the default) instead of 'soft'.", guard_nfs, pred_nfs_hard,
     "storage.nfs_soft_mounts"},
};

}  // namespace

std::span<const Check> storage_checks() { return kChecks; }

}  // namespace cmax::audit::checks
