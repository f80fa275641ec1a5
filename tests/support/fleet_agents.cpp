#include "support/fleet_agents.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <sstream>

#include <fmt/format.h>

namespace cmax::test {
namespace {

std::uint64_t monotonic_usec() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000u + static_cast<std::uint64_t>(ts.tv_nsec) / 1000u;
}

}  // namespace

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string last_chars(const std::string& text, std::size_t n) {
  return text.size() <= n ? text : text.substr(text.size() - n);
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

double process_cpu_seconds(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(text.substr(close + 2));
  std::string f;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {  // fields 14 and 15: utime, stime (clock ticks)
    if (i == 14) utime = std::stoull(f);
    if (i == 15) stime = std::stoull(f);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

double process_rss_mib(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/statm", pid));
  unsigned long long size = 0, resident = 0;
  if (!(in >> size >> resident)) return 0;
  return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

Result<std::unique_ptr<FleetAgents>> FleetAgents::start(const FleetAgentSpec& spec) {
  std::unique_ptr<FleetAgents> a(new FleetAgents(spec));
  std::error_code ec;
  std::filesystem::create_directories(spec.dir, ec);
  if (ec) return fail("create {}: {}", spec.dir.string(), ec.message());
  for (std::size_t i = 0; i < spec.nodes.size(); ++i) {
    const auto fifo = spec.dir / (spec.nodes[i] + ".kmsg");
    std::filesystem::remove(fifo, ec);
    if (::mkfifo(fifo.c_str(), 0600) != 0) return fail("mkfifo {}: {}", fifo.string(), std::strerror(errno));
    // Held open for writing (and reading, so the open does not wait for cmaxd): a fault is one write.
    int fd = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return fail("open {}: {}", fifo.string(), std::strerror(errno));
    a->fifo_fds_.push_back(fd);
    a->seqs_.push_back(0);
    std::filesystem::remove(spec.dir / (spec.nodes[i] + ".db"), ec);
    std::vector<std::string> argv = {spec.cmaxd,
                                     "--node=" + spec.nodes[i],
                                     "--kmsg=" + fifo.string(),
                                     "--db=" + (spec.dir / (spec.nodes[i] + ".db")).string(),
                                     "--act-on=kernel",
                                     "--no-nvml",
                                     "--no-ib",
                                     "--metrics-listen",
                                     "",
                                     fmt::format("--fleet-max-percent={}", spec.fleet_max_percent)};
    argv.insert(argv.end(), spec.scheduler_args.begin(), spec.scheduler_args.end());
    auto d = Daemon::start(argv, {}, a->log_path(i));
    if (!d) return fail("start cmaxd for {}: {}", spec.nodes[i], d.error().message);
    a->daemons_.push_back(std::move(*d));
  }
  for (std::size_t i = 0; i < a->daemons_.size(); ++i)
    if (!wait_for_log(a->log_path(i), "cmaxd: node", spec.ready_timeout, &a->daemons_[i]))
      return fail("cmaxd for {} did not start reading within {} s: {}", spec.nodes[i], spec.ready_timeout.count(),
                  last_chars(a->log(i), 1500));
  return a;
}

FleetAgents::~FleetAgents() {
  stop();
  for (int fd : fifo_fds_) ::close(fd);
}

void FleetAgents::stop() {
  for (auto& d : daemons_) d.stop();
}

std::vector<pid_t> FleetAgents::pids() const {
  std::vector<pid_t> out;
  for (const auto& d : daemons_) out.push_back(d.pid());
  return out;
}

std::size_t FleetAgents::running() {
  std::size_t n = 0;
  for (auto& d : daemons_) n += d.running();
  return n;
}

std::filesystem::path FleetAgents::log_path(std::size_t i) const { return spec_.dir / (spec_.nodes[i] + ".log"); }

std::string FleetAgents::log(std::size_t i) const { return read_text(log_path(i)); }

Result<void> FleetAgents::fault(std::size_t i, std::string_view pci) {
  // /dev/kmsg's read format: "prio,seq,usec,flags;message\n"; prio 3 is the kernel at LOG_ERR.
  const auto rec = fmt::format("3,{},{},-;NVRM: Xid (PCI:{}): 79, pid=4242, name=python, GPU has fallen off "
                               "the bus.\n",
                               ++seqs_[i], monotonic_usec(), pci);
  if (::write(fifo_fds_[i], rec.data(), rec.size()) != static_cast<ssize_t>(rec.size()))
    return fail("write the fault to {}'s FIFO: {}", spec_.nodes[i], std::strerror(errno));
  return ok();
}

}  // namespace cmax::test
