// cmax check --active and --submit with the real binary: the storage checks on a temporary
// directory of this machine (the JSON's shape and numbers), a REAL hung filesystem (hang_fs,
// tests/support/hang_fs: a FUSE daemon whose getattr does not return while a control file exists)
// that must become a timed-out fail within the time limit instead of a hang, and a submission to a
// real local Slurm cluster with one result file per node.

#include <gtest/gtest.h>

#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/process.h"
#include "core/strings.h"
#include "support/daemon.h"
#include "support/slurm_cluster.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Run {
  int code = -1;
  std::string out, err;
  std::chrono::milliseconds wall{0};
};

Run run_cmax(std::vector<std::string> args, std::vector<std::string> env = {},
             std::chrono::milliseconds timeout = 120s) {
  args.insert(args.begin(), CMAX_BIN);
  auto r = cmax::core::run_process({args, timeout, 16u << 20, std::move(env)});
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  if (!r) return {};
  EXPECT_FALSE(r->timed_out) << cmax::core::describe_argv(args);
  return {r->exit_code, r->out, r->err, std::chrono::duration_cast<std::chrono::milliseconds>(r->wall)};
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "cmax-active-XXXXXX").string();
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

const json* measurement(const json& result, std::string_view name) {
  for (const auto& m : result["measurements"])
    if (m["name"] == name) return &m;
  return nullptr;
}

// The shape of cmax.check.active/1 (docs/schemas/check-active.md).
void validate_active(const json& j, const std::vector<std::string>& groups, int exit_code) {
  ASSERT_EQ(j["schema"], "cmax.check.active/1");
  EXPECT_TRUE(j["node"].is_string() && !j["node"].get<std::string>().empty());
  EXPECT_EQ(j["groups"], json(groups));
  EXPECT_TRUE(j["thresholds"].is_string());
  EXPECT_TRUE(j["check_timeout_s"].is_number());
  const std::set<std::string> outcomes{"pass", "warn", "fail", "not_applicable", "unverified"};
  int fails = 0, total = 0;
  for (const auto& o : outcomes) {
    ASSERT_TRUE(j["counts"][o].is_number_unsigned()) << o;
    total += j["counts"][o].get<int>();
  }
  ASSERT_TRUE(j["results"].is_array());
  EXPECT_EQ(static_cast<int>(j["results"].size()), total);
  for (const auto& r : j["results"]) {
    const std::string id = r["id"];
    for (const char* k : {"id", "category", "outcome", "title", "target", "summary", "reason"})
      EXPECT_TRUE(r[k].is_string()) << id << " " << k;
    EXPECT_TRUE(outcomes.count(r["outcome"])) << id;
    EXPECT_TRUE(r["timed_out"].is_boolean()) << id;
    EXPECT_TRUE(r["duration_s"].is_number()) << id;
    EXPECT_TRUE(r["measurements"].is_array()) << id;
    if (r["outcome"] != "pass") {
      EXPECT_FALSE(r["reason"].get<std::string>().empty()) << id;
    }
    for (const auto& m : r["measurements"]) {
      EXPECT_TRUE(m["name"].is_string()) << id;
      EXPECT_TRUE(m["value"].is_number()) << id;
      EXPECT_TRUE(m["unit"].is_string()) << id;
    }
    fails += r["outcome"] == "fail";
  }
  EXPECT_EQ(j["healthy"], fails == 0);
  EXPECT_EQ(exit_code, fails == 0 ? 0 : 1);
}

TEST(CheckActive, StorageChecksOnThisMachine) {
  TempDir dir;
  auto r = run_cmax({"check", "--active", "--checks", "storage", "--path", dir.path().string(), "--metadata-files",
                     "200", "--seq-mib", "8", "--fsync-count", "20", "--json"});
  auto j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out << r.err;
  validate_active(j, {"storage"}, r.code);
  ASSERT_EQ(j["results"].size(), 4u);
  const std::pair<const char*, const char*> judged[] = {{"storage.metadata", "p99_us"},
                                                        {"storage.metadata", "files_per_s"},
                                                        {"storage.seq_write", "gbps"},
                                                        {"storage.seq_read", "gbps"},
                                                        {"storage.fsync", "p99_ms"}};
  for (const auto& [id, name] : judged) {
    const json* res = nullptr;
    for (const auto& x : j["results"])
      if (x["id"] == id) res = &x;
    ASSERT_NE(res, nullptr) << id;
    EXPECT_EQ((*res)["category"], "storage");
    EXPECT_EQ((*res)["target"], dir.path().string());
    // Any verdict (this machine's disk is shared with builds), but a measured one.
    EXPECT_TRUE((*res)["outcome"] == "pass" || (*res)["outcome"] == "warn" || (*res)["outcome"] == "fail")
        << res->dump(2);
    const json* m = measurement(*res, name);
    ASSERT_NE(m, nullptr) << id << " " << name;
    EXPECT_GT((*m)["value"].get<double>(), 0) << id << " " << name;
    EXPECT_TRUE(m->contains("min") || m->contains("max")) << id << ": judged against a bound";
  }
  EXPECT_TRUE(fs::is_empty(dir.path())) << "a check left files behind";
}

