#include "health/runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/unique_fd.h"

extern char** environ;

namespace cmax::health {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using core::UniqueFd;
using std::chrono::milliseconds;

constexpr std::size_t kMaxOut = 1u << 20;
constexpr std::size_t kMaxErr = 64u << 10;
constexpr std::string_view kBounds[] = {"min", "max", "warn_min", "warn_max"};

// Children killed at their deadline that had not died yet: reaped (WNOHANG) whenever the runner
// next starts a child, so a long-lived caller collects them once the filesystem answers again.
// Those still stuck when this process exits go to init.
class Orphans {
 public:
  void add(pid_t pid) {
    std::lock_guard lock(mutex_);
    pids_.push_back(pid);
  }
  void reap() {
    std::lock_guard lock(mutex_);
    std::erase_if(pids_, [](pid_t pid) { return ::waitpid(pid, nullptr, WNOHANG) != 0; });
  }

 private:
  std::mutex mutex_;
  std::vector<pid_t> pids_;
};

Orphans& orphans() {
  static Orphans o;
  return o;
}

// Appends what can be read now, up to `cap`; false at EOF or on an error.
bool drain(int fd, std::string& sink, std::size_t cap) {
  char buf[16384];
  ssize_t n = ::read(fd, buf, sizeof buf);
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  if (n == 0) return false;
  sink.append(buf, std::min(static_cast<std::size_t>(n), cap > sink.size() ? cap - sink.size() : 0));
  return true;
}

// Waits up to `grace` for `pid` to exit; true (and `status` set) once reaped.
bool reap_within(pid_t pid, milliseconds grace, int& status) {
  auto until = Clock::now() + grace;
  for (;;) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) return true;
    if (w < 0 && errno != EINTR) return true;  // not ours any more: nothing left to wait for
    if (Clock::now() >= until) return false;
    std::this_thread::sleep_for(milliseconds(2));
  }
}

std::string self_exe() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("/proc/self/exe") : p.string();
}

bool selected(std::span<const std::string> groups, std::string_view g) {
  return groups.empty() || std::find(groups.begin(), groups.end(), g) != groups.end();
}

std::string seconds_text(milliseconds ms) {
  return ms.count() % 1000 == 0 ? fmt::format("{} s", ms.count() / 1000)
                                : fmt::format("{:.1f} s", static_cast<double>(ms.count()) / 1000);
}

std::string tail(std::string_view text, std::size_t n) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  return std::string(text.size() > n ? text.substr(text.size() - n) : text);
}

json options_json(const ActiveOptions& o) {
  return {{"host_root", o.host_root},
          {"storage_path", o.storage_path},
          {"metadata_files", o.metadata_files},
          {"seq_bytes", o.seq_bytes},
          {"fsync_count", o.fsync_count},
          {"stall_window_ms", o.stall_window.count()},
          {"check_timeout_ms", o.check_timeout.count()}};
}

Result<ActiveOptions> options_from_json(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return fail("read --child-options: not a JSON object; this flag is for cmax's own use");
  ActiveOptions o;
  try {
    o.host_root = j.value("host_root", o.host_root);
    o.storage_path = j.value("storage_path", o.storage_path);
    o.metadata_files = j.value("metadata_files", o.metadata_files);
    o.seq_bytes = j.value("seq_bytes", o.seq_bytes);
    o.fsync_count = j.value("fsync_count", o.fsync_count);
    o.stall_window = milliseconds(j.value("stall_window_ms", o.stall_window.count()));
    o.check_timeout = milliseconds(j.value("check_timeout_ms", o.check_timeout.count()));
  } catch (const json::exception& e) {
    return fail("read --child-options: {}; this flag is for cmax's own use", e.what());
  }
  return o;
}

// The table as a document Thresholds::parse reads back: "<check>.<measurement>": {bound: value}.
Result<std::string> thresholds_json(const Thresholds& t) {
  json entries = json::object();
  for (const auto& [key, value] : t.values()) {
    auto dot = key.rfind('.');
    std::string_view bound = dot == std::string::npos ? std::string_view{} : std::string_view(key).substr(dot + 1);
    // warn_min and warn_max have their own dot-free suffix; min and max too.
    if (std::find(std::begin(kBounds), std::end(kBounds), bound) == std::end(kBounds))
      return fail("hand thresholds to the checks: key '{}' does not end in .min, .max, .warn_min "
                  "or .warn_max; fix the key", key);
    entries[key.substr(0, dot)][std::string(bound)] = value;
  }
  // "origin" (ignored by the parser) keeps the table's name for the child's reasons.
  return json{{"schema", "cmax.health-thresholds/1"}, {"origin", t.origin()}, {"thresholds", std::move(entries)}}
      .dump();
}

// A result for `check` that its child could not give.
CheckResult stand_in(const ActiveCheck& check, const ActiveOptions& o) {
  CheckResult r;
  r.id = std::string(check.id);
  r.category = check.category;
  r.title = std::string(check.title);
  if (check.group == "storage") r.target = o.storage_path;
  return r;
}

}  // namespace

