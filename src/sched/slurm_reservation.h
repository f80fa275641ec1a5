#pragma once
// Pure parsers for a Slurm reservation as `scontrol -o show reservation NAME` prints it, and for
// Slurm's hostlist syntax ("n[1-3,5],spare1"). No I/O; string_view in, value out.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace cmax::sched {

/// The most names expand_hostlist produces; a longer expansion is an error, not an allocation.
inline constexpr std::size_t kMaxHostlistNames = 100000;

/// One reservation, as Slurm printed it. A plain value; cheap to copy.
struct Reservation {
  std::string name;
  std::vector<std::string> nodes;  ///< Nodes= expanded, in Slurm's order; empty for "(null)"
  int node_cnt = 0;                ///< NodeCnt=, which may differ from nodes.size() mid-change
  std::vector<std::string> flags;  ///< "REPLACE_DOWN", "SPEC_NODES", ... in printed order
  std::string state;               ///< "ACTIVE" or "INACTIVE", verbatim
  std::string start_time;          ///< as printed ("2026-12-03T07:30:00"); empty when not said
  std::string end_time;            ///< as printed; empty when not said
  std::string partition;           ///< PartitionName=; empty for "(null)"
  std::vector<std::string> users;     ///< Users=, "-name" entries mean "all but"; empty: not said
  std::vector<std::string> accounts;  ///< Accounts=; empty for "(null)"

  /// True when `flag` ("REPLACE_DOWN") is among the flags.
  bool has_flag(std::string_view flag) const;
  /// True when `node` is one of the reservation's nodes.
  bool contains(std::string_view node) const;
};

/// Expands a Slurm hostlist: comma-separated names, each with zero or more bracketed range lists
/// ("n[1-3,5]", "gpu[01-10]" keeps the width of the lower bound, "r[1-2]n[1-2]" is a product).
/// The empty string is an empty list. Unbalanced or nested brackets, a non-numeric or descending
/// range, an empty name, spaces or control characters, or more than kMaxHostlistNames names is an
/// error.
Result<std::vector<std::string>> expand_hostlist(std::string_view hostlist);

/// Parses the one line `scontrol -o show reservation NAME` prints (Key=Value pairs). A trailing
/// newline is fine; "Reservation X not found", "No reservations in the system", several lines, a
/// line that does not start with ReservationName=, a missing Nodes=, NodeCnt= or State=, or a bad
/// hostlist is an error.
Result<Reservation> parse_scontrol_reservation(std::string_view text);

/// Parses everything `scontrol -o show reservation` prints: one line per reservation, or "No
/// reservations in the system" (an empty list). A line that is not a reservation is an error.
Result<std::vector<Reservation>> parse_scontrol_reservations(std::string_view text);

/// Removes from `nodes` every node held by an ACTIVE reservation of `reservations`: sinfo calls such
/// a node idle, but a job outside the reservation waits for it for ever (ReqNodeNotAvail). Returns
/// how many were removed.
std::size_t drop_reserved_nodes(std::vector<std::string>& nodes, const std::vector<Reservation>& reservations);

/// Whether `user` may run jobs in `r` as far as its Users= list says (accounts are not known
/// here): true when listed, when the list only excludes others ("-bob"), or when it names no
/// users (an Accounts= reservation: Slurm decides).
bool user_may_use(const Reservation& r, std::string_view user);

}  // namespace cmax::sched