TEST(CheckActive, TerminalTable) {
  TempDir dir;
  auto r = run_cmax({"check", "--active", "--checks", "storage", "--path", dir.path().string(), "--metadata-files",
                     "100", "--seq-mib", "4", "--fsync-count", "10"});
  EXPECT_TRUE(r.code == 0 || r.code == 1) << r.out << r.err;
  EXPECT_NE(r.out.find("ID"), std::string::npos);
  EXPECT_NE(r.out.find("OUTCOME"), std::string::npos);
  for (const char* id : {"storage.metadata", "storage.seq_write", "storage.seq_read", "storage.fsync"})
    EXPECT_NE(r.out.find(id), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(r.code == 0 ? "healthy (no active check failed)" : "UNHEALTHY (1 active check"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.err.find("\r"), std::string::npos) << "no progress line when stderr is not a terminal";
}

TEST(CheckActive, UsageErrorsExit3) {
  auto r = run_cmax({"check", "--active", "--checks", "storage"});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("--checks storage needs --path DIR"), std::string::npos) << r.err;
  r = run_cmax({"check", "--active", "--checks", "disk"});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("unknown group 'disk'"), std::string::npos) << r.err;
  r = run_cmax({"check", "--active", "--checks", "storage", "--path", "/tmp", "--thresholds", "/nonexistent.json"});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("read health thresholds /nonexistent.json: cannot open the file"), std::string::npos) << r.err;
  r = run_cmax({"check", "--active", "--check-timeout-s", "0"});
  EXPECT_EQ(r.code, 3);
  r = run_cmax({"check", "--active", "--submit"});
  EXPECT_EQ(r.code, 3);
  r = run_cmax({"check", "--run-one", "nope"});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("unknown check 'nope'"), std::string::npos) << r.err;
}

// ---- a hung filesystem --------------------------------------------------------------------------

std::string hang_fs_binary() { return std::string(CMAX_BINARY_DIR) + "/tests/support/hang_fs/hang_fs"; }

std::string fuse_unavailable() {
  if (::access(hang_fs_binary().c_str(), X_OK) != 0)
    return "tests/support/hang_fs was not built (cmake --build ... --target hang_fs; needs libfuse3-dev)";
  if (::access("/dev/fuse", R_OK | W_OK) != 0) return "/dev/fuse is missing or not usable here";
  if (::geteuid() != 0 && !cmax::core::find_program("fusermount3")) return "not root and no fusermount3";
  return "";
}

bool is_fuse_mount(const fs::path& path) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, parent, dev, root, point;
    fields >> id >> parent >> dev >> root >> point;
    auto dash = line.find(" - ");
    if (point == path.string() && dash != std::string::npos && line.compare(dash + 3, 4, "fuse") == 0) return true;
  }
  return false;
}

// One hang_fs mount; on destruction released first (control file removed, so nothing stays
// blocked), then unmounted lazily and its daemon killed.
class HangFs {
 public:
  HangFs(fs::path mountpoint, fs::path control, fs::path log)
      : mnt_(std::move(mountpoint)), control_(std::move(control)), log_(std::move(log)) {}
  HangFs(const HangFs&) = delete;
  HangFs& operator=(const HangFs&) = delete;
  ~HangFs() {
    answer();
    for (int i = 0; i < 3 && is_fuse_mount(mnt_); ++i) {
      if (::geteuid() == 0)
        ::umount2(mnt_.c_str(), MNT_DETACH);
      else
        (void)cmax::core::run_process({{"fusermount3", "-u", "-z", mnt_.string()}, 5s});
    }
    if (is_fuse_mount(mnt_)) ADD_FAILURE() << "could not unmount " << mnt_;
    if (daemon_) daemon_->stop();
  }
  std::string start() {
    fs::create_directories(mnt_);
    auto d = cmax::test::Daemon::start({hang_fs_binary(), control_.string(), mnt_.string(), "-f", "-s"}, {}, log_);
    if (!d) return d.error().message;
    daemon_.emplace(std::move(*d));
    for (auto until = Clock::now() + 10s; Clock::now() < until; std::this_thread::sleep_for(20ms)) {
      if (is_fuse_mount(mnt_)) return "";
      if (!daemon_->running()) return "hang_fs exited: " + daemon_->exit_status();
    }
    return "hang_fs did not mount " + mnt_.string() + " within 10 s";
  }
  void hang() const { std::ofstream(control_).put('x'); }
  void answer() const {
    std::error_code ec;
    fs::remove(control_, ec);
  }

