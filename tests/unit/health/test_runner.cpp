// The runner: its bounded child (a deadline, a process-group kill, no blocking wait), the child's
// argv and its side (run_one), turning a child's run into a result, and run_active end to end with
// the cmax binary of this build (skipped when it was not built). The hung-filesystem case is in
// tests/integration/test_check_active.cpp, with a real FUSE mount.

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "health/runner.h"

namespace cmax::health {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using audit::Outcome;
using Clock = std::chrono::steady_clock;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "cmax-runner-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) != nullptr) dir_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return dir_; }

 private:
  fs::path dir_;
};

Thresholds builtin() {
  auto t = Thresholds::builtin();
  if (!t) throw std::runtime_error(t.error().message);
  return std::move(*t);
}

const ActiveCheck& check(std::string_view id) {
  for (const auto& c : all_active_checks())
    if (c.id == id) return c;
  throw std::runtime_error("no check " + std::string(id));
}

std::string cmax_binary() { return std::string(CMAX_BINARY_DIR) + "/apps/cmax/cmax"; }

TEST(ActiveTable, ListsEveryCheckOnceInItsGroup) {
  const std::pair<const char*, const char*> expected[] = {
      {"storage.metadata", "storage"}, {"storage.seq_write", "storage"}, {"storage.seq_read", "storage"},
      {"storage.fsync", "storage"},    {"memory.bandwidth", "memory"},   {"cpu.throughput", "cpu"},
      {"cpu.stall", "cpu"}};
  auto checks = all_active_checks();
  ASSERT_EQ(checks.size(), std::size(expected));
  for (std::size_t i = 0; i < checks.size(); ++i) {
    EXPECT_EQ(checks[i].id, expected[i].first);
    EXPECT_EQ(checks[i].group, expected[i].second);
    EXPECT_FALSE(checks[i].title.empty());
    EXPECT_NE(checks[i].run, nullptr);
    EXPECT_EQ(checks[i].category,
              checks[i].group == "storage" ? audit::Category::storage : audit::Category::reliability);
  }
}

TEST(ParseGroups, AcceptsKnownGroupsOnceEach) {
  auto g = parse_groups("storage, cpu,storage,,gpu");
  ASSERT_TRUE(g) << g.error().message;
  EXPECT_EQ(*g, (std::vector<std::string>{"storage", "cpu", "gpu"}));
  auto bad = parse_groups("storage,disk");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "--checks: unknown group 'disk'; choose from storage, memory, cpu, gpu");
  EXPECT_FALSE(parse_groups(""));
  EXPECT_FALSE(parse_groups(" , "));
}

TEST(RunBounded, CollectsOutputAndExitStatus) {
  auto r = run_bounded({"/bin/sh", "-c", "echo out; echo err >&2; exit 4"}, 5s, 200ms);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
  EXPECT_EQ(r->exit_code, 4);
  EXPECT_FALSE(r->timed_out);
  EXPECT_FALSE(r->abandoned);
}

TEST(RunBounded, KillsTheWholeGroupAtTheDeadline) {
  auto t0 = Clock::now();
  // The grandchild keeps stdout open: only the group kill ends both.
  auto r = run_bounded({"/bin/sh", "-c", "sleep 30 & echo $!; sleep 30"}, 300ms, 200ms);
  auto took = Clock::now() - t0;
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->timed_out);
  EXPECT_FALSE(r->abandoned) << "sleep dies of SIGKILL";
  EXPECT_EQ(r->signal, SIGKILL);
  EXPECT_EQ(r->exit_code, -1);
  EXPECT_GE(took, 300ms);
  EXPECT_LT(took, 1s);
  // The grandchild died too: gone, or a zombie waiting for init.
  const std::string grandchild = r->out.substr(0, r->out.find('\n'));
  ASSERT_FALSE(grandchild.empty());
  std::this_thread::sleep_for(50ms);
  std::ifstream stat("/proc/" + grandchild + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  if (!text.empty()) {
    EXPECT_EQ(text[text.rfind(')') + 2], 'Z') << text;
  }
}

