// Deterministic generator of a large kernel log for the `cmax scan` throughput bench (issue 3).
// Usage: gen_kernel_log OUTPUT|- SIZE_BYTES [SEED] [LINES_PER_FAULT]
// Writes at most SIZE_BYTES of whole lines: ordinary kernel noise (including near-misses that name
// NVRM or nvidia but are no fault) in dmesg, syslog and journal short-iso segments, with one fault
// line per LINES_PER_FAULT lines on average (default 10000, 0 for none). The same arguments give
// the same bytes. A summary with counts per fault kind goes to stderr.

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace {

// Body templates: `{d:LO:HI}` decimal in [LO, HI], `{x:W}` lowercase hex of W digits,
// `{c:a|b|c}` one of the choices. Everything else is literal.
struct Noise {
  int weight;
  std::string_view tmpl;
};

constexpr Noise kNoise[] = {
    {60, R"(audit: type=1400 audit({d:1763769600:1764374400}.{d:100:999}:{d:100:99999}): apparmor="STATUS" operation="profile_load" profile="unconfined" name="{c:nvidia_modprobe|lsb_release|man_filter|tcpdump|rsyslogd|/usr/bin/man}" pid={d:300:99999} comm="apparmor_parser")"},
    {30, R"(audit: type=1400 audit({d:1763769600:1764374400}.{d:100:999}:{d:100:99999}): apparmor="DENIED" operation="open" class="file" profile="{c:snap.lxd.daemon|rsyslogd|/usr/sbin/cupsd}" name="/proc/{d:1:99999}/cmdline" pid={d:300:99999} comm="{c:lxd|rsyslogd|cupsd}" requested_mask="r" denied_mask="r" fsuid=0 ouid=0)"},
    {20, "audit: type=1106 audit({d:1763769600:1764374400}.{d:100:999}:{d:100:99999}): pid={d:300:99999} uid=0 auid={d:0:20000} ses={d:1:9999} subj=unconfined msg='op=PAM:session_close grantors=pam_loginuid,pam_env,pam_unix acct=\"{c:root|slurm|alice|bob}\" exe=\"/usr/sbin/sshd\" hostname=10.0.{d:0:255}.{d:1:254} addr=10.0.{d:0:255}.{d:1:254} terminal=ssh res=success'"},
    {10, "kauditd_printk_skb: {d:1:60} callbacks suppressed"},
    {8, "IPv6: ADDRCONF(NETDEV_CHANGE): {c:eth0|eth1|ens1f0|ens1f1|ib0|ib1|docker0}: link becomes ready"},
    {4, "IPv6: ADDRCONF(NETDEV_UP): {c:eth0|ib0|ib1|ib2|ib3}: link is not ready"},
    {3, "EXT4-fs ({c:nvme0n1p2|nvme1n1p1|sda1|md0}): mounted filesystem with ordered data mode. Quota mode: none."},
    {2, "EXT4-fs ({c:nvme0n1p2|sda1}): re-mounted. Opts: errors=remount-ro. Quota mode: none."},
    {4, "nvidia-nvswitch{d:0:5}: open (major={d:230:511})"},
    {2, "nvidia-nvswitch: Probing device 0000:{x:2}:00.0, Vendor Id = 0x10de, Device Id = 0x22a3, Class = 0x68000"},
    {3, "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  {c:550.54.14  Thu Feb 22 01:44:30 UTC 2024|535.161.08  Tue Mar  5 22:42:15 UTC 2024|560.35.03  Fri Aug 16 21:39:15 UTC 2024}"},
    {3, "NVRM: GPU at PCI:0000:{x:2}:00: GPU-{x:8}-{x:4}-{x:4}-{x:4}-{x:12}"},
    {3, "NVRM: GPU Board Serial Number: 16523{d:10000000:99999999}"},
    {2, "NVRM: Persistence mode is deprecated and will be removed in a future release. Please use nvidia-persistenced instead."},
    {1, "NVRM: The NVIDIA probe routine was not called for {d:1:8} device(s)."},
    {1, "NVRM: This can occur when a driver such as: nouveau, rivafb, nvidiafb or rivatv was loaded and obtained ownership of the NVIDIA device(s)."},
    {2, "NVRM: GPU 0000:{x:2}:00.0: RmInitAdapter succeeded!"},
    {2, "nvidia-nvlink: Nvlink Core is being initialized, major device number {d:230:511}"},
    {2, "nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver for UNIX platforms  550.54.14  Thu Feb 22 01:25:25 UTC 2024"},
    {2, "nvidia_uvm: module uses symbols from proprietary module nvidia, inheriting taint."},
    {2, "nvidia 0000:{x:2}:00.0: enabling device (0000 -> 0002)"},
    {2, "[drm] [nvidia-drm] [GPU ID 0x0000{x:2}00] Loading driver"},
    {40, "systemd[1]: Started Session {d:1:99999} of user {c:root|slurm|alice|bob|carol}."},
    {20, "systemd[1]: {c:Starting|Started|Finished} {c:Daily apt upgrade and clean activities|Cleanup of Temporary Directories|Rotate log files|NVIDIA Persistence Daemon|Slurm node daemon|Message of the Day|Refresh fwupd metadata and update motd}."},
    {10, "systemd[1]: session-{d:1:99999}.scope: Deactivated successfully."},
    {15, "systemd-logind[{d:600:2000}]: New session {d:1:99999} of user {c:root|slurm|alice|bob}."},
    {15, "systemd-logind[{d:600:2000}]: Session {d:1:99999} logged out. Waiting for processes to exit."},
    {10, "systemd-logind[{d:600:2000}]: Removed session {d:1:99999}."},
    {3, "mlx5_core 0000:{x:2}:00.{d:0:1}: mlx5_fw_tracer_start:{d:700:900}:(pid {d:100:99999}): FWTracer: Ownership granted and active"},
    {2, "mlx5_core 0000:{x:2}:00.{d:0:1}: E-Switch: Total vports {d:2:18}, per vport: max uc(128) max mc(2048)"},
    {2, "mlx5_core 0000:{x:2}:00.{d:0:1}: Port module event: module {d:0:7}, Cable plugged"},
    {2, "mlx5_core 0000:{x:2}:00.{d:0:1}: Rate limit: 127 rates are supported, range: 0Mbps to 97656Mbps"},
    {2, "mlx5_core 0000:{x:2}:00.{d:0:1}: {c:ib0|ib1|ib2|ib3}: Link up"},
    {2, "{c:ib0|ib1|ib2|ib3}: mtu > 4092 will cause multicast packet drops."},
    {2, "usb {d:1:4}-{d:1:9}: new high-speed USB device number {d:2:30} using xhci_hcd"},
    {2, "usb {d:1:4}-{d:1:9}: New USB device found, idVendor=046b, idProduct=ff10, bcdDevice= 1.00"},
    {3, "perf: interrupt took too long ({d:2501:9000} > {d:2500:5000}), lowering kernel.perf_event_max_sample_rate to {d:20000:79750}"},
    {2, "INFO: NMI handler (perf_event_nmi_handler) took too long to run: {d:1:9}.{d:100:999} msecs"},
    {1, "NMI watchdog: Enabled. Permanently consumes one hw-PMU counter."},
    {2, "hrtimer: interrupt took {d:10000:900000} ns"},
    {3, "TCP: request_sock_TCP: Possible SYN flooding on port {c:22|6817|6818|8080}. Sending cookies.  Check SNMP counters."},
    {2, "nvme nvme{d:0:7}: {d:32:128}/0/0 default/read/poll queues"},
    {1, "nvme nvme{d:0:7}: pci function 0000:{x:2}:00.0"},
    {1, "EDAC MC{d:0:1}: Giving out device to module skx_edac controller Skylake Socket#{d:0:1} IMC#{d:0:1}: DEV 0000:{x:2}:0a.0 (INTERRUPT)"},
    {2, "mce: CPU{d:0:127}: Core temperature above threshold, cpu clock throttled (total events = {d:1:9999})"},
    {2, "mce: CPU{d:0:127}: Core temperature/speed normal"},
    {2, "pcieport 0000:00:{x:2}.0: AER: Corrected error received: 0000:{x:2}:00.0"},
    {2, "pcieport 0000:00:{x:2}.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)"},
    {1, "nfs: server fs{d:1:4} OK"},
    {2, "Lustre: lustre-OST{x:4}-osc-ffff{x:12}: Connection restored to 10.0.0.{d:1:254}@o2ib (at 10.0.0.{d:1:254}@o2ib)"},
    {1, "Lustre: Mounted lustre-client"},
    {1, "nf_conntrack: default automatic helper assignment has been turned off for security reasons and CT-based firewall rule not found. Use the iptables CT target to attach helpers instead."},
    {12, "docker0: port {d:1:9}(veth{x:7}) entered {c:blocking|forwarding|disabled} state"},
    {6, "device veth{x:7} {c:entered|left} promiscuous mode"},
    {6, "eth0: renamed from veth{x:7}"},
    {4, "loop{d:0:9}: detected capacity change from 0 to {d:8:999999}"},
    {5, "[UFW BLOCK] IN=eth0 OUT= MAC=0c:42:a1:{x:2}:{x:2}:{x:2}:0c:42:a1:{x:2}:{x:2}:{x:2}:08:00 SRC=10.0.{d:0:255}.{d:1:254} DST=10.0.{d:0:255}.{d:1:254} LEN={d:40:1500} TOS=0x00 PREC=0x00 TTL=64 ID={d:1:65535} DF PROTO=TCP SPT={d:1024:65535} DPT={c:22|443|6817|9100} WINDOW=64240 RES=0x00 SYN URGP=0"},
    {2, "cgroup: fork rejected by pids controller in /slurm/uid_{d:1000:20000}/job_{d:100000:999999}"},
    {1, "random: crng init done"},
    {1, "sd {d:0:3}:0:0:0: [sd{c:a|b|c}] Attached SCSI removable disk"},
};

struct Fault {
  std::string_view kind;
  std::string_view body;
};

constexpr Fault kFaults[] = {
    {"xid", "NVRM: Xid (PCI:0000:b5:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC 1, TPC 3, SM 0): Out Of Range Address"},
    {"xid", "NVRM: Xid (PCI:0000:01:00): 13, Graphics SM Warp Exception on (GPC 1, TPC 0): Out Of Range Address"},
    {"xid", "NVRM: Xid (PCI:0000:2b:00): 31, pid=1942, name=llama-bench, channel 0x00000002, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC6 GPCCLIENT_T1_13 faulted @ 0x6f6f_320c2000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ"},
    {"xid", "NVRM: Xid (PCI:0000:01:00): 43, Ch 00000020, engmask 00000101"},
    {"xid", "NVRM: Xid (PCI:0000:61:00): 45, pid=1496200, name=distprovers-gpu, Ch 0000000f"},
    {"xid", "NVRM: Xid (PCI:0000:8a:00): 48, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 4, subpartition 1"},
    {"xid", "NVRM: Xid (PCI:0000:01:00): 62, 023f0f30 00000000 00000000 202c0ffe 202bc4b6 2029bdb6 202bccb8 20297b2a"},
    {"xid", "NVRM: Xid (PCI:0000:0f:00): 64, pid='<unknown>', name=<unknown>, Row Remapper Error: (0x00000002eebc4100) - All reserved rows for bank are remapped"},
    {"xid", "NVRM: Xid (PCI:0000:b9:00): 71, pid=<unknown>, name=<unknown>, NVLink: fatal error detected on link 6(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)"},
    {"xid", "NVRM: Xid (PCI:0003:00:00): 74, pid='<unknown>', name=<unknown>, NVLink: fatal error detected on link 14(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)"},
    {"xid", "NVRM: Xid (PCI:0004:01:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."},
    {"xid", "NVRM: Xid (PCI:0000:01:00): 94, pid=7062, Contained: CE User Channel (0x9). RST: No, D-RST: No"},
    {"xid", "NVRM: Xid (PCI:0000:0f:00): 94, pid=2503421, name=python3, Ch 00000008"},
    {"xid", "NVRM: Xid (PCI:0000:37:00): 95, pid=5171, Uncontained: FBHUB. RST: Yes, D-RST: No"},
    {"xid", "NVRM: Xid (PCI:0002:00:00): 119, pid=67769, name=nvidia-smi, Timeout waiting for RPC from GSP1! Expected function 76 (GSP_RM_CONTROL) (0x2080014b 0x5)."},
    {"xid", "NVRM: Xid (PCI:000f:01:00): 120, pid=9111, name=python, GSP task exception: load access fault"},
    {"xid", "NVRM: Xid (PCI:0000:5f:00): 145, RLW_REMAP Nonfatal XC0 i0 Link 02"},
    {"xid", "NVRM: Xid (PCI:0018:01:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 09 (0x025525c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)"},
    {"xid", "NVRM: Xid (PCI:0008:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)"},
    {"xid", "NVRM: Xid (PCI:0018:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)"},
    {"sxid", "nvidia-nvswitch0: SXid (PCI:0000:06:00.0): 20009, Non-fatal, Link 04 RX Short Error Rate"},
    {"sxid", "nvidia-nvswitch0: SXid (PCI:0000:00:00.0): 20034, Fatal, Link 30 LTSSM Fault Up"},
    {"sxid", "nvidia-nvswitch0: SXid (PCI:0004:00:00.0): 26008, SOE Watchdog error"},
    {"sxid", "nvidia-nvswitch0: SXid (PCI:0000:c3:00.0): 12033, Severity 1 Engine instance 00 Sub-engine instance 00"},
    {"soft_lockup", "watchdog: BUG: soft lockup - CPU#12 stuck for 23s! [python:1234]"},
    {"hung_task", "INFO: task python3:4321 blocked for more than 120 seconds."},
    {"mce", "mce: [Hardware Error]: Machine check events logged"},
    {"edac", "EDAC MC0: 1 UE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0"},
    {"aer", "pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received: 0000:01:00.0"},
    {"nvme_timeout", "nvme nvme0: I/O 123 QID 4 timeout, aborting"},
    {"nfs", "nfs: server fs1 not responding, still trying"},
    {"lustre", "LustreError: 11-0: lustre-MDT0000-mdc-ffff: operation mds_connect to node 10.0.0.5@o2ib failed: rc = -16"},
    {"cable", "mlx5_core 0000:1a:00.0: Port module event: module 1, Cable unplugged"},
    {"ib_link", "ib0: lost carrier"},
    {"oom", "Out of memory: Killed process 4321 (python3) total-vm:123kB"},
    {"conntrack", "nf_conntrack: nf_conntrack: table full, dropping packet"},
};

constexpr std::string_view kHosts[] = {"gpu-01", "gpu-02", "gpu-03", "gpu-04", "gpu-05", "gpu-06",
                                       "gpu-07", "gpu-08", "gpu-09", "gpu-10", "gpu-11", "gpu-12",
                                       "gpu-13", "gpu-14", "gpu-15", "gpu-16"};
constexpr std::string_view kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
constexpr std::size_t kBufferBytes = std::size_t{8} << 20;
constexpr std::size_t kMaxLineBytes = 4096;

/// xoshiro256**, seeded through splitmix64: fast and identical on every platform.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) {
    for (auto& s : s_) {
      seed += 0x9e3779b97f4a7c15ULL;
      std::uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      s = z ^ (z >> 31);
    }
  }
  std::uint64_t next() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  /// Uniform in [lo, hi] (modulo bias is irrelevant here).
  std::uint64_t between(std::uint64_t lo, std::uint64_t hi) { return lo + next() % (hi - lo + 1); }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::array<std::uint64_t, 4> s_;
};

