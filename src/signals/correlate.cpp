#include "signals/correlate.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "signals/classify.h"

namespace cmax::signals {
namespace {

constexpr std::size_t kSampleChars = 200;

// Signals that belong to one device-fault chain, keyed by PCI address: a GPU's (AER on the GPU,
// Xid 79 and the driver's own fallen-off-the-bus message, Xid 154) or a NIC's (health miss, fatal
// syndrome, command timeouts, EFA admin failures, AER on the NIC).
bool in_gpu_chain(const Signal& s) {
  switch (s.kind) {
    case Kind::xid: return s.code == 79 || s.code == 154 || s.code == 74 || (s.code >= 144 && s.code <= 150);
    case Kind::aer_fatal:
    case Kind::aer_nonfatal:
    case Kind::gpu_off_bus:
    case Kind::ib_health:
    case Kind::mlx5_fatal:
    case Kind::mlx5_cmd_timeout:
    case Kind::efa_admin: return true;
    default: return false;
  }
}

std::string label(const Signal& s) {
  if (s.kind == Kind::xid) return fmt::format("Xid {}", s.code);
  if (s.kind == Kind::sxid) return fmt::format("SXid {}", s.code);
  return std::string(to_string(s.kind));
}

void bump_related(Incident& inc, const std::string& what) {
  // related entries read "Xid 45 x3": find and increment, else add.
  std::string prefix = what + " x";
  for (auto& r : inc.related) {
    if (r.rfind(prefix, 0) == 0) {
      auto n = std::stoull(r.substr(prefix.size()));
      r = prefix + std::to_string(n + 1);
      return;
    }
  }
  inc.related.push_back(prefix + "1");
}

}  // namespace

bool Correlator::within_window(const Incident& inc, const LineInfo& info) const {
  if (!inc.has_time || !info.has_time) return true;
  return info.time - inc.last_t <= catalog_.window_s() && info.time >= inc.first_t - catalog_.window_s();
}

// The time as the log printed it; /dev/kmsg records print microseconds, shown the dmesg way.
// Assigned in place: a repeat reuses the string's buffer.
static void set_stamp(std::string& out, const LineInfo& info) {
  out.clear();
  if (info.kmsg_prio >= 0) {
    fmt::format_to(std::back_inserter(out), "[{:.6f}]", info.time);
  } else {
    out.assign(info.stamp);
  }
}

namespace {

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finalizer: every input bit reaches the low bits
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t key_hash(std::string_view node, Kind kind, std::int64_t code, std::string_view device,
                       std::string_view drill) {
  std::uint64_t h = std::hash<std::string_view>{}(node);
  h = mix(h ^ (static_cast<std::uint64_t>(kind) << 40) ^ static_cast<std::uint64_t>(code));
  h = mix(h ^ std::hash<std::string_view>{}(device));
  return drill.empty() ? h : mix(h ^ std::hash<std::string_view>{}(drill));
}

constexpr std::int64_t kOpenCode = std::int64_t{1} << 33;  // keys of open_, apart from any real code
constexpr std::string_view kOverflowDevice = "*";

}  // namespace

std::optional<std::uint32_t> Correlator::find_latest(const std::string& node, Kind kind, int code,
                                                     std::string_view device, std::string_view drill) const {
  return latest_.find(key_hash(node, kind, code, device, drill), [&](std::uint32_t v) {
    const Incident& i = incidents_[v];
    return i.kind == kind && i.code == code && i.device == device && i.node == node && i.drill == drill;
  });
}

void Correlator::set_latest(std::uint32_t index) {
  const Incident& inc = incidents_[index];
  latest_.assign(key_hash(inc.node, inc.kind, inc.code, inc.device, inc.drill), index, [&](std::uint32_t v) {
    const Incident& i = incidents_[v];
    return i.kind == inc.kind && i.code == inc.code && i.device == inc.device && i.node == inc.node &&
           i.drill == inc.drill;
  });
}

std::optional<std::uint32_t> Correlator::find_open(const std::string& node, Kind kind, std::string_view device,
                                                   std::string_view drill) const {
  return open_.find(key_hash(node, kind, kOpenCode, device, drill), [&](std::uint32_t v) {
    const Incident& i = incidents_[v];
    return i.kind == kind && i.device == device && i.node == node && i.drill == drill;
  });
}

const std::string& Correlator::gpu_key_of(const std::string& node, std::string_view device, std::string_view drill) {
  key_.assign(node);
  key_ += '\x1f';
  key_.append(pci_without_function(device));
  if (!drill.empty()) {
    key_ += '\x1f';
    key_.append(drill);
  }
  return key_;
}

const std::string& Correlator::lockup_key_of(const std::string& node, Kind kind, std::string_view drill) {
  key_.assign(node);
  key_ += '\x1f';
  key_.append(to_string(kind));
  key_ += '\x1f';
  key_.append(drill);
  return key_;
}

void Correlator::touch(Incident& inc, const LineInfo& info) {
  if (info.has_time) {
    if (!inc.has_time) {
      inc.first_t = info.time;
      set_stamp(inc.first_seen, info);
      inc.has_time = true;
    }
    inc.last_t = info.time;
    set_stamp(inc.last_seen, info);
  }
}

void Correlator::raise(Incident& inc, Action a, const std::string& why) {
  if (a > inc.action) {
    inc.action = a;
    inc.reason = why;
  }
}

std::vector<Incident> Correlator::take_incidents() {
  latest_.clear();
  open_.clear();
  gpu_chain_.clear();
  lockup_chain_.clear();
  xids_by_gpu_.clear();
  return std::move(incidents_);
}

bool Correlator::fold_past_cap(const Event& e, Action action) {
  const Signal& s = *e.signal;
  ++merged_past_cap_;
  if (auto it = find_latest(*e.node, s.kind, s.code, kOverflowDevice, e.drill)) {
    Incident& inc = incidents_[*it];
    last_ = *it;
    ++inc.count;
    touch(inc, *e.info);
    raise(inc, action, inc.reason);
    return true;
  }
  if (incidents_.size() >= kIncidentCap + kOverflowCap) {
    --merged_past_cap_;
    ++dropped_past_cap_;
    return true;
  }
  Incident& inc = open_incident(e, action);
  inc.count = 1;
  inc.device = kOverflowDevice;
  inc.reason = fmt::format("incident cap ({}) reached: lines from further devices folded here", kIncidentCap);
  set_latest(static_cast<std::uint32_t>(incidents_.size() - 1));
  last_ = incidents_.size() - 1;
  return true;
}

Incident& Correlator::open_incident(const Event& e, Action action) {
  // Room for a few incidents, then at once for every incident there can be: growing by doubling
  // would move every incident and touch fresh pages each time, and reserving the bound for every
  // correlator would make small scans (and the fuzzers) pay for it.
  if (incidents_.size() == incidents_.capacity())
    incidents_.reserve(incidents_.capacity() < 64 ? 64 : kIncidentCap + kOverflowCap);
  Incident& inc = incidents_.emplace_back();
  inc.node = *e.node;
  inc.kind = e.signal->kind;
  inc.code = e.signal->code;
  inc.device.assign(e.signal->device);
  inc.subject.assign(e.signal->subject);
  inc.action = action;
  if (e.info->kmsg_prio >= 0) {
    // A /dev/kmsg record reads as dmesg prints it, not with its "prio,seq,usec,flags;" header.
    inc.sample.clear();
    fmt::format_to(std::back_inserter(inc.sample), "[{:.6f}] ", e.info->time);
    inc.sample.append(e.info->message.substr(0, kSampleChars));
  } else {
    inc.sample.assign(e.line.substr(0, kSampleChars));
  }
  inc.drill.assign(e.drill);
  if (e.info->kmsg_prio >= 0) inc.origin = (e.info->kmsg_prio >> 3) == 0 ? "kernel" : "userspace";
  if (auto why = catalog_.reason_for(*e.signal); !why.empty()) {
    inc.reason = std::move(why);
  } else {
    inc.reason = "catalog";
  }
  touch(inc, *e.info);
  return inc;
}

namespace {

// Root causes: an incident of a child kind on a node, opened while an incident of a parent kind
// on the same node is recent, is explained by it. Explicit, in priority order; the first rule
// with a recent parent wins. Windows are from the parent's last line to the child's first.
struct RootCauseRule {
  std::array<Kind, 4> parents;
  std::array<Kind, 6> children;
  double window_s;
  bool xid79_child;  ///< Xid 79 counts among the children
  std::string_view why;
};
constexpr Kind kNone = Kind::fs_ok;  // padding: never a parent or child of a rule
constexpr RootCauseRule kRootCauses[] = {
    {{Kind::soft_lockup, Kind::hard_lockup, kNone, kNone},
     {Kind::hung_task, Kind::nfs_timeout, Kind::lustre, Kind::lustre_conn, Kind::fs_hung, kNone},
     900, false,
     "a CPU lockup starves the threads that do I/O: blocked tasks, filesystem and Lustre timeouts and a hung mount "
     "follow from it"},
    {{Kind::nfs_timeout, Kind::lustre_conn, Kind::lustre, Kind::fs_hung},
     {Kind::hung_task, kNone, kNone, kNone, kNone, kNone},
     900, false, "tasks blocked on a filesystem that stopped answering"},
    {{Kind::aer_fatal, Kind::aer_nonfatal, kNone, kNone},
     {Kind::gpu_off_bus, Kind::ib_health, Kind::mlx5_fatal, Kind::efa_admin, Kind::nvme, kNone},
     30, true, "the PCIe link failed first: the device behind it is lost"},
    {{Kind::ib_port_down, Kind::net_carrier, Kind::ib_health, Kind::mlx5_fatal},
     {Kind::lustre_conn, Kind::lustre, Kind::nfs_timeout, Kind::fs_hung, kNone, kNone},
     300, false, "the storage traffic rides the link that went down"},
    // Issue 37: the node faults that explain one another.
    {{Kind::block_io, Kind::nvme, Kind::md_failed, Kind::block_eod},
     {Kind::fs_error, Kind::fs_readonly, kNone, kNone, kNone, kNone},
     120, false, "the disk under the filesystem failed first: the filesystem's errors and its read-only remount follow"},
    {{Kind::fs_error, kNone, kNone, kNone},
     {Kind::fs_readonly, kNone, kNone, kNone, kNone, kNone},
     120, false, "the filesystem's error remounted it read-only (errors=remount-ro)"},
    {{Kind::soft_lockup, Kind::hard_lockup, Kind::hung_task, Kind::kernel_oops},
     {Kind::kernel_panic, kNone, kNone, kNone, kNone, kNone},
     900, false, "the kernel panicked on it (softlockup_panic, hardlockup_panic, hung_task_panic, panic_on_oops)"},
    {{Kind::edac_ue, Kind::mce, kNone, kNone},
     {Kind::memory_failure, kNone, kNone, kNone, kNone, kNone},
     30, false, "the uncorrected memory error poisoned the page: its user was killed or the page taken offline"},
};

template <std::size_t N>
bool listed(const std::array<Kind, N>& kinds, Kind k) {
  return k != kNone && std::find(kinds.begin(), kinds.end(), k) != kinds.end();
}

}  // namespace

void Correlator::link_root_cause(std::size_t index) {
  Incident& child = incidents_[index];
  if (child.parent >= 0) return;
  const bool is_xid79 = child.kind == Kind::xid && child.code == 79;
  for (const auto& rule : kRootCauses) {
    if (!listed(rule.children, child.kind) && !(rule.xid79_child && is_xid79)) continue;
    // The latest parent-kind incident on this node, searching back a bounded stretch.
    std::size_t looked = 0;
    for (std::size_t i = index; i-- > 0 && looked < 256; ++looked) {
      Incident& p = incidents_[i];
      if (p.node != child.node || p.drill != child.drill || p.resolved || !listed(rule.parents, p.kind)) continue;
      if (p.has_time && child.has_time && (child.first_t - p.last_t > rule.window_s || child.first_t < p.first_t - 60))
        continue;
      // One level: a parent that has a root cause of its own hands the child to it.
      std::size_t root = p.parent >= 0 ? static_cast<std::size_t>(p.parent) : i;
      child.parent = static_cast<std::int64_t>(root);
      child.cause = std::string(rule.why);
      Incident& r = incidents_[root];
      r.children.push_back(index);
      raise(r, child.action, fmt::format("root cause of {} ({})", to_string(child.kind), rule.why));
      return;
    }
  }
}

bool Correlator::add(const Event& e) {
  bool counted = add_line(e);
  // A line of an incident with a root cause is covered by the root cause's incident: its action
  // rises to the line's, and a reader acting on last_incident() acts on the root cause.
  if (last_) {
    Incident& inc = incidents_[*last_];
    if (inc.parent >= 0 && !inc.resolved) {
      Incident& root = incidents_[static_cast<std::size_t>(inc.parent)];
      raise(root, inc.action, fmt::format("root cause of {} ({})", to_string(inc.kind), inc.cause));
      last_ = static_cast<std::size_t>(inc.parent);
    }
  }
  return counted;
}

bool Correlator::add_line(const Event& e) {
  last_.reset();
  const Signal& s = *e.signal;
  if (catalog_.ignored(s)) {
    ++ignored_;
    return false;
  }
  // A closing signal resolves the open incident it cancels; it is not an incident itself.
  for (const auto& c : catalog_.cancellations()) {
    if (c.close != s.kind) continue;
    auto it = find_open(*e.node, c.open, s.device, e.drill);
    if (!it) {
      ++unmatched_closes_;
      return true;
    }
    Incident& inc = incidents_[*it];
    last_ = *it;
    inc.resolved = true;
    bump_related(inc, std::string(to_string(s.kind)));
    if (e.info->has_time) set_stamp(inc.last_seen, *e.info);
    // Resolved: the next signal of its kind on the device opens a new incident.
    open_.erase(key_hash(inc.node, inc.kind, kOpenCode, inc.device, inc.drill), [&](std::uint32_t v) { return v == *it; });
    latest_.erase(key_hash(inc.node, inc.kind, inc.code, inc.device, inc.drill), [&](std::uint32_t v) { return v == *it; });
    return true;
  }

  Action action = catalog_.action_for(s);

  // Xid 45 (preemptive cleanup) follows the Xid that caused it: count it there. The candidates are
  // the Xid incidents (but 45) on the same node and GPU, latest first.
  if (s.kind == Kind::xid && s.code == 45) {
    if (auto g = xids_by_gpu_.find(gpu_key_of(*e.node, s.device, e.drill)); g != xids_by_gpu_.end()) {
      for (auto it = g->second.rbegin(); it != g->second.rend(); ++it) {
        Incident& inc = incidents_[*it];
        if (s.caused_by >= 0 && inc.code != s.caused_by) continue;
        if (!within_window(inc, *e.info)) break;
        bump_related(inc, "Xid 45 (attributed)");
        touch(inc, *e.info);
        last_ = *it;
        return true;
      }
    }
  }

  // One GPU-fault chain per GPU: AER -> Xid 79 -> Xid 154 folds into the first incident.
  if (in_gpu_chain(s) && is_pci(s.device)) {
    auto it = gpu_chain_.find(gpu_key_of(*e.node, s.device, e.drill));
    if (it != gpu_chain_.end()) {
      Incident& head = incidents_[it->second];
      bool same = head.kind == s.kind && head.code == s.code;
      if (!same && within_window(head, *e.info)) {
        last_ = it->second;
        const std::string what = label(s);
        bump_related(head, what);
        raise(head, action,
              s.recovery_action >= 0 ? fmt::format("Xid 154 recovery action 0x{:x}", s.recovery_action)
                                     : fmt::format("{} in the same GPU fault", what));
        touch(head, *e.info);
        return true;
      }
    }
  }

  // CPU lockups on one node are one incident: the cores a stuck lock or a storm holds are listed
  // in it ("CPU#25 x1"), not an incident each.
  const bool lockup = (s.kind == Kind::soft_lockup || s.kind == Kind::hard_lockup) && s.code >= 0;
  if (lockup) {
    if (auto lc = lockup_chain_.find(lockup_key_of(*e.node, s.kind, e.drill)); lc != lockup_chain_.end()) {
      Incident& head = incidents_[lc->second];
      if (head.code != s.code && within_window(head, *e.info) && !head.resolved) {
        last_ = lc->second;
        bump_related(head, fmt::format("CPU#{}", s.code));
        raise(head, action, fmt::format("{} on more CPUs", to_string(s.kind)));
        touch(head, *e.info);
        return true;
      }
    }
  }

  auto it = find_latest(*e.node, s.kind, s.code, s.device, e.drill);
  bool past_cap = incidents_.size() >= kIncidentCap;
  if (it && (within_window(incidents_[*it], *e.info) || past_cap)) {
    if (!within_window(incidents_[*it], *e.info)) ++merged_past_cap_;
    Incident& inc = incidents_[*it];
    last_ = *it;
    ++inc.count;
    touch(inc, *e.info);
    raise(inc, action, inc.reason);
    if (auto t = catalog_.threshold_for(s)) {
      double span = inc.has_time ? inc.last_t - inc.first_t : 0;
      if (inc.count >= static_cast<std::uint64_t>(t->count) && span <= t->window_s && t->escalate > inc.action)
        raise(inc, t->escalate, fmt::format("escalated: {} x{} within {:.0f} s", label(s), inc.count, t->window_s));
    }
    return true;
  }
  // Past the cap, noise from new devices folds; a fault that needs action keeps its own incident
  // while the overflow allowance lasts.
  if (past_cap && (action <= Action::monitor || incidents_.size() >= kIncidentCap + kOverflowCap))
    return fold_past_cap(e, action);
  Incident& inc = open_incident(e, action);
  inc.count = 1;
  std::size_t index = incidents_.size() - 1;
  last_ = index;
  // Cancellable incidents are keyed by device with code -1 so the close can find them.
  bool cancellable = false;
  for (const auto& c : catalog_.cancellations()) cancellable |= c.open == s.kind;
  set_latest(static_cast<std::uint32_t>(index));
  if (cancellable)
    open_.assign(key_hash(*e.node, s.kind, kOpenCode, s.device, e.drill), static_cast<std::uint32_t>(index),
                 [&](std::uint32_t v) {
                   const Incident& i = incidents_[v];
                   return i.kind == s.kind && i.device == s.device && i.node == *e.node && i.drill == e.drill;
                 });
  if (in_gpu_chain(s) && is_pci(s.device)) gpu_chain_[gpu_key_of(*e.node, s.device, e.drill)] = index;
  if (lockup) lockup_chain_[lockup_key_of(*e.node, s.kind, e.drill)] = index;
  link_root_cause(index);
  if (s.kind == Kind::xid && s.code != 45) xids_by_gpu_[gpu_key_of(*e.node, s.device, e.drill)].push_back(index);
  return true;
}

}  // namespace cmax::signals