Result<std::vector<std::string>> parse_groups(std::string_view csv) {
  std::vector<std::string> out;
  while (!csv.empty()) {
    auto comma = csv.find(',');
    std::string_view g = csv.substr(0, comma);
    csv = comma == std::string_view::npos ? std::string_view{} : csv.substr(comma + 1);
    while (!g.empty() && g.front() == ' ') g.remove_prefix(1);
    while (!g.empty() && g.back() == ' ') g.remove_suffix(1);
    if (g.empty()) continue;
    if (std::find(std::begin(kActiveGroups), std::end(kActiveGroups), g) == std::end(kActiveGroups))
      return fail("--checks: unknown group '{}'; choose from storage, memory, cpu, gpu", g);
    if (std::find(out.begin(), out.end(), g) == out.end()) out.emplace_back(g);
  }
  if (out.empty()) return fail("--checks: no group given; choose from storage, memory, cpu, gpu");
  return out;
}

Result<std::vector<std::string>> child_argv(const std::string& program, std::string_view id,
                                            const ActiveOptions& o, const Thresholds& t) {
  auto th = thresholds_json(t);
  if (!th) return Unexpected<Error>{th.error()};
  // A table changed with set() can contradict itself; say so here, not once per child.
  if (auto back = Thresholds::parse(*th, t.origin()); !back) return Unexpected<Error>{back.error()};
  return std::vector<std::string>{program,
                                  "check",
                                  "--run-one",
                                  std::string(id),
                                  "--child-options",
                                  options_json(o).dump(),
                                  "--child-thresholds",
                                  *th};
}

Result<std::string> run_one(std::string_view id, std::string_view options_text,
                            std::string_view thresholds_text) {
  auto checks = all_active_checks();
  auto it = std::find_if(checks.begin(), checks.end(), [id](const ActiveCheck& c) { return c.id == id; });
  if (it == checks.end()) return fail("--run-one: unknown check '{}'", id);
  auto o = options_from_json(options_text);
  if (!o) return Unexpected<Error>{o.error()};
  std::string origin = "--child-thresholds";
  if (json j = json::parse(thresholds_text, nullptr, false); j.is_object() && j.contains("origin") && j["origin"].is_string())
    origin = j["origin"].get<std::string>();
  auto t = thresholds_text.empty() ? Thresholds::builtin() : Thresholds::parse(thresholds_text, origin);
  if (!t) return Unexpected<Error>{t.error()};
  return to_json(it->run(*o, *t)).dump();
}

Result<ChildRun> run_bounded(const std::vector<std::string>& argv, milliseconds timeout,
                             milliseconds reap_grace) {
  if (argv.empty()) return fail("run a check process: empty argv");
  orphans().reap();
  int out_fds[2], err_fds[2];
  if (::pipe2(out_fds, O_CLOEXEC) != 0) return fail("run {}: pipe: {}", argv[0], std::strerror(errno));
  UniqueFd out_r(out_fds[0]), out_w(out_fds[1]);
  if (::pipe2(err_fds, O_CLOEXEC) != 0) return fail("run {}: pipe: {}", argv[0], std::strerror(errno));
  UniqueFd err_r(err_fds[0]), err_w(err_fds[1]);

  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_w.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, err_w.get(), 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group, so the kill at the deadline reaches anything it started.
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  auto start = Clock::now();
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return fail("run {}: {}; check the cmax binary's path", argv[0], std::strerror(rc));
  out_w.reset();
  err_w.reset();

  ChildRun run;
  run.pid = pid;
  const auto deadline = start + timeout;
  bool out_open = true, err_open = true;
  int status = 0;
  bool reaped = false;
  // Output first (a child writes its result, then exits), then the exit itself, both by the deadline.
  while (!reaped) {
    auto left = std::chrono::ceil<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      run.timed_out = true;
      break;
    }
    if (!out_open && !err_open) {
      pid_t w = ::waitpid(pid, &status, WNOHANG);
      if (w == pid || (w < 0 && errno != EINTR)) {
        reaped = true;
        break;
      }
      std::this_thread::sleep_for(std::min(left, milliseconds(2)));
      continue;
    }
    pollfd fds[2] = {{out_open ? out_r.get() : -1, POLLIN, 0}, {err_open ? err_r.get() : -1, POLLIN, 0}};
    int n = ::poll(fds, 2, static_cast<int>(left.count()));
    if (n < 0 && errno != EINTR) return fail("run {}: poll: {}", argv[0], std::strerror(errno));
    if (n <= 0) continue;
    if (out_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) out_open = drain(fds[0].fd, run.out, kMaxOut);
    if (err_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) err_open = drain(fds[1].fd, run.err, kMaxErr);
  }
  if (run.timed_out) {
    // Still our unreaped child, so neither its pid nor its group can name another process.
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
    if (reap_within(pid, reap_grace, status)) {
      reaped = true;
    } else {
      run.abandoned = true;
      orphans().add(pid);
    }
  }
  run.wall = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
  if (reaped && WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  if (reaped && WIFSIGNALED(status)) run.signal = WTERMSIG(status);
  return run;
}