TEST(RunBounded, AMissingProgramIsAnError) {
  auto r = run_bounded({"/nonexistent/cmax"}, 1s, 100ms);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("run /nonexistent/cmax: No such file or directory"), std::string::npos)
      << r.error().message;
}

TEST(ChildArgv, CarriesTheOptionsAndTheThresholdsToRunOne) {
  TempDir dir;
  ActiveOptions o;
  o.storage_path = dir.path().string();
  o.fsync_count = 5;
  auto t = builtin();
  t.set("storage.fsync.p99_ms.max", 1e-9);  // an override the child must see
  t.set("storage.fsync.p99_ms.warn_max", 1e-10);
  auto argv = child_argv("/usr/bin/cmax", "storage.fsync", o, t);
  ASSERT_TRUE(argv) << argv.error().message;
  ASSERT_EQ(argv->size(), 8u);
  EXPECT_EQ((*argv)[0], "/usr/bin/cmax");
  EXPECT_EQ((*argv)[1], "check");
  EXPECT_EQ((*argv)[2], "--run-one");
  EXPECT_EQ((*argv)[3], "storage.fsync");
  EXPECT_EQ((*argv)[4], "--child-options");
  EXPECT_EQ((*argv)[6], "--child-thresholds");

  auto text = run_one("storage.fsync", (*argv)[5], (*argv)[7]);
  ASSERT_TRUE(text) << text.error().message;
  auto r = check_from_json(nlohmann::json::parse(*text));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->id, "storage.fsync");
  EXPECT_EQ(r->target, dir.path().string());
  EXPECT_EQ(r->outcome, Outcome::fail) << r->reason;
  ASSERT_FALSE(r->measurements.empty());
  EXPECT_EQ(r->measurements.back().value, 5) << "fsync_count reached the child";
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(ChildArgv, RefusesKeysThatAreNotBounds) {
  auto t = builtin();
  t.set("storage.fsync.p99_ms", 3);
  auto argv = child_argv("/usr/bin/cmax", "storage.fsync", {}, t);
  ASSERT_FALSE(argv);
  EXPECT_NE(argv.error().message.find("key 'storage.fsync.p99_ms' does not end in .min"), std::string::npos);
}

TEST(ChildArgv, RefusesATableThatContradictsItself) {
  auto t = builtin();
  t.set("storage.fsync.p99_ms.max", 1);  // below its warn_max of 10
  auto argv = child_argv("/usr/bin/cmax", "storage.fsync", {}, t);
  ASSERT_FALSE(argv);
  EXPECT_NE(argv.error().message.find("warn_max 10 is above max 1"), std::string::npos) << argv.error().message;
}

TEST(RunOne, ErrorsForAnUnknownCheckOrBadOptions) {
  auto r = run_one("storage.nope", "{}", "");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "--run-one: unknown check 'storage.nope'");
  EXPECT_FALSE(run_one("storage.fsync", "[1]", ""));
  EXPECT_FALSE(run_one("storage.fsync", R"({"fsync_count": "many"})", ""));
  EXPECT_FALSE(run_one("storage.fsync", "{}", "{bad"));
  // Empty thresholds: the built-in table; no path: not applicable.
  auto ok = run_one("storage.fsync", "{}", "");
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_NE(ok->find("\"not_applicable\""), std::string::npos) << *ok;
}

TEST(ResultFromChild, ATimeoutIsAFailThatSaysWhatToDo) {
  ActiveOptions o;
  o.storage_path = "/mnt/x";
  o.check_timeout = 5s;
  ChildRun run;
  run.timed_out = true;
  run.abandoned = true;
  run.pid = 4242;
  run.wall = 5200ms;
  auto r = result_from_child(check("storage.metadata"), o, run);
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.id, "storage.metadata");
  EXPECT_EQ(r.target, "/mnt/x");
  EXPECT_EQ(r.category, audit::Category::storage);
  EXPECT_DOUBLE_EQ(r.duration_s, 5.2);
  EXPECT_EQ(r.reason.rfind("storage.metadata on /mnt/x did not finish in 5 s: the filesystem is hung or "
                           "extremely slow (a process stuck on it cannot be killed; check the mount with "
                           "`mount` and `dmesg`",
                           0),
            0u)
      << r.reason;
  EXPECT_NE(r.reason.find("(pid 4242) did not die of SIGKILL"), std::string::npos) << r.reason;

  o.check_timeout = 1500ms;
  run.abandoned = false;
  r = result_from_child(check("cpu.stall"), o, run);
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_EQ(r.target, "");
  EXPECT_NE(r.reason.find("cpu.stall did not finish in 1.5 s: the node is stalled or overloaded"), std::string::npos)
      << r.reason;
  EXPECT_NE(r.reason.find("The check process was killed."), std::string::npos) << r.reason;
}

