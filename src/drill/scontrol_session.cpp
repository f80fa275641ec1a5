#include "drill/scontrol_session.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "core/process.h"

extern char** environ;

namespace cmax::drill {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::string_view kEcho = "scontrol:";       // its prompt, echoed with each command read
// `ping`'s answer ("Slurmctld(primary) at host is UP", or DOWN) frames the answers before it.
// (`version` would save the RPC, but in this mode its output does not come back through the pipe.)
constexpr std::string_view kFrameAnswer = "Slurmctld(";

}  // namespace

Result<ScontrolSession> ScontrolSession::start(const std::string& scontrol, const std::string& conf) {
  auto exe = core::find_program(scontrol);
  if (!exe) return fail("start {}: not found on PATH", scontrol);
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return fail("start scontrol: pipe: {}", std::strerror(errno));
  core::UniqueFd in_r(in[0]), in_w(in[1]);
  if (::pipe2(out, O_CLOEXEC) != 0) return fail("start scontrol: pipe: {}", std::strerror(errno));
  core::UniqueFd out_r(out[0]), out_w(out[1]);
  std::vector<std::string> env_store{"SLURM_TIME_FORMAT=standard"};
  if (!conf.empty()) env_store.push_back("SLURM_CONF=" + conf);
  // The caller's environment passes through (an exported SLURM_CONF included); only what this
  // session sets itself is replaced.
  std::vector<char*> envp;
  for (char** e = environ; e && *e; ++e) {
    if (std::strncmp(*e, "SLURM_TIME_FORMAT=", 18) == 0) continue;
    if (!conf.empty() && std::strncmp(*e, "SLURM_CONF=", 11) == 0) continue;
    envp.push_back(*e);
  }
  for (auto& kv : env_store) envp.push_back(kv.data());
  envp.push_back(nullptr);
  std::string a0 = *exe, a1 = "-o";
  char* argv[] = {a0.data(), a1.data(), nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_r.get(), 0);
  posix_spawn_file_actions_adddup2(&actions, out_w.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, out_w.get(), 2);  // errors in order with answers
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, exe->c_str(), &actions, &attr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return fail("start {}: {}", *exe, std::strerror(rc));
  ::fcntl(out_r.get(), F_SETFL, O_NONBLOCK);
  return ScontrolSession(pid, std::move(in_w), std::move(out_r));
}

ScontrolSession::ScontrolSession(ScontrolSession&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)),
      in_(std::move(o.in_)),
      out_(std::move(o.out_)),
      pending_(std::move(o.pending_)),
      tail_(std::move(o.tail_)) {}

ScontrolSession& ScontrolSession::operator=(ScontrolSession&& o) noexcept {
  if (this != &o) {
    stop();
    pid_ = std::exchange(o.pid_, -1);
    in_ = std::move(o.in_);
    out_ = std::move(o.out_);
    pending_ = std::move(o.pending_);
    tail_ = std::move(o.tail_);
  }
  return *this;
}

ScontrolSession::~ScontrolSession() { stop(); }

void ScontrolSession::stop() {
  in_.reset();
  out_.reset();
  if (pid_ > 0) {
    ::kill(-pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
}

Result<std::vector<std::vector<std::string>>> ScontrolSession::run(const std::vector<std::string>& commands,
                                                                   std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return fail("scontrol session: not running");
  std::string script;
  for (const auto& c : commands) {
    if (c.find('\n') != std::string::npos) return fail("scontrol session: a command holds a newline");
    script += c + "\n";
  }
  script += "ping\n";
  const auto deadline = Clock::now() + timeout;
  for (std::size_t off = 0; off < script.size();) {
    ssize_t n = ::write(in_.get(), script.data() + off, script.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("scontrol session: write: {}", n < 0 ? std::strerror(errno) : "closed");
    off += static_cast<std::size_t>(n);
  }
  // Echo lines ("scontrol: show node n1") open each command's answer; the ping's answer ends it.
  std::vector<std::vector<std::string>> answers;
  bool done = false;
  while (!done) {
    std::size_t nl;
    while (!done && (nl = pending_.find('\n')) != std::string::npos) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      if (line.rfind(kEcho, 0) != 0) {
        tail_ += line + "\n";
        if (tail_.size() > 1024) tail_.erase(0, tail_.size() - 1024);
      }
      if (line.rfind(kEcho, 0) == 0) {
        answers.emplace_back();
        continue;
      }
      if (line.rfind(kFrameAnswer, 0) == 0 && answers.size() == commands.size() + 1) {
        done = true;
        break;
      }
      if (!answers.empty()) answers.back().push_back(std::move(line));
    }
    if (done) break;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      std::string said = last_words();
      stop();
      return fail("scontrol session: no answer within {} ms: is slurmctld up?{}", timeout.count(), said);
    }
    pollfd p{out_.get(), POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno != EINTR) return fail("scontrol session: poll: {}", std::strerror(errno));
    if (r <= 0) continue;
    char buf[65536];
    ssize_t n = ::read(out_.get(), buf, sizeof buf);
    if (n == 0) {
      std::string said = last_words();
      stop();
      return fail("scontrol session: scontrol exited{}", said);
    }
    if (n > 0) pending_.append(buf, static_cast<std::size_t>(n));
  }
  answers.pop_back();  // the frame's own
  return answers;
}

std::string ScontrolSession::last_words() const {
  // What scontrol printed that was no answer: its own error lines ("Could not establish a
  // configuration source") say why it ended.
  const std::string text = tail_ + pending_;
  std::string said;
  for (std::size_t pos = 0; pos < text.size();) {
    auto nl = text.find('\n', pos);
    auto line = std::string_view(text).substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? text.size() : nl + 1;
    if (line.empty() || line.starts_with(kEcho)) continue;
    if (!said.empty()) said += " | ";
    said += line;
    if (said.size() > 400) break;
  }
  return said.empty() ? std::string() : "; it said: " + said.substr(0, 400);
}

}  // namespace cmax::drill
