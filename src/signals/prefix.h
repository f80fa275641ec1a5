#pragma once
// Line prefixes in front of a kernel message, as dmesg, syslog, journalctl, srun, mpirun and
// /dev/kmsg print them. Pure: string_view in, views into the same line out.
//   0: [ 130.456250] [ T1946] NVRM: Xid ...             srun -l, dmesg, caller id
//   [3] Nov 22 14:56:47 gpu-07 kernel: [ 130.4] ...     MPI rank, syslog ("[N] " is a rank only in front
//                                                       of another prefix; "[123] msg" is a stamp in
//                                                       whole seconds)
//   2024-11-22T14:56:47+0000 gpu-07 kernel: ...         journalctl -o short-iso
//   [Sat Oct 12 18:35:32 2024] NVRM: ...                dmesg -T
//   6,1234,5678901,-;NVRM: ...                          /dev/kmsg record

#include <cstdint>
#include <string_view>

namespace cmax::signals {

struct LineInfo {
  std::string_view message;  ///< the kernel message, all prefixes removed
  std::string_view host;     ///< syslog/journal host field; empty when none
  std::string_view stamp;    ///< the first timestamp as printed; empty when none
  double time = 0;           ///< seconds: since boot (monotonic) or since the epoch (wall)
  bool has_time = false;
  bool wall_clock = false;   ///< time is since the epoch
  int rank = -1;             ///< srun "N: " or MPI "[N]" task, else -1
  int kmsg_prio = -1;        ///< /dev/kmsg record priority (facility << 3 | level), else -1
  std::uint64_t kmsg_seq = 0;
};

/// Strips every known prefix. `assumed_year` dates syslog stamps, which print no year.
LineInfo parse_line_prefix(std::string_view line, int assumed_year);

/// Seconds since the epoch of a civil UTC date and time (no leap seconds).
double epoch_seconds(int year, int month, int day, int hour, int minute, double second);

}  // namespace cmax::signals
