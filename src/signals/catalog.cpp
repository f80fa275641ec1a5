#include "signals/catalog.h"

#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/strings.h"
#include "signals/csv.h"

namespace cmax::signals {

extern const char kXidCatalogCsv[];  // generated from data/xid_catalog.csv

namespace {

using nlohmann::json;

// NVIDIA's immediate_action values on cmax's scale (docs/signals-config.md). Workflows map to the
// strongest step the workflow can end in without a human: the DBE workflow (48) needs a GPU reset,
// the NVLink workflows (74, 144-150) need the node out of the scheduler while links are checked.
struct ImmediateAction {
  std::string_view name;
  Action action;
};
constexpr std::array<ImmediateAction, 15> kImmediateActions{{
    {"RESTART_APP", Action::restart_app},
    {"IGNORE", Action::ignore},
    {"RESET_GPU", Action::reset_gpu},
    {"RESTART_BM", Action::reboot_node},
    {"RESTART_VM", Action::reboot_node},
    {"CONTACT_SUPPORT", Action::replace},
    {"WORKFLOW_XID_48", Action::reset_gpu},
    {"WORKFLOW_XID_45", Action::ignore},  // the correlator charges Xid 45 to the Xid that caused it
    {"WORKFLOW_NVLINK_ERR", Action::drain},
    {"WORKFLOW_NVLINK5_ERR", Action::drain},
    {"CHECK_MECHANICALS", Action::drain},
    {"UPDATE_SWFW", Action::drain},
    {"CHECK_UVM", Action::restart_app},
    {"XID_154", Action::monitor},  // the message's own recovery action decides (action_for)
    {"", Action::monitor},
}};

// Only RESTART_APP marks an Xid as caused by the application; tools disagree, the catalog decides.
constexpr std::string_view kApplicationAction = "RESTART_APP";

// Every kind's action when no catalog row or override applies, in Kind order. SXid's entry is for
// Fatal lines; non-fatal SXids are monitored (action_for).
struct KindDefault {
  Kind kind;
  Action action;
};
constexpr std::array<KindDefault, kKindCount> kKindDefaults{{
    {Kind::xid, Action::monitor},  // an Xid missing from the catalog: newer than our copy
    {Kind::sxid, Action::drain},
    {Kind::soft_lockup, Action::drain},
    {Kind::hard_lockup, Action::reboot_node},
    {Kind::hung_task, Action::monitor},
    {Kind::mce, Action::drain},
    {Kind::edac_ce, Action::monitor},
    {Kind::edac_ue, Action::drain},
    {Kind::aer_corrected, Action::monitor},
    {Kind::aer_nonfatal, Action::drain},
    {Kind::aer_fatal, Action::reboot_node},
    {Kind::nvme, Action::drain},
    {Kind::block_io, Action::drain},
    {Kind::fs_error, Action::drain},
    {Kind::nfs_timeout, Action::monitor},
    {Kind::nfs_ok, Action::ignore},
    {Kind::lustre, Action::monitor},
    {Kind::lustre_conn, Action::monitor},
    {Kind::ib_port, Action::monitor},  // module plugged/unplugged, cable errors: a link-down signal decides
    {Kind::ib_health, Action::drain},
    {Kind::net_carrier, Action::drain},
    {Kind::net_link_up, Action::ignore},
    {Kind::oom, Action::restart_app},
    {Kind::conntrack, Action::monitor},
    {Kind::gpu_off_bus, Action::reboot_node},   // as Xid 79: only a reboot brings the GPU back
    {Kind::mlx5_cmd_timeout, Action::drain},    // firmware stopped answering commands; resources leak
    {Kind::mlx5_fatal, Action::reboot_node},    // by syndrome: kMlx5Syndromes
    {Kind::efa_admin, Action::drain},           // the EFA device stopped answering its admin queue
    {Kind::fs_readonly, Action::drain},         // writes fail on that filesystem until it is repaired and remounted
    {Kind::block_eod, Action::drain},           // the filesystem or mapping is larger than its device: I/O fails
    {Kind::md_degraded, Action::monitor},       // the array runs on its other members: replace the disk, no drain
    {Kind::md_failed, Action::drain},           // the array is gone
    {Kind::oom_memcg, Action::monitor},         // a cgroup's limit: the job's problem, not the node's
    {Kind::kernel_panic, Action::reboot_node},  // read back after the crash (pstore, previous boot): see action_for
    {Kind::kernel_oops, Action::reboot_node},   // the kernel killed a task in kernel mode: its state is suspect
    {Kind::nfs_state, Action::restart_app},     // the client lost its locks or open state: the job's files are unsafe
    {Kind::nfs_writeback, Action::drain},       // tasks stuck writing back to NFS: the mount is wedged for writers
    {Kind::peermem, Action::monitor},           // NVIDIA: harmless (bug 4272659 mitigation, R535.129); a flood precedes some crashes
    {Kind::gpu_lib_segfault, Action::restart_app},  // the application crashed inside NCCL/CUDA/NVML: its fault first
    {Kind::mlx5_pcie_power, Action::monitor},   // the NIC may throttle: inspect the slot at the next window
    {Kind::mlx5_cmd_err, Action::monitor},      // a firmware command refused (often counters on a restricted PF)
    {Kind::nvlink_training, Action::reboot_node},  // NVLink did not train: the fabric is incomplete until a reboot
    {Kind::file_max, Action::monitor},          // the system file table is full: find the process that leaks
    {Kind::memory_failure, Action::drain},      // a poisoned page: its user was killed; see action_for
    {Kind::gpu_lost, Action::reboot_node},       // as Xid 79
    {Kind::gpu_ecc_ue, Action::reset_gpu},       // as Xid 48: reset to remap or retire the row
    {Kind::gpu_row_remap, Action::reset_gpu},    // pending remap needs a reset; failure: see action_for
    {Kind::gpu_retired_pages, Action::monitor},
    {Kind::gpu_throttle, Action::monitor},
    {Kind::gpu_pcie_link, Action::drain},        // a degraded link slows every collective through it
    {Kind::gpu_stalled, Action::restart_app},
    {Kind::ib_port_down, Action::drain},
    {Kind::ib_port_up, Action::ignore},
    {Kind::ib_link_downed, Action::monitor},
    {Kind::fs_hung, Action::drain},
    {Kind::fs_ok, Action::ignore},
}};

constexpr bool kind_defaults_in_order() {
  for (int i = 0; i < kKindCount; ++i)
    if (static_cast<int>(kKindDefaults[i].kind) != i) return false;
  return true;
}
static_assert(kind_defaults_in_order(), "kKindDefaults must list every Kind in enum order");

constexpr Threshold kApplicationThreshold{10, 3600, Action::reset_gpu};
constexpr std::array<Cancellation, 4> kCancellations{{
    {Kind::nfs_timeout, Kind::nfs_ok},
    {Kind::net_carrier, Kind::net_link_up},
    {Kind::ib_port_down, Kind::ib_port_up},
    {Kind::fs_hung, Kind::fs_ok},
}};
constexpr double kWindowS = 300;

// Xid 154's "GPU recovery action changed ... to 0xN": the driver's own verdict, by N. Codes newer
// than this table drain: keep work off the GPU until someone reads the message.
constexpr std::array<Action, 6> kRecoveryActions{
    Action::monitor,      // 0 None
    Action::reset_gpu,    // 1 GPU Reset Required
    Action::reboot_node,  // 2 Node Reboot Required
    Action::drain,        // 3 Drain P2P
    Action::drain,        // 4 Drain and Reset
    Action::drain,        // 5 Recover IMEX domain
};

// mlx5 health syndromes (drivers/net/ethernet/mellanox/mlx5/core/health.c, hw_err_str()), by what
// gets the NIC back: a hardware fault is replaced; over-temperature is cooling, not the card (drain,
// fix the airflow); the firmware faults and an unreadable device (0xff) need a firmware reset,
// which a reboot gives. Syndromes not listed: reboot_node (the kind's default).
struct Mlx5Syndrome {
  int synd;
  Action action;
};
constexpr std::array<Mlx5Syndrome, 2> kMlx5Syndromes{{
    {0x8, Action::replace},  // unrecoverable hardware error
    {0x10, Action::drain},   // high temperature
}};

Action immediate_to_action(std::string_view immediate) {
  for (const auto& row : kImmediateActions)
    if (row.name == immediate) return row.action;
  return Action::monitor;  // an action newer than this table: watch it, keep the raw text
}

std::optional<int> parse_code(std::string_view s) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

// Builds errors that name the config file and the key path: apply signals config F: 'a.b': ...
class ConfigReader {
 public:
  explicit ConfigReader(std::string_view origin) : origin_(origin) {}