/// A body template split once into literal and placeholder pieces.
class Template {
 public:
  explicit Template(std::string_view text) {
    while (!text.empty()) {
      const auto open = text.find('{');
      if (open != 0) {
        Piece lit;
        lit.text = text.substr(0, open);
        pieces_.push_back(std::move(lit));
        if (open == std::string_view::npos) break;
      }
      const auto close = text.find('}', open);
      if (close == std::string_view::npos || close < open + 3 || text[open + 2] != ':') {
        bad(text);
      }
      parse_placeholder(text.substr(open + 1, close - open - 1));
      text.remove_prefix(close + 1);
    }
  }

  void emit(Rng& rng, char*& out) const {
    for (const auto& p : pieces_) {
      switch (p.kind) {
        case Kind::kLiteral:
          out = std::copy(p.text.begin(), p.text.end(), out);
          break;
        case Kind::kDecimal:
          out = std::to_chars(out, out + 20, rng.between(p.lo, p.hi)).ptr;
          break;
        case Kind::kHex: {
          static constexpr char kDigits[] = "0123456789abcdef";
          std::uint64_t v = rng.next();
          for (int i = static_cast<int>(p.lo) - 1; i >= 0; --i, v >>= 4) out[i] = kDigits[v & 15];
          out += p.lo;
          break;
        }
        case Kind::kChoice: {
          const auto& c = p.choices[rng.next() % p.choices.size()];
          out = std::copy(c.begin(), c.end(), out);
          break;
        }
      }
    }
  }

