#pragma once
// The SQLite run store: one database per run directory holding the run, every fact collected and
// every finding. Rows are plain strings so the store knows nothing of the modules above it.

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "store/sqlite.h"

namespace cmax::store {

inline constexpr int kRunStoreSchemaVersion = 1;

struct RunRow {
  std::string started_at;  ///< RFC 3339 UTC
  std::string finished_at;
  std::string host;
  std::string harness;
  std::string cmax_version;
  std::string host_root;
  std::int64_t exit_code = 0;
};

struct FactRow {
  std::string key;
  std::string status;  ///< present | absent | error
  std::string value;
  std::string source;
  std::string detail;
};

struct FindingRow {
  std::string check_id;
  std::string category;
  std::string severity;
  bool security = false;
  std::string result;  ///< pass | warn | fail | not_applicable | unverified
  std::string title;
  std::string observed;
  std::string expected;
  std::string evidence_source;
  std::string evidence_value;
  std::string criterion;
  std::string cves;  ///< comma-separated
  std::string reason;
  std::string remediation;
};

/// Writes one run into a database file; creates the schema when missing.
class RunStore {
 public:
  static Result<RunStore> open(const std::string& path);

  /// Inserts the run with all its facts and findings in one transaction; returns the run id.
  Result<std::int64_t> write_run(const RunRow& run, const std::vector<FactRow>& facts,
                                 const std::vector<FindingRow>& findings);

  /// Reads back the findings of a run (for review and tests), in insertion order.
  Result<std::vector<FindingRow>> findings(std::int64_t run_id);
  Result<std::vector<FactRow>> facts(std::int64_t run_id);

 private:
  explicit RunStore(Database db) : db_(std::move(db)) {}
  Database db_;
};

}  // namespace cmax::store
