#pragma once
// Pure parsers for the other Slurm objects a drill watches for the replacement: a partition a spare
// may join, and a job that may be requeued onto another node. `scontrol -o show partition P` and
// `scontrol -o show job J` lines in, values out; no I/O.

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace cmax::drill {

/// A partition: its name and nodes.
struct Partition {
  std::string name;
  std::vector<std::string> nodes;  ///< Nodes= expanded; empty for "(null)"
  std::string state;               ///< "UP", "DOWN", "DRAIN", "INACTIVE"
  bool contains(std::string_view node) const;
};

/// A job, as far as a replacement can be told from it.
struct Job {
  std::string id;                  ///< JobId=
  std::string state;               ///< JobState=: "RUNNING", "PENDING", "COMPLETING", ...
  std::vector<std::string> nodes;  ///< NodeList= expanded; empty while pending
  int restarts = 0;                ///< Restarts=: how often Slurm requeued it
  std::string reason;              ///< Reason=: "None", "BeginTime", ...
  bool contains(std::string_view node) const;
  bool running() const { return state == "RUNNING"; }
};

/// Parses the one line of `scontrol -o show partition NAME`. "Partition X not found", several
/// lines, no PartitionName= first, no Nodes= or a bad hostlist is an error.
Result<Partition> parse_scontrol_partition(std::string_view text);

/// Parses the one line of `scontrol -o show job ID` (a plain job; an array's several lines or a
/// het job's are an error). "Invalid job id specified", no JobId= first, no JobState=, a bad
/// NodeList= or Restarts= is an error.
Result<Job> parse_scontrol_job(std::string_view text);

}  // namespace cmax::drill