  template <class... Args>
  Unexpected<Error> error(const std::string& path, fmt::format_string<Args...> what,
                          Args&&... args) const {
    std::string detail = fmt::format(what, std::forward<Args>(args)...);
    if (path.empty()) return fail("apply signals config {}: {}", origin_, detail);
    return fail("apply signals config {}: '{}': {}", origin_, path, detail);
  }

  Result<int> code(const json& j, const std::string& path) const {
    std::optional<int> v;
    if (j.is_string()) v = parse_code(j.get<std::string>());
    if (j.is_number_integer() && j.get<long long>() >= 0 &&
        j.get<long long>() <= std::numeric_limits<int>::max())
      v = j.get<int>();
    if (!v)
      return error(path, "{} is not a code; write a non-negative decimal integer such as 79",
                   j.dump());
    return *v;
  }

  Result<Action> action(const json& j, const std::string& path) const {
    std::optional<Action> a;
    if (j.is_string()) a = parse_action(j.get<std::string>());
    if (!a)
      return error(path,
                   "{} is not an action; use ignore, monitor, restart_app, reset_gpu, drain, "
                   "reboot_node or replace",
                   j.dump());
    return *a;
  }

  Result<Kind> kind(const json& j, const std::string& path) const {
    std::optional<Kind> k;
    if (j.is_string()) k = parse_kind(j.get<std::string>());
    if (!k)
      return error(path, "{} is not a signal kind; see docs/signals-config.md for the names",
                   j.dump());
    return *k;
  }

