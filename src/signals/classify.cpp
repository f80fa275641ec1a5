#include "signals/classify.h"

#include <charconv>

namespace cmax::signals {
namespace {

// The prefilter's literals. Each branch of classify() tests for a phrase that holds one of them
// (the comment names which), so a branch can be skipped when its anchor is absent from the line and
// classify(m, present) returns exactly what classify(m) returns. A test checks that every line
// classify() recognises holds an anchor. Each false candidate costs a classify() call: keep them
// selective.
enum Anchor : unsigned {
  kXid, kLockup, kLOCKUP, kBlocked, kError, kerror, kNvme, kOrrupt, kEdac, kNfs, kLost, kLink, kPort,
  kHealth, kKilled, kTable, kAer, kXfs, kDrillMark, kOffBus, kGpuHead, kCmdLeak, kSynd, kEfaPci, kEfaDev, kEfaRdmap,
  // Issue 37: node faults that are not the GPU.
  kReadOnly, kForcedRo, kSuperblock, kBeyondEnd, kAbortJournal, kBtrfs, kDiskFailure, kNoPath, kOom, kKillProcess,
  kPanic, kDie, kBug, kSysrqCrash, kReclaim, kRecoveryFailed, kNfsFrame, kP2pFree, kSegfault, kSlotPower, kAccessReg,
  kKnvlink, kFileMax, kMachineCheckEvent, kMemoryFailure, kAnchorCount
};
static_assert(kAnchorCount <= 64, "AnchorSet has 64 bits");
constexpr std::string_view kAnchors[kAnchorCount] = {
    "Xid (",             // NVRM: Xid, SXid
    "lockup",            // soft lockup
    "LOCKUP",            // hard LOCKUP
    "blocked for more",  // hung task
    "Error",             // [Hardware Error], PCIe Bus Error, LustreError
    "error",             // EDAC .. error, AER .. error received, EXT4-fs error, I/O error, XFS log error
    "nvme nvme",         // nvme timeouts and resets
    "orrupt",            // XFS Corruption / corruption
    "EDAC MC",           // EDAC MCn: N CE|UE on ... (no "error" in some formats)
    "nfs: server",       // nfs not responding / OK
    "lost",              // lost carrier, Lustre "Connection to X was lost;"
    "Link is ",          // NIC Link is Down / Up
    "Port module",       // mlx5 port module events
    "health comp",       // mlx5 health compromised
    "Killed proc",       // OOM killer
    "table full",        // nf_conntrack
    "AER: ",             // AER reports (their branch decides the line even without "error")
    "XFS (",             // XFS shutdowns ("Filesystem has been shut down", no "error")
    "cmax-drill: ",      // a drill's marker (drill_marker.h): not a signal, but the scanner must see it
    // Specific phrases, never a driver's name: GPU and NIC nodes log "NVRM: " and "mlx5_core" chatter
    // all day, and every candidate line costs about a microsecond (docs/PERFORMANCE.md, issue 24:
    // the driver's "loading NVIDIA" banner as an anchor cost 24% of the scan on the bench log, so the
    // driver branch comes from --driver-branch or /proc, not from the log).
    "fallen off",          // NVRM: GPU has fallen off the bus (one- and three-line forms)
    "The NVIDIA GPU ",     // the three-line message's head: its address
    "leak of a comm",      // mlx5 command timeout ("... timeout. Will cause a leak of a command resource")
    "synd 0x",             // mlx5 print_health_info syndrome ("synd 0x10: High temperature")
    "efa 0",               // EFA lines of the in-tree driver: "efa 0000:00:06.0 efa_0: Admin queue is closed"
    "efa_",                // EFA lines named by RDMA device: "infiniband efa_0: ..." (out-of-tree driver)
    "rdmap",               // EFA RDMA devices named like their netdev: "infiniband rdmap16s27: ..."
    // Issue 37. Each is the substring of its phrase that costs the first pass least: the Teddy
    // tables key on a literal's first four bytes, and 8 buckets shared by more literals admit more
    // false 4-byte candidates. Chosen one by one, each the cheapest of a few, timing the pass on the
    // bench log (docs/PERFORMANCE.md, issue 37).
    "-only",                 // EXT2/3/4-fs (sda1): Remounting filesystem read-only
    "forced readonly",       // BTRFS info (device sdg): forced readonly
    "while writing superb",  // EXT4-fs (sda1): I/O error while writing superblock
    "beyond end of device",  // [task: ]attempt to access beyond end of device
    "journal on device",     // jbd2: Aborting journal on device sda1-8.
    "BTRFS",                 // BTRFS: error (device sdg) in ... / BTRFS error (device dm-0): ...
    "Disk failure on",       // md/raid1:md0: Disk failure on sdc1, disabling device.
    "available path",        // block nvme0n1: no available path - failing I/O
    "om-kill",               // NAME invoked oom-killer: ... / oom-kill:constraint=...
    "Kill process",          // (< 4.19) [Memory cgroup out of memory|Out of memory]: Kill process N (NAME) score S ...
    "not syncing",           // Kernel panic - not syncing: ...
    "[#1]",                  // die()'s first oops: "Oops: 0002 [#1] SMP", "divide error: 0000 [#1]", "general protection fault: ... [#1]"
    "BUG: ",                 // BUG: unable to handle kernel NULL pointer dereference / BUG: kernel NULL pointer ...
    "Trigger a crash",       // sysrq: [SysRq : ]Trigger a crash
    "4_reclaim",             // NFS: __nfs4_reclaim_open_state: Lock reclaim failed! / unhandled error -524
    "y failed for",          // NFSv4: state recovery failed for open file X, error = -524
    "[nfs]",                 // a stack frame of the nfs module: " nfs_wb_all+0x22/0x120 [nfs]"
    "nv_get_p2p_free",       // nvidia-peermem / nv_mem nv_get_p2p_free_callback:127 ERROR detected invalid context
    "egfault",               // NAME[PID]: segfault at ADDR ip ... in LIB[...]
    "PCIe slot (",           // mlx5_core ...: Detected insufficient power on the PCIe slot (27W).
    "ACCESS_REG",            // mlx5_core ...: mlx5_cmd_out_err:808:(pid N): ACCESS_REG(0x805) op_mod(0x1) failed, ...
    "knvlink",               // NVRM: knvlinkDiscoverPostRxDetLinks_GH100 / knvlinkUpdatePostRxDetectLinkMask_IMPL
    "-max limit",            // VFS: file-max limit N reached
    "Machine Check Event",   // EDAC sbridge MC0: CPU 0: Machine Check Event: 0 Bank 5: 8c00004000010092
    "y failure: ",           // Memory failure: 0x7e025e: Sending SIGBUS to NAME:PID / recovery action ...: Recovered
};

bool digit(char c) { return c >= '0' && c <= '9'; }
bool hex(char c) { return digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

bool contains(std::string_view s, std::string_view n) { return s.find(n) != std::string_view::npos; }

std::optional<int> number_at(std::string_view s, int base = 10) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || p == s.data()) return std::nullopt;
  return v;
}

// The token that ends right before `at` (e.g. the device before ": AER"), without spaces.
std::string_view word_before(std::string_view s, std::size_t at) {
  std::size_t end = at;
  std::size_t begin = s.rfind(' ', end == 0 ? 0 : end - 1);
  begin = begin == std::string_view::npos ? 0 : begin + 1;
  return begin < end ? s.substr(begin, end - begin) : std::string_view{};
}

// The first PCI-looking token in `s`.
std::string_view first_pci(std::string_view s) {
  for (std::size_t i = 0; i + 7 <= s.size(); ++i) {
    if (!hex(s[i]) || (i > 0 && hex(s[i - 1]))) continue;
    std::size_t j = i;
    while (j < s.size() && (hex(s[j]) || s[j] == ':' || s[j] == '.')) ++j;
    auto tok = s.substr(i, j - i);
    while (!tok.empty() && (tok.back() == '.' || tok.back() == ':')) tok.remove_suffix(1);
    if (is_pci(tok)) return tok;
    i = j;
  }
  return {};
}

// "<tag>PCI:0000:3b:00 ...): rest" -> inside = "0000:3b:00 ...", rest = " rest". False when the
// closing "):" is missing or further than `max_inside` characters.
bool split_tagged(std::string_view m, std::string_view tag, std::size_t max_inside, std::string_view& inside,
                  std::string_view& rest) {
  auto at = m.find(tag);
  if (at == std::string_view::npos) return false;
  std::string_view s = m.substr(at + tag.size());
  auto close = s.find("):");
  if (close == std::string_view::npos || close > max_inside) return false;
  inside = s.substr(0, close);
  if (inside.starts_with("PCI:")) inside.remove_prefix(4);
  rest = s.substr(close + 2);
  return true;
}

// The hex registers in the last parentheses of an Xid line: "(0x021425c6 0x00000000 ...)" (144-150)
// or "link 14(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)" (74). At most 7; stops at the first token
// that is not hex.
void read_registers(std::string_view s, Signal& sig) {
  auto open = s.rfind('(');
  auto close = s.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return;
  std::string_view in = s.substr(open + 1, close - open - 1);
  while (!in.empty() && sig.nregs < sig.regs.size()) {
    while (!in.empty() && (in.front() == ' ' || in.front() == ',')) in.remove_prefix(1);
    if (in.empty()) break;
    if (!(in.size() > 2 && in[0] == '0' && (in[1] == 'x' || in[1] == 'X'))) return;
    in.remove_prefix(2);
    std::uint32_t v = 0;
    auto [p, ec] = std::from_chars(in.data(), in.data() + in.size(), v, 16);
    if (ec != std::errc() || p == in.data()) return;
    sig.regs[sig.nregs++] = v;
    in.remove_prefix(static_cast<std::size_t>(p - in.data()));
  }
}

std::optional<Signal> xid(std::string_view m) {
  std::string_view inside, s;
  if (!split_tagged(m, "NVRM: Xid (", 96, inside, s)) return std::nullopt;
  Signal sig;
  sig.kind = Kind::xid;
  sig.device = inside.substr(0, inside.find(' '));  // without " GPU-I:NN GPU-CI:NN"
  auto code = number_at(s);
  if (!code || *code <= 0 || *code > 9999) return std::nullopt;
  sig.code = *code;
  if (auto name = s.find("name="); name != std::string_view::npos) {
    auto v = s.substr(name + 5);
    sig.subject = v.substr(0, v.find_first_of(", "));
  }
  sig.nonfatal_word = contains(s, "Nonfatal") || contains(s, "Non-fatal");
  if (contains(s, "Fatal") && !sig.nonfatal_word) sig.fatal = true;
  if ((sig.code >= 144 && sig.code <= 150) || sig.code == 74) read_registers(s, sig);
  if (sig.code == 154) {
    auto to = s.find(" to 0x");
    if (to != std::string_view::npos) {
      if (auto ra = number_at(s.substr(to + 6), 16)) sig.recovery_action = *ra;
    }
  }
  if (auto cb = s.find("caused by previous Xid"); cb != std::string_view::npos) {
    if (auto c = number_at(s.substr(cb + 22))) sig.caused_by = *c;
  }
  return sig;
}

std::optional<Signal> sxid(std::string_view m) {
  std::string_view inside, s;
  if (!split_tagged(m, "SXid (", 64, inside, s)) return std::nullopt;
  Signal sig;
  sig.kind = Kind::sxid;
  sig.device = inside;
  auto at = m.find("SXid (");
  auto colon = m.rfind(':', at);
  if (colon != std::string_view::npos) sig.subject = word_before(m, colon);  // nvidia-nvswitchN
  auto code = number_at(s);
  if (!code || *code <= 0) return std::nullopt;
  sig.code = *code;
  auto comma = s.find(',');
  std::string_view sev = comma == std::string_view::npos ? std::string_view{} : s.substr(comma + 1, 12);
  sig.fatal = sev.find("Fatal") != std::string_view::npos && sev.find("Non-fatal") == std::string_view::npos;
  return sig;
}

std::optional<Signal> lockup(std::string_view m, Kind kind) {
  Signal sig;
  sig.kind = kind;
  auto cpu = m.find(kind == Kind::soft_lockup ? "CPU#" : "on cpu ");
  if (cpu == std::string_view::npos) return std::nullopt;
  auto n = number_at(m.substr(cpu + (kind == Kind::soft_lockup ? 4 : 7)));
  if (!n) return std::nullopt;
  sig.code = *n;
  auto open = m.rfind('[');
  auto close = m.rfind(']');
  if (open != std::string_view::npos && close != std::string_view::npos && close > open)
    sig.subject = m.substr(open + 1, close - open - 1);
  sig.fatal = kind == Kind::hard_lockup;
  return sig;
}

std::optional<Signal> hung_task(std::string_view m) {
  auto task = m.find("task ");
  if (task == std::string_view::npos) return std::nullopt;
  Signal sig;
  sig.kind = Kind::hung_task;
  auto rest = m.substr(task + 5);
  sig.subject = rest.substr(0, rest.find(' '));
  return sig;
}

// MCi_STATUS: bit 61 UC (uncorrected), bit 57 PCC (processor context corrupt).
void mce_status(std::string_view m, Signal& sig) {
  auto bank = m.find("Bank ");
  if (bank == std::string_view::npos) return;
  auto colon = m.find(": ", bank);
  if (colon == std::string_view::npos) return;
  auto v = m.substr(colon + 2);
  if (v.starts_with("0x")) v.remove_prefix(2);
  std::size_t n = 0;
  while (n < v.size() && hex(v[n])) ++n;
  if (n != 16) return;
  std::uint64_t status = 0;
  std::from_chars(v.data(), v.data() + n, status, 16);
  if (!(status >> 63 & 1)) return;  // not VALid
  const bool uc = status >> 61 & 1, pcc = status >> 57 & 1;
  sig.fatal = sig.fatal || pcc || uc;
  sig.corrected = !uc && !pcc;
}

std::optional<Signal> mce(std::string_view m) {
  Signal sig;
  sig.kind = Kind::mce;
  // The rest of a record after its "CPU N: Machine Check: ... Bank B: STATUS" line: context.
  if (auto he = m.find("[Hardware Error]: "); he != std::string_view::npos) {
    auto rest = m.substr(he + 18);
    for (std::string_view ctx : {"TSC ", "ADDR ", "MISC ", "PROCESSOR ", "RIP ", "Run the above", "IPID", "PPIN ", "SYND",
                                 "Error Addr", "Syndrome", "cache level", "Invalid", "It has been corrected"})
      if (rest.starts_with(ctx)) return std::nullopt;
    // mce_notify_irq() prints it for every logged event, corrected ones too: the lines around decide.
    if (rest.starts_with("Machine check events logged")) {
      sig.corrected = true;
      return sig;
    }
  }
  if (auto cpu = m.find("CPU "); cpu != std::string_view::npos) {
    if (auto n = number_at(m.substr(cpu + 4))) {
      sig.code = *n;
      auto end = m.find(':', cpu);
      sig.device = m.substr(cpu, (end == std::string_view::npos ? m.size() : end) - cpu);
    }
  }
  sig.fatal = contains(m, "Uncorrected") || contains(m, "Fatal") || contains(m, "PCC") || contains(m, "context corrupt");
  sig.corrected = !sig.fatal && contains(m, "Corrected error");
  // AMD's decode "MC27_STATUS[-|CE|MiscV|...]": CE alone is corrected; UE or PCC is not.
  if (auto st = m.find("_STATUS["); st != std::string_view::npos) {
    auto flags = m.substr(st + 8, m.find(']', st) - st - 8);
    if (contains(flags, "|UE|") || contains(flags, "UC|") || contains(flags, "PCC")) sig.fatal = true;
    else if (contains(flags, "|CE|")) sig.corrected = true;
  }
  mce_status(m, sig);
  return sig;
}

std::optional<Signal> edac(std::string_view m) {
  auto at = m.find("EDAC MC");
  auto colon = m.find(':', at);
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view rest = m.substr(colon + 1);
  Signal sig;
  sig.device = m.substr(at + 5, colon - at - 5);  // "MC0", unless the line names the DIMM
  // "... on CPU_SrcID#0_Ha#0_Chan#2_DIMM#0 (channel:2 slot:0 ...)": the label the DIMM is replaced by.
  if (auto on = rest.find(" on "); on != std::string_view::npos) {
    auto label = rest.substr(on + 4);
    label = label.substr(0, label.find(" ("));
    if (!label.empty() && label.size() <= 64 && label.find(' ') == std::string_view::npos) {
      sig.subject = sig.device;
      sig.device = label;
    }
  }
  if (contains(rest, " UE ")) {
    sig.kind = Kind::edac_ue;
    sig.fatal = true;
  } else if (contains(rest, " CE ")) {
    sig.kind = Kind::edac_ce;
  } else {
    return std::nullopt;
  }
  sig.code = number_at(rest).value_or(-1);  // error count
  return sig;
}

std::optional<Signal> aer(std::string_view m) {
  Signal sig;
  bool bus_error = contains(m, "PCIe Bus Error");
  if (bus_error) {
    if (contains(m, "severity=Corrected")) sig.kind = Kind::aer_corrected;
    else if (contains(m, "(Fatal)") || contains(m, "=Fatal")) sig.kind = Kind::aer_fatal;
    else if (contains(m, "Uncorrect")) sig.kind = Kind::aer_nonfatal;
    else return std::nullopt;
    auto at = m.find(": PCIe Bus Error");
    if (at != std::string_view::npos) sig.device = word_before(m, at);
  } else {
    // "pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received: 0000:01:00.0"
    // Real AER reports say "error" ("error received", "no error_detected callback"); the prefilter
    // relies on it.
    if (!contains(m, "error")) return std::nullopt;
    if (contains(m, "can't recover") || contains(m, "(Fatal) error received")) sig.kind = Kind::aer_fatal;
    else if (contains(m, "(Non-Fatal) error received") || contains(m, "Uncorrected (Non-Fatal)")) sig.kind = Kind::aer_nonfatal;
    else if (contains(m, "Corrected error received") || contains(m, "Multiple Corrected error")) sig.kind = Kind::aer_corrected;
    else return std::nullopt;
    auto received = m.find("received: ");
    sig.device = received != std::string_view::npos ? first_pci(m.substr(received + 10)) : first_pci(m);
  }
  if (!is_pci(sig.device)) sig.device = first_pci(m);
  sig.fatal = sig.kind == Kind::aer_fatal;
  return sig;
}

std::optional<Signal> nvme(std::string_view m) {
  auto at = m.find("nvme nvme");
  std::string_view rest = m.substr(at + 5);
  auto colon = rest.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view body = rest.substr(colon + 1);
  if (contains(body, "Shutdown timeout set")) return std::nullopt;  // a boot notice, not a fault
  if (!(contains(body, "timeout") || contains(body, "I/O error") || contains(body, "controller is down") ||
        contains(body, "Removing after probe failure") || contains(body, "reset") || contains(body, "failed")))
    return std::nullopt;
  Signal sig;
  sig.kind = Kind::nvme;
  sig.device = rest.substr(0, colon);
  sig.fatal = contains(body, "controller is down") || contains(body, "Removing");
  // "I/O 897 QID 2 timeout, completion polled": the command had completed, its interrupt was lost.
  sig.corrected = contains(body, "completion polled");
  return sig;
}

std::optional<Signal> block_io(std::string_view m) {
  // "I/O error, dev sda", "critical medium error, dev sda", "Buffer I/O error on dev sda1"
  auto at = m.find(" error, dev ");
  std::size_t skip = 12;
  if (at == std::string_view::npos) {
    at = m.find("I/O error on dev ");
    skip = 17;
  }
  if (at == std::string_view::npos) return std::nullopt;
  Signal sig;
  sig.kind = Kind::block_io;
  auto rest = m.substr(at + skip);
  sig.device = rest.substr(0, rest.find_first_of(", "));
  return sig;
}

// The name in "(device NAME)" or "-fs (NAME):" after `at`, up to its ')'.
std::string_view paren_device(std::string_view m, std::size_t at) {
  auto open = m.find('(', at);
  if (open == std::string_view::npos) return {};
  auto rest = m.substr(open + 1);
  if (rest.starts_with("device ")) rest.remove_prefix(7);
  auto close = rest.find(')');
  if (close == std::string_view::npos || close > 64) return {};
  return rest.substr(0, close);
}

std::optional<Signal> fs_error(std::string_view m) {
  Signal sig;
  sig.kind = Kind::fs_error;
  // ext2/3/4: "EXT4-fs error (device sda1): ...", "EXT3-fs error (device dm-6) in ...".
  if (auto at = m.find("-fs error (device "); at != std::string_view::npos && at >= 4 && m.substr(at - 4, 3) == "EXT") {
    auto rest = m.substr(at + 18);
    sig.device = rest.substr(0, rest.find(')'));
    return sig;
  }
  if (contains(m, "EXT4-fs error") || contains(m, "EXT3-fs error") || contains(m, "EXT2-fs error")) return sig;
  // ext4_commit_super: "EXT4-fs (sda1): I/O error while writing superblock".
  if (auto at = m.find("-fs ("); at != std::string_view::npos && contains(m, "error while writing superb")) {
    sig.device = paren_device(m, at);
    return sig;
  }
  // jbd2: "Aborting journal on device sda1-8." (the device, then the journal's inode).
  if (auto at = m.find("Aborting journal on device "); at != std::string_view::npos) {
    auto rest = m.substr(at + 27);
    auto dev = rest.substr(0, rest.find_first_of(". \n"));
    if (auto dash = dev.rfind('-'); dash != std::string_view::npos && dash + 1 < dev.size() &&
                                    dev.find_first_not_of("0123456789", dash + 1) == std::string_view::npos)
      dev = dev.substr(0, dash);
    sig.device = dev;
    return sig;
  }
  // btrfs: "BTRFS: error (device sdg) in __btrfs_cow_block:1176: errno=-5 IO failure",
  // "BTRFS error (device dm-0): ...", "BTRFS critical (device sda): ...". Its info and warning lines
  // are not errors ("forced readonly" is fs_readonly).
  if (auto at = m.find("BTRFS"); at != std::string_view::npos) {
    auto rest = m.substr(at + 5);
    if (!(rest.starts_with(": error (") || rest.starts_with(" error (") || rest.starts_with(": critical (") ||
          rest.starts_with(" critical (")))
      return std::nullopt;
    sig.device = paren_device(m, at);
    return sig;
  }
  auto at = m.find("XFS (");
  auto close = m.find(')', at);
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view body = m.substr(close);
  if (!(contains(body, "orruption") || contains(body, "I/O error") || contains(body, "CRC error") || contains(body, "shut down") ||
        contains(body, "Shutting down") || contains(body, "log I/O error")))
    return std::nullopt;
  sig.device = m.substr(at + 5, close - at - 5);
  sig.fatal = contains(body, "shut");
  return sig;
}

std::optional<Signal> nfs(std::string_view m) {
  auto at = m.find("nfs: server ");
  auto rest = m.substr(at + 12);
  Signal sig;
  sig.device = rest.substr(0, rest.find(' '));
  if (contains(rest, " not responding")) sig.kind = Kind::nfs_timeout;
  else if (rest.ends_with(" OK") || contains(rest, " OK ")) sig.kind = Kind::nfs_ok;
  else return std::nullopt;
  return sig;
}

std::optional<Signal> lustre(std::string_view m) {
  Signal sig;
  if (contains(m, "LustreError")) {
    sig.kind = Kind::lustre;
  } else if (contains(m, "Lustre") && contains(m, "Connection to ")) {
    sig.kind = Kind::lustre_conn;
    auto at = m.find("Connection to ");
    auto rest = m.substr(at + 14);
    sig.device = rest.substr(0, rest.find(' '));
  } else {
    return std::nullopt;
  }
  return sig;
}

std::optional<Signal> mlx5(std::string_view m, Kind kind) {
  Signal sig;
  sig.kind = kind;
  sig.device = first_pci(m);
  if (kind == Kind::ib_port) {
    if (contains(m, "Cable plugged") || contains(m, "status: Plugged")) return std::nullopt;
    // "Port module event: module 1, ..." and "Port module event[error]: module 0, ..."
    auto ev = m.find("Port module event");
    auto at = ev == std::string_view::npos ? ev : m.find(": module ", ev);
    if (at != std::string_view::npos) sig.code = number_at(m.substr(at + 9)).value_or(-1);
  }
  sig.fatal = kind == Kind::ib_health;
  return sig;
}

std::optional<Signal> carrier(std::string_view m, Kind kind, std::string_view what) {
  auto at = m.find(what);
  Signal sig;
  sig.kind = kind;
  // "ib0: lost carrier", "igb 0000:01:00.0 eno1: igb: eno1 NIC Link is Down", "mlx5_core 0000:1a:00.0 ens1: Link is Down":
  // the word before the phrase (skipping "NIC"), without its colon.
  std::size_t end = at;
  while (end > 0 && m[end - 1] == ' ') --end;
  std::string_view word = word_before(m, end);
  if (word == "NIC") {
    end -= 3;
    while (end > 0 && m[end - 1] == ' ') --end;
    word = word_before(m, end);
  }
  while (!word.empty() && word.back() == ':') word.remove_suffix(1);
  sig.device = word;
  if (sig.device.empty()) return std::nullopt;
  return sig;
}

// "NVRM: GPU 0000:91:00.0: GPU has fallen off the bus." / the three-line message's last line
// "NVRM: fallen off the bus and is not responding to commands." (no address: the scanner gives it
// the one its first line named) / a /dev/kmsg record holding all three lines.
std::optional<Signal> off_bus(std::string_view m) {
  if (!contains(m, "NVRM")) return std::nullopt;
  Signal sig;
  sig.kind = Kind::gpu_off_bus;
  sig.fatal = true;
  if (auto at = m.find("The NVIDIA GPU "); at != std::string_view::npos) sig.device = first_pci(m.substr(at));
  else sig.device = first_pci(m);
  return sig;
}

// "mlx5_core 0000:0b:06.0: wait_func:1133:(pid 97972): ENABLE_HCA(0x104) timeout. Will cause a leak
// of a command resource": the command is the subject.
std::optional<Signal> mlx5_cmd_timeout(std::string_view m) {
  auto at = m.find(" timeout. Will cause a leak");
  if (at == std::string_view::npos) return std::nullopt;
  Signal sig;
  sig.kind = Kind::mlx5_cmd_timeout;
  sig.device = first_pci(m);
  // The command: "ENABLE_HCA(0x104)" right before " timeout", or before " Async, timeout"
  // (cb_timeout_handler). Its opcode is the code.
  auto open = m.rfind("(0x", at);
  if (open != std::string_view::npos) {
    auto close = m.find(')', open);
    auto begin = m.rfind(' ', open);
    begin = begin == std::string_view::npos ? 0 : begin + 1;
    if (close != std::string_view::npos && close < at) {
      sig.subject = m.substr(begin, close + 1 - begin);
      if (auto op = number_at(m.substr(open + 3), 16)) sig.code = *op;
    }
  }
  if (sig.device.empty()) return std::nullopt;  // no PCI address: not a line mlx5_core printed
  return sig;
}

// "mlx5_core 0000:41:00.0: print_health_info:421:(pid 0): synd 0x10: High temperature" (code = the
// syndrome) and "poll_health:478:(pid 0): Fatal error 1 detected" (code -1, the sensor in subject).
std::optional<Signal> mlx5_fatal(std::string_view m) {
  Signal sig;
  sig.kind = Kind::mlx5_fatal;
  sig.device = first_pci(m);
  if (sig.device.empty() || !contains(m, "mlx5")) return std::nullopt;
  if (auto at = m.find(" synd 0x"); at != std::string_view::npos && !contains(m, "ext_synd")) {
    auto v = number_at(m.substr(at + 8), 16);
    if (!v) return std::nullopt;
    sig.code = *v;
    auto colon = m.find(": ", at + 8);
    if (colon != std::string_view::npos) sig.subject = m.substr(colon + 2);
    sig.fatal = true;
    return sig;
  }
  if (auto at = m.find("Fatal error "); at != std::string_view::npos && contains(m, " detected")) {
    sig.subject = m.substr(at, m.find(" detected", at) - at);
    sig.fatal = true;
    return sig;
  }
  return std::nullopt;
}

// EFA admin queue and reset failures: "efa 0000:00:06.0 rdmap0s6: Wait for completion (polling)
// timeout", "infiniband efa_0: Admin queue is closed". The device is the PCI address, else the
// RDMA device name (mapped to its PCI address by the reader where the host is live).
std::optional<Signal> efa(std::string_view m) {
  Signal sig;
  sig.kind = Kind::efa_admin;
  bool efa_line = m.starts_with("efa ") || contains(m, " efa ") || contains(m, "efa_") || contains(m, "infiniband ");
  if (!efa_line) return std::nullopt;
  sig.device = first_pci(m);
  if (sig.device.empty()) {
    if (auto at = m.find("infiniband "); at != std::string_view::npos) {
      auto rest = m.substr(at + 11);
      auto colon = rest.find(':');
      if (colon == std::string_view::npos || colon > 32) return std::nullopt;
      sig.device = rest.substr(0, colon);
    } else {
      return std::nullopt;
    }
  }
  for (std::string_view what : {"Wait for completion (polling) timeout", "didn't send any completion for admin cmd",
                                "Admin queue is closed", "Reset indication didn't turn on",
                                "Reset indication didn't turn off", "Device isn't ready"})
    if (auto at = m.find(what); at != std::string_view::npos) {
      sig.subject = m.substr(at, what.size());
      return sig;
    }
  return std::nullopt;
}

// "EXT4-fs (sda1): Remounting filesystem read-only", "BTRFS info (device sdg): forced readonly".
std::optional<Signal> fs_readonly(std::string_view m) {
  Signal sig;
  sig.kind = Kind::fs_readonly;
  sig.fatal = true;
  if (auto at = m.find("-fs ("); at != std::string_view::npos) sig.device = paren_device(m, at);
  else if (auto b = m.find("BTRFS"); b != std::string_view::npos) sig.device = paren_device(m, b);
  return sig;
}

// md's personalities: "md/raid1:md0: Disk failure on sdc1, disabling device." (raid1/5/10: the
// array runs on without it) and raid0's "md/raid0md0: Disk failure on nvme0n1p1 detected, failing
// array." (no colon between level and name: drivers/md/raid0.c). The device is the member disk,
// the subject the array.
std::optional<Signal> md_disk(std::string_view m) {
  auto at = m.find("Disk failure on ");
  auto md = m.rfind("md/raid", at);
  if (md == std::string_view::npos) return std::nullopt;
  Signal sig;
  auto rest = m.substr(at + 16);
  sig.device = rest.substr(0, rest.find_first_of(", "));
  auto name = m.substr(md + 7, at - md - 7);  // "1:md0: " / "0md0: " / ":md1: "
  while (!name.empty() && digit(name.front())) name.remove_prefix(1);
  if (!name.empty() && name.front() == ':') name.remove_prefix(1);
  sig.subject = name.substr(0, name.find(':'));
  sig.kind = contains(rest, "failing array") ? Kind::md_failed : Kind::md_degraded;
  sig.fatal = sig.kind == Kind::md_failed;
  return sig;
}

// The OOM killer (mm/oom_kill.c). Its scope decides: a cgroup's limit ("Memory cgroup out of
// memory", oom_memcg=, CONSTRAINT_MEMCG) is the job's; system-wide ("Out of memory", global_oom) is
// the node's. The head "NAME invoked oom-killer" says neither: code -1, the invoking task as
// subject. The rest carry the victim's pid as code, so a record's summary and kill line are one
// incident; a bare "Killed process N (NAME), UID ..." (before 4.19, after a "Kill process" line)
// says no scope.
std::optional<Signal> oom(std::string_view m) {
  Signal sig;
  sig.kind = Kind::oom;
  if (auto at = m.find(" invoked oom-k"); at != std::string_view::npos) {
    sig.subject = m.substr(0, at);
    if (auto sp = sig.subject.rfind("] "); sp != std::string_view::npos) sig.subject.remove_prefix(sp + 2);
    sig.corrected = true;  // nothing killed yet, scope unknown: watched
    return sig;
  }
  if (auto at = m.find("oom-kill:"); at != std::string_view::npos) {
    auto rest = m.substr(at);
    const bool memcg = contains(rest, "oom_memcg=") || (contains(rest, "CONSTRAINT_MEMCG") && !contains(rest, "global_oom"));
    sig.kind = memcg ? Kind::oom_memcg : Kind::oom;
    sig.fatal = !memcg;
    if (auto p = rest.find(",pid="); p != std::string_view::npos) sig.code = number_at(rest.substr(p + 5)).value_or(-1);
    if (auto t = rest.find(",task_memcg="); t != std::string_view::npos && memcg) {
      auto v = rest.substr(t + 12);
      sig.subject = v.substr(0, v.find(','));
    } else if (auto t2 = rest.find(",task="); t2 != std::string_view::npos) {
      auto v = rest.substr(t2 + 6);
      sig.subject = v.substr(0, v.find(','));
    }
    return sig;
  }
  auto at = m.find("Killed process ");
  std::size_t skip = 15;
  if (at == std::string_view::npos) {
    at = m.find("Kill process ");
    skip = 13;
  }
  if (at == std::string_view::npos) return std::nullopt;
  auto before = m.substr(0, at);
  auto rest = m.substr(at + skip);
  if (contains(before, "Memory cgroup out of memory")) {
    sig.kind = Kind::oom_memcg;
  } else if (contains(before, "Out of memory") || contains(before, "out of memory")) {
    sig.fatal = true;  // system-wide
  } else if (!(contains(rest, "total-vm") || contains(rest, ", UID") || contains(rest, "score "))) {
    return std::nullopt;  // not the OOM killer's line
  }
  sig.code = number_at(rest).value_or(-1);  // pid
  auto open = rest.find('(');
  auto close = rest.find(')');
  if (open != std::string_view::npos && close != std::string_view::npos && close > open)
    sig.subject = rest.substr(open + 1, close - open - 1);
  return sig;
}

// "Kernel panic - not syncing: REASON" (REASON the subject); SysRq's "Trigger a crash" and
// "sysrq triggered crash" are deliberate (corrected: watched, not acted on).
std::optional<Signal> kernel_panic(std::string_view m) {
  Signal sig;
  sig.kind = Kind::kernel_panic;
  sig.fatal = true;
  if (auto at = m.find("not syncing: "); at != std::string_view::npos) {
    sig.subject = m.substr(at + 13);
    while (!sig.subject.empty() && (sig.subject.back() == ' ' || sig.subject.back() == '\n')) sig.subject.remove_suffix(1);
  } else if (!contains(m, "Trigger a crash")) {
    return std::nullopt;  // "Kernel panic" in another sentence
  }
  if (contains(m, "Trigger a crash") || contains(m, "sysrq triggered crash")) {
    sig.corrected = true;
    sig.fatal = false;
    if (sig.subject.empty()) sig.subject = m.substr(m.find("Trigger a crash"), 15);  // a view into the line
  }
  return sig;
}

// die()'s header "STR: ERR [#N]..." ("Oops: 0002 [#1] SMP", "divide error: 0000 [#1] SMP", "general
// protection fault, probably for non-canonical address 0x...: 0000 [#1] PREEMPT SMP", arm64's
// "Internal error: Oops: 96000004 [#1] PREEMPT SMP"), and "BUG: ..." (a NULL dereference, a bad
// page, scheduling while atomic). The subject is what died of; one incident a node.
std::optional<Signal> kernel_oops(std::string_view m) {
  Signal sig;
  sig.kind = Kind::kernel_oops;
  sig.fatal = true;
  if (auto at = m.find(" [#"); at != std::string_view::npos && at + 3 < m.size() && digit(m[at + 3])) {
    // ERR: 4 to 16 hex digits right before, after ": ".
    std::size_t h = at;
    while (h > 0 && hex(m[h - 1])) --h;
    if (at - h < 4 || at - h > 16 || h < 2 || m.substr(h - 2, 2) != ": ") return std::nullopt;
    std::size_t begin = 0;
    if (auto sp = m.rfind("] ", h); sp != std::string_view::npos) begin = sp + 2;
    sig.subject = m.substr(begin, h - 2 - begin);
    if (auto comma = sig.subject.find(", probably"); comma != std::string_view::npos) sig.subject = sig.subject.substr(0, comma);
    if (sig.subject.empty() || sig.subject.size() > 64) return std::nullopt;
    return sig;
  }
  auto at = m.find("BUG: ");
  if (at == std::string_view::npos || (at > 0 && m[at - 1] != ' ' && m[at - 1] != ']' && m[at - 1] != ';')) return std::nullopt;
  auto rest = m.substr(at + 5);
  const bool letter = !rest.empty() && ((rest.front() >= 'a' && rest.front() <= 'z') || (rest.front() >= 'A' && rest.front() <= 'Z'));
  if (!letter) return std::nullopt;
  sig.subject = rest.substr(0, std::min(rest.find_first_of(",:\n"), std::size_t{64}));
  return sig;
}

// NFSv4 state recovery: "NFS: __nfs4_reclaim_open_state: Lock reclaim failed!", "NFS:
// nfs4_reclaim_open_state: unhandled error -524", "NFSv4: state recovery failed for open file X,
// error = -524": the client lost locks or open state its applications hold.
std::optional<Signal> nfs_state(std::string_view m) {
  Signal sig;
  sig.kind = Kind::nfs_state;
  if (auto at = m.find("reclaim_open_state: "); at != std::string_view::npos) {
    auto rest = m.substr(at + 20);
    if (!(contains(rest, "failed") || contains(rest, "unhandled error"))) return std::nullopt;
    sig.subject = rest.substr(0, rest.find_first_of("!\n"));
    return sig;
  }
  if (auto at = m.find("state recovery failed for "); at != std::string_view::npos && contains(m, "NFS")) {
    auto rest = m.substr(at + 26);
    sig.subject = rest.substr(0, rest.find(", error"));
    return sig;
  }
  return std::nullopt;
}

// A stack frame of the nfs module in a writeback path (" nfs_wb_all+0x22/0x120 [nfs]"): printed
// only inside a hung-task, lockup or warning trace, it says the stuck task waits on NFS writeback.
std::optional<Signal> nfs_writeback(std::string_view m) {
  static constexpr std::string_view kWriteback[] = {
      "nfs_wb_",         "nfs_writepage",   "nfs_page_async_flush", "nfs_lock_and_join_requests", "nfs_flush_",
      "nfs_updatepage",  "nfs_write_",      "nfs_file_write",       "nfs_file_fsync",             "nfs_file_flush",
      "nfs_commit_",     "nfs_wait_on_req", "nfs_do_writepage",     "nfs_page_group_lock",        "nfs_scan_commit",
  };
  auto at = m.find("[nfs]");
  auto plus = m.rfind('+', at);
  if (plus == std::string_view::npos) return std::nullopt;
  std::size_t begin = plus;
  while (begin > 0 && m[begin - 1] != ' ' && m[begin - 1] != ']') --begin;
  auto fn = m.substr(begin, plus - begin);
  for (std::string_view w : kWriteback)
    if (fn.starts_with(w)) {
      Signal sig;
      sig.kind = Kind::nfs_writeback;
      sig.subject = fn;
      return sig;
    }
  return std::nullopt;
}

// "nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context, skipping further
// processing" (and the older nv_mem module's "invalid page_table").
std::optional<Signal> peermem(std::string_view m) {
  if (!contains(m, "invalid context") && !contains(m, "invalid page_table")) return std::nullopt;
  Signal sig;
  sig.kind = Kind::peermem;
  auto at = m.find("nv_get_p2p_free");
  auto module = word_before(m, at > 0 ? at - 1 : at);
  sig.subject = module;
  return sig;
}

// "NAME[PID]: segfault at ADDR ip IP sp SP error N in LIB[BASE+SIZE]" (a "traps: NAME[PID] general
// protection fault ... in LIB" is not read: its anchor cost the first pass more than it is worth): a crash in the GPU stack's libraries (NCCL, CUDA, NVML,
// DCGM, the container toolkit) or of its tools is the application's fault, named with its library.
std::optional<Signal> gpu_lib_segfault(std::string_view m) {
  static constexpr std::string_view kLibs[] = {"libnccl", "libcuda", "libnvidia-", "libcublas", "libcudnn", "libcufft",
                                               "libcusparse", "libcurand", "libnvrtc", "libnvJitLink", "libcupti",
                                               "libdcgm", "libnvToolsExt", "libnvrm"};
  static constexpr std::string_view kTools[] = {"nvidia-", "nvc:", "nv-hostengine", "dcgm", "nvsm"};
  auto in = m.rfind(" in ");
  if (in == std::string_view::npos) return std::nullopt;
  auto lib = m.substr(in + 4);
  lib = lib.substr(0, lib.find_first_of("[ \n"));
  // The process: "NAME[PID]: segfault" / "traps: NAME[PID] ...": the text before the last '[' ahead of the pid.
  std::size_t end = m.find("]: segfault");
  if (end == std::string_view::npos) return std::nullopt;
  auto open = m.rfind('[', end);
  if (open == std::string_view::npos) return std::nullopt;
  std::size_t begin = m.rfind(' ', open);
  begin = begin == std::string_view::npos ? 0 : begin + 1;
  auto name = m.substr(begin, open - begin);
  bool gpu = false;
  for (auto l : kLibs) gpu = gpu || lib.starts_with(l);
  for (auto t : kTools) gpu = gpu || name.starts_with(t);
  if (!gpu) return std::nullopt;
  Signal sig;
  sig.kind = Kind::gpu_lib_segfault;
  sig.device = lib;
  sig.subject = name;
  return sig;
}

// mlx5's firmware commands: "ACCESS_REG(0x805) op_mod(0x1) failed, status bad parameter(0x3),
// syndrome (0x1e5585), err(-22)" (mlx5_cmd_out_err, older mlx5_cmd_check). Code = opcode.
std::optional<Signal> mlx5_cmd_err(std::string_view m) {
  auto at = m.find(" op_mod(0x");
  if (at == std::string_view::npos || !contains(m.substr(at), "failed")) return std::nullopt;
  Signal sig;
  sig.kind = Kind::mlx5_cmd_err;
  sig.device = first_pci(m);
  auto begin = m.rfind(' ', at - 1);
  begin = begin == std::string_view::npos ? 0 : begin + 1;
  sig.subject = m.substr(begin, at - begin);
  if (auto op = sig.subject.find("(0x"); op != std::string_view::npos)
    sig.code = number_at(sig.subject.substr(op + 3), 16).value_or(-1);
  return sig;
}

// "NVRM: knvlinkDiscoverPostRxDetLinks_GH100: Getting peer0's postRxDetLinkMask failed!",
// "NVRM: knvlinkUpdatePostRxDetectLinkMask_IMPL: Failed to update Rx Detect Link mask!", "...: Got 0
// post RxDet Links!": NVLink did not train. The lines name no GPU; the function is the subject.
std::optional<Signal> nvlink_training(std::string_view m) {
  if (!contains(m, "NVRM")) return std::nullopt;
  if (!(contains(m, "failed") || contains(m, "Failed") || contains(m, "Got 0 post RxDet"))) return std::nullopt;
  Signal sig;
  sig.kind = Kind::nvlink_training;
  sig.fatal = true;
  sig.device = first_pci(m);
  auto at = m.find("knvlink");
  if (at != std::string_view::npos) {
    auto rest = m.substr(at);
    sig.subject = rest.substr(0, rest.find(':'));
  }
  return sig;
}

// "Memory failure: 0x7e025e: Sending SIGBUS to NAME:PID due to hardware memory corruption",
// "...: recovery action for dirty page: Recovered" (corrected) / "Failed" / "Ignored".
std::optional<Signal> memory_failure(std::string_view m) {
  Signal sig;
  sig.kind = Kind::memory_failure;
  auto at = m.find("Memory failure: ");
  auto rest = m.substr(at + 16);
  if (auto sb = rest.find("SIGBUS to "); sb != std::string_view::npos) {
    auto v = rest.substr(sb + 10);
    sig.subject = v.substr(0, v.find(' '));
  } else if (auto k = rest.find("Killing "); k != std::string_view::npos) {
    auto v = rest.substr(k + 8);
    sig.subject = v.substr(0, v.find(' '));
  }
  if (contains(rest, ": Recovered")) sig.corrected = true;
  else sig.fatal = true;
  return sig;
}

}  // namespace