 private:
  fs::path mnt_, control_, log_;
  std::optional<cmax::test::Daemon> daemon_;
};

// The test process adopts what cmax leaves behind (a check process stuck on the mount), so it
// can see it and reap it once the mount answers again.
std::vector<pid_t> adopted_children(pid_t except) {
  std::vector<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream rest(stat.substr(paren + 1));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    pid_t pid = std::stoi(name);
    if (ppid == ::getpid() && pid != except) out.push_back(pid);
  }
  return out;
}

TEST(CheckActiveFuse, AHungMountIsATimedOutFailNotAHang) {
  if (auto why = fuse_unavailable(); !why.empty()) GTEST_SKIP() << why;
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  TempDir dir;
  const fs::path mnt = dir.path() / "mnt";
  std::optional<HangFs> hang_fs;
  hang_fs.emplace(mnt, dir.path() / "hang", dir.path() / "hang_fs.log");
  ASSERT_EQ(hang_fs->start(), "");
  hang_fs->hang();

  auto t0 = Clock::now();
  auto r = run_cmax({"check", "--active", "--checks", "storage", "--path", mnt.string(), "--check-timeout-s", "2",
                     "--json"},
                    {}, 20s);
  auto took = Clock::now() - t0;
  EXPECT_LT(took, 3500ms) << "cmax must return at the check's time limit, not wait for the mount";
  EXPECT_GE(took, 2s);
  EXPECT_EQ(r.code, 1) << r.err;
  auto j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out << r.err;
  validate_active(j, {"storage"}, r.code);
  ASSERT_EQ(j["results"].size(), 4u);
  const auto& first = j["results"][0];
  EXPECT_EQ(first["id"], "storage.metadata");
  EXPECT_EQ(first["outcome"], "fail");
  EXPECT_EQ(first["timed_out"], true);
  EXPECT_EQ(first["target"], mnt.string());
  const std::string reason = first["reason"];
  EXPECT_EQ(reason.rfind("storage.metadata on " + mnt.string() + " did not finish in 2 s: the filesystem is hung", 0),
            0u)
      << reason;
  for (std::size_t i = 1; i < 4; ++i) {
    EXPECT_EQ(j["results"][i]["outcome"], "unverified") << j["results"][i].dump();
    EXPECT_NE(j["results"][i]["reason"].get<std::string>().find("not run: storage.metadata on"), std::string::npos);
  }
  std::printf("hung mount: cmax returned in %lld ms; reason: %s\n",
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()),
              reason.c_str());

  // The stuck check process came to us (the subreaper). Released, it dies of its SIGKILL.
  hang_fs->answer();
  auto until = Clock::now() + 10s;
  std::vector<pid_t> left;
  do {
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    left = adopted_children(-1);
    std::erase_if(left, [](pid_t pid) {
      std::ifstream cmd("/proc/" + std::to_string(pid) + "/cmdline");
      std::string c((std::istreambuf_iterator<char>(cmd)), std::istreambuf_iterator<char>());
      return c.find("--run-one") == std::string::npos;  // the hang_fs daemon, not a check
    });
    if (left.empty()) break;
    std::this_thread::sleep_for(20ms);
  } while (Clock::now() < until);
  EXPECT_TRUE(left.empty()) << "a check process is still stuck after the mount answered";
  hang_fs.reset();
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
}

// ---- submission to Slurm ----------------------------------------------------------------------

