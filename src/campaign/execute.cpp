#include "campaign/execute.h"

#include <signal.h>
#include <sys/wait.h>

#include <fstream>

#include <fmt/format.h>

#include "core/process.h"

namespace cmax::campaign {

bool says_nothing(std::string_view line) {
  // The pointers to documents a command prints last: true of its run, not of why it ended.
  if (line.find("report.html") != std::string_view::npos) return true;
  for (std::string_view p : {"report: ", "Run directory: ", "run directory: "})
    if (line.starts_with(p)) return true;
  return false;
}

std::string exit_label(int exit_code) {
  switch (exit_code) {
    case 0: return "clean";
    case 1:
    case 2: return "findings";
    case 3: return "usage or environment";
    case 130: return "interrupted";
    default: return exit_code < 0 ? "no exit code" : "failed";
  }
}

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
  // The stage's last words: its last stderr line (where cmax commands say what went wrong), else
  // its last stdout line; never the "report: PATH" line a command ends with, which says nothing
  // about why it ended.
  struct Tail {
    std::string partial, last;
    void take(std::string_view chunk) {
      partial.append(chunk);
      std::size_t nl;
      while ((nl = partial.find('\n')) != std::string::npos) {
        std::string line = partial.substr(0, nl);
        partial.erase(0, nl + 1);
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
        if (!line.empty() && !says_nothing(line)) last = std::move(line);
      }
      if (partial.size() > 4096) partial.erase(0, partial.size() - 4096);
    }
  } out_tail, err_tail;
  // Flushed as it comes: the log is what a person tails while the stage runs.
  auto write_log = [&](std::string_view chunk) {
    log.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    log.flush();
  };
  auto on_out = [&](std::string_view chunk) {
    write_log(chunk);
    out_tail.take(chunk);
    r.last_line = err_tail.last.empty() ? out_tail.last : err_tail.last;
  };
  auto on_err = [&](std::string_view chunk) {
    write_log(chunk);
    err_tail.take(chunk);
    r.last_line = err_tail.last.empty() ? out_tail.last : err_tail.last;
  };
  const auto deadline = t0 + std::chrono::seconds(d.budget_s);
  std::optional<std::chrono::steady_clock::time_point> killing_at;
  bool timed_out = false, stopped = false;
  auto last_tick = t0;
  std::optional<int> status;
  for (;;) {
    const bool open = child->pump(std::chrono::milliseconds(200), on_out, on_err);
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
                              : fmt::format("exit {} ({}){}", r.exit_code, exit_label(r.exit_code), tail);
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
