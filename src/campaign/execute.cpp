#include "campaign/execute.h"

#include <signal.h>
#include <sys/wait.h>

#include <fstream>

#include <fmt/format.h>

#include "core/process.h"

namespace cmax::campaign {

StageRun execute_stage(const Decision& d, const ExecuteOptions& o) {
  StageRun r;
  const auto t0 = std::chrono::steady_clock::now();
  auto since = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  std::ofstream log(o.log_path, std::ios::binary | std::ios::trunc);
  if (!log) {
    r.error = fmt::format("open {}: cannot write the stage's log", o.log_path);
    return r;
  }
  log << "# " << core::describe_argv(d.argv) << "\n";
  log.flush();
  core::ProcessSpec spec;
  spec.argv = d.argv;
  auto child = core::Child::spawn(spec);
  if (!child) {
    r.error = fmt::format("start the {} stage: {}", d.id, child.error().message);
    log << r.error << "\n";
    return r;
  }
  std::string partial;
  auto sink = [&](std::string_view chunk) {
    log.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    partial.append(chunk);
    // The last complete, non-empty line (progress lines end in '\r' on a TTY; not here: a pipe).
    std::size_t end = partial.find_last_of('\n');
    if (end == std::string::npos) {
      if (partial.size() > 4096) partial.erase(0, partial.size() - 4096);
      return;
    }
    std::size_t start = partial.find_last_of('\n', end == 0 ? 0 : end - 1);
    start = start == std::string::npos || start >= end ? 0 : start + 1;
    std::string line = partial.substr(start, end - start);
    if (!line.empty()) r.last_line = line;
    partial.erase(0, end + 1);
  };
  const auto deadline = t0 + std::chrono::seconds(d.budget_s);
  std::optional<std::chrono::steady_clock::time_point> killing_at;
  bool timed_out = false, stopped = false;
  auto last_tick = t0;
  std::optional<int> status;
  for (;;) {
    const bool open = child->pump(std::chrono::milliseconds(200), sink, sink);
    const auto now = std::chrono::steady_clock::now();
    if (!killing_at) {
      if (o.stop && o.stop->load()) stopped = true;
      if (now >= deadline) timed_out = true;
      if (stopped || timed_out) {
        child->signal_group(SIGINT);
        killing_at = now + o.grace;
      }
    } else if (now >= *killing_at) {
      child->signal_group(SIGKILL);
      killing_at = now + std::chrono::hours(1);
    }
    if (o.on_tick && now - last_tick >= std::chrono::seconds(1)) {
      last_tick = now;
      o.on_tick(since(), r.last_line);
    }
    if (!open) {
      status = child->wait_exit(std::chrono::milliseconds(killing_at ? 100 : 1000));
      if (status) break;
    }
  }
  log.flush();
  r.seconds = since();
  const int st = *status;
  if (WIFEXITED(st)) r.exit_code = WEXITSTATUS(st);
  const std::string tail = r.last_line.empty() ? "" : fmt::format(" (last line: {})", r.last_line);
  if (stopped) {
    r.status = Status::interrupted;
    r.error = fmt::format("interrupted after {:.0f} s; what it wrote before is kept{}", r.seconds, tail);
  } else if (timed_out) {
    r.status = Status::timed_out;
    r.error = fmt::format("stopped at its budget of {} s{}; raise the stage's budget_s or --budget", d.budget_s, tail);
  } else if (WIFEXITED(st) && r.exit_code >= 0 && r.exit_code <= 2) {
    r.status = Status::done;
  } else {
    r.status = Status::failed;
    r.error = WIFSIGNALED(st) ? fmt::format("killed by signal {}{}", WTERMSIG(st), tail)
                              : fmt::format("exit {}{}", r.exit_code, tail);
  }
  log << fmt::format("# {} after {:.1f} s, exit {}\n", to_string(r.status), r.seconds, r.exit_code);
  if (!d.cleanup_argv.empty()) {
    // Whatever became of the stage: put back what it changed (bounded; not interruptible, so a
    // Ctrl-C never leaves a node drained).
    log << "# cleanup: " << core::describe_argv(d.cleanup_argv) << "\n";
    auto c = core::run_process({d.cleanup_argv, std::chrono::seconds(300), 1u << 20, {}});
    if (c) log << c->out << c->err;
    const bool ok = c && !c->timed_out && c->exit_code == 0;
    log << fmt::format("# cleanup {}\n", ok ? "done" : "FAILED");
    if (!ok) {
      std::string why = !c ? c.error().message : c->timed_out ? "no end in 300 s" : fmt::format("exit {}", c->exit_code);
      r.error += fmt::format("{}cleanup failed ({}): run `{}` by hand", r.error.empty() ? "" : "; ", why,
                             core::describe_argv(d.cleanup_argv));
      if (r.status == Status::done) r.status = Status::failed;
    }
    r.seconds = since();
  }
  log.flush();
  return r;
}

}  // namespace cmax::campaign
