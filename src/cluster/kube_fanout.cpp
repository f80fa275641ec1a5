#include "cluster/kube_fanout.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <utility>

#include "sched/kube_client.h"
#include "core/strings.h"
#include "sched/kubernetes_parse.h"

namespace cmax::cluster {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr int kListPageSize = 500;
constexpr int kMaxListPages = 200;  // 100,000 nodes
constexpr milliseconds kFirstPoll{200};
constexpr milliseconds kMaxPoll{1000};
constexpr int kMaxInFlight = 1024;
constexpr std::size_t kMaxDocumentCandidates = 16;

bool is_success(int status) { return status >= 200 && status < 300; }

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

const json* find(const json& j, std::string_view key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

std::string text_at(const json& j, std::string_view key) {
  const json* v = find(j, key);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

/// What the fan-out reads from a Pod object.
struct PodView {
  std::string phase;  ///< Pending, Running, Succeeded, Failed, Unknown
  std::string reason, message;
  bool unschedulable = false;  ///< condition PodScheduled False, reason Unschedulable
  std::string schedule_message;
  bool terminated = false;  ///< the collect container ran and ended
  int exit_code = 0;
  std::string term_reason, term_message;
  std::string waiting_reason, waiting_message;
};

PodView parse_pod(const json& pod) {
  PodView v;
  const json* status = find(pod, "status");
  if (!status) return v;
  v.phase = text_at(*status, "phase");
  v.reason = text_at(*status, "reason");
  v.message = text_at(*status, "message");
  if (const json* conds = find(*status, "conditions"); conds && conds->is_array())
    for (const json& c : *conds)
      if (text_at(c, "type") == "PodScheduled" && text_at(c, "status") == "False" &&
          text_at(c, "reason") == "Unschedulable") {
        v.unschedulable = true;
        v.schedule_message = text_at(c, "message");
      }
  if (const json* cs = find(*status, "containerStatuses"); cs && cs->is_array())
    for (const json& c : *cs) {
      const json* state = find(c, "state");
      if (!state) continue;
      if (const json* t = find(*state, "terminated")) {
        v.terminated = true;
        if (const json* code = find(*t, "exitCode"); code && code->is_number_integer())
          v.exit_code = code->get<int>();
        v.term_reason = text_at(*t, "reason");
        v.term_message = std::string(core::trim(text_at(*t, "message")));
      } else if (const json* w = find(*state, "waiting")) {
        v.waiting_reason = text_at(*w, "reason");
        v.waiting_message = text_at(*w, "message");
      }
    }
  return v;
}

/// "Pending (ContainerCreating)" for a timeout's detail.
std::string describe_phase(const PodView& v) {
  std::string out = v.phase.empty() ? std::string("not seen") : v.phase;
  if (!v.waiting_reason.empty()) {
    out += " (" + v.waiting_reason;
    if (!v.waiting_message.empty()) out += ": " + core::clip(v.waiting_message, 200);
    out += ")";
  }
  return out;
}

std::string with_message(std::string head, std::string_view message) {
  if (!message.empty()) head += fmt::format(": {}", core::clip(core::trim(message), 300));
  return head;
}

/// Why a create refused for one pod is refused for all: what to do about it. A 403 is RBAC's
/// unless the API's message says Pod Security admission refused the pod (kube-apiserver: 'pods
/// "x" is forbidden: violates PodSecurity "baseline:latest": ...'): then the namespace is the fix.
std::optional<std::string> fatal_create_advice(int status, std::string_view body, const KubeFanoutOptions& o) {
  if (status == 403 && body.find("violates PodSecurity") != std::string_view::npos)
    return fmt::format(
        "Pod Security admission refuses the collect pod in namespace {} (it reads the node through hostPath /, "
        "hostPID, hostNetwork and a privileged container): label that namespace "
        "pod-security.kubernetes.io/enforce=privileged (kubectl label namespace {} "
        "pod-security.kubernetes.io/enforce=privileged), or pass --namespace of one that allows it",
        o.pod.ns, o.pod.ns);
  switch (status) {
    case 400:
    case 422:
      return std::string(
          "the API server rejected the pod: check the image name and the collect "
          "arguments");
    case 401:
      return fmt::format("the API server refused the token in {}: pass a current token",
                         o.api.token_path);
    case 403:
      return fmt::format(
          "give the credentials create on pods in namespace {}: a collect run needs pods create, "
          "get and delete and pods/log get in that namespace, and nodes list (docs/cluster-run.md)",
          o.pod.ns);
    case 404:
      return fmt::format("is there a namespace {}? create it or choose another", o.pod.ns);
    default:
      return std::nullopt;
  }
}

/// DELETEs the pod when dropped, whatever happened; finish() does it early and says how it went.
/// The delete has gracePeriodSeconds=0: a graceful delete of a pod bound to a node waits for that
/// node's kubelet to confirm, so a pod on a node that never answered (the very nodes a timeout
/// reports) would stay Terminating for ever. The collect is read-only and has nothing to flush; a
/// kubelet that comes back kills a container whose pod is gone.
class PodGuard {
 public:
  PodGuard(const sched::KubeClient& http, std::string ns, std::string name)
      : http_(http), ns_(std::move(ns)), name_(std::move(name)) {}
  ~PodGuard() { (void)finish(); }
  PodGuard(const PodGuard&) = delete;
  PodGuard& operator=(const PodGuard&) = delete;

  /// Empty when the pod is gone (deleted now, or before), else what failed and what to run.
  std::string finish() {
    if (done_) return {};
    done_ = true;
    auto path = fmt::format("/api/v1/namespaces/{}/pods/{}", ns_, name_);
    auto r = http_.send("DELETE", path + "?gracePeriodSeconds=0");
    std::string why;
    if (!r)
      why = r.error().message;
    else if (!is_success(r->status) && r->status != 404)
      why = sched::describe_reply("DELETE", path, *r);
    else
      return {};
    return fmt::format("delete pod {}/{}: {}: delete it with `kubectl delete pod -n {} {} --grace-period=0 --force`",
                       ns_, name_, why, ns_, name_);
  }

 private:
  const sched::KubeClient& http_;
  std::string ns_, name_;
  bool done_ = false;
};

/// One fan-out: the node list, the workers, the results, and the first fatal error.
class Run {
 public:
  Run(const KubeFanoutOptions& options, const NodeCallback& on_node)
      : o_(options), http_(options.api), on_node_(on_node) {
    spec_ = o_.pod;
    auto secs = std::chrono::ceil<std::chrono::seconds>(o_.node_timeout);
    spec_.node_timeout = std::max(secs, std::chrono::seconds(1));
  }

  Result<std::vector<NodeOutput>> go() {
    start_ = Clock::now();
    run_deadline_ = start_ + o_.deadline;
    auto listed = list_nodes();
    if (!listed) return Unexpected<Error>{listed.error()};
    plan(*listed);

    std::size_t workers =
        std::min<std::size_t>(static_cast<std::size_t>(o_.max_in_flight), targets_.size());
    {
      std::vector<std::jthread> pool;
      for (std::size_t i = 0; i < workers; ++i) pool.emplace_back([this] { work(); });
    }
    if (fatal_) return Unexpected<Error>{*fatal_};
    return std::move(results_);
  }

 private:
  struct Target {
    std::string node;
    std::optional<sched::NodeState> state;  ///< nullopt: not in the cluster
  };

  Result<std::vector<sched::NodeState>> list_nodes() {
    std::vector<sched::NodeState> nodes;
    // An explicit list is looked up among all nodes: one paged LIST, not a GET per node.
    std::string selector = o_.nodes.empty() ? o_.node_selector : std::string();
    std::string next;
    for (int page = 1;; ++page) {
      if (page > kMaxListPages)
        return fail("list nodes: more than {} pages of {}: narrow the node selector", kMaxListPages,
                    kListPageSize);
      std::string path = "/api/v1/nodes?";
      if (!selector.empty())
        path += "labelSelector=" + sched::kube::encode_query_value(selector) + "&";
      path += fmt::format("limit={}", kListPageSize);
      if (!next.empty()) path += "&continue=" + sched::kube::encode_query_value(next);
      auto r = http_.send("GET", path);
      if (!r) return fail("list nodes: {}", r.error().message);
      if (!is_success(r->status)) {
        std::string todo;
        if (r->status == 403)
          todo = ": give the credentials list on nodes (a ClusterRole; docs/cluster-run.md)";
        else if (r->status == 400)
          todo = ": is the node selector a label selector (key=value)?";
        return fail("list nodes: {}{}", sched::describe_reply("GET", path, *r), todo);
      }
      auto list = sched::kube::parse_node_list(r->body);
      if (!list) return fail("list nodes: GET {}: {}", path, list.error().message);
      for (auto& n : list->nodes) nodes.push_back(std::move(n));
      if (list->continue_token.empty()) break;
      next = std::move(list->continue_token);
    }
    if (o_.nodes.empty() && nodes.empty())
      return fail(
          "list nodes: no node matches \"{}\": label the GPU nodes, or pass another selector or "
          "the nodes by name",
          selector);
    return nodes;
  }

  void plan(std::vector<sched::NodeState>& listed) {
    if (o_.nodes.empty()) {
      std::sort(listed.begin(), listed.end(),
                [](const auto& a, const auto& b) { return a.name < b.name; });
      for (auto& n : listed) targets_.push_back({n.name, std::move(n)});
    } else {
      std::map<std::string, sched::NodeState, std::less<>> by_name;
      for (auto& n : listed) by_name.emplace(n.name, std::move(n));
      std::set<std::string, std::less<>> seen;
      for (const auto& name : o_.nodes) {
        if (!seen.insert(name).second) continue;
        auto it = by_name.find(name);
        targets_.push_back(
            {name, it == by_name.end() ? std::nullopt : std::optional(std::move(it->second))});
      }
    }
    results_.resize(targets_.size());
  }

  void work() {
    for (;;) {
      std::size_t i = next_.fetch_add(1);
      if (i >= targets_.size() || stop_) return;
      NodeOutput out = run_node(targets_[i]);
      if (stop_) return;  // the run failed as a whole: its node results are not reported
      std::lock_guard lock(mu_);
      results_[i] = out;
      if (on_node_) on_node_(results_[i]);
    }
  }

  void set_fatal(std::string message) {
    std::lock_guard lock(mu_);
    if (!fatal_) fatal_ = Error{std::move(message)};
    stop_ = true;
  }

  NodeOutput run_node(const Target& t) {
    NodeOutput out;
    out.node = t.node;
    if (!t.state) {
      out.status = NodeStatus::unreachable;
      out.detail =
          fmt::format("no node {} in the cluster: use a name `kubectl get nodes` prints", t.node);
      return out;
    }
    const auto& st = *t.state;
    if (st.base != "READY") {
      out.status = NodeStatus::not_scheduled;
      out.detail = fmt::format(
          "node {} is {}: the kubelet does not report Ready, so no pod was created", t.node,
          st.base == "NOTREADY" ? "NotReady" : "in state Unknown (kubelet not reporting)");
      return out;
    }
    std::string note;
    if (st.drain_flag())
      note = fmt::format(
          "node cordoned or held ({}): its pod ran anyway, since spec.nodeName bypasses the "
          "scheduler",
          st.reason.empty() ? std::string("cmax taint") : st.reason);

    auto now = Clock::now();
    if (now >= run_deadline_) {
      out.status = NodeStatus::timeout;
      out.detail = "the run's deadline passed before this node's pod was created";
      return out;
    }
    auto name = collect_pod_name(spec_.run_id, t.node);
    auto pods = fmt::format("/api/v1/namespaces/{}/pods", spec_.ns);
    auto pod_path = pods + "/" + name;
    auto log_path =
        fmt::format("{}/log?container=collect&limitBytes={}", pod_path, o_.max_log_bytes);
    auto body = render_collect_pod(spec_, t.node);

    if (o_.dry_run) {
      if (o_.on_dry_run) {
        std::lock_guard lock(mu_);
        o_.on_dry_run({"POST", pods, body});
        o_.on_dry_run({"GET", pod_path, {}});
        o_.on_dry_run({"GET", log_path, {}});
        o_.on_dry_run({"DELETE", pod_path, {}});
      }
      out.status = NodeStatus::not_scheduled;
      out.detail =
          with_message(fmt::format("dry run: pod {}/{} not created", spec_.ns, name), note);
      return out;
    }

    auto t0 = Clock::now();
    auto node_deadline = std::min(t0 + o_.node_timeout, run_deadline_);
    auto created = http_.send("POST", pods, "application/json", body);
    if (created && !is_success(created->status)) {
      if (auto advice = fatal_create_advice(created->status, created->body, o_)) {
        set_fatal(fmt::format("create pod {}/{} on node {}: {}: {}", spec_.ns, name, t.node,
                              sched::describe_reply("POST", pods, *created), *advice));
        return out;
      }
      out.status = NodeStatus::unreachable;
      out.detail = fmt::format("create pod {}/{}: {}", spec_.ns, name,
                               sched::describe_reply("POST", pods, *created));
      if (created->status == 409)
        out.detail += fmt::format(
            ": a pod of run {} exists already: delete it (kubectl delete pods -n {} -l {}={}) or "
            "use another run id",
            spec_.run_id, spec_.ns, kRunLabel, spec_.run_id);
      out.seconds = seconds_since(t0);
      return out;
    }
    // Created, or unknown (no answer: it may have been): either way the pod goes at the end.
    PodGuard guard(http_, spec_.ns, name);
    if (!created) {
      out.status = NodeStatus::unreachable;
      out.detail = fmt::format("create pod {}/{}: {}", spec_.ns, name, created.error().message);
    } else {
      watch(pod_path, log_path, t0, node_deadline, out);
    }
    out.seconds = seconds_since(t0);
    if (!note.empty()) out.detail = out.detail.empty() ? note : out.detail + "; " + note;
    if (auto gone = guard.finish(); !gone.empty())
      out.detail = out.detail.empty() ? gone : out.detail + "; " + gone;
    return out;
  }

  /// Polls the pod until it ends or `until`, then reads its log; fills out's status and detail.
  void watch(const std::string& pod_path, const std::string& log_path, Clock::time_point t0,
             Clock::time_point until, NodeOutput& out) {
    milliseconds interval = kFirstPoll;
    PodView last;
    std::string last_error;
    for (;;) {
      if (stop_) {
        out.status = NodeStatus::failed;
        out.detail = "the run was stopped";
        return;
      }
      auto r = http_.send("GET", pod_path);
      if (!r) {
        last_error = r.error().message;
      } else if (r->status == 404) {
        out.status = NodeStatus::failed;
        out.detail =
            fmt::format("pod {} vanished before it ended: deleted by someone else?", pod_path);
        return;
      } else if (!is_success(r->status)) {
        last_error = sched::describe_reply("GET", pod_path, *r);
      } else {
        auto pod = json::parse(r->body, nullptr, false);
        last = parse_pod(pod);
        last_error.clear();
        if (decide(last, log_path, out)) return;
      }
      auto now = Clock::now();
      if (now >= until) break;
      std::this_thread::sleep_for(std::min<Clock::duration>(interval, until - now));
      interval = std::min(interval * 3 / 2, kMaxPoll);
    }
    out.status = NodeStatus::timeout;
    out.detail =
        fmt::format("no answer within {:.1f} s: pod still {}",
                    std::chrono::duration<double>(until - t0).count(), describe_phase(last));
    if (!last_error.empty()) out.detail += "; last poll: " + last_error;
  }

  /// True when `v` is an end; then out holds the node's answer.
  bool decide(const PodView& v, const std::string& log_path, NodeOutput& out) {
    if (v.phase == "Succeeded") {
      read_document(log_path, out);
      return true;
    }
    if (v.phase == "Failed") {
      if (v.reason == "DeadlineExceeded") {
        out.status = NodeStatus::timeout;
        out.detail = with_message("the pod's activeDeadlineSeconds ended it", v.message);
      } else if (v.terminated) {
        out.status = NodeStatus::failed;
        out.detail = with_message(
            fmt::format("cmax collect exited with code {}{}", v.exit_code,
                        v.term_reason.empty() ? std::string() : " (" + v.term_reason + ")"),
            v.term_message);
      } else {
        out.status = NodeStatus::unreachable;
        out.detail = with_message(
            fmt::format("the kubelet refused the pod: {}", v.reason.empty() ? "Failed" : v.reason),
            v.message);
      }
      return true;
    }
    if (v.phase == "Pending" && v.unschedulable) {
      out.status = NodeStatus::unreachable;
      out.detail = with_message("pod Unschedulable", v.schedule_message);
      return true;
    }
    if (v.reason == "NodeLost" || v.phase == "Unknown") {
      out.status = NodeStatus::unreachable;
      out.detail = with_message(
          fmt::format("node lost: pod phase {}", v.phase.empty() ? "unknown" : v.phase), v.message);
      return true;
    }
    return false;
  }

  void read_document(const std::string& log_path, NodeOutput& out) {
    auto r = http_.send("GET", log_path, {}, {}, o_.max_log_bytes + 4096);
    if (!r) {
      out.status = NodeStatus::failed;
      out.detail = fmt::format("read the collect log: {}", r.error().message);
      return;
    }
    if (!is_success(r->status)) {
      out.status = NodeStatus::failed;
      out.detail = fmt::format("read the collect log: {}", sched::describe_reply("GET", log_path, *r));
      if (r->status == 403) out.detail += ": give the credentials get on pods/log";
      return;
    }
    auto doc = document_from_log(r->body);
    if (!doc) {
      out.status = NodeStatus::failed;
      out.detail = with_message("cmax collect succeeded but its log holds no JSON document",
                                core::clip(core::trim(r->body), 200));
      return;
    }
    out.status = NodeStatus::ok;
    out.payload = std::move(*doc);
  }

  const KubeFanoutOptions& o_;
  sched::KubeClient http_;
  const NodeCallback& on_node_;
  CollectSpec spec_;
  Clock::time_point start_, run_deadline_;
  std::vector<Target> targets_;
  std::vector<NodeOutput> results_;
  std::atomic<std::size_t> next_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;  // results_, fatal_, and one callback at a time
  std::optional<Error> fatal_;
};

Result<void> check_options(const KubeFanoutOptions& o) {
  if (o.pod.image.empty())
    return fail("cmax run on Kubernetes: no image: pass the image that holds cmax (--image)");
  if (auto r = check_run_id(o.pod.run_id); !r) return fail("cmax run: {}", r.error().message);
  if (auto r = check_namespace(o.pod.ns); !r) return fail("cmax run: {}", r.error().message);
  if (o.node_timeout <= milliseconds::zero() || o.deadline <= milliseconds::zero())
    return fail("cmax run: the node timeout and the deadline must be positive");
  if (o.max_in_flight < 1 || o.max_in_flight > kMaxInFlight)
    return fail("cmax run: pods in flight {}: must be 1 to {}", o.max_in_flight, kMaxInFlight);
  return ok();
}

bool is_json_object(std::string_view text) {
  if (text.empty() || text.front() != '{') return false;
  return json::accept(text.begin(), text.end());
}

}  // namespace

std::optional<std::string> document_from_log(std::string_view log) {
  auto whole = core::trim(log);
  if (is_json_object(whole)) return std::string(whole);
  std::size_t tried = 0;
  for (std::size_t at = 0; at < log.size() && tried < kMaxDocumentCandidates;) {
    auto eol = log.find('\n', at);
    auto line_end = eol == std::string_view::npos ? log.size() : eol;
    if (log[at] == '{') {
      ++tried;
      auto rest = core::trim(log.substr(at));
      if (is_json_object(rest)) return std::string(rest);
      auto line = core::trim(log.substr(at, line_end - at));
      if (is_json_object(line)) return std::string(line);
    }
    if (eol == std::string_view::npos) break;
    at = eol + 1;
  }
  return std::nullopt;
}

Result<std::vector<NodeOutput>> kube_fanout(const KubeFanoutOptions& options,
                                            const NodeCallback& on_node) {
  if (auto r = check_options(options); !r) return Unexpected<Error>{r.error()};
  Run run(options, on_node);
  return run.go();
}

}  // namespace cmax::cluster
