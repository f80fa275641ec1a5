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

std::string chain_key(const std::string& node, std::string_view device) {
  return node + "|" + std::string(pci_without_function(device));
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
static std::string stamp_of(const LineInfo& info) {
  if (info.kmsg_prio >= 0) return fmt::format("[{:.6f}]", info.time);
  return std::string(info.stamp);
}

void Correlator::touch(Incident& inc, const LineInfo& info) {
  if (info.has_time) {
    if (!inc.has_time) {
      inc.first_t = info.time;
      inc.first_seen = stamp_of(info);
      inc.has_time = true;
    }
    inc.last_t = info.time;
    inc.last_seen = stamp_of(info);
  }
}

void Correlator::raise(Incident& inc, Action a, const std::string& why) {
  if (a > inc.action) {
    inc.action = a;
    inc.reason = why;
  }
}

Incident& Correlator::open_incident(const Event& e, Action action) {
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
    auto it = latest_.find(Key{*e.node, c.open, -1, std::string(s.device)});
    if (it == latest_.end()) {
      ++unmatched_closes_;
      return true;
    }
    Incident& inc = incidents_[it->second];
    inc.resolved = true;
    bump_related(inc, std::string(to_string(s.kind)));
    if (e.info->has_time) inc.last_seen = stamp_of(*e.info);
    latest_.erase(it);
    return true;
  }

  Action action = catalog_.action_for(s);
  std::string what = label(s);

  // Xid 45 (preemptive cleanup) follows the Xid that caused it: count it there.
  if (s.kind == Kind::xid && s.code == 45) {
    for (auto it = incidents_.rbegin(); it != incidents_.rend(); ++it) {
      if (it->node != *e.node || it->kind != Kind::xid || it->code == 45) continue;
      if (pci_without_function(it->device) != pci_without_function(s.device)) continue;
      if (s.caused_by >= 0 && it->code != s.caused_by) continue;
      if (!within_window(*it, *e.info)) break;
      bump_related(*it, "Xid 45 (attributed)");
      touch(*it, *e.info);
      return true;
    }
  }

  // One GPU-fault chain per GPU: AER -> Xid 79 -> Xid 154 folds into the first incident.
  if (in_gpu_chain(s) && is_pci(s.device)) {
    auto ck = chain_key(*e.node, s.device);
    auto it = gpu_chain_.find(ck);
    if (it != gpu_chain_.end()) {
      Incident& head = incidents_[it->second];
      bool same = head.kind == s.kind && head.code == s.code;
      if (!same && within_window(head, *e.info)) {
        bump_related(head, what);
        raise(head, action,
              s.recovery_action >= 0 ? fmt::format("Xid 154 recovery action 0x{:x}", s.recovery_action)
                                     : fmt::format("{} in the same GPU fault", what));
        touch(head, *e.info);
        return true;
      }
    }
  }

  Key key{*e.node, s.kind, s.code, std::string(s.device)};
  auto it = latest_.find(key);
  bool past_cap = incidents_.size() >= kIncidentCap;
  if (it != latest_.end() && (within_window(incidents_[it->second], *e.info) || past_cap)) {
    if (!within_window(incidents_[it->second], *e.info)) ++merged_past_cap_;
    Incident& inc = incidents_[it->second];
    ++inc.count;
    touch(inc, *e.info);
    raise(inc, action, inc.reason);
    if (auto t = catalog_.threshold_for(s)) {
      double span = inc.has_time ? inc.last_t - inc.first_t : 0;
      if (inc.count >= static_cast<std::uint64_t>(t->count) && span <= t->window_s)
        raise(inc, t->escalate, fmt::format("escalated: {} x{} within {:.0f} s", what, inc.count, t->window_s));
    }
    return true;
  }
  Incident& inc = open_incident(e, action);
  inc.count = 1;
  std::size_t index = incidents_.size() - 1;
  // Cancellable incidents are keyed by device with code -1 so the close can find them.
  bool cancellable = false;
  for (const auto& c : catalog_.cancellations()) cancellable |= c.open == s.kind;
  latest_[key] = index;
  if (cancellable) latest_[Key{*e.node, s.kind, -1, std::string(s.device)}] = index;
  if (in_gpu_chain(s) && is_pci(s.device)) gpu_chain_[chain_key(*e.node, s.device)] = index;
  return true;
}

}  // namespace cmax::signals
