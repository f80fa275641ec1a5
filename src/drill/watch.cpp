#include "drill/watch.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "core/process.h"
#include "core/strings.h"
#include "drill/kube_view.h"
#include "sched/slurm_parse.h"

namespace cmax::drill {
namespace {

using Clock = std::chrono::steady_clock;

std::chrono::microseconds since(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0);
}

}  // namespace

Result<sched::Reservation> read_reservation(const sched::SlurmOptions& options, const std::string& name) {
  auto out = sched::run_scontrol(options, {options.scontrol, "-o", "show", "reservation", name}, 1u << 20);
  if (!out) return fail("read reservation {}: {}", name, out.error().message);
  auto res = sched::parse_scontrol_reservation(*out);
  if (!res) return fail("read reservation {}: {}", name, res.error().message);
  return res;
}

Result<Observation> SlurmPoller::observe(const WatchOptions& options, Clock::time_point t0) {
  if (!session_) {
    auto s = ScontrolSession::start(options_.scontrol, options_.conf_path);
    if (!s) return Unexpected<Error>{s.error()};
    session_.emplace(std::move(*s));
  }
  std::vector<std::string> commands{"show node " + options.node};
  if (options.reservation) commands.push_back("show reservation " + *options.reservation);
  if (options.partition) commands.push_back("show partition " + *options.partition);
  if (options.job) commands.push_back("show job " + *options.job);
  Observation o;
  o.t_start = since(t0);
  auto answers = session_->run(commands, options_.timeout);
  o.t_end = since(t0);
  if (!answers) {
    session_.reset();  // dead or stalled: the next poll starts a new one
    return fail("read node {}: {}", options.node, answers.error().message);
  }
  auto join = [](const std::vector<std::string>& lines) {
    std::string text;
    for (const auto& l : lines) text += l + "\n";
    return text;
  };
  auto node = sched::parse_scontrol_node(join((*answers)[0]));
  if (!node) return fail("read node {}: {}", options.node, node.error().message);
  o.target = std::move(*node);
  // A source that cannot be read this time (the reservation ended, the job was purged) leaves its
  // field empty: that poll tells nothing about the replacement through it.
  std::size_t next = 1;
  if (options.reservation && next < answers->size())
    if (auto r = sched::parse_scontrol_reservation(join((*answers)[next++]))) o.reservation = std::move(*r);
  if (options.partition && next < answers->size())
    if (auto p = parse_scontrol_partition(join((*answers)[next++]))) o.partition = std::move(*p);
  if (options.job && next < answers->size())
    if (auto j = parse_scontrol_job(join((*answers)[next++]))) o.job = std::move(*j);
  return o;
}

std::unique_ptr<Poller> KubePoller::another() const {
  auto p = std::make_unique<KubePoller>(options_);
  p->taints_before_ = taints_before_;
  return p;
}

Result<Observation> KubePoller::observe(const WatchOptions& options, Clock::time_point t0) {
  if (auto r = sched::kube::check_node_name(options.node); !r) return Unexpected<Error>{r.error()};
  Observation o;
  o.t_start = since(t0);
  auto node = api_.get("/api/v1/nodes/" + options.node);
  if (!node) return fail("read node {}: {}", options.node, node.error().message);
  auto pods = api_.get("/api/v1/pods?fieldSelector=" + sched::kube::encode_query_value("spec.nodeName=" + options.node));
  std::optional<Result<std::string>> workload_pods;
  if (options.workload)
    workload_pods = api_.get("/api/v1/pods?labelSelector=" + sched::kube::encode_query_value(*options.workload));
  o.t_end = since(t0);
  if (!pods) return fail("read the pods on node {}: {}", options.node, pods.error().message);
  // A failed read of the workload leaves it unknown this poll: the replacement learns nothing.
  if (workload_pods && *workload_pods)
    if (auto w = kube_workload(**workload_pods, options.node, *options.workload)) o.workload = std::move(*w);
  auto v = kube_view(*node, *pods, taints_before_ ? *taints_before_ : std::vector<std::string>{});
  if (!v) return fail("read node {}: {}", options.node, v.error().message);
  if (!taints_before_) {  // the baseline: the taints it carries now are the node's own
    taints_before_ = v->taint_keys;
    v = kube_view(*node, *pods, *taints_before_);
    if (!v) return fail("read node {}: {}", options.node, v.error().message);
  }
  o.target = std::move(v->state);
  return o;
}