std::span<const std::string_view> anchor_literals() { return kAnchors; }

AnchorSet drill_marker_anchor() { return AnchorSet{1} << kDrillMark; }
AnchorSet context_anchors() { return AnchorSet{1} << kGpuHead; }

std::optional<std::string_view> off_bus_head(std::string_view m) {
  auto at = m.find("NVRM: The NVIDIA GPU ");
  if (at == std::string_view::npos || contains(m, "fallen off")) return std::nullopt;
  auto rest = m.substr(at + 21);
  auto pci = rest.substr(0, rest.find_first_of(" \t"));
  return is_pci(pci) ? std::optional<std::string_view>(pci) : std::nullopt;
}

bool is_pci(std::string_view s) {
  // DDDD:BB:SS or DDDD:BB:SS.F (domain may be 4+ hex digits on some platforms)
  auto c1 = s.find(':');
  if (c1 == std::string_view::npos || c1 < 4 || c1 > 8) return false;
  auto c2 = s.find(':', c1 + 1);
  if (c2 != c1 + 3) return false;
  std::size_t end = s.size();
  auto dot = s.find('.', c2);
  if (dot != std::string_view::npos) {
    if (dot != c2 + 3 || dot + 2 != end || !hex(s[dot + 1])) return false;
    end = dot;
  } else if (end != c2 + 3) {
    return false;
  }
  for (std::size_t i = 0; i < end; ++i)
    if (i != c1 && i != c2 && !hex(s[i])) return false;
  return true;
}