TEST(ResultFromChild, ACrashOrBadOutputIsUnverified) {
  ActiveOptions o;
  ChildRun run;
  run.signal = SIGSEGV;
  run.err = "boom\n";
  auto r = result_from_child(check("memory.bandwidth"), o, run);
  EXPECT_EQ(r.outcome, Outcome::unverified);
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.reason.find("died of signal 11"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find(": boom;"), std::string::npos) << r.reason;

  run = {};
  run.exit_code = 0;
  run.out = "not json";
  r = result_from_child(check("memory.bandwidth"), o, run);
  EXPECT_EQ(r.outcome, Outcome::unverified);
  EXPECT_NE(r.reason.find("printed no result JSON"), std::string::npos) << r.reason;

  CheckResult other;
  other.id = "cpu.stall";
  other.outcome = Outcome::pass;
  run.out = to_json(other).dump();
  r = result_from_child(check("memory.bandwidth"), o, run);
  EXPECT_EQ(r.outcome, Outcome::unverified);
  EXPECT_NE(r.reason.find("answered for 'cpu.stall'"), std::string::npos) << r.reason;

  CheckResult mine;
  mine.id = "memory.bandwidth";
  mine.outcome = Outcome::warn;
  mine.summary = "0.55 of the ceiling";
  run.out = to_json(mine).dump();
  r = result_from_child(check("memory.bandwidth"), o, run);
  EXPECT_EQ(r.outcome, Outcome::warn);
  EXPECT_EQ(r.summary, "0.55 of the ceiling");
}

TEST(RunActive, RunsEachStorageCheckInAChildOfCmax) {
  if (::access(cmax_binary().c_str(), X_OK) != 0) GTEST_SKIP() << "build the cmax target first: " << cmax_binary();
  TempDir dir;
  ActiveOptions o;
  o.storage_path = dir.path().string();
  o.metadata_files = 100;
  o.seq_bytes = 4u << 20;
  o.fsync_count = 10;
  o.check_timeout = 30s;
  RunnerOptions ro;
  ro.program = cmax_binary();
  std::vector<std::string> started;
  std::size_t results_seen = 0;
  ro.on_start = [&](std::string_view id, std::size_t i, std::size_t n) {
    started.emplace_back(id);
    EXPECT_EQ(i, started.size());
    EXPECT_EQ(n, 4u);
  };
  ro.on_result = [&](const CheckResult&) { ++results_seen; };
  const std::vector<std::string> groups = {"storage"};
  auto r = run_active(o, builtin(), groups, ro);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 4u);
  EXPECT_EQ(started, (std::vector<std::string>{"storage.metadata", "storage.seq_write", "storage.seq_read",
                                               "storage.fsync"}));
  EXPECT_EQ(results_seen, 4u);
  for (const auto& c : *r) {
    // Any verdict (a loaded disk may fail a bound), but measured: never unverified.
    EXPECT_TRUE(c.outcome == Outcome::pass || c.outcome == Outcome::warn || c.outcome == Outcome::fail)
        << c.id << ": " << c.reason;
    EXPECT_FALSE(c.timed_out) << c.id;
    EXPECT_FALSE(c.measurements.empty()) << c.id;
    EXPECT_EQ(c.target, dir.path().string());
  }
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(RunActive, AnUnknownGroupIsAnError) {
  const std::vector<std::string> groups = {"disk"};
  auto r = run_active({}, builtin(), groups);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("unknown group 'disk'"), std::string::npos);
}

}  // namespace
}  // namespace cmax::health
