#include "probes/fs_probe.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434  // the same number on every architecture (Linux 5.3)
#endif

namespace cmax::probes {
namespace {

using signals::Kind;

int pidfd_open(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

// The child: only async-signal-safe calls (the agent is multithreaded, and after fork only the
// forking thread exists; a lock another thread held stays held). Exit 0 when every step
// answered, else the failing step's errno (all fit in 8 bits on Linux).
[[noreturn]] void run_check(const char* path, int progress_fd, pid_t parent) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(EINTR);  // the agent died before prctl
  // The agent's signal handlers and mask are not for this process.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  auto begin = [progress_fd](FsStep step) {
    auto byte = static_cast<unsigned char>(step);
    [[maybe_unused]] auto n = ::write(progress_fd, &byte, 1);
  };
  auto failed = [] { ::_exit(errno > 0 && errno < 256 ? errno : EIO); };

  begin(FsStep::stat);
  struct stat st;
  if (::stat(path, &st) != 0) failed();
  begin(FsStep::statfs);
  struct statfs sfs;
  if (::statfs(path, &sfs) != 0) failed();
  // open + getdents64 rather than opendir/readdir, which allocate.
  begin(FsStep::opendir);
  int dir = ::open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) failed();
  begin(FsStep::readdir);
  alignas(8) char entries[4096];
  if (::syscall(SYS_getdents64, dir, entries, sizeof entries) < 0) failed();
  ::_exit(0);
}

Finding mount_finding(Kind kind, const std::string& path, int code, std::string subject,
                      std::string_view tail) {
  Finding f;
  f.kind = kind;
  f.code = code;
  f.device = path;
  f.text = fmt::format("fs: {}: {}{}", path, subject, tail);
  f.subject = std::move(subject);
  return f;
}

}  // namespace

std::string_view to_string(FsStep step) {
  switch (step) {
    case FsStep::stat:
      return "stat";
    case FsStep::statfs:
      return "statfs";
    case FsStep::opendir:
      return "opendir";
    case FsStep::readdir:
      return "readdir";
  }
  return "stat";
}

FsErrorClass classify_fs_errno(int error) {
  switch (error) {
    case ENOENT:
    case ENOTDIR:
    case EACCES:
    case EPERM:
    case ELOOP:
    case ENAMETOOLONG:
      return FsErrorClass::config;
    case EIO:
    case ENOTCONN:
    case ESTALE:
    case ETIMEDOUT:
    case EHOSTDOWN:
    case EHOSTUNREACH:
    case ENETDOWN:
    case ENETUNREACH:
    case ECONNREFUSED:
    case ECONNRESET:
    case ECONNABORTED:
    case ENODEV:
    case ENXIO:
    case ESHUTDOWN:
    case EREMOTEIO:
    case ENOLINK:
    case ECOMM:
    case EPROTO:
    case EUCLEAN:
      return FsErrorClass::broken;
    default:
      return FsErrorClass::inconclusive;
  }
}

Result<FsProbe> FsProbe::create(FsOptions options) {
  if (options.timeout.count() <= 0)
    return fail("fs probe: timeout {} ms is not positive; give a timeout such as 5000 ms",
                options.timeout.count());
  std::set<std::string> seen;
  for (auto& path : options.mounts) {
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    if (path.empty() || path.front() != '/')
      return fail("fs probe: mount \"{}\" is not an absolute path; list mount points like /scratch",
                  path);
    if (!seen.insert(path).second)
      return fail("fs probe: mount {} is listed twice; list each mount once", path);
  }
  // pidfds are how the probe waits with a deadline; without them it cannot bound its waits.
  core::UniqueFd self(pidfd_open(::getpid()));
  if (!self)
    return fail("fs probe: pidfd_open: {}; mount checks need Linux 5.3 or later",
                std::strerror(errno));
  return FsProbe(std::move(options));
}

FsProbe::FsProbe(FsOptions options) : timeout_(options.timeout) {
  mounts_.reserve(options.mounts.size());
  for (auto& path : options.mounts) {
    Mount m;
    m.path = std::move(path);
    mounts_.push_back(std::move(m));
  }
}

FsProbe::~FsProbe() {
  for (pid_t pid : orphans_) ::waitpid(pid, nullptr, WNOHANG);
  std::vector<pollfd> fds;
  for (auto& m : mounts_) {
    if (m.pid <= 0) continue;
    ::kill(m.pid, SIGKILL);
    fds.push_back({m.pidfd.get(), POLLIN, 0});
  }
  auto deadline = Clock::now() + std::chrono::milliseconds(100);
  while (!fds.empty()) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    int n = ::poll(fds.data(), fds.size(), static_cast<int>(left.count()));
    if (n < 0 && errno != EINTR) break;
    for (auto& m : mounts_) {
      if (m.pid <= 0) continue;
      if (::waitpid(m.pid, nullptr, WNOHANG) == m.pid) {
        m.pid = -1;
        std::erase_if(fds, [&m](const pollfd& p) { return p.fd == m.pidfd.get(); });
      }
    }
  }
}

