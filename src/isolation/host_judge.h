#pragma once
// Private to the host-isolation judges (host_gpu.cpp, host_network.cpp, host_users.cpp,
// host_isolation.cpp): the finding skeleton each check fills, the worst-of-several verdict, and
// small text helpers. Pure.

#include <fmt/format.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/attention.h"
#include "core/strings.h"
#include "isolation/finding.h"
#include "isolation/host_isolation.h"
#include "isolation/host_parse.h"

namespace cmax::isolation::host_judge {

using audit::Finding;
using audit::Outcome;

inline constexpr std::string_view kCriterion = "Security: tenant isolation (host)";

/// The fixed texts of one check.
struct CheckText {
  std::string_view name, title, expected, description, remediation;
};

inline Finding base(const CheckText& t, std::string_view source) {
  Finding f = security_finding(fmt::format("isolation.host.{}", t.name), std::string(t.title), kCriterion);
  f.expected = std::string(t.expected);
  f.evidence_source = std::string(source);
  f.description = std::string(t.description);
  f.remediation = std::string(t.remediation);
  return f;
}

// A value read from a host file, trimmed and on one line.
inline std::string one_line(std::string_view s, std::size_t max_chars = 200) {
  return core::one_line(core::trim(s), max_chars);
}

inline std::string join(const std::vector<std::string>& items, std::string_view sep = ", ") {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : std::string(sep)) + i;
  return out;
}

inline std::string plural(std::size_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

// The worst of several sub-results, with the reasons of that rank.
class Worst {
 public:
  void add(Outcome o, std::string why) {
    if (!any_ || audit::attention_rank(o) > audit::attention_rank(outcome_)) {
      any_ = true;
      outcome_ = o;
      why_.clear();
    }
    if (o == outcome_) why_.push_back(std::move(why));
  }
  bool any() const { return any_; }
  void apply(Finding& f) const {
    f.outcome = outcome_;
    f.reason = join(why_, "; ");
  }

 private:
  bool any_ = false;
  Outcome outcome_ = Outcome::unverified;
  std::vector<std::string> why_;
};

inline Finding with(Finding f, Outcome o, std::string reason) {
  f.outcome = o;
  f.reason = std::move(reason);
  return f;
}

inline bool is_read(const PathRead& r) { return r.state == ReadState::read; }

inline std::string mode_text(unsigned mode) { return fmt::format("{:04o}", mode & 07777); }

inline std::string user_name(const HostIsolationFacts& f, unsigned uid) {
  if (is_read(f.passwd))
    if (auto name = passwd_name(f.passwd.text, uid)) return *name;
  return fmt::format("uid {}", uid);
}

inline std::optional<unsigned> munge_uid(const HostIsolationFacts& f) {
  if (!is_read(f.passwd)) return std::nullopt;
  return passwd_uid(f.passwd.text, "munge");
}

inline std::string munge_user_problem(const HostIsolationFacts& f) {
  if (!is_read(f.passwd)) return fmt::format("cannot find the munge user: {}", f.passwd.error);
  return "cannot find the munge user: no munge entry in /etc/passwd";
}

// What says this process runs in a container; nullopt when nothing does.
inline std::optional<std::string> container_evidence(const HostIsolationFacts& f) {
  if (f.dockerenv) return std::string("/.dockerenv exists");
  if (f.containerenv) return std::string("/run/.containerenv exists");
  if (f.env.kubernetes_service_host) return std::string("KUBERNETES_SERVICE_HOST is set");
  for (const PathRead* r : {&f.self_cgroup, &f.pid1_cgroup}) {
    if (!is_read(*r)) continue;
    if (auto marker = container_cgroup_marker(r->text))
      return fmt::format("{} names {}", r->path, *marker);
  }
  return std::nullopt;
}

/// One judge per check, each pure over the facts.
Finding judge_gpu(const HostIsolationFacts& f);
Finding judge_toolkit(const HostIsolationFacts& f);
Finding judge_ib(const HostIsolationFacts& f);
Finding judge_netns(const HostIsolationFacts& f);
Finding judge_proc(const HostIsolationFacts& f);
Finding judge_munge_key(const HostIsolationFacts& f);
Finding judge_munge_socket(const HostIsolationFacts& f);

}  // namespace cmax::isolation::host_judge
