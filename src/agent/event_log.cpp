#include "agent/event_log.h"

namespace cmax::agent {
namespace {

constexpr std::string_view kSchema = R"sql(
PRAGMA journal_mode=WAL;
PRAGMA synchronous=NORMAL;
CREATE TABLE IF NOT EXISTS state(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events(
  id INTEGER PRIMARY KEY, boot_id TEXT NOT NULL, seq INTEGER, last_seq INTEGER,
  t_unix REAL NOT NULL, incident TEXT NOT NULL, node TEXT NOT NULL, kind TEXT NOT NULL, code INTEGER,
  device TEXT NOT NULL, action TEXT NOT NULL, origin TEXT NOT NULL, line TEXT NOT NULL,
  lines INTEGER NOT NULL DEFAULT 1, UNIQUE(boot_id, seq));
CREATE TABLE IF NOT EXISTS actions(
  id INTEGER PRIMARY KEY, incident TEXT NOT NULL, event_id INTEGER, verb TEXT NOT NULL, node TEXT NOT NULL,
  reason TEXT NOT NULL, status TEXT NOT NULL, detail TEXT NOT NULL DEFAULT '',
  t_requested REAL NOT NULL, t_done REAL);
CREATE INDEX IF NOT EXISTS actions_by_incident ON actions(incident, id);
PRAGMA user_version = 2;
)sql";

// Version 1 (before probes) had events.seq NOT NULL; probe findings have no kmsg record. SQLite
// cannot drop a NOT NULL, so the table is copied.
constexpr std::string_view kMigrateFrom1 = R"sql(
BEGIN IMMEDIATE;
ALTER TABLE events RENAME TO events_v1;
CREATE TABLE events(
  id INTEGER PRIMARY KEY, boot_id TEXT NOT NULL, seq INTEGER, last_seq INTEGER,
  t_unix REAL NOT NULL, incident TEXT NOT NULL, node TEXT NOT NULL, kind TEXT NOT NULL, code INTEGER,
  device TEXT NOT NULL, action TEXT NOT NULL, origin TEXT NOT NULL, line TEXT NOT NULL,
  lines INTEGER NOT NULL DEFAULT 1, UNIQUE(boot_id, seq));
INSERT INTO events SELECT * FROM events_v1;
DROP TABLE events_v1;
PRAGMA user_version = 2;
COMMIT;
)sql";

}  // namespace

Result<EventLog> EventLog::open(const std::string& path) {
  auto db = store::Database::open(path);
  if (!db) return Unexpected<Error>{db.error()};
  auto version = db->prepare("PRAGMA user_version");
  if (!version) return Unexpected<Error>{version.error()};
  auto row = version->step();
  if (!row) return Unexpected<Error>{row.error()};
  const std::int64_t v = *row ? version->column_int(0) : 0;
  version->reset();
  auto has_events = db->prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'events'");
  if (!has_events) return Unexpected<Error>{has_events.error()};
  auto exists = has_events->step();
  if (!exists) return Unexpected<Error>{exists.error()};
  has_events->reset();
  if (*exists && v < 2)
    if (auto r = db->exec(kMigrateFrom1); !r)
      return fail("upgrade event log {} to version 2: {}", path, r.error().message);
  if (auto r = db->exec(kSchema); !r) return Unexpected<Error>{r.error()};
  return EventLog(std::move(*db));
}

Result<std::optional<ResumePoint>> EventLog::resume_point() {
  auto st = db_.prepare("SELECT key, value FROM state WHERE key IN ('boot_id', 'seq')");
  if (!st) return Unexpected<Error>{st.error()};
  std::optional<std::string> boot;
  std::optional<std::uint64_t> seq;
  for (;;) {
    auto row = st->step();
    if (!row) return Unexpected<Error>{row.error()};
    if (!*row) break;
    if (st->column_text(0) == "boot_id") boot = st->column_text(1);
    if (st->column_text(0) == "seq") seq = std::stoull(st->column_text(1));
  }
  if (!boot || !seq) return std::optional<ResumePoint>{};
  return std::optional<ResumePoint>{ResumePoint{*boot, *seq}};
}

Result<void> EventLog::save_resume_point(const ResumePoint& p) {
  auto st = db_.prepare("INSERT INTO state(key, value) VALUES ('boot_id', ?1), ('seq', ?2) "
                        "ON CONFLICT(key) DO UPDATE SET value = excluded.value");
  if (!st) return Unexpected<Error>{st.error()};
  return st->bind(1, p.boot_id).bind(2, std::to_string(p.seq)).run();
}