std::string_view pci_without_function(std::string_view pci) {
  auto dot = pci.rfind('.');
  return dot != std::string_view::npos && dot + 2 == pci.size() ? pci.substr(0, dot) : pci;
}

std::optional<Signal> classify(std::string_view m) { return classify(m, ~AnchorSet{0}); }

std::optional<Signal> classify(std::string_view m, AnchorSet present) {
  // has(a, "phrase"): the phrase holds anchor a, so without a in the line it cannot be there.
  auto has = [&](Anchor a, std::string_view phrase) { return (present >> a & 1) && contains(m, phrase); };
  if (has(kXid, "NVRM: Xid (")) return xid(m);
  if (has(kXid, "SXid (")) return sxid(m);
  if (has(kLockup, "soft lockup")) return lockup(m, Kind::soft_lockup);
  if (has(kLOCKUP, "hard LOCKUP")) return lockup(m, Kind::hard_lockup);
  if (has(kBlocked, "blocked for more than") && contains(m, "INFO: task ")) return hung_task(m);
  if (has(kError, "[Hardware Error]")) return mce(m);
  if (has(kEdac, "EDAC MC")) return edac(m);
  if (has(kError, "PCIe Bus Error") || has(kAer, "AER: ")) return aer(m);
  if (has(kNvme, "nvme nvme")) return nvme(m);
  if (has(kNoPath, "no available path")) {
    // nvme multipath: "block nvme0n1: no available path - failing I/O" (every path is gone).
    Signal sig;
    sig.kind = Kind::nvme;
    sig.fatal = true;
    auto at = m.find(": no available path");
    if (at == std::string_view::npos) return std::nullopt;
    sig.device = word_before(m, at);
    return sig;
  }
  if (has(kerror, " error, dev ") || has(kerror, "I/O error on dev")) return block_io(m);
  if (has(kError, "Sense Key : Medium Error") || has(kError, "Sense Key : Hardware Error")) {
    // SCSI sense: "sd 3:0:0:1: [sde] tag#40 Sense Key : Medium Error [current]".
    Signal sig;
    sig.kind = Kind::block_io;
    auto open = m.find("] ");
    auto start = m.rfind('[', open);
    if (open == std::string_view::npos || start == std::string_view::npos) return std::nullopt;
    sig.device = m.substr(start + 1, open - start - 1);
    return sig;
  }
  if (has(kReadOnly, "filesystem read-only") || has(kForcedRo, "forced readonly")) return fs_readonly(m);
  if (has(kBeyondEnd, "attempt to access beyond end of device")) {
    Signal sig;
    sig.kind = Kind::block_eod;
    return sig;
  }
  if (has(kerror, "-fs error") || has(kXfs, "XFS (") || has(kSuperblock, "while writing superb") ||
      has(kAbortJournal, "Aborting journal on device") || has(kBtrfs, "BTRFS"))
    return fs_error(m);
  if (has(kDiskFailure, "Disk failure on ")) return md_disk(m);
  if (has(kNfs, "nfs: server ")) return nfs(m);
  if (has(kError, "LustreError") || has(kLost, "was lost")) return lustre(m);
  if (has(kOffBus, "fallen off the bus")) return off_bus(m);
  if (has(kCmdLeak, "leak of a command")) return mlx5_cmd_timeout(m);
  if (has(kSynd, "synd 0x") || (has(kerror, "Fatal error ") && contains(m, "poll_health"))) {
    if (auto f = mlx5_fatal(m)) return f;
  }
  if (has(kEfaPci, "efa 0") || has(kEfaDev, "efa_") || has(kEfaRdmap, "rdmap"))
    if (auto f = efa(m)) return f;
  if (has(kPort, "Port module event")) return mlx5(m, Kind::ib_port);
  if (has(kHealth, "health compromised")) return mlx5(m, Kind::ib_health);
  if (has(kLost, "lost carrier")) return carrier(m, Kind::net_carrier, "lost carrier");
  if (has(kLink, "Link is Down")) return carrier(m, Kind::net_carrier, "Link is Down");
  if (has(kLink, "Link is Up")) return carrier(m, Kind::net_link_up, "Link is Up");
  if (has(kKilled, "Killed process") || has(kKillProcess, "Kill process") || has(kOom, "invoked oom-kill") ||
      has(kOom, "oom-kill:"))
    return oom(m);
  if (has(kPanic, "Kernel panic - not syncing") || has(kSysrqCrash, "Trigger a crash")) return kernel_panic(m);
  if (has(kDie, "[#1]") || has(kBug, "BUG: "))
    if (auto o = kernel_oops(m)) return o;
  if (has(kReclaim, "4_reclaim_open_state") || has(kRecoveryFailed, "recovery failed for")) return nfs_state(m);
  if (has(kNfsFrame, "[nfs]")) return nfs_writeback(m);
  if (has(kP2pFree, "nv_get_p2p_free")) return peermem(m);
  if (has(kSegfault, "segfault at ")) return gpu_lib_segfault(m);
  if (has(kSlotPower, "insufficient power on the PCIe slot (")) {
    Signal sig;
    sig.kind = Kind::mlx5_pcie_power;
    sig.device = first_pci(m);
    if (auto open = m.find("slot ("); open != std::string_view::npos) sig.code = number_at(m.substr(open + 6)).value_or(-1);
    return sig;
  }
  if (has(kAccessReg, "ACCESS_REG")) return mlx5_cmd_err(m);
  if (has(kKnvlink, "knvlink")) return nvlink_training(m);
  if (has(kFileMax, "file-max limit")) {
    Signal sig;
    sig.kind = Kind::file_max;
    sig.code = number_at(m.substr(m.find("file-max limit") + 14)).value_or(-1);
    return sig;
  }
  if (has(kMachineCheckEvent, "Machine Check Event")) return mce(m);
  if (has(kMemoryFailure, "Memory failure: ")) return memory_failure(m);
  if (has(kTable, "table full, dropping")) {
    Signal sig;
    sig.kind = Kind::conntrack;
    return sig;
  }
  return std::nullopt;
}

}  // namespace cmax::signals