  Result<double> seconds(const json& j, const std::string& path) const {
    if (!j.is_number() || !std::isfinite(j.get<double>()) || j.get<double>() <= 0)
      return error(path, "{} is not a duration; write a number of seconds greater than 0",
                   j.dump());
    return j.get<double>();
  }

  Result<void> object(const json& j, const std::string& path) const {
    if (!j.is_object()) return error(path, "must be an object, not {}", j.type_name());
    return ok();
  }

  Result<void> array(const json& j, const std::string& path) const {
    if (!j.is_array()) return error(path, "must be an array, not {}", j.type_name());
    return ok();
  }

  // Every key of `j` must be one of `allowed`.
  Result<void> keys(const json& j, const std::string& path,
                    std::initializer_list<std::string_view> allowed) const {
    for (const auto& [key, value] : j.items()) {
      bool known = false;
      for (auto a : allowed) known = known || a == key;
      if (!known) {
        std::string names;
        for (auto a : allowed) names += fmt::format("{}{}", names.empty() ? "" : ", ", a);
        return error(join(path, key), "unknown key; the keys here are {}", names);
      }
    }
    return ok();
  }

  static std::string join(const std::string& path, std::string_view key) {
    return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
  }

 private:
  std::string_view origin_;
};

#define CMAX_TRY(expr)                                               \
  do {                                                               \
    if (auto r_ = (expr); !r_) return Unexpected<Error>{r_.error()}; \
  } while (0)

// A code-keyed object of actions ({"79": "replace"}) into `out`.
Result<void> read_code_actions(const ConfigReader& r, const json& j, const std::string& path,
                               std::map<int, Action>& out) {
  CMAX_TRY(r.object(j, path));
  for (const auto& [key, value] : j.items()) {
    std::string at = ConfigReader::join(path, key);
    auto code = r.code(json(key), at);
    if (!code) return Unexpected<Error>{code.error()};
    auto action = r.action(value, at);
    if (!action) return Unexpected<Error>{action.error()};
    out[*code] = *action;
  }
  return ok();
}

Result<void> read_code_list(const ConfigReader& r, const json& j, const std::string& path,
                            std::set<int>& out) {
  CMAX_TRY(r.array(j, path));
  for (std::size_t i = 0; i < j.size(); ++i) {
    auto code = r.code(j[i], fmt::format("{}[{}]", path, i));
    if (!code) return Unexpected<Error>{code.error()};
    out.insert(*code);
  }
  return ok();
}

// A threshold object; keys it leaves out keep the values of `t`.
Result<void> read_threshold(const ConfigReader& r, const json& j, const std::string& path,
                            Threshold& t) {
  CMAX_TRY(r.object(j, path));
  CMAX_TRY(r.keys(j, path, {"count", "window_s", "escalate"}));
  if (j.contains("count")) {
    const json& c = j["count"];
    if (!c.is_number_integer() || c.get<long long>() < 0 ||
        c.get<long long>() > std::numeric_limits<int>::max())
      return r.error(ConfigReader::join(path, "count"),
                     "{} is not a count; write an integer of 0 or more (0 turns it off)", c.dump());
    t.count = c.get<int>();
  }
  if (j.contains("window_s")) {
    auto w = r.seconds(j["window_s"], ConfigReader::join(path, "window_s"));
    if (!w) return Unexpected<Error>{w.error()};
    t.window_s = *w;
  }
  if (j.contains("escalate")) {
    auto a = r.action(j["escalate"], ConfigReader::join(path, "escalate"));
    if (!a) return Unexpected<Error>{a.error()};
    t.escalate = *a;
  }
  return ok();
}

}  // namespace

Action recovery_action_to_action(int code) {
  if (code < 0 || code >= static_cast<int>(kRecoveryActions.size())) return Action::drain;
  return kRecoveryActions[code];
}

Result<Catalog> Catalog::builtin() {
  auto c = from_csv(kXidCatalogCsv, "built-in data/xid_catalog.csv");
  if (!c) return c;
  auto d = XidDecoder::builtin();
  if (!d) return Unexpected<Error>{d.error()};
  c->decoder_ = std::make_shared<const XidDecoder>(std::move(*d));
  return c;
}

std::string Catalog::reason_for(const Signal& s) const {
  if (s.kind != Kind::xid) return {};
  if (xid_override_.count(s.code)) return "config override";
  if (decoder_)
    if (auto d = decoder_->decode(s)) return d->reason;
  if (s.code == 154 && s.recovery_action >= 0) return fmt::format("Xid 154 recovery action 0x{:x}", s.recovery_action);
  if (!xid(s.code))
    return fmt::format("Xid {} is not in NVIDIA's catalog as cmax has it (data/xid_catalog.csv): newer than it; "
                       "drained until someone reads it",
                       s.code);
  return {};
}

Result<Catalog> Catalog::from_csv(std::string_view csv, std::string_view origin) {
  auto records = parse_csv(csv);
  if (!records) return fail("read Xid catalog {}: {}", origin, records.error().message);
  if (records->empty())
    return fail("read Xid catalog {}: the file is empty; it needs a header line", origin);

  const auto& header = records->front().fields;
  auto column = [&](std::string_view name) -> std::optional<std::size_t> {
    for (std::size_t i = 0; i < header.size(); ++i)
      if (core::to_lower(core::trim(header[i])) == name) return i;
    return std::nullopt;
  };
  auto xid_col = column("xid");
  auto immediate_col = column("immediate_action");
  if (!xid_col || !immediate_col)
    return fail(
        "read Xid catalog {}: line {}: the header needs columns 'xid' and 'immediate_action'",
        origin, records->front().line);
  auto mnemonic_col = column("mnemonic");
  auto description_col = column("description");
  auto investigatory_col = column("investigatory_action");

  Catalog cat;
  for (std::size_t r = 1; r < records->size(); ++r) {
    const CsvRecord& rec = (*records)[r];
    if (rec.fields.size() != header.size())
      return fail(
          "read Xid catalog {}: line {}: {} fields where the header has {}; quote fields that hold "
          "commas",
          origin, rec.line, rec.fields.size(), header.size());
    auto cell = [&](std::optional<std::size_t> col) {
      return col ? std::string(core::trim(rec.fields[*col])) : std::string();
    };
    XidInfo info;
    std::string xid_text = cell(xid_col);
    auto xid = parse_code(xid_text);
    if (!xid)
      return fail("read Xid catalog {}: line {}: xid '{}' is not a number", origin, rec.line,
                  xid_text);
    if (cat.xids_.count(*xid))
      return fail("read Xid catalog {}: line {}: Xid {} is listed twice", origin, rec.line, *xid);
    info.xid = *xid;
    info.mnemonic = cell(mnemonic_col);
    info.description = cell(description_col);
    info.immediate_action = cell(immediate_col);
    info.investigatory_action = cell(investigatory_col);
    info.action = immediate_to_action(info.immediate_action);
    info.application = info.immediate_action == kApplicationAction;
    cat.xids_.emplace(info.xid, std::move(info));
  }
  cat.application_threshold_ = kApplicationThreshold;
  cat.cancellations_.assign(kCancellations.begin(), kCancellations.end());
  cat.window_s_ = kWindowS;
  return cat;
}

Result<void> Catalog::apply_config(std::string_view text, std::string_view origin) {
  ConfigReader r(origin);
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded())
    return fail("apply signals config {}: not valid JSON; check the file with a JSON validator",
                origin);
  CMAX_TRY(r.object(doc, ""));
  CMAX_TRY(
      r.keys(doc, "", {"schema", "window_s", "actions", "ignore", "thresholds", "cancellations"}));
  if (!doc.contains("schema") || doc["schema"] != "cmax.signals-config/1")
    return r.error("schema", "must be \"cmax.signals-config/1\"; add that key as the first line");

