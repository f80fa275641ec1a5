#pragma once
// Putting a Slurm reservation back as it was before a drill. A REPLACE_DOWN reservation swaps a
// spare in for the node the drill took out; resuming that node does not swap it back, and Slurm
// 22.05 accepts no Nodes= update on such a reservation (nor Nodes= with REPLACE_DOWN at creation):
// the only way back is to delete it and create it again with the same definition, and that only
// while no job runs in it. A reservation without REPLACE_DOWN takes a Nodes= update.

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/result.h"
#include "sched/slurm.h"
#include "sched/slurm_reservation.h"

namespace cmax::drill {

/// The scontrol commands (argv without the program) that turn `now` back into `before`: none when
/// their node sets agree. Pure.
std::vector<std::vector<std::string>> restore_reservation_commands(const sched::Reservation& before,
                                                                   const sched::Reservation& now);

/// A reservation as drill.json keeps it, and back.
nlohmann::json reservation_to_json(const sched::Reservation& r);
Result<sched::Reservation> reservation_from_json(const nlohmann::json& j);

/// What restore_reservation did.
struct RestoreResult {
  bool changed = false;
  std::string summary;  ///< for the user: "reservation train: n[2-4],spare1 -> n[1-4]", or why not
};

/// Reads the reservation now and, when its nodes differ from `before`'s and no job runs or waits
/// in it, restores it. With options.dry_run, says what it would run. An error when it cannot read
/// or change the reservation; "jobs in it" is a result that says so and changes nothing.
Result<RestoreResult> restore_reservation(const sched::SlurmOptions& options, const sched::Reservation& before);

}  // namespace cmax::drill
