#include "signals/correlate.h"

#include <algorithm>

#include <fmt/format.h>

#include "signals/classify.h"

namespace cmax::signals {
namespace {

constexpr std::size_t kSampleChars = 200;

// Signals that belong to one GPU-fault chain (AER on the GPU, Xid 79 fallen off the bus, Xid 154).
bool in_gpu_chain(const Signal& s) {
  return (s.kind == Kind::xid && (s.code == 79 || s.code == 154)) || s.kind == Kind::aer_fatal ||
         s.kind == Kind::aer_nonfatal;
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

const std::string& Correlator::key_of(const std::string& node, Kind kind, int code, std::string_view device) {
  key_.assign(node);
  key_ += '\x1f';
  key_ += static_cast<char>('A' + static_cast<int>(kind));
  key_ += '\x1f';
  fmt::format_to(std::back_inserter(key_), "{}", code);
  key_ += '\x1f';
  key_.append(device);
  return key_;
}

const std::string& Correlator::gpu_key_of(const std::string& node, std::string_view device) {
  key_.assign(node);
  key_ += '\x1f';
  key_.append(pci_without_function(device));
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
  gpu_chain_.clear();
  xids_by_gpu_.clear();
  return std::move(incidents_);
}

bool Correlator::fold_past_cap(const Event& e, Action action) {
  const Signal& s = *e.signal;
  ++merged_past_cap_;
  // '\x1f' never occurs in a device name, so this key cannot be a real device's.
  auto it = latest_.find(key_of(*e.node, s.kind, s.code, "\x1f*"));
  if (it != latest_.end()) {
    Incident& inc = incidents_[it->second];
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
  inc.device = "*";
  inc.reason = fmt::format("incident cap ({}) reached: lines from further devices folded here", kIncidentCap);
  latest_[key_of(*e.node, s.kind, s.code, "\x1f*")] = incidents_.size() - 1;
  return true;
}

Incident& Correlator::open_incident(const Event& e, Action action) {
  // Room for the cap at the first incident: growing by doubling would move every incident and
  // touch fresh pages each time. Untouched capacity costs address space, not memory.
  if (incidents_.capacity() == 0) incidents_.reserve(kIncidentCap);
  Incident inc;
  inc.node = *e.node;
  inc.kind = e.signal->kind;
  inc.code = e.signal->code;
  inc.device = std::string(e.signal->device);
  inc.subject = std::string(e.signal->subject);
  inc.action = action;
  inc.sample = std::string(e.line.substr(0, kSampleChars));
  if (e.info->kmsg_prio >= 0) inc.origin = (e.info->kmsg_prio >> 3) == 0 ? "kernel" : "userspace";
  inc.reason = e.signal->kind == Kind::xid && e.signal->recovery_action >= 0
                   ? fmt::format("Xid 154 recovery action 0x{:x}", e.signal->recovery_action)
                   : "catalog";
  touch(inc, *e.info);
  incidents_.push_back(std::move(inc));
  return incidents_.back();
}

bool Correlator::add(const Event& e) {
  const Signal& s = *e.signal;
  if (catalog_.ignored(s)) {
    ++ignored_;
    return false;
  }
  // A closing signal resolves the open incident it cancels; it is not an incident itself.
  for (const auto& c : catalog_.cancellations()) {
    if (c.close != s.kind) continue;
    auto it = latest_.find(key_of(*e.node, c.open, -1, s.device));
    if (it == latest_.end()) {
      ++unmatched_closes_;
      return true;
    }
    Incident& inc = incidents_[it->second];
    inc.resolved = true;
    bump_related(inc, std::string(to_string(s.kind)));
    if (e.info->has_time) set_stamp(inc.last_seen, *e.info);
    latest_.erase(it);
    return true;
  }

  Action action = catalog_.action_for(s);

  // Xid 45 (preemptive cleanup) follows the Xid that caused it: count it there. The candidates are
  // the Xid incidents (but 45) on the same node and GPU, latest first.
  if (s.kind == Kind::xid && s.code == 45) {
    if (auto g = xids_by_gpu_.find(gpu_key_of(*e.node, s.device)); g != xids_by_gpu_.end()) {
      for (auto it = g->second.rbegin(); it != g->second.rend(); ++it) {
        Incident& inc = incidents_[*it];
        if (s.caused_by >= 0 && inc.code != s.caused_by) continue;
        if (!within_window(inc, *e.info)) break;
        bump_related(inc, "Xid 45 (attributed)");
        touch(inc, *e.info);
        return true;
      }
    }
  }

  // One GPU-fault chain per GPU: AER -> Xid 79 -> Xid 154 folds into the first incident.
  if (in_gpu_chain(s) && is_pci(s.device)) {
    auto it = gpu_chain_.find(gpu_key_of(*e.node, s.device));
    if (it != gpu_chain_.end()) {
      Incident& head = incidents_[it->second];
      bool same = head.kind == s.kind && head.code == s.code;
      if (!same && within_window(head, *e.info)) {
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

  auto it = latest_.find(key_of(*e.node, s.kind, s.code, s.device));
  bool past_cap = incidents_.size() >= kIncidentCap;
  if (it != latest_.end() && (within_window(incidents_[it->second], *e.info) || past_cap)) {
    if (!within_window(incidents_[it->second], *e.info)) ++merged_past_cap_;
    Incident& inc = incidents_[it->second];
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
  // Cancellable incidents are keyed by device with code -1 so the close can find them.
  bool cancellable = false;
  for (const auto& c : catalog_.cancellations()) cancellable |= c.open == s.kind;
  latest_[key_of(*e.node, s.kind, s.code, s.device)] = index;
  if (cancellable) latest_[key_of(*e.node, s.kind, -1, s.device)] = index;
  if (in_gpu_chain(s) && is_pci(s.device)) gpu_chain_[gpu_key_of(*e.node, s.device)] = index;
  if (s.kind == Kind::xid && s.code != 45) xids_by_gpu_[gpu_key_of(*e.node, s.device)].push_back(index);
  return true;
}

}  // namespace cmax::signals
