#pragma once
// InfiniBand ports from sysfs: <root>/<device>/ports/<n>/{state,phys_state,counters/link_downed}.
// Pure parsers and a pure diff over readings carry the logic; IbProbe only reads the files.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"
#include "probes/probe.h"

namespace cmax::probes {

/// The kernel's enum ib_port_state number for ACTIVE (drivers/infiniband/core/sysfs.c, state).
inline constexpr int kIbPortActive = 4;
/// The kernel's enum ib_port_phys_state number for LinkUp (phys_state).
inline constexpr int kIbPhysLinkUp = 5;

/// A sysfs "<number>: <name>" value. `name` points into the parsed text.
struct IbNumberedName {
  int number = 0;
  std::string_view name;
};

/// Parses a port's `state` or `phys_state` file ("4: ACTIVE\n", "2: Polling\n", "7: Phy Test\n");
/// an error names what is wrong (empty, no number, no ": ", no name).
Result<IbNumberedName> parse_ib_numbered_name(std::string_view text);

/// Parses a counter file such as counters/link_downed ("3\n"): a whole unsigned decimal.
Result<std::uint64_t> parse_ib_counter(std::string_view text);

/// One port as read; a field is empty when its file was missing, unreadable or malformed.
struct IbPortReading {
  std::string port;  ///< "mlx5_0/1" (device/port)
  std::optional<int> state;
  std::string state_name;  ///< "ACTIVE", "DOWN"
  std::optional<int> phys_state;
  std::string phys_state_name;  ///< "LinkUp", "Polling"
  std::optional<std::uint64_t> link_downed;
};

/// Every port found under the root at one moment.
struct IbReading {
  std::vector<IbPortReading> ports;  ///< sorted by `port`
  bool complete = true;  ///< false when the budget ran out: missing ports were not looked at
};

/// What the diff remembers of one port between readings.
struct IbPortMemory {
  bool up = false;             ///< ACTIVE and LinkUp at the last judged reading
  bool reported_down = false;  ///< an ib_port_down was reported and no ib_port_up closed it yet
  std::optional<std::uint64_t> link_downed;  ///< the baseline for the next comparison
};

/// The diff's state across readings: empty before the first one.
struct IbState {
  std::map<std::string, IbPortMemory> ports;
};

/// The findings one reading produces and the state to keep for the next.
struct IbDiff {
  std::vector<Finding> findings;
  IbState next;
};

/// Compares a reading with what came before. Pure. Rules:
/// - ib_port_down when a port leaves ACTIVE/LinkUp (or vanishes while up); ib_port_up when a
///   port reported down is ACTIVE and LinkUp again. A port whose state or phys_state could not be
///   read keeps its last judgement.
/// - First reading (and ports that appear later): a baseline. Ports already down are reported only
///   when listed in `expect` ("mlx5_0/1"), because unused ports sit DOWN forever; an expected port
///   that is missing from a complete reading is down too.
/// - ib_link_downed when link_downed rose (code = the increase); a counter that fell was reset
///   and becomes the new baseline without a finding.
IbDiff diff_ib(const IbState& before, const IbReading& now, const std::vector<std::string>& expect);

/// Reads every port under `root`. A root that does not exist gives an empty reading (no IB on this
/// host); a root that cannot be listed is an error. Files that cannot be read leave their field
/// empty. Stops reading further ports once `deadline` has passed (those ports are left out).
Result<IbReading> read_ib_ports(const std::string& root,
                                std::chrono::steady_clock::time_point deadline);

/// Options for IbProbe.
struct IbOptions {
  std::string root = "/sys/class/infiniband";  ///< tests point this at a tree of the same files
  std::vector<std::string> expect;  ///< ports that must be up from the start ("mlx5_0/1")
};

/// The "ib" probe: reads the sysfs port files on each poll and reports changes (diff_ib).
/// sysfs reads are synchronous; the budget is checked between ports. Not thread-safe.
class IbProbe final : public Probe {
 public:
  /// Errors for an `expect` entry that is not "<device>/<port number>".
  static Result<IbProbe> create(IbOptions options);

  std::string_view name() const override { return "ib"; }
  Result<std::vector<Finding>> poll(std::chrono::milliseconds budget) override;

 private:
  explicit IbProbe(IbOptions options) : options_(std::move(options)) {}

  IbOptions options_;
  IbState state_;
};

}  // namespace cmax::probes