 private:
  enum class Kind { kLiteral, kDecimal, kHex, kChoice };
  struct Piece {
    Kind kind = Kind::kLiteral;
    std::string_view text;
    std::uint64_t lo = 0, hi = 0;
    std::vector<std::string_view> choices;
  };

  [[noreturn]] static void bad(std::string_view text) {
    std::fprintf(stderr, "gen_kernel_log: bad template near '%.*s'\n", static_cast<int>(text.size()),
                 text.data());
    std::exit(2);
  }

  static std::uint64_t number(std::string_view s) {
    std::uint64_t v = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || ptr != s.data() + s.size()) bad(s);
    return v;
  }

  void parse_placeholder(std::string_view spec) {
    const char type = spec[0];
    spec.remove_prefix(2);
    Piece p;
    if (type == 'd') {
      const auto colon = spec.find(':');
      if (colon == std::string_view::npos) bad(spec);
      p.kind = Kind::kDecimal;
      p.lo = number(spec.substr(0, colon));
      p.hi = number(spec.substr(colon + 1));
      if (p.hi < p.lo) bad(spec);
    } else if (type == 'x') {
      p.kind = Kind::kHex;
      p.lo = number(spec);
      if (p.lo == 0 || p.lo > 16) bad(spec);
    } else if (type == 'c') {
      p.kind = Kind::kChoice;
      for (std::size_t bar; (bar = spec.find('|')) != std::string_view::npos;) {
        p.choices.push_back(spec.substr(0, bar));
        spec.remove_prefix(bar + 1);
      }
      p.choices.push_back(spec);
    } else {
      bad(spec);
    }
    pieces_.push_back(std::move(p));
  }

  std::vector<Piece> pieces_;
};

