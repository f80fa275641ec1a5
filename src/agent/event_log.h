#pragma once
// The agent's durable memory, in SQLite (WAL): where to resume in the kernel log, one row per
// incident it saw, and one row per action it meant to take, written *before* the action is taken,
// so a crash between the two loses nothing and a restart neither forgets nor repeats a drain.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "store/sqlite.h"

namespace cmax::agent {

/// Where the agent stopped reading: kmsg sequence numbers restart at each boot.
struct ResumePoint {
  std::string boot_id;
  std::uint64_t seq = 0;
};

struct EventRow {
  std::string boot_id;
  std::optional<std::uint64_t> seq;  ///< the record that opened the incident; none for a probe's finding
  double t_unix = 0;
  std::string incident;   ///< node|kind|code|device: the dedup key
  std::string node, kind, device, action;
  std::string origin;  ///< "kernel", "userspace" (a write to /dev/kmsg), or "probe:nvml", "probe:ib", "probe:fs"
  std::string line;    ///< the log line, or the probe finding's text
  int code = -1;
};

struct ActionRow {
  std::int64_t id = 0;
  std::string incident, verb, node, reason, status, detail;
  double t_requested = 0, t_done = 0;
};

class EventLog {
 public:
  /// Opens or creates the database (":memory:" for tests).
  static Result<EventLog> open(const std::string& path);

  Result<std::optional<ResumePoint>> resume_point();
  Result<void> save_resume_point(const ResumePoint& p);

  /// Records an incident's first event; returns its row id (the existing one for a repeat of
  /// the same boot and seq, as after a restart that re-reads records).
  Result<std::int64_t> record_event(const EventRow& e);
  /// Adds `count` to an event's line count and sets its last sequence number.
  Result<void> add_repeats(std::int64_t event_id, std::uint64_t count, std::uint64_t last_seq);

  /// Writes the intent to act (status "pending") and returns its id.
  Result<std::int64_t> begin_action(const std::string& incident, std::int64_t event_id, const std::string& verb,
                                    const std::string& node, const std::string& reason, double t_unix);
  /// Records how the action ended: done, failed, dry_run, refused (breaker), skipped.
  Result<void> finish_action(std::int64_t id, const std::string& status, const std::string& detail, double t_unix);
  /// Every action for an incident key, oldest first.
  Result<std::vector<ActionRow>> actions_for(const std::string& incident);
  /// The latest action for an incident key, if any.
  Result<std::optional<ActionRow>> last_action(const std::string& incident);
  /// `cmaxd clear`: an audited row (verb "clear", incident "clear", done at once) saying the node's
  /// incidents are over (a repair); the running agent forgets them when it sees the row.
  Result<std::int64_t> record_clear(const std::string& node, const std::string& reason, double t_unix);
  /// The newest clear row, if any.
  Result<std::optional<ActionRow>> last_clear();
  /// Actions still pending (the agent stopped between intent and outcome).
  Result<std::vector<ActionRow>> pending_actions();
  /// Actions of `verb` requested at or after `since_unix` that are done, pending or dry runs (for the
  /// circuit breaker).
  Result<std::int64_t> count_actions(const std::string& verb, double since_unix);

 private:
  explicit EventLog(store::Database db) : db_(std::move(db)) {}
  Result<std::vector<ActionRow>> actions_where(const std::string& where_sql, const std::string& arg);
  store::Database db_;
};

}  // namespace cmax::agent
