#include "probes/ib_probe.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <set>

#include "core/host.h"
#include "core/strings.h"
#include "core/unique_fd.h"

namespace cmax::probes {
namespace {

using signals::Kind;

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// sysfs values end in one newline; a stray CR or trailing blank is tolerated, inner text is not.
std::string_view strip_newline(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' '))
    s.remove_suffix(1);
  return s;
}

// "mlx5_0/1" -> 1, or -1 when the part after the slash is not a number.
int port_number(std::string_view port) {
  auto slash = port.rfind('/');
  if (slash == std::string_view::npos) return -1;
  auto digits = port.substr(slash + 1);
  int n = -1;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  return ec == std::errc() && end == digits.data() + digits.size() ? n : -1;
}

// True when ACTIVE and LinkUp, false when either says otherwise, nullopt when that cannot be told.
std::optional<bool> judge(const IbPortReading& r) {
  if (r.state && *r.state != kIbPortActive) return false;
  if (r.phys_state && *r.phys_state != kIbPhysLinkUp) return false;
  if (r.state && r.phys_state) return true;
  return std::nullopt;
}

std::string describe(const IbPortReading& r) {
  auto part = [](const std::optional<int>& number, const std::string& name) {
    if (!number) return std::string("unreadable");
    return name.empty() ? std::to_string(*number) : name;
  };
  return fmt::format("state {}, phys_state {}", part(r.state, r.state_name),
                     part(r.phys_state, r.phys_state_name));
}

Finding port_finding(Kind kind, const std::string& port, std::string subject,
                     std::string_view what) {
  Finding f;
  f.kind = kind;
  f.code = port_number(port);
  f.device = port;
  f.text = fmt::format("ib: {}: {} ({})", port, what, subject);
  f.subject = std::move(subject);
  return f;
}

bool is_expected(const std::vector<std::string>& expect, const std::string& port) {
  return std::find(expect.begin(), expect.end(), port) != expect.end();
}

// Reads a small sysfs file; nullopt when it is missing or unreadable (the port is skipped then).
std::optional<std::string> read_small(const std::string& path) {
  core::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd) return std::nullopt;
  char buf[256];
  std::size_t used = 0;
  while (used < sizeof buf) {
    ssize_t n = ::read(fd.get(), buf + used, sizeof buf - used);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    used += static_cast<std::size_t>(n);
  }
  return std::string(buf, used);
}

// Entry names of a directory without "." and "..", sorted; nullopt and `error` = errno on failure.
std::optional<std::vector<std::string>> list_names(const std::string& path, int& error) {
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) {
    error = errno;
    return std::nullopt;
  }
  std::vector<std::string> names;
  while (dirent* e = ::readdir(dir)) {
    std::string_view name = e->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

Result<IbNumberedName> parse_ib_numbered_name(std::string_view text) {
  std::string_view s = strip_newline(text);
  if (s.empty()) return fail("parse IB port state: empty value");
  auto colon = s.find(": ");
  if (colon == std::string_view::npos)
    return fail("parse IB port state \"{}\": expected \"<number>: <name>\"", core::clip(s, 40));
  std::string_view digits = s.substr(0, colon);
  IbNumberedName out;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out.number);
  if (!all_digits(digits) || ec != std::errc() || end != digits.data() + digits.size())
    return fail("parse IB port state \"{}\": \"{}\" is not a number", core::clip(s, 40),
                core::clip(digits, 20));
  out.name = s.substr(colon + 2);
  if (out.name.empty() || out.name.front() == ' ')
    return fail("parse IB port state \"{}\": no name after the number", core::clip(s, 40));
  return out;
}

Result<std::uint64_t> parse_ib_counter(std::string_view text) {
  std::string_view s = strip_newline(text);
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (!all_digits(s) || ec != std::errc() || end != s.data() + s.size())
    return fail("parse IB counter \"{}\": expected an unsigned decimal number", core::clip(s, 40));
  return value;
}

