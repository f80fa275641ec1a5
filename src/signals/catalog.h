#pragma once
// What to do about each signal: NVIDIA's Xid catalog (data/xid_catalog.csv, embedded at build
// time) mapped onto cmax's action scale, defaults for every other kind, and the user's overrides
// from a JSON config file (docs/signals-config.md). Immutable after construction; thread-safe reads.

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "signals/signal.h"
#include "signals/xid_decode.h"

namespace cmax::signals {

/// One row of NVIDIA's catalog.
struct XidInfo {
  int xid = 0;
  std::string mnemonic;
  std::string description;
  std::string immediate_action;      ///< as in the catalog: RESTART_APP, RESET_GPU, WORKFLOW_XID_48...
  std::string investigatory_action;  ///< as in the catalog: CONTACT_SUPPORT...
  Action action = Action::monitor;   ///< immediate_action on cmax's scale (docs/signals-config.md)
  bool application = false;          ///< caused by the application (RESTART_APP class)
};

/// Count/time-window escalation: `count` or more of the signal on one device within `window_s`
/// raises the incident's action to `escalate`.
struct Threshold {
  int count = 0;
  double window_s = 0;
  Action escalate = Action::reset_gpu;
};

/// A later `close` signal on the same node and device resolves an open `open` incident
/// (nfs_timeout -> nfs_ok, net_carrier -> net_link_up).
struct Cancellation {
  Kind open;
  Kind close;
};

class Catalog {
 public:
  /// The embedded catalog and cmax's defaults. Fails only if the embedded CSV is damaged.
  static Result<Catalog> builtin();
  /// Parses a catalog CSV with NVIDIA's columns (xid, mnemonic, description, ..., immediate_action,
  /// investigatory_action, ...). Errors name `origin` and the line.
  static Result<Catalog> from_csv(std::string_view csv, std::string_view origin);

  /// Applies overrides from a JSON document (schema cmax.signals-config/1). Errors name `origin`
  /// and the key at fault; on error nothing is changed.
  Result<void> apply_config(std::string_view json, std::string_view origin);

  /// The action for one signal before correlation: the config's override, else Xid 154's own
  /// recovery action, else the catalog row, else the kind's default (SXid: by Fatal/Non-fatal).
  Action action_for(const Signal& s) const;
  /// Why action_for() says what it says, where more than the catalog row: the Xid decode's sheet
  /// row, Xid 154's recovery action, an Xid newer than the catalog. Empty otherwise.
  std::string reason_for(const Signal& s) const;
  /// True when the config says to drop this signal (ignore lists).
  bool ignored(const Signal& s) const;
  const XidInfo* xid(int code) const;
  std::optional<Threshold> threshold_for(const Signal& s) const;
  const std::vector<Cancellation>& cancellations() const { return cancellations_; }
  /// Repeats of one signal on one device closer than this fold into one incident (default 300 s).
  double window_s() const { return window_s_; }
  std::size_t size() const { return xids_.size(); }

 private:
  std::map<int, XidInfo> xids_;
  std::shared_ptr<const XidDecoder> decoder_;  ///< NVIDIA's register decodes (builtin() loads them)
  std::map<int, Action> xid_override_;
  std::map<int, Action> sxid_override_;
  std::map<Kind, Action> kind_override_;
  std::set<int> ignore_xids_;
  std::set<int> ignore_sxids_;
  std::set<Kind> ignore_kinds_;
  std::map<int, Threshold> xid_thresholds_;
  Threshold application_threshold_{};  ///< for every application-class Xid without its own
  std::vector<Cancellation> cancellations_;
  double window_s_ = 300;
};

/// Xid 154's recovery action code on cmax's scale: 0 none -> monitor, 1 GPU reset -> reset_gpu,
/// 2 node reboot -> reboot_node, 3 drain P2P -> drain, 4 drain and reset -> drain,
/// 5 recover IMEX domain -> drain; other codes -> drain.
Action recovery_action_to_action(int code);

}  // namespace cmax::signals