/// Owns the output descriptor and a large buffer; whole-buffer writes keep the generator I/O-bound.
class Output {
 public:
  explicit Output(const std::string& path) : path_(path), buf_(new char[kBufferBytes]) {
    fd_ = path == "-" ? STDOUT_FILENO : ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd_ < 0) fail("open");
  }
  ~Output() {
    if (fd_ > STDOUT_FILENO) ::close(fd_);
  }
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;

  /// Room for at least kMaxLineBytes; call commit() with the end of what was written.
  char* cursor() {
    if (used_ + kMaxLineBytes > kBufferBytes) flush();
    return buf_.get() + used_;
  }
  void commit(char* end) { used_ = static_cast<std::size_t>(end - buf_.get()); }

  void flush() {
    for (std::size_t done = 0; done < used_;) {
      const auto n = ::write(fd_, buf_.get() + done, used_ - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail("write");
      done += static_cast<std::size_t>(n);
    }
    used_ = 0;
  }

 private:
  [[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "gen_kernel_log: %s %s: %s (check the path and free disk space)\n", what,
                 path_.c_str(), std::strerror(errno));
    std::exit(1);
  }

  std::string path_;
  std::unique_ptr<char[]> buf_;
  std::size_t used_ = 0;
  int fd_ = -1;
};

