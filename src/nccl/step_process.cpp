#include "nccl/step_process.h"

#include <signal.h>
#include <sys/wait.h>

#include <optional>

namespace cmax::nccl {

Result<StepOutcome> run_step_process(const core::ProcessSpec& spec, const std::atomic<bool>* stop) {
  auto child = core::Child::spawn(spec);
  if (!child) return Unexpected<Error>{child.error()};
  StepOutcome o;
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + spec.timeout;
  auto keep = [&](std::string& into) {
    return [&into, &o, max = spec.max_output_bytes](std::string_view bytes) {
      const std::size_t room = max > into.size() ? max - into.size() : 0;
      into.append(bytes.substr(0, room));
      if (bytes.size() > room) o.result.truncated = true;
    };
  };
  const core::Child::Sink out = keep(o.result.out), err = keep(o.result.err);
  std::optional<int> status;
  std::optional<std::chrono::steady_clock::time_point> term_sent;
  for (;;) {
    child->pump(std::chrono::milliseconds(100), out, err);
    status = child->wait_exit(std::chrono::milliseconds(0));
    if (status) break;
    const auto now = std::chrono::steady_clock::now();
    const bool stopping = stop && stop->load();
    if (!term_sent && (stopping || now >= deadline)) {
      o.interrupted = stopping;
      o.result.timed_out = !o.interrupted;
      child->signal_group(SIGTERM);
      term_sent = now;
    } else if (term_sent && now - *term_sent > std::chrono::seconds(5)) {
      child->signal_group(SIGKILL);
      status = child->wait_exit(std::chrono::milliseconds(2000));
      break;
    }
  }
  while (child->pump(std::chrono::milliseconds(0), out, err)) {
  }
  o.result.wall = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start);
  if (status && WIFEXITED(*status)) o.result.exit_code = WEXITSTATUS(*status);
  else if (status && WIFSIGNALED(*status)) o.result.signal = WTERMSIG(*status);
  return o;
}

}  // namespace cmax::nccl
