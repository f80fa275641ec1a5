#include "report/run_dir.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/text_file.h"
#include "report/audit_json.h"
#include "report/sarif.h"
#include "store/run_store.h"

namespace cmax::report {
namespace {

// Write beside, then rename: a crash never leaves half a results.json.
Result<void> write_text(const std::filesystem::path& path, const std::string& text) {
  return core::write_text_file_atomic(path.string(), text);
}

}  // namespace

std::string default_run_dir(std::string_view stamp) {
  const char* home = std::getenv("HOME");
  std::string base = home && *home ? home : "/root";
  return fmt::format("{}/.cmax/runs/{}", base, stamp);
}

Result<std::string> write_stage_document(const std::string& dir, std::string_view name, std::string_view text) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return fail("create run directory {}: {}", dir, ec.message());
  const auto path = (std::filesystem::path(dir) / std::string(name)).string();
  if (auto w = core::write_text_file_atomic(path, text); !w) return Unexpected<Error>{w.error()};
  return path;
}

Result<void> prepare_run_dir(const std::string& dir, bool overwrite) {
  namespace fs = std::filesystem;
  const fs::path d(dir);
  std::error_code ec;
  if (!fs::exists(d / "results.json", ec)) return ok();
  if (!overwrite) {
    std::string when;
    if (auto earlier = read_run_dir(dir)) when = fmt::format(" (started {}, host {})", earlier->started_at, earlier->host);
    return fail("write run directory {}: it already holds a run{}; pass a new --out, or --overwrite to replace that "
                "run (its results.json, security.sarif and cmax.db together)",
                dir, when);
  }
  for (const char* name : {"results.json", "security.sarif", "cmax.db", "cmax.db-wal", "cmax.db-shm", "cmax.db-journal",
                           "cluster.json", "fanout.log", "nodes"}) {
    fs::remove_all(d / name, ec);
    if (ec) return fail("replace the run in {}: remove {}: {}", dir, name, ec.message());
  }
  return ok();
}

Result<std::string> write_run_dir(const audit::AuditReport& r, int exit_code, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return fail("create run directory {}: {}; pass --out a writable directory", dir, ec.message());
  std::filesystem::path d(dir);
  if (auto w = write_text(d / "results.json", audit_to_json(r, exit_code)); !w) return Unexpected<Error>{w.error()};
  if (auto w = write_text(d / "security.sarif", render_sarif(r)); !w) return Unexpected<Error>{w.error()};

  auto db_path = (d / "cmax.db").string();
  auto st = store::RunStore::open(db_path);
  if (!st) return Unexpected<Error>{st.error()};
  store::RunRow run{r.started_at, r.finished_at, r.host, std::string(audit::harness_name(r.harness)),
                    std::string(cmax_version()), r.host_root, exit_code};
  std::vector<store::FactRow> facts;
  for (const auto* f : r.facts.all())
    facts.push_back({f->key, std::string(audit::to_string(f->status)), f->value, f->source, f->detail});
  std::vector<store::FindingRow> findings;
  for (const auto& f : r.findings) {
    store::FindingRow row;
    row.check_id = f.check_id;
    row.category = audit::to_string(f.category);
    row.severity = audit::to_string(f.severity);
    row.security = f.security;
    row.result = audit::to_string(f.outcome);
    row.title = f.title;
    row.observed = f.observed;
    row.expected = f.expected;
    row.evidence_source = f.evidence_source;
    row.evidence_value = f.evidence_value;
    row.criterion = f.criterion;
    row.cves = fmt::format("{}", fmt::join(f.cves, ","));
    row.reason = f.reason;
    row.remediation = f.remediation;
    findings.push_back(std::move(row));
  }
  auto id = st->write_run(run, facts, findings);
  if (!id) return Unexpected<Error>{id.error()};
  return dir;
}

Result<audit::AuditReport> read_run_dir(const std::string& dir) {
  auto path = std::filesystem::path(dir) / "results.json";
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return fail("open {}: {}; pass a run directory written by `cmax run` or `cmax audit --out`", path.string(),
                std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return audit_from_json(ss.str(), path.string());
}

}  // namespace cmax::report