enum class Format { kDmesg, kSyslog, kJournal };

/// Line prefixes for one wall-clock second, rebuilt only when the second or host changes.
class Prefix {
 public:
  char* emit(Format format, std::string_view host, std::uint64_t uptime_us, char* out) {
    if (format != Format::kDmesg) {
      const std::uint64_t second = kBootEpochS + uptime_us / 1000000;
      if (second != second_ || host != host_) rebuild(second, host);
      const auto& text = format == Format::kSyslog ? syslog_ : journal_;
      out = std::copy(text.begin(), text.end(), out);
      if (format == Format::kJournal) return out;
    }
    // dmesg pads the seconds to five columns: "[ 1234.567890] ".
    char secs[20];
    const auto end = std::to_chars(secs, secs + sizeof secs, uptime_us / 1000000).ptr;
    const auto len = end - secs;
    *out++ = '[';
    for (auto i = len; i < 5; ++i) *out++ = ' ';
    out = std::copy(secs, end, out);
    *out++ = '.';
    std::uint64_t us = uptime_us % 1000000;
    for (int i = 5; i >= 0; --i, us /= 10) out[i] = static_cast<char>('0' + us % 10);
    out += 6;
    *out++ = ']';
    *out++ = ' ';
    return out;
  }

 private:
  // Boot at 2026-11-22 00:00:00 UTC.
  static constexpr std::uint64_t kBootEpochS = 1795305600;

  void rebuild(std::uint64_t second, std::string_view host) {
    using namespace std::chrono;
    const sys_seconds t{seconds{second}};
    const auto day = floor<days>(t);
    const year_month_day ymd{day};
    const hh_mm_ss hms{t - day};
    const auto h = static_cast<int>(hms.hours().count());
    const auto m = static_cast<int>(hms.minutes().count());
    const auto s = static_cast<int>(hms.seconds().count());
    const auto month = static_cast<unsigned>(ymd.month());
    const auto dom = static_cast<unsigned>(ymd.day());
    const int hlen = static_cast<int>(host.size());
    char b[128];
    std::snprintf(b, sizeof b, "%s %2u %02d:%02d:%02d %.*s kernel: ", kMonths[month - 1].data(), dom,
                  h, m, s, hlen, host.data());
    syslog_ = b;
    std::snprintf(b, sizeof b, "%04d-%02u-%02uT%02d:%02d:%02d+00:00 %.*s kernel: ",
                  static_cast<int>(ymd.year()), month, dom, h, m, s, hlen, host.data());
    journal_ = b;
    second_ = second;
    host_ = host;
  }

