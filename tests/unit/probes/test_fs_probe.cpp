// FsProbe: healthy and misconfigured paths on this machine, and a REAL hung filesystem: hang_fs
// (tests/support/hang_fs), a FUSE daemon whose getattr and statfs do not return while a control
// file exists. A process that stats it then waits in the kernel for the daemon's reply and, once
// the daemon has taken the request, does not die of SIGKILL (fs/fuse/dev.c request_wait_answer):
// the same uninterruptible sleep as a stat on a dead hard-mounted NFS server.

#include <gtest/gtest.h>

#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/process.h"
#include "probes/fs_probe.h"
#include "support/daemon.h"

namespace cmax::probes {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using signals::Kind;
using Clock = std::chrono::steady_clock;

std::chrono::milliseconds since(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "cmax-fs-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return dir_; }

 private:
  fs::path dir_;
};

FsProbe make_probe(std::vector<std::string> mounts, std::chrono::milliseconds timeout) {
  auto p = FsProbe::create(FsOptions{std::move(mounts), timeout});
  if (!p) throw std::runtime_error(p.error().message);
  return std::move(p).value();
}

// A process of ours as /proc shows it: pid and state letter ('S', 'D', 'Z', ...).
struct Child {
  pid_t pid;
  char state;
};

// The children of this process, from /proc/<pid>/stat (this kernel has no /proc/.../children).
std::vector<Child> children() {
  std::vector<Child> out;
  const pid_t self = ::getpid();
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream rest(stat.substr(paren + 1));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == self) out.push_back({static_cast<pid_t>(std::stoi(name)), state});
  }
  return out;
}

std::vector<Child> children_except(pid_t daemon) {
  auto all = children();
  std::erase_if(all, [daemon](const Child& c) { return c.pid == daemon; });
  return all;
}

// The file system type of the mount at `path` in /proc/self/mountinfo, or nullopt.
std::optional<std::string> mount_type(const fs::path& path) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, parent, dev, root, point;
    fields >> id >> parent >> dev >> root >> point;
    if (point != path.string()) continue;
    auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream tail(line.substr(dash + 3));
    std::string type;
    tail >> type;
    return type;
  }
  return std::nullopt;
}

std::string hang_fs_binary() {
  return std::string(CMAX_BINARY_DIR) + "/tests/support/hang_fs/hang_fs";
}

// Why the FUSE tests cannot run here, or "" when they can.
std::string fuse_unavailable() {
  if (::access(hang_fs_binary().c_str(), X_OK) != 0)
    return "tests/support/hang_fs was not built (pkg-config found no fuse3): install libfuse3-dev "
           "and fuse3 (scripts/setup-deps --test) and re-run cmake";
  if (::access("/dev/fuse", R_OK | W_OK) != 0)
    return "/dev/fuse is missing or not usable: this kernel or container has no FUSE";
  if (::geteuid() != 0 && !core::find_program("fusermount3"))
    return "not root and no fusermount3 (Debian package fuse3) to mount and unmount with";
  return "";
}

// One hang_fs mount, owned by the test: started from argv in the foreground and single-threaded,
// and on destruction (any path out of a test) released (control file removed), unmounted lazily
// and its daemon killed, so a failing test leaves no mount and no stuck process behind.
class HangFs {
 public:
  HangFs(fs::path mountpoint, fs::path control, fs::path log)
      : mountpoint_(std::move(mountpoint)), control_(std::move(control)), log_(std::move(log)) {}
  HangFs(const HangFs&) = delete;
  HangFs& operator=(const HangFs&) = delete;
  ~HangFs() { release(); }

  /// "" once mounted, else what went wrong.
  std::string start() {
    fs::create_directories(mountpoint_);
    auto d = test::Daemon::start(
        {hang_fs_binary(), control_.string(), mountpoint_.string(), "-f", "-s"}, {}, log_);
    if (!d) return d.error().message;
    daemon_.emplace(std::move(*d));
    auto deadline = Clock::now() + 10s;
    while (Clock::now() < deadline) {
      auto type = mount_type(mountpoint_);
      if (type && type->starts_with("fuse")) return "";
      if (!daemon_->running()) return "hang_fs exited (" + daemon_->exit_status() + "): " + log();
      std::this_thread::sleep_for(20ms);
    }
    return "hang_fs did not mount " + mountpoint_.string() + " within 10 s: " + log();
  }

  void hang() const { std::ofstream(control_).put('x'); }
  void answer() const {
    std::error_code ec;
    fs::remove(control_, ec);
  }
  pid_t daemon_pid() const { return daemon_ ? daemon_->pid() : -1; }
  /// Kills the daemon and leaves the mount: what remains when a FUSE server crashes.
  void kill_daemon() {
    if (daemon_) daemon_->stop();
  }
  bool mounted() const { return mount_type(mountpoint_).has_value(); }
  std::string log() const {
    std::ifstream in(log_);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }

