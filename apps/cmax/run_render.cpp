#include "apps/cmax/run_render.h"

#include <unistd.h>

#include <fmt/format.h>

#include "core/process.h"

namespace cmax::app {

void run_progress(std::string_view line) {
  // A progress line only for a person watching; quiet when stderr is a pipe or file.
  if (::isatty(STDERR_FILENO) == 1) fmt::print(stderr, "\r\033[K{}", line);
}

cluster::NodeCallback NodeProgress::callback() {
  return [this](const cluster::NodeOutput& n) {
    std::lock_guard lock(mu_);
    ++heard_;
    run_progress(fmt::format("cmax run: {} node(s) settled; last {} {} ({:.1f} s)", heard_, n.node,
                             cluster::to_string(n.status), n.seconds));
  };
}

void print_slurm_dry_run(const cluster::SrunPlan& plan, const std::string& why) {
  fmt::print("cmax run --dry-run: harness slurm ({})\n", why);
  fmt::print("nodes to ask ({}): {}\n", plan.nodes.size(), fmt::join(plan.nodes, " "));
  for (const auto& sk : plan.skipped) fmt::print("not asked: {}: {}\n", sk.node, sk.detail);
  for (const auto& note : plan.notes) fmt::print("note: {}\n", note);
  for (const auto& g : plan.groups) fmt::print("would run: {}\n", core::describe_argv(g.argv));
}

}  // namespace cmax::app