  Catalog next = *this;  // applied to a copy, swapped in only when every key is valid
  if (doc.contains("window_s")) {
    auto w = r.seconds(doc["window_s"], "window_s");
    if (!w) return Unexpected<Error>{w.error()};
    next.window_s_ = *w;
  }
  if (doc.contains("actions")) {
    const json& a = doc["actions"];
    CMAX_TRY(r.object(a, "actions"));
    CMAX_TRY(r.keys(a, "actions", {"xid", "sxid", "kinds"}));
    if (a.contains("xid"))
      CMAX_TRY(read_code_actions(r, a["xid"], "actions.xid", next.xid_override_));
    if (a.contains("sxid"))
      CMAX_TRY(read_code_actions(r, a["sxid"], "actions.sxid", next.sxid_override_));
    if (a.contains("kinds")) {
      CMAX_TRY(r.object(a["kinds"], "actions.kinds"));
      for (const auto& [key, value] : a["kinds"].items()) {
        std::string at = ConfigReader::join("actions.kinds", key);
        auto kind = r.kind(json(key), at);
        if (!kind) return Unexpected<Error>{kind.error()};
        auto action = r.action(value, at);
        if (!action) return Unexpected<Error>{action.error()};
        next.kind_override_[*kind] = *action;
      }
    }
  }
  if (doc.contains("ignore")) {
    const json& ig = doc["ignore"];
    CMAX_TRY(r.object(ig, "ignore"));
    CMAX_TRY(r.keys(ig, "ignore", {"xid", "sxid", "kinds"}));
    if (ig.contains("xid")) CMAX_TRY(read_code_list(r, ig["xid"], "ignore.xid", next.ignore_xids_));
    if (ig.contains("sxid"))
      CMAX_TRY(read_code_list(r, ig["sxid"], "ignore.sxid", next.ignore_sxids_));
    if (ig.contains("kinds")) {
      CMAX_TRY(r.array(ig["kinds"], "ignore.kinds"));
      for (std::size_t i = 0; i < ig["kinds"].size(); ++i) {
        auto kind = r.kind(ig["kinds"][i], fmt::format("ignore.kinds[{}]", i));
        if (!kind) return Unexpected<Error>{kind.error()};
        next.ignore_kinds_.insert(*kind);
      }
    }
  }
  if (doc.contains("thresholds")) {
    const json& th = doc["thresholds"];
    CMAX_TRY(r.object(th, "thresholds"));
    CMAX_TRY(r.keys(th, "thresholds", {"xid", "application"}));
    // The application threshold first: per-Xid thresholds take its values for keys they omit.
    if (th.contains("application"))
      CMAX_TRY(read_threshold(r, th["application"], "thresholds.application",
                              next.application_threshold_));
    if (th.contains("xid")) {
      CMAX_TRY(r.object(th["xid"], "thresholds.xid"));
      for (const auto& [key, value] : th["xid"].items()) {
        std::string at = ConfigReader::join("thresholds.xid", key);
        auto code = r.code(json(key), at);
        if (!code) return Unexpected<Error>{code.error()};
        auto it = next.xid_thresholds_.find(*code);
        Threshold t = it != next.xid_thresholds_.end() ? it->second : next.application_threshold_;
        CMAX_TRY(read_threshold(r, value, at, t));
        next.xid_thresholds_[*code] = t;
      }
    }
  }
  if (doc.contains("cancellations")) {
    const json& cs = doc["cancellations"];
    CMAX_TRY(r.array(cs, "cancellations"));
    next.cancellations_.clear();
    for (std::size_t i = 0; i < cs.size(); ++i) {
      std::string at = fmt::format("cancellations[{}]", i);
      CMAX_TRY(r.object(cs[i], at));
      CMAX_TRY(r.keys(cs[i], at, {"open", "close"}));
      if (!cs[i].contains("open") || !cs[i].contains("close"))
        return r.error(at, "needs both 'open' and 'close' kinds");
      auto open = r.kind(cs[i]["open"], at + ".open");
      if (!open) return Unexpected<Error>{open.error()};
      auto close = r.kind(cs[i]["close"], at + ".close");
      if (!close) return Unexpected<Error>{close.error()};
      if (*open == *close)
        return r.error(at, "'open' and 'close' are both {}; a kind cannot close itself",
                       to_string(*open));
      next.cancellations_.push_back({*open, *close});
    }
  }
  *this = std::move(next);
  return ok();
}