void FsProbe::start_check(Mount& m) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    m.problem = fmt::format("pipe: {}; the mount was not checked this time", std::strerror(errno));
    return;
  }
  core::UniqueFd read_end(pipe_fds[0]);
  core::UniqueFd write_end(pipe_fds[1]);
  const char* path = m.path.c_str();
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    m.problem = fmt::format("fork: {}; the mount was not checked this time", std::strerror(errno));
    return;
  }
  if (pid == 0) run_check(path, write_end.get(), parent);
  core::UniqueFd pidfd(pidfd_open(pid));
  if (!pidfd) {
    // Out of file descriptors, most likely. Without a pidfd there is no bounded wait, so the check
    // is abandoned; the child is still ours (unreaped), so the kill cannot reach another process.
    int error = errno;
    ::kill(pid, SIGKILL);
    orphans_.push_back(pid);
    m.problem =
        fmt::format("pidfd_open: {}; the mount was not checked this time", std::strerror(error));
    return;
  }
  m.pid = pid;
  m.pidfd = std::move(pidfd);
  m.progress = std::move(read_end);
  m.started = Clock::now();
  m.killed = false;
  m.step = FsStep::stat;
}

void FsProbe::read_progress(Mount& m) {
  unsigned char buf[16];
  for (;;) {
    ssize_t n = ::read(m.progress.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    unsigned char last = buf[n - 1];
    if (last >= 1 && last <= 4) m.step = static_cast<FsStep>(last);
  }
}

// Reaps the mount's check process if it has exited and turns its exit into findings.
bool FsProbe::try_reap(Mount& m, std::vector<Finding>& findings) {
  int status = 0;
  pid_t w = ::waitpid(m.pid, &status, WNOHANG);
  if (w == 0) return false;
  if (w < 0 && errno == EINTR) return false;
  read_progress(m);
  bool killed = m.killed;
  m.pid = -1;
  m.pidfd.reset();
  m.progress.reset();
  m.killed = false;
  // A check killed at its deadline was already reported hung; its exit says nothing new.
  if (killed) return true;
  std::string step(to_string(m.step));
  if (w < 0) {
    m.problem =
        fmt::format("{}: the check process was reaped elsewhere ({})", step, std::strerror(errno));
    return true;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    m.problem.clear();
    if (m.hung) {
      m.hung = false;
      findings.push_back(mount_finding(Kind::fs_ok, m.path, -1, "answers again",
                                       " (stat, statfs and readdir returned)"));
    }
    return true;
  }
  if (!WIFEXITED(status)) {
    m.problem = fmt::format("{}: the check process died of signal {}", step, WTERMSIG(status));
    return true;
  }
  int error = WEXITSTATUS(status);
  switch (classify_fs_errno(error)) {
    case FsErrorClass::broken:
      m.problem.clear();
      if (!m.hung) {
        m.hung = true;
        findings.push_back(mount_finding(Kind::fs_hung, m.path, error,
                                         fmt::format("{} failed: {}", step, std::strerror(error)),
                                         ""));
      }
      break;
    case FsErrorClass::config:
      m.problem = fmt::format("{}: {}; fix the list of mounts to watch (not reported as fs_hung)",
                              step, std::strerror(error));
      break;
    case FsErrorClass::inconclusive:
      m.problem = fmt::format("{}: {}; the check could not tell (not reported as fs_hung)", step,
                              std::strerror(error));
      break;
  }
  return true;
}

void FsProbe::time_out(Mount& m, std::vector<Finding>& findings) {
  read_progress(m);
  ::kill(m.pid, SIGKILL);  // still our unreaped child: the pid cannot name another process
  m.killed = true;
  if (m.hung) return;
  m.hung = true;
  findings.push_back(mount_finding(
      Kind::fs_hung, m.path, -1,
      fmt::format("{} did not return within {} ms", to_string(m.step), timeout_.count()),
      "; the check process was killed"));
}

Result<std::vector<Finding>> FsProbe::poll(std::chrono::milliseconds budget) {
  const auto budget_end = Clock::now() + budget;
  std::vector<Finding> findings;

  std::erase_if(orphans_, [](pid_t pid) { return ::waitpid(pid, nullptr, WNOHANG) != 0; });
  // Checks that ended since the last poll, including killed ones that finally exited.
  for (auto& m : mounts_)
    if (m.pid > 0) try_reap(m, findings);
  for (auto& m : mounts_)
    if (m.pid <= 0) start_check(m);

  std::vector<pollfd> fds;
  std::vector<Mount*> owners;
  for (;;) {
    auto now = Clock::now();
    fds.clear();
    owners.clear();
    auto wake = budget_end;
    bool waiting = false;
    for (auto& m : mounts_) {
      if (m.pid <= 0) continue;
      if (!m.killed && now >= m.started + timeout_) time_out(m, findings);
      if (!m.killed) {
        waiting = true;
        wake = std::min(wake, m.started + timeout_);
      }
      // Killed ones too: one that dies now is reaped now.
      fds.push_back({m.pidfd.get(), POLLIN, 0});
      owners.push_back(&m);
    }
    if (!waiting || now >= budget_end) break;
    auto left = std::chrono::ceil<std::chrono::milliseconds>(wake - now);
    int n = ::poll(fds.data(), fds.size(), static_cast<int>(std::max<long long>(left.count(), 0)));
    if (n < 0 && errno != EINTR)
      return fail("fs probe: poll on check processes: {}", std::strerror(errno));
    if (n <= 0) continue;
    for (std::size_t i = 0; i < fds.size(); ++i)
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) try_reap(*owners[i], findings);
  }
  return findings;
}

std::vector<FsMountStatus> FsProbe::status() const {
  std::vector<FsMountStatus> out;
  out.reserve(mounts_.size());
  for (const auto& m : mounts_)
    out.push_back({m.path, m.hung, m.pid > 0, m.pid > 0 && m.killed, m.problem});
  return out;
}

std::vector<std::string> FsProbe::problems() const {
  std::vector<std::string> out;
  for (const auto& m : status())
    if (!m.problem.empty()) out.push_back(m.path + ": " + m.problem);
  return out;
}

}  // namespace cmax::probes