IbDiff diff_ib(const IbState& before, const IbReading& now,
               const std::vector<std::string>& expect) {
  IbDiff out;
  out.next = before;
  auto& ports = out.next.ports;
  std::set<std::string> seen;

  for (const auto& r : now.ports) {
    seen.insert(r.port);
    std::optional<bool> up = judge(r);
    auto it = ports.find(r.port);
    if (it == ports.end()) {
      // First reading or hotplug: a baseline, except that an expected port must be up.
      IbPortMemory mem;
      mem.up = up.value_or(false);
      mem.link_downed = r.link_downed;
      if (up == false && is_expected(expect, r.port)) {
        mem.reported_down = true;
        out.findings.push_back(
            port_finding(Kind::ib_port_down, r.port, describe(r), "expected port is down"));
      }
      ports.emplace(r.port, mem);
      continue;
    }
    IbPortMemory& mem = it->second;
    if (up == true && !mem.up) {
      if (mem.reported_down)
        out.findings.push_back(
            port_finding(Kind::ib_port_up, r.port, describe(r), "port is up again"));
      mem.reported_down = false;
    } else if (up == false && !mem.reported_down && (mem.up || is_expected(expect, r.port))) {
      mem.reported_down = true;
      out.findings.push_back(
          port_finding(Kind::ib_port_down, r.port, describe(r), "port went down"));
    }
    if (up) mem.up = *up;

    if (r.link_downed) {
      if (mem.link_downed && *r.link_downed > *mem.link_downed) {
        std::uint64_t rise = *r.link_downed - *mem.link_downed;
        Finding f;
        f.kind = Kind::ib_link_downed;
        f.code = static_cast<int>(std::min<std::uint64_t>(rise, 0x7fffffff));
        f.device = r.port;
        f.subject = fmt::format("link_downed {} -> {}", *mem.link_downed, *r.link_downed);
        f.text = fmt::format("ib: {}: link_downed rose {} -> {} (the link went down {} time{})",
                             r.port, *mem.link_downed, *r.link_downed, rise, rise == 1 ? "" : "s");
        out.findings.push_back(std::move(f));
      }
      // Equal, risen or fallen (a counter reset): the new value is the baseline.
      mem.link_downed = r.link_downed;
    }
  }

  // An incomplete reading (the budget ran out) says nothing about the ports it did not reach.
  if (!now.complete) return out;

  for (auto it = ports.begin(); it != ports.end();) {
    if (seen.count(it->first)) {
      ++it;
      continue;
    }
    IbPortMemory& mem = it->second;
    if (mem.up) {
      // The port was in use and is gone (the HCA fell off the bus, the driver went away).
      mem.up = false;
      mem.reported_down = true;
      mem.link_downed.reset();
      out.findings.push_back(port_finding(Kind::ib_port_down, it->first, "port missing",
                                          "port disappeared from sysfs"));
    }
    if (!mem.reported_down && !is_expected(expect, it->first)) {
      it = ports.erase(it);  // gone with no fault open: nothing to remember
    } else {
      ++it;
    }
  }
  for (const auto& port : expect) {
    if (seen.count(port)) continue;
    IbPortMemory& mem = ports[port];
    if (mem.reported_down) continue;
    mem.up = false;
    mem.reported_down = true;
    mem.link_downed.reset();
    out.findings.push_back(port_finding(Kind::ib_port_down, port, "port not found",
                                        "expected port not found in sysfs"));
  }
  return out;
}

Result<IbReading> read_ib_ports(const std::string& root,
                                std::chrono::steady_clock::time_point deadline) {
  IbReading reading;
  int error = 0;
  auto devices = list_names(root, error);
  if (!devices) {
    if (error == ENOENT) return reading;  // no InfiniBand on this host
    return fail("list {}: {}; check that sysfs is mounted and readable", root,
                std::strerror(error));
  }
  for (const auto& device : *devices) {
    std::string ports_dir = core::join_path(core::join_path(root, device), "ports");
    auto ports = list_names(ports_dir, error);
    if (!ports) continue;  // removed while we read, or not a device directory
    for (const auto& port : *ports) {
      if (!all_digits(port)) continue;
      if (std::chrono::steady_clock::now() >= deadline) {
        reading.complete = false;
        break;
      }
      std::string dir = core::join_path(ports_dir, port);
      IbPortReading r;
      r.port = device + "/" + port;
      if (auto text = read_small(dir + "/state")) {
        if (auto v = parse_ib_numbered_name(*text)) {
          r.state = v->number;
          r.state_name = std::string(v->name);
        }
      }
      if (auto text = read_small(dir + "/phys_state")) {
        if (auto v = parse_ib_numbered_name(*text)) {
          r.phys_state = v->number;
          r.phys_state_name = std::string(v->name);
        }
      }
      if (auto text = read_small(dir + "/counters/link_downed")) {
        if (auto v = parse_ib_counter(*text)) r.link_downed = *v;
      }
      reading.ports.push_back(std::move(r));
    }
    if (!reading.complete) break;
  }
  std::sort(reading.ports.begin(), reading.ports.end(),
            [](const IbPortReading& a, const IbPortReading& b) { return a.port < b.port; });
  return reading;
}

Result<IbProbe> IbProbe::create(IbOptions options) {
  for (const auto& port : options.expect) {
    auto slash = port.find('/');
    if (slash == 0 || slash == std::string::npos ||
        !all_digits(std::string_view(port).substr(slash + 1)))
      return fail(
          "ib probe: expected port \"{}\" is not <device>/<port number> (like mlx5_0/1); "
          "fix the expected-port list",
          port);
  }
  return IbProbe(std::move(options));
}

Result<std::vector<Finding>> IbProbe::poll(std::chrono::milliseconds budget) {
  auto reading = read_ib_ports(options_.root, std::chrono::steady_clock::now() + budget);
  if (!reading) return Unexpected<Error>{reading.error()};
  IbDiff diff = diff_ib(state_, *reading, options_.expect);
  state_ = std::move(diff.next);
  return std::move(diff.findings);
}

}  // namespace cmax::probes