#undef CMAX_TRY

Action Catalog::action_for(const Signal& s) const {
  if (s.kind == Kind::xid)
    if (auto it = xid_override_.find(s.code); it != xid_override_.end()) return it->second;
  if (s.kind == Kind::sxid)
    if (auto it = sxid_override_.find(s.code); it != sxid_override_.end()) return it->second;
  if (auto it = kind_override_.find(s.kind); it != kind_override_.end()) return it->second;
  if (s.kind == Kind::xid) {
    if (s.code == 154 && s.recovery_action >= 0)
      return recovery_action_to_action(s.recovery_action);
    // NVIDIA's register decode (Xid 144-150 sheet, Xid 74 bits) before the catalog's workflow row.
    if (decoder_)
      if (auto d = decoder_->decode(s)) return d->action;
    if (const XidInfo* info = xid(s.code)) return info->action;
    // An Xid newer than the catalog: never silently ignored (docs/signals-config.md).
    return Action::drain;
  }
  if (s.kind == Kind::sxid && !s.fatal) return Action::monitor;
  // A corrected machine check ("Corrected error, no action required") is watched, not drained.
  if (s.kind == Kind::mce && s.corrected) return Action::monitor;
  // A deliberate crash (SysRq c), a page whose poison was recovered, an NVMe command the driver
  // completed by polling (a lost interrupt): watched, not acted on.
  if (s.corrected && (s.kind == Kind::kernel_panic || s.kind == Kind::memory_failure || s.kind == Kind::nvme))
    return Action::monitor;
  // The OOM killer: system-wide (global_oom, "Out of memory:") is the node's; its head line alone
  // ("invoked oom-killer", rate-limited with the kill that follows) says nothing of the scope.
  if (s.kind == Kind::oom && s.fatal) return Action::drain;
  if (s.kind == Kind::oom && s.corrected) return Action::monitor;
  // Remapping failed, or a retirement is pending with remapping unavailable: the GPU goes back.
  if (s.kind == Kind::gpu_row_remap && s.fatal) return Action::replace;
  if (s.kind == Kind::gpu_retired_pages && s.fatal) return Action::reset_gpu;
  if (s.kind == Kind::mlx5_fatal)
    for (const auto& row : kMlx5Syndromes)
      if (row.synd == s.code) return row.action;
  return kKindDefaults[static_cast<int>(s.kind)].action;
}

bool Catalog::ignored(const Signal& s) const {
  if (ignore_kinds_.count(s.kind)) return true;
  if (s.kind == Kind::xid) return ignore_xids_.count(s.code) > 0;
  if (s.kind == Kind::sxid) return ignore_sxids_.count(s.code) > 0;
  return false;
}

const XidInfo* Catalog::xid(int code) const {
  auto it = xids_.find(code);
  return it == xids_.end() ? nullptr : &it->second;
}

std::optional<Threshold> Catalog::threshold_for(const Signal& s) const {
  if (s.kind != Kind::xid) return std::nullopt;
  std::optional<Threshold> t;
  if (auto it = xid_thresholds_.find(s.code); it != xid_thresholds_.end()) {
    t = it->second;
  } else if (const XidInfo* info = xid(s.code); info && info->application) {
    t = application_threshold_;
  }
  if (t && t->count <= 0) return std::nullopt;  // count 0 turns a threshold off
  return t;
}

}  // namespace cmax::signals