CheckResult result_from_child(const ActiveCheck& check, const ActiveOptions& o, const ChildRun& run) {
  CheckResult r = stand_in(check, o);
  r.duration_s = static_cast<double>(run.wall.count()) / 1000;
  if (run.timed_out) {
    r.outcome = audit::Outcome::fail;
    r.timed_out = true;
    const std::string limit = seconds_text(o.check_timeout);
    const std::string stuck =
        run.abandoned ? fmt::format(" The check process (pid {}) did not die of SIGKILL: it is stuck "
                                    "in the kernel and is left behind.", run.pid)
                      : std::string(" The check process was killed.");
    if (check.group == "storage") {
      r.summary = fmt::format("did not finish in {}: hung or extremely slow", limit);
      r.reason = fmt::format(
          "{} on {} did not finish in {}: the filesystem is hung or extremely slow (a process stuck "
          "on it cannot be killed; check the mount with `mount` and `dmesg`, and its servers).{}",
          check.id, o.storage_path, limit, stuck);
    } else {
      r.summary = fmt::format("did not finish in {}", limit);
      r.reason = fmt::format(
          "{} did not finish in {}: the node is stalled or overloaded (check `dmesg` for soft "
          "lockups and `top` for what else runs; raise --check-timeout-s on a large node).{}",
          check.id, limit, stuck);
    }
    return r;
  }
  auto bad = [&](std::string why) {
    r.outcome = audit::Outcome::unverified;
    r.summary = "the check process failed";
    std::string err = tail(run.err, 400);
    r.reason = fmt::format("{}{}; this is a cmax problem, not a finding: report it with the "
                           "output of `cmax check --active --checks {}`",
                           why, err.empty() ? "" : ": " + err, check.group);
    return r;
  };
  if (run.signal != 0) return bad(fmt::format("the check process died of signal {} ({})", run.signal, ::strsignal(run.signal)));
  if (run.exit_code != 0) return bad(fmt::format("the check process exited with status {}", run.exit_code));
  json j = json::parse(run.out, nullptr, false);
  if (j.is_discarded()) return bad("the check process printed no result JSON");
  auto parsed = check_from_json(j);
  if (!parsed) return bad(parsed.error().message);
  if (parsed->id != check.id)
    return bad(fmt::format("the check process answered for '{}', not '{}'", parsed->id, check.id));
  return std::move(*parsed);
}

Result<std::vector<CheckResult>> run_active(const ActiveOptions& o, const Thresholds& t,
                                            std::span<const std::string> groups,
                                            const RunnerOptions& ro) {
  for (const auto& g : groups)
    if (std::find(std::begin(kActiveGroups), std::end(kActiveGroups), g) == std::end(kActiveGroups))
      return fail("run active checks: unknown group '{}'; choose from storage, memory, cpu, gpu", g);
  const std::string program = ro.program.empty() ? self_exe() : ro.program;

  std::vector<const ActiveCheck*> plan;
  for (const auto& c : all_active_checks())
    if (selected(groups, c.group)) plan.push_back(&c);
  const bool gpu = selected(groups, "gpu");
  const std::size_t total = plan.size() + (gpu ? 1 : 0);

  std::vector<CheckResult> results;
  // A storage check that timed out leaves a process stuck on the mount; the next one would only
  // add another, so the rest of the group is not run.
  std::string hung_by;
  std::size_t index = 0;
  for (const ActiveCheck* c : plan) {
    ++index;
    if (ro.on_start) ro.on_start(c->id, index, total);
    CheckResult r;
    if (c->group == "storage" && !hung_by.empty()) {
      r = stand_in(*c, o);
      r.outcome = audit::Outcome::unverified;
      r.summary = fmt::format("not run: {} timed out on this path", hung_by);
      r.reason = fmt::format("not run: {} on {} did not finish in {}, so this check would hang "
                             "too; fix the mount and run again", hung_by, o.storage_path,
                             seconds_text(o.check_timeout));
    } else {
      auto argv = child_argv(program, c->id, o, t);
      if (!argv) return Unexpected<Error>{argv.error()};
      auto run = run_bounded(*argv, o.check_timeout, ro.reap_grace);
      if (!run) return fail("run active check {}: {}", c->id, run.error().message);
      r = result_from_child(*c, o, *run);
      if (r.timed_out && c->group == "storage") hung_by = std::string(c->id);
    }
    if (ro.on_result) ro.on_result(r);
    results.push_back(std::move(r));
  }
  if (gpu) {
    if (ro.on_start) ro.on_start("gpu", total, total);
    auto g = run_gpu_checks(o.gpu);
    if (!g) return Unexpected<Error>{g.error()};
    for (auto& r : *g) {
      if (ro.on_result) ro.on_result(r);
      results.push_back(std::move(r));
    }
  }
  return results;
}

}  // namespace cmax::health