 private:
  void release() {
    answer();  // first, so that nothing stays blocked in the daemon while we unmount
    for (int attempt = 0; attempt < 3 && mounted(); ++attempt) {
      if (::geteuid() == 0) {
        ::umount2(mountpoint_.c_str(), MNT_DETACH);
      } else {
        (void)core::run_process({{"fusermount3", "-u", "-z", mountpoint_.string()}, 5000ms});
      }
    }
    if (mounted()) ADD_FAILURE() << "could not unmount " << mountpoint_;
    if (daemon_) daemon_->stop();
  }

  fs::path mountpoint_;
  fs::path control_;
  fs::path log_;
  std::optional<test::Daemon> daemon_;
};

// Polls with `budget` until a finding of `kind` appears or `limit` passes; returns all findings.
std::vector<Finding> poll_until(FsProbe& probe, Kind kind, std::chrono::milliseconds budget,
                                std::chrono::milliseconds limit) {
  std::vector<Finding> all;
  auto t0 = Clock::now();
  while (since(t0) < limit) {
    auto p0 = Clock::now();
    auto f = probe.poll(budget);
    EXPECT_LE(since(p0), budget + 250ms) << "poll overran its budget";
    if (!f) {
      ADD_FAILURE() << f.error().message;
      return all;
    }
    bool found = false;
    for (auto& finding : *f) {
      found |= finding.kind == kind;
      all.push_back(std::move(finding));
    }
    if (found) return all;
  }
  return all;
}

TEST(FsErrno, BrokenMountsConfigurationAndLocalTroubleAreTold) {
  for (int e : {ENOTCONN, ESTALE, EIO, ETIMEDOUT, EHOSTDOWN, ECONNREFUSED, ENODEV, EREMOTEIO})
    EXPECT_EQ(classify_fs_errno(e), FsErrorClass::broken) << std::strerror(e);
  for (int e : {ENOENT, ENOTDIR, EACCES, EPERM, ELOOP, ENAMETOOLONG})
    EXPECT_EQ(classify_fs_errno(e), FsErrorClass::config) << std::strerror(e);
  for (int e : {ENOMEM, EMFILE, ENFILE, EAGAIN, EINTR, EOVERFLOW})
    EXPECT_EQ(classify_fs_errno(e), FsErrorClass::inconclusive) << std::strerror(e);
  EXPECT_EQ(to_string(FsStep::stat), "stat");
  EXPECT_EQ(to_string(FsStep::readdir), "readdir");
}

TEST(FsProbe, CreateValidatesTheOptionsWithoutTouchingTheMounts) {
  auto relative = FsProbe::create(FsOptions{{"scratch"}, 5000ms});
  ASSERT_FALSE(relative);
  EXPECT_NE(relative.error().message.find("\"scratch\" is not an absolute path"), std::string::npos)
      << relative.error().message;
  EXPECT_FALSE(FsProbe::create(FsOptions{{""}, 5000ms}));
  auto twice = FsProbe::create(FsOptions{{"/scratch", "/scratch/"}, 5000ms});
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().message.find("listed twice"), std::string::npos) << twice.error().message;
  EXPECT_FALSE(FsProbe::create(FsOptions{{"/scratch"}, 0ms}));
  // A path that does not exist is accepted here: create() does no I/O that could hang.
  auto ok = FsProbe::create(FsOptions{{"/nonexistent-cmax-mount/"}, 5000ms});
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->name(), "fs");
  ASSERT_EQ(ok->status().size(), 1u);
  EXPECT_EQ(ok->status()[0].path, "/nonexistent-cmax-mount");
}

TEST(FsProbe, EmptyMountListPollsNothing) {
  auto probe = make_probe({}, 5000ms);
  auto f = probe.poll(1s);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_TRUE(f->empty());
}

TEST(FsProbe, HealthyDirectoriesGiveNoFinding) {
  TempDir dir;
  auto probe = make_probe({dir.path().string(), "/"}, 5000ms);
  for (int i = 0; i < 3; ++i) {
    auto t0 = Clock::now();
    auto f = probe.poll(5s);
    ASSERT_TRUE(f) << f.error().message;
    EXPECT_TRUE(f->empty());
    EXPECT_LT(since(t0), 2s);
  }
  for (const auto& s : probe.status()) {
    EXPECT_FALSE(s.hung) << s.path;
    EXPECT_FALSE(s.checking) << s.path << ": every check of a healthy mount is reaped in its poll";
    EXPECT_EQ(s.problem, "") << s.path;
  }
}