std::vector<Observation> watch(Poller& poller, const WatchOptions& options, const Observation& baseline,
                               Clock::time_point t0, std::stop_token stop, int& failed_polls) {
  // The longest any awaited stage may still come.
  auto horizon = std::max(options.timeouts.detected, options.timeouts.drained);
  if (options.watches_replacement()) horizon = std::max(horizon, options.timeouts.replaced);
  if (options.wait_return || options.reboot_flow) horizon = std::max(horizon, options.timeouts.returned);

  std::mutex mu;
  std::vector<Observation> seen;  // in order of t_start
  std::atomic<bool> done{false};
  std::atomic<int> failed{0};
  // A stage is "never" only once a poll began after its timeout (timeline.h): poll until one has.
  auto last_start = std::chrono::microseconds(-1);
  std::atomic<std::int64_t> first_poll_us{-1};

  // Whether every awaited stage is seen or past its timeout; call with `mu` held.
  auto decide = [&] {
    if (last_start >= horizon) return true;
    // compute_stages reads every observation: on long watches, decide every 64th poll.
    if (seen.size() > 1000 && seen.size() % 64 != 0) return false;
    auto stages =
        compute_stages(baseline, seen, StageThresholds{}, options.timeouts, options.shared_watch, options.reboot_flow);
    if (!stages) return false;
    bool all = true;
    for (const auto& st : *stages) {
      if (!options.awaits(st.stage) || st.reached) continue;
      const auto timeout = st.stage == Stage::kDetected  ? options.timeouts.detected
                           : st.stage == Stage::kDrained ? options.timeouts.drained
                           : st.stage == Stage::kReplaced ? options.timeouts.replaced
                                                          : options.timeouts.returned;
      if (last_start < timeout) all = false;
    }
    // Never detected by its timeout: nothing later can come either.
    if (!(*stages)[0].reached && last_start >= options.timeouts.detected) all = true;
    return all;
  };

  // Two pollers, the second half a poll behind the first: a stage's interval runs from the start of
  // the last poll that did not see it to the end of the first that did, so staggered polls halve it.
  auto loop = [&](Poller& p, int index) {
    if (index == 1) {
      while (first_poll_us.load() < 0 && !done && !stop.stop_requested())
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::this_thread::sleep_for(std::chrono::microseconds(std::max<std::int64_t>(first_poll_us.load() / 2, 1000)));
    }
    while (!done && !stop.stop_requested()) {
      const auto poll_start = since(t0);
      auto o = p.observe(options, t0);
      if (index == 0 && first_poll_us.load() < 0) first_poll_us = (since(t0) - poll_start).count();
      {
        std::lock_guard lock(mu);
        last_start = std::max(last_start, poll_start);  // a failed poll moves time on too
        if (o) {
          auto at = std::upper_bound(seen.begin(), seen.end(), o->t_start,
                                     [](std::chrono::microseconds t, const Observation& x) { return t < x.t_start; });
          seen.insert(at, std::move(*o));
        } else {
          ++failed;
        }
        if (decide()) done = true;
      }
      if (!done) std::this_thread::sleep_for(options.poll);
    }
  };
  {
    auto second = poller.another();
    std::jthread other([&] { loop(*second, 1); });
    loop(poller, 0);
  }
  failed_polls += failed.load();
  return seen;
}

}  // namespace cmax::drill
