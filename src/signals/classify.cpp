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
  kHealth, kKilled, kTable, kAer, kXfs, kDrillMark, kOffBus, kGpuHead, kCmdLeak, kSynd, kEfaPci, kEfaDev, kEfaRdmap, kAnchorCount
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

std::optional<Signal> mce(std::string_view m) {
  Signal sig;
  sig.kind = Kind::mce;
  if (auto cpu = m.find("CPU "); cpu != std::string_view::npos) {
    if (auto n = number_at(m.substr(cpu + 4))) {
      sig.code = *n;
      auto end = m.find(':', cpu);
      sig.device = m.substr(cpu, (end == std::string_view::npos ? m.size() : end) - cpu);
    }
  }
  sig.fatal = contains(m, "Uncorrected") || contains(m, "Fatal") || contains(m, "PCC");
  sig.corrected = !sig.fatal && contains(m, "Corrected error");
  return sig;
}

std::optional<Signal> edac(std::string_view m) {
  auto at = m.find("EDAC MC");
  auto colon = m.find(':', at);
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view rest = m.substr(colon + 1);
  Signal sig;
  sig.device = m.substr(at + 5, colon - at - 5);  // "MC0"
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

std::optional<Signal> fs_error(std::string_view m) {
  Signal sig;
  sig.kind = Kind::fs_error;
  if (auto at = m.find("EXT4-fs error (device "); at != std::string_view::npos) {
    auto rest = m.substr(at + 22);
    sig.device = rest.substr(0, rest.find(')'));
    return sig;
  }
  if (contains(m, "EXT4-fs error")) return sig;
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

std::optional<Signal> oom(std::string_view m) {
  auto at = m.find("Killed process ");
  Signal sig;
  sig.kind = Kind::oom;
  auto rest = m.substr(at + 15);
  sig.code = number_at(rest).value_or(-1);  // pid
  auto open = rest.find('(');
  auto close = rest.find(')');
  if (open != std::string_view::npos && close != std::string_view::npos && close > open)
    sig.subject = rest.substr(open + 1, close - open - 1);
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
  if (has(kerror, " error, dev ") || has(kerror, "I/O error on dev")) return block_io(m);
  if (has(kerror, "EXT4-fs error") || has(kXfs, "XFS (")) return fs_error(m);
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
  if (has(kKilled, "Killed process") && (contains(m, "Out of memory") || contains(m, "out of memory") || contains(m, "oom")))
    return oom(m);
  if (has(kTable, "table full, dropping")) {
    Signal sig;
    sig.kind = Kind::conntrack;
    return sig;
  }
  return std::nullopt;
}

}  // namespace cmax::signals