TEST(FsProbe, MissingPathIsAConfigurationProblemNotAFinding) {
  TempDir dir;
  const fs::path missing = dir.path() / "not-mounted-here";
  auto probe = make_probe({missing.string()}, 5000ms);
  auto f = probe.poll(5s);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_TRUE(f->empty()) << "a typo in the mount list must not drain the node";
  auto s = probe.status();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_FALSE(s[0].hung);
  EXPECT_FALSE(s[0].checking);
  EXPECT_EQ(s[0].problem.rfind("stat: No such file or directory; fix the list of mounts", 0), 0u)
      << s[0].problem;
  // Fixed: the problem goes, and nothing is reported (nothing was open to close).
  fs::create_directory(missing);
  f = probe.poll(5s);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_TRUE(f->empty());
  EXPECT_EQ(probe.status()[0].problem, "");
}

TEST(FsProbe, FileInsteadOfADirectoryFailsAtOpendir) {
  TempDir dir;
  const fs::path file = dir.path() / "file";
  std::ofstream(file) << "x";
  auto probe = make_probe({file.string()}, 5000ms);
  auto f = probe.poll(5s);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_TRUE(f->empty());
  EXPECT_EQ(probe.status()[0].problem.rfind("opendir: Not a directory", 0), 0u)
      << probe.status()[0].problem;
}

TEST(FsProbeFuse, HungMountIsReportedOnceWithinTheTimeoutAndRecovers) {
  if (auto why = fuse_unavailable(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const fs::path mnt = dir.path() / "mnt";
  // Declared before the mount guard, so destroyed after it: by then nothing is stuck.
  auto probe = make_probe({mnt.string()}, 1000ms);
  HangFs hang_fs(mnt, dir.path() / "hang", dir.path() / "hang_fs.log");
  ASSERT_EQ(hang_fs.start(), "");

  auto f = probe.poll(3s);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_TRUE(f->empty()) << (f->empty() ? "" : f->front().text);

  hang_fs.hang();
  auto t0 = Clock::now();
  f = probe.poll(3s);
  auto took = since(t0);
  ASSERT_TRUE(f) << f.error().message;
  ASSERT_EQ(f->size(), 1u);
  EXPECT_EQ((*f)[0].kind, Kind::fs_hung);
  EXPECT_EQ((*f)[0].device, mnt.string());
  EXPECT_EQ((*f)[0].subject, "stat did not return within 1000 ms");
  EXPECT_EQ((*f)[0].code, -1);
  EXPECT_GE(took, 990ms);
  EXPECT_LT(took, 1500ms) << "poll() must return at the timeout, not at the end of its budget";
  auto s = probe.status();
  EXPECT_TRUE(s[0].hung);
  EXPECT_TRUE(s[0].checking);
  EXPECT_TRUE(s[0].stuck);

  // The killed check cannot die: it waits uninterruptibly for the daemon. No second check is
  // forked while it lives, and the mount is not reported again.
  std::this_thread::sleep_for(100ms);
  auto stuck = children_except(hang_fs.daemon_pid());
  ASSERT_EQ(stuck.size(), 1u);
  EXPECT_EQ(stuck[0].state, 'D') << "the SIGKILLed check should sit in uninterruptible sleep";
  for (int i = 0; i < 3; ++i) {
    t0 = Clock::now();
    f = probe.poll(300ms);
    EXPECT_LT(since(t0), 550ms);
    ASSERT_TRUE(f) << f.error().message;
    EXPECT_TRUE(f->empty()) << f->front().text;
    auto now = children_except(hang_fs.daemon_pid());
    ASSERT_EQ(now.size(), 1u) << "a second check was forked for a mount with one still stuck";
    EXPECT_EQ(now[0].pid, stuck[0].pid);
    EXPECT_TRUE(probe.status()[0].stuck);
  }

  // The daemon answers: the stuck check returns to user space and dies of its SIGKILL, is reaped,
  // and the next check succeeds.
  hang_fs.answer();
  auto all = poll_until(probe, Kind::fs_ok, 500ms, 10s);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].kind, Kind::fs_ok);
  EXPECT_EQ(all[0].device, mnt.string());
  s = probe.status();
  EXPECT_FALSE(s[0].hung);
  EXPECT_FALSE(s[0].stuck);
  EXPECT_EQ(s[0].problem, "");
  for (const auto& c : children())
    EXPECT_NE(c.pid, stuck[0].pid) << "the stuck check was not reaped";

  f = probe.poll(3s);
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->empty());
}

