#pragma once
// Incidents, not lines: repeats of one signal on one node and device within the catalog's window
// fold into one incident with a count; an Xid 45 is attributed to the Xid that caused it; a PCIe
// AER -> Xid 79 -> Xid 154 sequence on one GPU is one incident with the strongest action; a
// closing signal (nfs OK, link up) resolves the incident it closes. Single-threaded.

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "signals/catalog.h"
#include "signals/flat_index.h"
#include "signals/prefix.h"
#include "signals/signal.h"

namespace cmax::signals {

struct Incident {
  std::string node;
  Kind kind = Kind::xid;
  int code = -1;
  std::string device;   ///< as printed (PCI address, disk, interface, server)
  std::string subject;  ///< process, switch, server named by the first line
  Action action = Action::monitor;
  std::uint64_t count = 0;  ///< lines of the incident's own signal
  std::string first_seen, last_seen;  ///< timestamps as printed (empty when the log has none)
  double first_t = 0, last_t = 0;
  bool has_time = false;
  std::string sample;   ///< the first original line, clipped
  std::string origin;   ///< kmsg only: "kernel" or "userspace" (facility != 0)
  bool resolved = false;  ///< closed by its cancelling signal
  std::vector<std::string> related;  ///< folded signals ("Xid 45 x3 (attributed)", "aer_fatal x1")
  std::string reason;   ///< why the action is what it is (catalog, Xid 154, escalation)
  std::string drill;    ///< the drill that wrote the incident's first line (drill_marker.h); empty: a real one
  /// Root cause (kRootCauses in correlate.cpp): the index of the incident on the same node that
  /// explains this one (a CPU lockup for the I/O stalls after it), -1 for none; `cause` says why.
  /// The parent carries the strongest action of its children and lists them.
  std::int64_t parent = -1;
  std::string cause;
  std::vector<std::size_t> children;
};

/// One classified line with its context.
struct Event {
  const std::string* node;  ///< not owned; must outlive add()
  const LineInfo* info;
  const Signal* signal;
  std::string_view line;  ///< the original line
  std::string_view drill = {};  ///< the drill the line is from, when it is a drill line
};

class Correlator {
 public:
  /// Keeps a reference to `catalog`, which must outlive the correlator.
  explicit Correlator(const Catalog& catalog) : catalog_(catalog) {}
  Correlator(const Catalog&& catalog) = delete;  // a temporary catalog would dangle

  /// Adds one event. Returns false when the catalog's ignore lists dropped it.
  bool add(const Event& e);
  /// The incident the last add() counted its line in (for a closing signal, the incident it
  /// resolved; for a line of an incident with a root cause, the root cause's incident, whose action
  /// then covers it); nullopt when the line was ignored, dropped past the cap, or closed nothing.
  std::optional<std::size_t> last_incident() const { return last_; }
  /// The incidents in order of first appearance.
  const std::vector<Incident>& incidents() const { return incidents_; }
  /// Moves the incidents out (for a report that outlives the scan); the correlator starts over.
  std::vector<Incident> take_incidents();
  std::uint64_t ignored() const { return ignored_; }
  std::uint64_t unmatched_closes() const { return unmatched_closes_; }
  /// Past this many incidents, a repeat of a known signal extends its latest incident whatever the
  /// gap, and a signal from a device not seen before folds into one overflow incident per node,
  /// kind and code (device "*") unless it needs action (restart_app or stronger), so memory stays
  /// bounded on long, noisy logs and a new fault is not lost in the noise. merged_past_cap()
  /// counts the lines merged or folded.
  static constexpr std::size_t kIncidentCap = 20000;
  /// What the incidents may grow past the cap, for new faults that need action and for overflow
  /// incidents. Past kIncidentCap + kOverflowCap every line of a new key folds, or, where its
  /// overflow incident cannot be made either, is counted in dropped_past_cap().
  static constexpr std::size_t kOverflowCap = 1000;
  std::uint64_t merged_past_cap() const { return merged_past_cap_; }
  std::uint64_t dropped_past_cap() const { return dropped_past_cap_; }

 private:
  // The latest incident of (node, kind, code, device), and the open cancellable incident of
  // (node, kind, device); entries are checked against the incident they name.
  // A drill's lines (Event::drill) fold only with lines of the same drill: `drill` is part of
  // every key.
  std::optional<std::uint32_t> find_latest(const std::string& node, Kind kind, int code, std::string_view device,
                                           std::string_view drill) const;
  void set_latest(std::uint32_t index);
  std::optional<std::uint32_t> find_open(const std::string& node, Kind kind, std::string_view device,
                                         std::string_view drill) const;
  // node + '\x1f' + GPU (PCI address without its function) [+ '\x1f' + drill], in a reused buffer.
  const std::string& gpu_key_of(const std::string& node, std::string_view device, std::string_view drill);
  /// node|kind|drill: the key of a node's CPU-lockup incident (into key_, like gpu_key_of).
  const std::string& lockup_key_of(const std::string& node, Kind kind, std::string_view drill);
  Incident& open_incident(const Event& e, Action action);
  bool add_line(const Event& e);
  void link_root_cause(std::size_t index);
  bool fold_past_cap(const Event& e, Action action);
  bool within_window(const Incident& inc, const LineInfo& info) const;
  void touch(Incident& inc, const LineInfo& info);
  void raise(Incident& inc, Action a, const std::string& why);

  const Catalog& catalog_;
  std::vector<Incident> incidents_;
  FlatIndex latest_;  ///< (node, kind, code, device) -> last incident
  FlatIndex open_;    ///< (node, kind, device) -> open incident a closing signal can resolve
  std::unordered_map<std::string, std::size_t> lockup_chain_;  ///< node|kind|drill -> its lockup incident
  std::unordered_map<std::string, std::size_t> gpu_chain_;  ///< node|gpu -> last GPU-fault incident
  std::unordered_map<std::string, std::vector<std::size_t>> xids_by_gpu_;  ///< node|gpu -> Xid incidents but 45
  std::string key_;  ///< scratch for gpu_key_of and lockup_key_of
  std::optional<std::size_t> last_;
  std::uint64_t ignored_ = 0, unmatched_closes_ = 0, merged_past_cap_ = 0, dropped_past_cap_ = 0;
};

}  // namespace cmax::signals