  std::uint64_t second_ = ~std::uint64_t{0};
  std::string_view host_;
  std::string syslog_, journal_;
};

bool parse_u64(const char* s, std::uint64_t& v) {
  const auto end = s + std::strlen(s);
  const auto [ptr, ec] = std::from_chars(s, end, v);
  return ec == std::errc() && ptr == end && ptr != s;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t size_bytes = 0, seed = 1, lines_per_fault = 10000;
  if (argc < 3 || argc > 5 || !parse_u64(argv[2], size_bytes) ||
      (argc > 3 && !parse_u64(argv[3], seed)) ||
      (argc > 4 && !parse_u64(argv[4], lines_per_fault))) {
    std::fprintf(stderr,
                 "usage: gen_kernel_log OUTPUT|- SIZE_BYTES [SEED=1] [LINES_PER_FAULT=10000]\n"
                 "  writes at most SIZE_BYTES of synthetic kernel log; LINES_PER_FAULT 0 = none\n");
    return 2;
  }
  const auto t0 = std::chrono::steady_clock::now();

  std::vector<Template> noise;
  std::vector<std::uint16_t> noise_pick;  // index repeated `weight` times: O(1) weighted choice
  for (const auto& n : kNoise) {
    noise_pick.insert(noise_pick.end(), n.weight, static_cast<std::uint16_t>(noise.size()));
    noise.emplace_back(n.tmpl);
  }
  std::array<std::uint64_t, std::size(kFaults)> fault_count{};

  Rng rng(seed);
  Output out(argv[1]);
  Prefix prefix;
  std::uint64_t written = 0, lines = 0, uptime_us = 5000000;
  std::uint64_t segment_left = 0;
  Format format = Format::kDmesg;
  std::string_view host = kHosts[0];
  char line[kMaxLineBytes];

  for (;;) {
    // Segments of one format and host, as when logs of several nodes are concatenated.
    if (segment_left == 0) {
      segment_left = rng.between(1000, 200000);
      const auto f = rng.next() % 10;
      format = f < 4 ? Format::kDmesg : f < 7 ? Format::kSyslog : Format::kJournal;
      host = kHosts[rng.next() % std::size(kHosts)];
    }
    --segment_left;
    // Mostly dense bursts, sometimes a quiet gap.
    uptime_us += rng.next() % 10 == 0 ? rng.between(0, 200000) : rng.between(0, 2000);

    char* p = prefix.emit(format, host, uptime_us, line);
    if (lines_per_fault != 0 && rng.next() % lines_per_fault == 0) {
      const auto i = rng.next() % std::size(kFaults);
      ++fault_count[i];
      p = std::copy(kFaults[i].body.begin(), kFaults[i].body.end(), p);
    } else {
      noise[noise_pick[rng.next() % noise_pick.size()]].emit(rng, p);
    }
    *p++ = '\n';
    const auto len = static_cast<std::size_t>(p - line);
    if (written + len > size_bytes) break;
    char* dst = out.cursor();
    out.commit(std::copy(line, p, dst));
    written += len;
    ++lines;
  }
  out.flush();

  std::map<std::string_view, std::uint64_t> by_kind;
  std::uint64_t faults = 0;
  for (std::size_t i = 0; i < std::size(kFaults); ++i) {
    by_kind[kFaults[i].kind] += fault_count[i];
    faults += fault_count[i];
  }
  const std::chrono::duration<double> secs = std::chrono::steady_clock::now() - t0;
  std::fprintf(stderr, "gen_kernel_log: bytes=%llu lines=%llu faults=%llu",
               static_cast<unsigned long long>(written), static_cast<unsigned long long>(lines),
               static_cast<unsigned long long>(faults));
  for (const auto& [kind, n] : by_kind) {
    std::fprintf(stderr, " %.*s=%llu", static_cast<int>(kind.size()), kind.data(),
                 static_cast<unsigned long long>(n));
  }
  std::fprintf(stderr, " seconds=%.2f\n", secs.count());
  return 0;
}