TEST(FsProbeFuse, BudgetShorterThanTheTimeoutCarriesTheCheckOver) {
  if (auto why = fuse_unavailable(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const fs::path mnt = dir.path() / "mnt";
  auto probe = make_probe({mnt.string()}, 1000ms);
  HangFs hang_fs(mnt, dir.path() / "hang", dir.path() / "hang_fs.log");
  ASSERT_EQ(hang_fs.start(), "");

  hang_fs.hang();
  auto t0 = Clock::now();
  std::vector<Finding> seen;
  int polls = 0;
  while (seen.empty() && since(t0) < 5s) {
    auto p0 = Clock::now();
    auto f = probe.poll(200ms);
    ++polls;
    EXPECT_LT(since(p0), 400ms) << "poll overran its 200 ms budget";
    ASSERT_TRUE(f) << f.error().message;
    seen = std::move(*f);
    if (seen.empty()) {
      EXPECT_LE(children_except(hang_fs.daemon_pid()).size(), 1u) << "one check per mount at most";
    }
  }
  auto at = since(t0);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].kind, Kind::fs_hung);
  EXPECT_GE(at, 990ms);
  EXPECT_LT(at, 1600ms);
  EXPECT_GE(polls, 4) << "the check should have spanned several short polls";
}

TEST(FsProbeFuse, MountsAreCheckedInParallel) {
  if (auto why = fuse_unavailable(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const fs::path a = dir.path() / "a";
  const fs::path b = dir.path() / "b";
  const fs::path control = dir.path() / "hang";
  auto probe = make_probe({a.string(), b.string()}, 1000ms);
  HangFs fs_a(a, control, dir.path() / "a.log");
  HangFs fs_b(b, control, dir.path() / "b.log");
  ASSERT_EQ(fs_a.start(), "");
  ASSERT_EQ(fs_b.start(), "");

  fs_a.hang();  // the same control file hangs both
  auto t0 = Clock::now();
  auto f = probe.poll(5s);
  auto took = since(t0);
  ASSERT_TRUE(f) << f.error().message;
  ASSERT_EQ(f->size(), 2u);
  EXPECT_EQ((*f)[0].kind, Kind::fs_hung);
  EXPECT_EQ((*f)[1].kind, Kind::fs_hung);
  EXPECT_EQ((*f)[0].device, a.string());
  EXPECT_EQ((*f)[1].device, b.string());
  EXPECT_LT(took, 1500ms) << "two hung mounts must cost one timeout, not two";
}

TEST(FsProbeFuse, CrashedFuseDaemonIsABrokenMount) {
  if (auto why = fuse_unavailable(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const fs::path mnt = dir.path() / "mnt";
  auto probe = make_probe({mnt.string()}, 1000ms);
  HangFs hang_fs(mnt, dir.path() / "hang", dir.path() / "hang_fs.log");
  ASSERT_EQ(hang_fs.start(), "");
  auto f = probe.poll(3s);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_TRUE(f->empty());

  hang_fs.kill_daemon();
  ASSERT_TRUE(hang_fs.mounted()) << "the mount should outlive its daemon";
  auto t0 = Clock::now();
  f = probe.poll(3s);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_LT(since(t0), 900ms) << "a dead connection fails fast; no need to wait for the timeout";
  ASSERT_EQ(f->size(), 1u);
  EXPECT_EQ((*f)[0].kind, Kind::fs_hung);
  EXPECT_EQ((*f)[0].subject, "stat failed: Transport endpoint is not connected");
  EXPECT_EQ((*f)[0].code, ENOTCONN);
  f = probe.poll(3s);
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->empty()) << "still broken: not reported again";
}

TEST(FsProbeFuse, DestructorDoesNotWaitForAStuckCheck) {
  if (auto why = fuse_unavailable(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const fs::path mnt = dir.path() / "mnt";
  std::vector<Child> stuck;
  HangFs hang_fs(mnt, dir.path() / "hang", dir.path() / "hang_fs.log");
  ASSERT_EQ(hang_fs.start(), "");
  {
    auto probe = make_probe({mnt.string()}, 500ms);
    hang_fs.hang();
    auto f = probe.poll(2s);
    ASSERT_TRUE(f) << f.error().message;
    ASSERT_EQ(f->size(), 1u);
    stuck = children_except(hang_fs.daemon_pid());
    ASSERT_EQ(stuck.size(), 1u);
    auto t0 = Clock::now();
    { FsProbe gone = std::move(probe); }
    EXPECT_LT(since(t0), 400ms);
  }
  // Released, the check exits (it was killed); the probe is gone, so this test reaps it.
  hang_fs.answer();
  auto t0 = Clock::now();
  pid_t w = 0;
  while (w == 0 && since(t0) < 5s) {
    w = ::waitpid(stuck[0].pid, nullptr, WNOHANG);
    if (w == 0) std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(w, stuck[0].pid);
}

}  // namespace
}  // namespace cmax::probes