Result<std::int64_t> EventLog::record_event(const EventRow& e) {
  if (!e.seq) {
    // A probe's finding: no record to deduplicate against.
    auto st = db_.prepare(
        "INSERT INTO events(boot_id, seq, last_seq, t_unix, incident, node, kind, code, device, action, origin, line) "
        "VALUES (?1, NULL, NULL, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
    if (!st) return Unexpected<Error>{st.error()};
    st->bind(1, e.boot_id).bind(2, e.t_unix).bind(3, e.incident).bind(4, e.node).bind(5, e.kind);
    st->bind(6, static_cast<std::int64_t>(e.code)).bind(7, e.device).bind(8, e.action).bind(9, e.origin);
    st->bind(10, e.line);
    if (auto r = st->run(); !r) return Unexpected<Error>{r.error()};
    return db_.last_insert_rowid();
  }
  auto st = db_.prepare(
      "INSERT INTO events(boot_id, seq, last_seq, t_unix, incident, node, kind, code, device, action, origin, line) "
      "VALUES (?1, ?2, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) ON CONFLICT(boot_id, seq) DO NOTHING");
  if (!st) return Unexpected<Error>{st.error()};
  st->bind(1, e.boot_id).bind(2, static_cast<std::int64_t>(*e.seq)).bind(3, e.t_unix).bind(4, e.incident);
  st->bind(5, e.node).bind(6, e.kind).bind(7, static_cast<std::int64_t>(e.code)).bind(8, e.device);
  st->bind(9, e.action).bind(10, e.origin).bind(11, e.line);
  if (auto r = st->run(); !r) return Unexpected<Error>{r.error()};
  auto id = db_.prepare("SELECT id FROM events WHERE boot_id = ?1 AND seq = ?2");
  if (!id) return Unexpected<Error>{id.error()};
  id->bind(1, e.boot_id).bind(2, static_cast<std::int64_t>(*e.seq));
  auto row = id->step();
  if (!row) return Unexpected<Error>{row.error()};
  if (!*row) return fail("record event in {}: the row just written is missing", db_.path());
  return id->column_int(0);
}

Result<void> EventLog::add_repeats(std::int64_t event_id, std::uint64_t count, std::uint64_t last_seq) {
  auto st = db_.prepare("UPDATE events SET lines = lines + ?1, last_seq = CASE WHEN seq IS NULL THEN NULL ELSE max(last_seq, ?2) END "
                        "WHERE id = ?3");
  if (!st) return Unexpected<Error>{st.error()};
  return st->bind(1, static_cast<std::int64_t>(count)).bind(2, static_cast<std::int64_t>(last_seq)).bind(3, event_id).run();
}

Result<std::int64_t> EventLog::begin_action(const std::string& incident, std::int64_t event_id, const std::string& verb,
                                            const std::string& node, const std::string& reason, double t_unix) {
  auto st = db_.prepare(
      "INSERT INTO actions(incident, event_id, verb, node, reason, status, t_requested) "
      "VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6)");
  if (!st) return Unexpected<Error>{st.error()};
  st->bind(1, incident).bind(2, event_id).bind(3, verb).bind(4, node).bind(5, reason).bind(6, t_unix);
  if (auto r = st->run(); !r) return Unexpected<Error>{r.error()};
  return db_.last_insert_rowid();
}

Result<void> EventLog::finish_action(std::int64_t id, const std::string& status, const std::string& detail,
                                     double t_unix) {
  auto st = db_.prepare("UPDATE actions SET status = ?1, detail = ?2, t_done = ?3 WHERE id = ?4");
  if (!st) return Unexpected<Error>{st.error()};
  return st->bind(1, status).bind(2, detail).bind(3, t_unix).bind(4, id).run();
}

Result<std::vector<ActionRow>> EventLog::actions_where(const std::string& where_sql, const std::string& arg) {
  auto st = db_.prepare("SELECT id, incident, verb, node, reason, status, detail, t_requested, coalesce(t_done, 0) "
                        "FROM actions WHERE " + where_sql + " ORDER BY id");
  if (!st) return Unexpected<Error>{st.error()};
  if (!arg.empty()) st->bind(1, arg);
  std::vector<ActionRow> out;
  for (;;) {
    auto row = st->step();
    if (!row) return Unexpected<Error>{row.error()};
    if (!*row) break;
    out.push_back(ActionRow{st->column_int(0), st->column_text(1), st->column_text(2), st->column_text(3),
                            st->column_text(4), st->column_text(5), st->column_text(6), st->column_double(7),
                            st->column_double(8)});
  }
  return out;
}

Result<std::vector<ActionRow>> EventLog::actions_for(const std::string& incident) {
  return actions_where("incident = ?1", incident);
}

Result<std::optional<ActionRow>> EventLog::last_action(const std::string& incident) {
  auto rows = actions_for(incident);
  if (!rows) return Unexpected<Error>{rows.error()};
  if (rows->empty()) return std::optional<ActionRow>{};
  return std::optional<ActionRow>{rows->back()};
}

Result<std::int64_t> EventLog::record_clear(const std::string& node, const std::string& reason, double t_unix) {
  auto id = begin_action("clear", -1, "clear", node, reason, t_unix);
  if (!id) return id;
  if (auto f = finish_action(*id, "done", "cmaxd clear", t_unix); !f) return Unexpected<Error>{f.error()};
  return id;
}

Result<std::optional<ActionRow>> EventLog::last_clear() {
  auto rows = actions_where("id = (SELECT max(id) FROM actions WHERE verb = 'clear')", "");
  if (!rows) return Unexpected<Error>{rows.error()};
  if (rows->empty()) return std::optional<ActionRow>{};
  return std::optional<ActionRow>{rows->back()};
}

Result<std::vector<ActionRow>> EventLog::pending_actions() { return actions_where("status = 'pending'", ""); }

Result<std::int64_t> EventLog::count_actions(const std::string& verb, double since_unix) {
  auto st = db_.prepare("SELECT count(*) FROM actions WHERE verb = ?1 AND status IN ('done', 'pending', 'dry_run') "
                        "AND t_requested >= ?2");
  if (!st) return Unexpected<Error>{st.error()};
  st->bind(1, verb).bind(2, since_unix);
  auto row = st->step();
  if (!row) return Unexpected<Error>{row.error()};
  return *row ? st->column_int(0) : 0;
}

}  // namespace cmax::agent
