// isolation.host.ib_pkeys and isolation.host.netns: InfiniBand partition membership, and whether
// the network namespace is the host's or shared with other users.

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <set>

#include "isolation/host_judge.h"

namespace cmax::isolation::host_judge {
namespace {

constexpr std::uint16_t kDefaultPartition = 0x7fff;
constexpr std::string_view kInitialPidNs = "pid:[4026531836]";  // 0xEFFFFFFC

constexpr CheckText kIbText = {
    "ib_pkeys", "InfiniBand ports outside a tenant partition",
    "a tenant PKey on every InfiniBand port, and at most limited membership of the default "
    "partition 0x7fff",
    "Reads each InfiniBand port's pkey table under /sys/class/infiniband/<dev>/ports/<n>/pkeys. "
    "The "
    "high bit of a PKey is membership (1 full, 0 limited), the low 15 bits the partition. A full "
    "member of the default partition 0x7fff can reach every other full member on the fabric, so "
    "on a shared fabric the subnet manager should give each tenant its own PKey and the default "
    "partition only limited membership.",
    "In the subnet manager's partitions.conf give each tenant a partition of its own "
    "(e.g. tenant_a=0x8001, ipoib : <its port GUIDs>=full) and make the default partition limited "
    "for compute ports (Default=0x7fff : ALL=limited, SELF=full); with UFM, use its PKey API."};

std::string pkey_text(std::uint16_t pkey) {
  const std::uint16_t partition = pkey & 0x7fff;
  return fmt::format(
      "0x{:04x} ({}, {})", pkey, (pkey & 0x8000) ? "full" : "limited",
      partition == kDefaultPartition ? std::string("default") : fmt::format("0x{:04x}", partition));
}

// The rule. Outside a container: another non-root user's process in this network namespace (its
// /proc/<pid>/ns/net link equals ours, or a socket of its uid in /proc/self/net/{tcp,udp}*) can see
// and bind this node's ports: warn. Inside a container, /proc/1 is normally the container's own
// init, so "our netns equals PID 1's" proves nothing; it is evidence of hostNetwork only when PID 1
// is also in our PID namespace, that namespace is the initial one (pid:[4026531836]) and PID 1 is
// a host init (systemd, init). The host ends of container links (veth*, cni0, docker0, cali*, ...)
// in our namespace are evidence of it too. Anything else inside a container is unverified.
constexpr CheckText kNetnsText = {
    "netns", "Network namespace shared with other tenants or with the host",
    "a network namespace of its own (containers), or none shared with other users' processes",
    "Compares /proc/self/ns/net with /proc/1/ns/net and with every other user's process. In a "
    "container it fails when the namespace is the host's: PID 1 shares our PID namespace, which is "
    "the initial one, is a host init (systemd or init) and its network namespace is ours; or the "
    "namespace holds the "
    "node-side ends of container links (veth*, cni0, docker0, cali*). Inside a container with "
    "its own PID namespace /proc/1 is the container's init, so equality with it proves nothing. "
    "Outside a container it warns when processes or sockets of other non-root users share the "
    "namespace.",
    "Run tenant workloads in their own network namespace: no hostNetwork for tenant pods "
    "(PodSecurity baseline forbids it), a network namespace per job where the site supports it, "
    "and no shared login processes on compute nodes."};

}  // namespace

Finding judge_ib(const HostIsolationFacts& f) {
  Finding x = base(kIbText, f.ib_class.path + "/*/ports/*/pkeys");
  if (f.ib_class.state == ReadState::absent)
    return with(std::move(x), Outcome::not_applicable,
                "no InfiniBand ports (no /sys/class/infiniband)");
  if (!is_read(f.ib_class))
    return with(std::move(x), Outcome::unverified,
                "cannot list InfiniBand devices: " + f.ib_class.error);
  Worst v;
  std::vector<std::string> ports;
  std::size_t roce = 0;
  std::size_t ib = 0;
  for (const auto& p : f.ib_ports) {
    if (!is_read(p.link_layer)) {
      v.add(Outcome::unverified, fmt::format("{}: {}", p.name, p.link_layer.error));
      ports.push_back(p.name + ": link layer not readable");
      continue;
    }
    if (p.link_layer.text != "InfiniBand") {
      if (p.link_layer.text == "Ethernet") ++roce;
      continue;
    }
    ++ib;
    if (!p.pkeys_error.empty()) {
      v.add(Outcome::unverified, fmt::format("{}: {}", p.name, p.pkeys_error));
      ports.push_back(p.name + ": pkeys not readable");
      continue;
    }
    std::vector<std::uint16_t> keys;
    std::string bad;
    for (const auto& [index, raw] : p.pkeys) {
      auto key = parse_pkey(raw);
      if (!key) {
        bad = fmt::format("pkeys/{} holds \"{}\"", index, one_line(raw, 40));
        break;
      }
      if ((*key & 0x7fff) != 0) keys.push_back(*key);  // 0x0000 and 0x8000 are empty slots
    }
    if (!bad.empty()) {
      v.add(Outcome::unverified, fmt::format("{}: {}, not a PKey", p.name, bad));
      ports.push_back(p.name + ": pkeys malformed");
      continue;
    }
    if (keys.empty()) {
      v.add(Outcome::unverified,
            fmt::format("{}: the pkey table is empty (the subnet manager has not configured the "
                        "port yet)",
                        p.name));
      ports.push_back(p.name + ": no PKeys");
      continue;
    }
    std::vector<std::string> shown;
    bool default_full = false;
    bool tenant = false;
    for (auto k : keys) {
      shown.push_back(pkey_text(k));
      if ((k & 0x7fff) == kDefaultPartition)
        default_full = default_full || (k & 0x8000);
      else
        tenant = true;
    }
    ports.push_back(fmt::format("{}: {}", p.name, join(shown)));
    if (default_full && !tenant)
      v.add(Outcome::warn,
            fmt::format("{}: full member of the default partition: any port on a shared fabric "
                        "can reach it; no tenant PKey",
                        p.name));
    else if (default_full)
      v.add(Outcome::warn,
            fmt::format("{}: has a tenant PKey but is also a full member of the default "
                        "partition, which lets it talk to every other full member",
                        p.name));
    else if (tenant)
      v.add(Outcome::pass, fmt::format("{}: in a tenant partition", p.name));
    else
      v.add(Outcome::pass,
            fmt::format("{}: limited member of the default partition only: it reaches only full "
                        "members (normally the subnet manager)",
                        p.name));
  }
  if (ib == 0 && !v.any()) {
    return with(std::move(x), Outcome::not_applicable,
                roce > 0 ? "RoCE: partitioning is by VLAN, not visible from the host's pkey table"
                         : "no InfiniBand ports");
  }
  v.apply(x);
  x.observed = join(ports, "; ");
  if (roce > 0)
    x.observed += fmt::format("; {} not judged", plural(roce, "RoCE port", "RoCE ports"));
  x.evidence_value = core::clip(x.observed, 200);
  return x;
}

Finding judge_netns(const HostIsolationFacts& f) {
  Finding x = base(kNetnsText, f.self_net.path);
  if (!is_read(f.self_net))
    return with(std::move(x), Outcome::unverified,
                "cannot read our network namespace: " + f.self_net.error);
  x.evidence_value = f.self_net.text;
  const auto container = container_evidence(f);
  if (container) {
    const bool pid_read = is_read(f.self_pid) && is_read(f.pid1_pid) && is_read(f.pid1_comm);
    const std::string comm(is_read(f.pid1_comm) ? core::trim(f.pid1_comm.text)
                                                : std::string_view());
    // The initial PID namespace's inode is fixed (PROC_PID_INIT_INO), which keeps a container
    // that runs systemd as its own init from passing for the host.
    const bool host_pid = pid_read && f.self_pid.text == f.pid1_pid.text &&
                          f.self_pid.text == kInitialPidNs && (comm == "systemd" || comm == "init");
    std::vector<std::string> node_side;
    if (is_read(f.net_dev)) node_side = node_side_interfaces(f.net_dev.text);
    x.observed = fmt::format("in a container ({}); {}; PID 1 ({}) {}", *container, f.self_net.text,
                             comm.empty() ? "comm unknown" : comm,
                             is_read(f.pid1_net) ? f.pid1_net.text : "net not readable");
    if (host_pid && is_read(f.pid1_net) && f.pid1_net.text == f.self_net.text)
      return with(std::move(x), Outcome::fail,
                  "a container in the host's network namespace (hostNetwork): PID 1 is the host's "
                  "init and shares our network namespace");
    if (!node_side.empty()) {
      x.evidence_value = "/proc/self/net/dev: " + core::clip(join(node_side), 160);
      return with(std::move(x), Outcome::fail,
                  fmt::format("a container in the host's network namespace (hostNetwork): it "
                              "holds the node's container interfaces ({})",
                              core::clip(join(node_side), 120)));
    }
    if (host_pid && is_read(f.pid1_net))
      return with(std::move(x), Outcome::pass,
                  "the container has a network namespace of its own (the host's init is in " +
                      f.pid1_net.text + ")");
    std::string why =
        "inside a container with its own PID namespace /proc/1 is the container's init, so "
        "comparing with it proves nothing";
    if (!pid_read) why = "cannot compare with the host's init: PID namespace or comm not readable";
    why += is_read(f.net_dev) ? "; no node-side container interfaces in /proc/self/net/dev"
                              : "; " + f.net_dev.error;
    return with(std::move(x), Outcome::unverified, why);
  }

  std::set<unsigned> users;
  std::size_t sharing = 0;
  std::size_t unreadable = 0;
  std::set<unsigned> unreadable_users;
  for (const auto& p : f.others) {
    if (!is_read(p.net)) {
      ++unreadable;
      unreadable_users.insert(p.uid);
    } else if (p.net.text == f.self_net.text) {
      ++sharing;
      users.insert(p.uid);
    }
  }
  std::set<unsigned> socket_users;
  std::vector<std::string> tables_unread;
  for (const auto& t : f.socket_tables) {
    if (t.state == ReadState::absent) continue;  // tcp6 and udp6 are absent without IPv6
    if (!is_read(t)) {
      tables_unread.push_back(t.error);
      continue;
    }
    for (unsigned uid : socket_table_uids(t.text))
      if (uid != 0 && uid != f.env.uid) socket_users.insert(uid);
  }
  std::set<unsigned> all_users = users;
  all_users.insert(socket_users.begin(), socket_users.end());
  x.observed = fmt::format("not in a container; {}; shared with {} of {}", f.self_net.text,
                           plural(sharing, "process", "processes"),
                           plural(users.size(), "other user", "other users"));
  if (!socket_users.empty())
    x.observed += fmt::format("; sockets of {} in this namespace",
                              plural(socket_users.size(), "other user", "other users"));
  if (!all_users.empty()) {
    std::vector<std::string> names;
    for (unsigned uid : all_users) names.push_back(user_name(f, uid));
    return with(std::move(x), Outcome::warn,
                fmt::format("shared with {} of {} ({}): they can see and bind this node's ports "
                            "and sockets",
                            plural(sharing, "process", "processes"),
                            plural(all_users.size(), "other user", "other users"),
                            core::clip(join(names), 120)));
  }
  std::vector<std::string> gaps;
  if (!is_read(f.proc)) gaps.push_back("cannot list /proc: " + f.proc.error);
  if (unreadable > 0)
    gaps.push_back(
        fmt::format("the network namespace of {} of {} is not readable (it needs "
                    "ptrace access, i.e. root)",
                    plural(unreadable, "process", "processes"),
                    plural(unreadable_users.size(), "other user", "other users")));
  if (f.status_unreadable > 0)
    gaps.push_back(fmt::format("the owner of {} is not readable ({})",
                               plural(f.status_unreadable, "process", "processes"),
                               f.status_error));
  if (f.proc_truncated) gaps.push_back("the process scan stopped at its bound");
  const auto options = is_read(f.mounts) ? proc_mount_options(f.mounts.text) : std::nullopt;
  if (f.env.uid != 0 && options && hidepid_hides(hidepid_option(*options)))
    gaps.push_back(fmt::format("hidepid={} hides other users' processes from this one",
                               hidepid_option(*options)));
  for (const auto& e : tables_unread) gaps.push_back(e);
  if (!gaps.empty()) return with(std::move(x), Outcome::unverified, join(gaps, "; "));
  return with(std::move(x), Outcome::pass,
              "no process or socket of another non-root user is in this network namespace");
}
}  // namespace cmax::isolation::host_judge
