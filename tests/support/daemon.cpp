#include "support/daemon.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>
#include <utility>

#include "core/process.h"
#include "core/unique_fd.h"

extern char** environ;

namespace cmax::test {

bool wait_for_log(const std::filesystem::path& log, std::string_view text, std::chrono::milliseconds timeout,
                  Daemon* daemon) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::ifstream in(log, std::ios::binary);
    const std::string all{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (all.find(text) != std::string::npos) return true;
    if (std::chrono::steady_clock::now() >= deadline || (daemon != nullptr && !daemon->running())) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::optional<std::string> find_system_program(std::string_view name) {
  const char* path = std::getenv("PATH");
  std::string search = std::string(path ? path : "/usr/local/bin:/usr/bin:/bin") +
                       ":/usr/local/sbin:/usr/sbin:/sbin";
  return core::find_program(name, std::string_view(search));
}

Result<Daemon> Daemon::start(const std::vector<std::string>& argv,
                             const std::vector<std::string>& extra_env,
                             const std::filesystem::path& log) {
  auto name = core::describe_argv(argv);
  if (argv.empty()) return fail("start daemon: empty argv");
  auto exe = find_system_program(argv[0]);
  if (!exe) return fail("start {}: {} not found on PATH, /usr/sbin or /sbin", name, argv[0]);
  core::UniqueFd out(::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (!out) return fail("start {}: open {}: {}", name, log.string(), std::strerror(errno));
  core::UniqueFd null_in(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!null_in) return fail("start {}: open /dev/null: {}", name, std::strerror(errno));

  // Everything the child needs is built before fork: after it, only async-signal-safe calls.
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> envp;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    bool overridden = false;
    for (const auto& kv : extra_env)
      overridden |=
          entry.substr(0, entry.find('=') + 1) == std::string_view(kv).substr(0, kv.find('=') + 1);
    if (!overridden) envp.push_back(*e);
  }
  for (const auto& kv : extra_env) envp.push_back(const_cast<char*>(kv.c_str()));
  envp.push_back(nullptr);

  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) return fail("start {}: fork: {}", name, std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::dup2(null_in.get(), 0);
    ::dup2(out.get(), 1);
    ::dup2(out.get(), 2);
    ::execve(exe->c_str(), args.data(), envp.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here, so a kill(-pid) right after start reaches it
  return Daemon(pid, std::move(name));
}

Daemon::Daemon(Daemon&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      name_(std::move(other.name_)),
      exit_status_(std::move(other.exit_status_)) {}

Daemon& Daemon::operator=(Daemon&& other) noexcept {
  if (this != &other) {
    stop();
    pid_ = std::exchange(other.pid_, -1);
    name_ = std::move(other.name_);
    exit_status_ = std::move(other.exit_status_);
  }
  return *this;
}

Daemon::~Daemon() { stop(); }

void Daemon::record(int status) {
  exit_status_ = WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                   : "signal " + std::to_string(WTERMSIG(status));
}

bool Daemon::running() {
  if (pid_ < 0) return false;
  int status = 0;
  pid_t w = ::waitpid(pid_, &status, WNOHANG);
  if (w == 0) return true;
  if (w == pid_) record(status);
  // Helpers it left in its group (slurmctld's slurmscriptd) go with it.
  ::kill(-pid_, SIGKILL);
  pid_ = -1;
  return false;
}

void Daemon::stop() {
  if (pid_ < 0) return;
  // SIGKILL, not SIGTERM: the state is thrown away with the directory, and a graceful slurmd
  // shutdown takes about 2 s.
  ::kill(-pid_, SIGKILL);
  int status = 0;
  pid_t w;
  while ((w = ::waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
  }
  if (w == pid_) record(status);
  pid_ = -1;
}

}  // namespace cmax::test
