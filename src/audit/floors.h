#pragma once
// Version floors as data: data/min-versions.json (schema cmax.min-versions/1), embedded in the
// binary at build time and replaceable with --min-versions FILE. See docs/min-versions.md.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/version.h"

namespace cmax::audit {

struct CveRef {
  std::string id;
  std::string severity;
  std::string summary;
  std::vector<std::string> fixed;
};

/// A release train (NVIDIA branch "550", Slurm "23.11") with its own floor.
struct Train {
  core::Version train;
  core::Version floor;
  std::vector<std::string> cves;
};

struct ComponentFloor {
  std::string component;
  std::string description;
  std::string kind;  ///< "security" or "lifecycle"
  std::vector<Train> trains;
  std::optional<core::Version> floor;  ///< for versions newer than every train, or when none
  std::vector<CveRef> cves;
  std::string source;
  std::string date;
  std::string fix_available;  ///< YYYY-MM-DD the fixed release shipped (default: `date`)
  /// A distro's own package in which its security tracker says the floor's fixes were backported:
  /// "debian-12" -> "1.1.5+ds1-1+deb12u3" (dpkg order). Where one exists for the host's distro the
  /// package is judged against it; elsewhere the upstream release the package carries is.
  std::map<std::string, std::string> distros;
  std::string distros_source;  ///< the tracker that says so
  /// A floor per hardware model where the fix depends on it (ROCm per AMD Instinct model:
  /// "MI300X" -> 6.4.2). Judged with the model's floor; a model not listed has no floor here.
  std::map<std::string, core::Version> models;
};

struct KernelCve {
  std::string id;
  std::string summary;
  std::string severity;
  core::Version introduced;
  std::vector<core::Version> fixed;           ///< first fixed per stable series, ascending
  /// "debian-12" -> fixed package version; "ubuntu-24.04/linux-aws" for a kernel flavour built from
  /// another source package than the release's own "linux".
  std::map<std::string, std::string> distros;
  std::string source;
  /// "" for every kernel; "kvm-host" when only a kernel that runs guests (has /dev/kvm) is at risk.
  std::string applies;
};

struct Floors {
  std::string updated;
  /// Floors older than this many days warn (security.floors.fresh): bulletins since are not judged.
  int max_age_days = 45;
  /// For this many days after a fix became available, a version below its floor warns instead of
  /// failing: the rollout window (ComponentFloor::fix_available).
  int grace_days = 3;
  std::string origin;  ///< "built-in" or the file path
  std::vector<ComponentFloor> components;
  std::vector<KernelCve> kernel_cves;

  const ComponentFloor* find(std::string_view component) const;
};

/// Parses a min-versions document; errors name `origin` and the entry at fault.
Result<Floors> parse_floors(std::string_view json_text, std::string origin);
/// The floors compiled into this binary.
Result<Floors> builtin_floors();
/// The text of data/min-versions.json as compiled into this binary.
std::string_view builtin_floors_text();
/// The text of a min-versions file (the error names the path and the --min-versions flag).
Result<std::string> read_floors_text(const std::string& path);
/// Reads and parses a min-versions file.
Result<Floors> load_floors_file(const std::string& path);

/// How an observed version stands against a component's floors.
struct FloorVerdict {
  enum class Status { ok, below, unsupported_train };
  Status status = Status::ok;
  std::string train;  ///< the matching train, if any
  std::string floor;  ///< the floor applied ("" for an unsupported train)
  std::string supported;  ///< for unsupported trains: the trains that are supported
  std::vector<std::string> cves;  ///< CVEs the floor fixes
};
FloorVerdict evaluate_floor(const ComponentFloor& floor, const core::Version& observed);

/// How a running kernel stands against one kernel CVE.
struct KernelCveVerdict {
  enum class Status { not_affected, fixed, vulnerable, unknown };
  Status status = Status::unknown;
  std::string basis;  ///< "debian-12 package 6.1.76-1 >= 6.1.76-1" or "upstream 6.6.10 < 6.6.15"
};
/// `upstream` is the kernel release ("6.1.0-28-amd64"); `distro` e.g. "debian-12" and
/// `package_version` the distro kernel package version when known; `source` the distro's source
/// package of this kernel ("linux-aws"; "" or "linux" for the release's own kernel). A fix recorded
/// for the release's own kernel is never applied to another flavour's version line.
KernelCveVerdict evaluate_kernel_cve(const KernelCve& cve, const core::Version& upstream,
                                     std::string_view distro, std::string_view package_version,
                                     std::string_view source = {});

/// The Ubuntu source package a running kernel comes from: "6.8.0-1057-aws" -> "linux-aws",
/// "6.8.0-124-generic" -> "linux", "6.8.0-124-generic" with package "6.8.0-124.124~22.04.1" ->
/// "linux-hwe-6.8". "" for other distros (their flavours share one source package).
std::string kernel_source_package(std::string_view distro, std::string_view release, std::string_view package_version);

}  // namespace cmax::audit