TEST(CheckSubmit, OneResultFilePerIdleNode) {
  if (auto why = cmax::test::SlurmCluster::unavailable()) GTEST_SKIP() << *why;
  if (!cmax::test::find_system_program("sbatch") || !cmax::test::find_system_program("srun"))
    GTEST_SKIP() << "sbatch or srun is not installed";
  auto c = cmax::test::SlurmCluster::start({.nodes = 3});
  ASSERT_TRUE(c) << c.error().message;
  auto& cluster = **c;
  const std::vector<std::string> env = {"SLURM_CONF=" + cluster.conf_path()};
  const fs::path out = cluster.dir() / "checks";
  const fs::path scratch = cluster.dir() / "scratch";
  fs::create_directories(scratch);
  // Bounds no disk misses: this test is about the job, not about this machine's disk, which three
  // nodes on one host share with whatever else runs.
  const fs::path lenient = cluster.dir() / "lenient.json";
  std::ofstream(lenient) << R"({"schema": "cmax.health-thresholds/1", "thresholds": {
      "storage.metadata.p99_us": {"max": 1e12}, "storage.metadata.files_per_s": {"min": 0},
      "storage.seq_write.gbps": {"min": 0},
      "storage.seq_read.gbps": {"min": 0}, "storage.fsync.p99_ms": {"max": 1e12}}})";
  const std::vector<std::string> submit = {
      "check",        "--submit",           "--slurm-conf",     cluster.conf_path(), "--checks",      "storage",
      "--path",       scratch.string(),     "--output-dir",     out.string(),        "--thresholds",  lenient.string(),
      "--seq-mib",    "4",                  "--metadata-files", "100",               "--fsync-count", "10",
      "--check-timeout-s", "30"};

  // A cmax-check job of ours already waiting: no second one, also not in a dry run.
  auto held = cmax::core::run_process({{"sbatch", "--parsable", "--hold", "--job-name=cmax-check", "-o", "/dev/null",
                                        "--wrap", "true"},
                                       10s, 1u << 16, env});
  ASSERT_TRUE(held && held->exit_code == 0) << (held ? held->err : held.error().message);
  const std::string held_id(cmax::core::trim(held->out));
  auto refused = run_cmax(submit, env);
  EXPECT_EQ(refused.code, 0) << refused.err;
  EXPECT_EQ(refused.out, "");
  EXPECT_NE(refused.err.find("job " + held_id + " (cmax-check) is already pending or running"), std::string::npos)
      << refused.err;
  EXPECT_FALSE(fs::exists(out)) << "nothing written when nothing is submitted";
  (void)cmax::core::run_process({{"scancel", held_id}, 10s, 1u << 16, env});
  for (int i = 0; i < 200; ++i) {  // until squeue no longer lists it
    auto q = cmax::core::run_process({{"squeue", "-h", "-j", held_id, "-t", "PENDING,RUNNING"}, 10s, 1u << 16, env});
    if (q && cmax::core::trim(q->out).empty()) break;
    std::this_thread::sleep_for(50ms);
  }

  // Dry run: the argv and the script, nothing submitted.
  auto dry_args = submit;
  dry_args.push_back("--dry-run");
  auto dry = run_cmax(dry_args, env);
  EXPECT_EQ(dry.code, 0) << dry.err;
  EXPECT_NE(dry.out.find("sbatch --parsable --job-name=cmax-check --nice=10000 --nodes=3 --ntasks-per-node=1 "
                         "--nodelist=n1,n2,n3"),
            std::string::npos)
      << dry.out;
  EXPECT_NE(dry.out.find("#!/bin/sh"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find(std::string("exec srun --ntasks-per-node=1")), std::string::npos) << dry.out;
  EXPECT_FALSE(fs::exists(out));

  auto r = run_cmax(submit, env);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string job(cmax::core::trim(r.out));
  ASSERT_FALSE(job.empty());
  ASSERT_EQ(job.find_first_not_of("0123456789"), std::string::npos) << job;

  // Until the job has left the queue (bounded), then one result file per node.
  bool done = false;
  std::string last;
  for (auto until = Clock::now() + 90s; Clock::now() < until && !done; std::this_thread::sleep_for(200ms)) {
    auto show = cluster.scontrol({"-o", "show", "job", job});
    if (!show) continue;
    last = show->out;
    done = last.find("JobState=COMPLETED") != std::string::npos || last.find("JobState=FAILED") != std::string::npos ||
           last.find("JobState=CANCELLED") != std::string::npos || last.find("JobState=TIMEOUT") != std::string::npos;
  }
  ASSERT_TRUE(done) << "job " << job << " did not finish in 90 s: " << last;
  EXPECT_NE(last.find("JobState=COMPLETED"), std::string::npos) << last;
  EXPECT_NE(last.find("Nice=10000"), std::string::npos) << last;
  // One result file per node (cmax-check-<host>-<job>-<task>.out), each naming its Slurm node.
  std::set<std::string> nodes_seen;
  int files = 0;
  for (const auto& e : fs::directory_iterator(out)) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with("cmax-check-") || !name.ends_with(".out")) continue;
    ++files;
    EXPECT_NE(name.find("-" + job + "-"), std::string::npos) << name;
    std::ifstream in(e.path());
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto j = json::parse(text, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << name << ":\n" << text;
    validate_active(j, {"storage"}, 0);
    EXPECT_EQ(j["results"].size(), 4u);
    EXPECT_EQ(j["thresholds"], lenient.string()) << "the --thresholds file reached the nodes";
    nodes_seen.insert(j["node"].get<std::string>());
  }
  EXPECT_EQ(files, 3);
  EXPECT_EQ(nodes_seen, std::set<std::string>(cluster.node_names().begin(), cluster.node_names().end()));
  // Each node worked in a directory of its own and removed it.
  EXPECT_TRUE(fs::is_empty(scratch));
}

}  // namespace
