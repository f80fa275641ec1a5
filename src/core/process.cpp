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
#include <filesystem>
#include <utility>

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

}  // namespace

std::optional<std::string> self_executable() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  return p.string();
}

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

Result<Child> Child::spawn(const ProcessSpec& spec) {
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

  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, exe->c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return fail("run {}: {}", describe_argv(spec.argv), std::strerror(rc));
  return Child(pid, std::move(out_pipe->read_end), std::move(err_pipe->read_end));
}

Child::Child(Child&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      reaped_(std::exchange(other.reaped_, true)),
      out_(std::move(other.out_)),
      err_(std::move(other.err_)) {}

Child::~Child() {
  if (pid_ <= 0 || reaped_) return;
  ::kill(-pid_, SIGKILL);
  int status = 0;
  // Reap at once when it went; a child stuck in the kernel (a hung mount) is not waited for.
  for (int i = 0; i < 50 && ::waitpid(pid_, &status, WNOHANG) == 0; ++i) ::usleep(1000);
}

bool Child::pump(std::chrono::milliseconds wait, const Sink& on_out, const Sink& on_err) {
  if (!out_ && !err_) return false;
  pollfd fds[2] = {{out_ ? out_.get() : -1, POLLIN, 0}, {err_ ? err_.get() : -1, POLLIN, 0}};
  int n = ::poll(fds, 2, static_cast<int>(std::max<std::int64_t>(wait.count(), 0)));
  if (n <= 0) return true;
  char buf[16384];
  auto read_into = [&](UniqueFd& fd, const Sink& sink) {
    ssize_t r = ::read(fd.get(), buf, sizeof buf);
    if (r > 0) {
      if (sink) sink(std::string_view(buf, static_cast<std::size_t>(r)));
    } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
      fd.reset();
    }
  };
  if (out_ && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) read_into(out_, on_out);
  if (err_ && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) read_into(err_, on_err);
  return out_ || err_;
}

void Child::signal_group(int sig) {
  if (pid_ > 0 && !reaped_) ::kill(-pid_, sig);
}

std::optional<int> Child::wait_exit(std::chrono::milliseconds wait) {
  if (reaped_) return std::nullopt;
  auto deadline = Clock::now() + wait;
  for (;;) {
    int status = 0;
    pid_t w = ::waitpid(pid_, &status, WNOHANG);
    if (w == pid_) {
      reaped_ = true;
      return status;
    }
    if (w < 0 && errno != EINTR) {
      reaped_ = true;
      return std::nullopt;
    }
    if (Clock::now() >= deadline) return std::nullopt;
    ::usleep(1000);
  }
}

Result<ProcessResult> run_process(const ProcessSpec& spec) {
  auto start = Clock::now();
  auto child = Child::spawn(spec);
  if (!child) return Unexpected<Error>{child.error()};

  ProcessResult result;
  auto keep = [&](std::string& sink) {
    return [&sink, &spec, &result](std::string_view bytes) {
      std::size_t room = spec.max_output_bytes > sink.size() ? spec.max_output_bytes - sink.size() : 0;
      std::size_t take = std::min(room, bytes.size());
      sink.append(bytes.data(), take);
      if (take < bytes.size()) result.truncated = true;
    };
  };
  const Child::Sink on_out = keep(result.out), on_err = keep(result.err);
  auto deadline = start + spec.timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      break;
    }
    if (!child->pump(left, on_out, on_err)) break;
  }

  std::optional<int> status;
  if (!result.timed_out) {
    // Output closed; the child may still linger briefly. Wait, but never past the deadline.
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    status = child->wait_exit(std::max(left, std::chrono::milliseconds(0)));
    if (!status) result.timed_out = true;
  }
  if (result.timed_out) {
    child->signal_group(SIGKILL);
    status = child->wait_exit(std::chrono::milliseconds(2000));
  }
  result.wall = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
  if (status && WIFEXITED(*status)) {
    result.exit_code = WEXITSTATUS(*status);
  } else if (status && WIFSIGNALED(*status)) {
    result.signal = WTERMSIG(*status);
  } else if (result.timed_out) {
    result.signal = SIGKILL;  // killed, but stuck in the kernel: not reaped yet
  }
  return result;
}

}  // namespace cmax::core
