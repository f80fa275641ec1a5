#include "store/run_store.h"

#include <fmt/format.h>

namespace cmax::store {
namespace {

constexpr std::string_view kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY,
  started_at TEXT NOT NULL, finished_at TEXT NOT NULL, host TEXT NOT NULL, harness TEXT NOT NULL,
  cmax_version TEXT NOT NULL, host_root TEXT NOT NULL, exit_code INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS facts (
  run_id INTEGER NOT NULL REFERENCES runs(id), key TEXT NOT NULL, status TEXT NOT NULL,
  value TEXT NOT NULL, source TEXT NOT NULL, detail TEXT NOT NULL, PRIMARY KEY (run_id, key));
CREATE TABLE IF NOT EXISTS findings (
  run_id INTEGER NOT NULL REFERENCES runs(id), seq INTEGER NOT NULL, check_id TEXT NOT NULL,
  category TEXT NOT NULL, severity TEXT NOT NULL, security INTEGER NOT NULL, result TEXT NOT NULL,
  title TEXT NOT NULL, observed TEXT NOT NULL, expected TEXT NOT NULL, evidence_source TEXT NOT NULL,
  evidence_value TEXT NOT NULL, criterion TEXT NOT NULL, cves TEXT NOT NULL, reason TEXT NOT NULL,
  remediation TEXT NOT NULL, PRIMARY KEY (run_id, seq));
CREATE INDEX IF NOT EXISTS findings_by_result ON findings(result);
)sql";

}  // namespace

Result<RunStore> RunStore::open(const std::string& path) {
  auto db = Database::open(path);
  if (!db) return Unexpected<Error>{db.error()};
  if (auto r = db->exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"); !r) return Unexpected<Error>{r.error()};
  if (auto r = db->exec(kSchema); !r) return Unexpected<Error>{r.error()};
  auto r = db->exec(fmt::format("INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', '{}')",
                                kRunStoreSchemaVersion));
  if (!r) return Unexpected<Error>{r.error()};
  return RunStore(std::move(*db));
}

Result<std::int64_t> RunStore::write_run(const RunRow& run, const std::vector<FactRow>& facts,
                                         const std::vector<FindingRow>& findings) {
  if (auto r = db_.exec("BEGIN IMMEDIATE"); !r) return Unexpected<Error>{r.error()};
  auto rollback = [&](const Error& e) -> Result<std::int64_t> {
    (void)db_.exec("ROLLBACK");
    return Unexpected<Error>{e};
  };
  auto ins_run = db_.prepare(
      "INSERT INTO runs(started_at, finished_at, host, harness, cmax_version, host_root, exit_code) "
      "VALUES (?,?,?,?,?,?,?)");
  if (!ins_run) return rollback(ins_run.error());
  ins_run->bind(1, run.started_at).bind(2, run.finished_at).bind(3, run.host).bind(4, run.harness);
  ins_run->bind(5, run.cmax_version).bind(6, run.host_root).bind(7, run.exit_code);
  if (auto r = ins_run->run(); !r) return rollback(r.error());
  std::int64_t id = db_.last_insert_rowid();

  auto ins_fact = db_.prepare("INSERT INTO facts VALUES (?,?,?,?,?,?)");
  if (!ins_fact) return rollback(ins_fact.error());
  for (const auto& f : facts) {
    ins_fact->bind(1, id).bind(2, f.key).bind(3, f.status).bind(4, f.value).bind(5, f.source).bind(6, f.detail);
    if (auto r = ins_fact->run(); !r) return rollback(r.error());
  }
  auto ins_finding = db_.prepare("INSERT INTO findings VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  if (!ins_finding) return rollback(ins_finding.error());
  std::int64_t seq = 0;
  for (const auto& f : findings) {
    auto& s = *ins_finding;
    s.bind(1, id).bind(2, seq++).bind(3, f.check_id).bind(4, f.category).bind(5, f.severity);
    s.bind(6, static_cast<std::int64_t>(f.security)).bind(7, f.result).bind(8, f.title).bind(9, f.observed);
    s.bind(10, f.expected).bind(11, f.evidence_source).bind(12, f.evidence_value).bind(13, f.criterion);
    s.bind(14, f.cves).bind(15, f.reason).bind(16, f.remediation);
    if (auto r = s.run(); !r) return rollback(r.error());
  }
  if (auto r = db_.exec("COMMIT"); !r) return rollback(r.error());
  return id;
}

Result<std::vector<FindingRow>> RunStore::findings(std::int64_t run_id) {
  auto st = db_.prepare(
      "SELECT check_id, category, severity, security, result, title, observed, expected, evidence_source, "
      "evidence_value, criterion, cves, reason, remediation FROM findings WHERE run_id = ? ORDER BY seq");
  if (!st) return Unexpected<Error>{st.error()};
  st->bind(1, run_id);
  std::vector<FindingRow> out;
  for (;;) {
    auto row = st->step();
    if (!row) return Unexpected<Error>{row.error()};
    if (!*row) break;
    FindingRow f;
    f.check_id = st->column_text(0);
    f.category = st->column_text(1);
    f.severity = st->column_text(2);
    f.security = st->column_int(3) != 0;
    f.result = st->column_text(4);
    f.title = st->column_text(5);
    f.observed = st->column_text(6);
    f.expected = st->column_text(7);
    f.evidence_source = st->column_text(8);
    f.evidence_value = st->column_text(9);
    f.criterion = st->column_text(10);
    f.cves = st->column_text(11);
    f.reason = st->column_text(12);
    f.remediation = st->column_text(13);
    out.push_back(std::move(f));
  }
  return out;
}

Result<std::vector<FactRow>> RunStore::facts(std::int64_t run_id) {
  auto st = db_.prepare("SELECT key, status, value, source, detail FROM facts WHERE run_id = ? ORDER BY key");
  if (!st) return Unexpected<Error>{st.error()};
  st->bind(1, run_id);
  std::vector<FactRow> out;
  for (;;) {
    auto row = st->step();
    if (!row) return Unexpected<Error>{row.error()};
    if (!*row) break;
    out.push_back({st->column_text(0), st->column_text(1), st->column_text(2), st->column_text(3), st->column_text(4)});
  }
  return out;
}

}  // namespace cmax::store
