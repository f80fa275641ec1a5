#include "core/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/unique_fd.h"

extern char** environ;

namespace cmax::core {
namespace {

using Clock = std::chrono::steady_clock;

struct Pipe {
  UniqueFd read_end;
  UniqueFd write_end;
};

Result<Pipe> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return fail("create pipe: {}", std::strerror(errno));
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// Reads what is available into `sink`, keeping at most `cap` bytes. Returns false at EOF.
bool drain(int fd, std::string& sink, std::size_t cap, bool& truncated) {
  char buf[16384];
  ssize_t n = ::read(fd, buf, sizeof buf);
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  if (n == 0) return false;
  std::size_t room = cap > sink.size() ? cap - sink.size() : 0;
  std::size_t take = std::min<std::size_t>(room, static_cast<std::size_t>(n));
  sink.append(buf, take);
  if (take < static_cast<std::size_t>(n)) truncated = true;
  return true;
}

}  // namespace

std::optional<std::string> find_program(std::string_view name, std::optional<std::string_view> path_env) {
  if (name.find('/') != std::string_view::npos) {
    std::string p(name);
    return ::access(p.c_str(), X_OK) == 0 ? std::optional(p) : std::nullopt;
  }
  std::string_view path;
  if (path_env) {
    path = *path_env;
  } else {
    const char* env = std::getenv("PATH");
    path = env ? env : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  }
  while (!path.empty()) {
    auto colon = path.find(':');
    std::string_view dir = path.substr(0, colon);
    path = colon == std::string_view::npos ? std::string_view{} : path.substr(colon + 1);
    if (dir.empty()) continue;
    std::string candidate = std::string(dir) + "/" + std::string(name);
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return std::nullopt;
}

std::string describe_argv(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    out += a;
  }
  return out;
}

Result<ProcessResult> run_process(const ProcessSpec& spec) {
  if (spec.argv.empty()) return fail("run process: empty argv");
  auto exe = find_program(spec.argv[0]);
  if (!exe) return fail("run {}: not found on PATH", spec.argv[0]);

  auto out_pipe = make_pipe();
  if (!out_pipe) return Unexpected<Error>{out_pipe.error()};
  auto err_pipe = make_pipe();
  if (!err_pipe) return Unexpected<Error>{err_pipe.error()};

  std::vector<char*> argv;
  argv.reserve(spec.argv.size() + 1);
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  // extra_env overrides: getenv() returns the first match, so inherited entries with the same key go.
  auto overridden = [&spec](std::string_view entry) {
    auto key = entry.substr(0, entry.find('=') + 1);
    for (const auto& kv : spec.extra_env)
      if (std::string_view(kv).substr(0, kv.find('=') + 1) == key) return true;
    return false;
  };
  std::vector<char*> envp;
  for (char** e = environ; e && *e; ++e)
    if (!overridden(*e)) envp.push_back(*e);
  for (const auto& kv : spec.extra_env) envp.push_back(const_cast<char*>(kv.c_str()));
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe->write_end.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe->write_end.get(), 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // A process group of its own, so a timeout kills grandchildren too; default signal dispositions.
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  auto start = Clock::now();
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, exe->c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return fail("run {}: {}", describe_argv(spec.argv), std::strerror(rc));
  out_pipe->write_end.reset();
  err_pipe->write_end.reset();

  ProcessResult result;
  auto deadline = start + spec.timeout;
  bool out_open = true, err_open = true;
  while (out_open || err_open) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      break;
    }
    pollfd fds[2] = {{out_open ? out_pipe->read_end.get() : -1, POLLIN, 0},
                     {err_open ? err_pipe->read_end.get() : -1, POLLIN, 0}};
    int n = ::poll(fds, 2, static_cast<int>(left.count()));
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    if (out_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)))
      out_open = drain(fds[0].fd, result.out, spec.max_output_bytes, result.truncated);
    if (err_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)))
      err_open = drain(fds[1].fd, result.err, spec.max_output_bytes, result.truncated);
  }

  int status = 0;
  if (result.timed_out) {
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  } else {
    // Output closed; the child may still linger briefly. Wait, but never past the deadline.
    for (;;) {
      pid_t w = ::waitpid(pid, &status, WNOHANG);
      if (w == pid) break;
      if (w < 0 && errno != EINTR) break;
      if (Clock::now() >= deadline) {
        result.timed_out = true;
        ::kill(-pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        break;
      }
      ::usleep(1000);
    }
  }
  result.wall = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  return result;
}

}  // namespace cmax::core
