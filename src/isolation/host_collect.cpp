// Collection for the host isolation checks: the only file here that touches the machine. Every
// read goes through the HostRoot; the GPU open and the MUNGE stats go through root.resolve().

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/strings.h"
#include "core/unique_fd.h"
#include "isolation/host_isolation.h"
#include "isolation/host_parse.h"

namespace cmax::isolation {
namespace {

constexpr std::size_t kMaxProcesses = 65536;
constexpr std::chrono::milliseconds kGpuOpenTimeout{15000};  // all the GPU nodes together
constexpr std::size_t kStatusBytes = 4096;  // the Uid: line is within the first few hundred
constexpr std::string_view kVolumeDevicesDir = "/var/run/nvidia-container-devices";

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Absent only when the path itself is not there (ENOENT on lstat): a dangling link, a directory
// where a file belongs, or a permission error is "there but unreadable".
ReadState missing_state(const core::HostRoot& root, std::string_view path) {
  struct stat st {};
  if (::lstat(root.resolve(path).c_str(), &st) == 0) return ReadState::unreadable;
  return errno == ENOENT && !root.exists(path) ? ReadState::absent : ReadState::unreadable;
}

bool present(const core::HostRoot& root, std::string_view path) {
  struct stat st {};
  return ::lstat(root.resolve(path).c_str(), &st) == 0 || root.exists(path);
}

PathRead read_text(const core::HostRoot& root, std::string_view path,
                   std::size_t max_bytes = core::kDefaultMaxFileBytes) {
  PathRead r{std::string(path)};
  auto text = root.read_file(path, max_bytes);
  if (text) {
    r.state = ReadState::read;
    r.text = std::move(*text);
    return r;
  }
  r.error = text.error().message;
  r.state = missing_state(root, path);
  return r;
}

PathRead read_link(const core::HostRoot& root, std::string_view path) {
  PathRead r{std::string(path)};
  auto target = root.read_link(path);
  if (target) {
    r.state = ReadState::read;
    r.text = std::move(*target);
    return r;
  }
  r.error = target.error().message;
  r.state = missing_state(root, path);
  return r;
}

// The listing as names, one per line; `entries` receives them when given.
PathRead list(const core::HostRoot& root, std::string_view path,
              std::vector<core::DirEntry>* entries = nullptr) {
  PathRead r{std::string(path)};
  auto listed = root.list_dir(path);
  if (!listed) {
    r.error = listed.error().message;
    r.state = missing_state(root, path);
    return r;
  }
  r.state = ReadState::read;
  for (const auto& e : *listed) r.text += e.name + "\n";
  if (entries) *entries = std::move(*listed);
  return r;
}

PathStat stat_path(const core::HostRoot& root, std::string_view path) {
  PathStat s{std::string(path)};
  struct stat st {};
  if (::stat(root.resolve(path).c_str(), &st) != 0) {
    s.error_number = errno;
    s.error = fmt::format("stat {}: {}", path, std::strerror(errno));
    return s;
  }
  s.mode = st.st_mode;
  s.uid = st.st_uid;
  return s;
}

void collect_gpus(const core::HostRoot& root, HostIsolationFacts& f) {
  std::vector<core::DirEntry> entries;
  f.dev = list(root, "/dev", &entries);
  f.dev.text.clear();  // /dev is long and only the GPU nodes matter
  std::vector<std::string> names, paths;
  for (const auto& e : entries) {
    std::string_view name = e.name;
    if (!name.starts_with("nvidia") || !all_digits(name.substr(6))) continue;
    auto minor = core::parse_uint(name.substr(6));
    if (!minor || *minor > 0xffff) continue;
    f.gpus.push_back(GpuNode{static_cast<unsigned>(*minor)});
    names.push_back(e.name);
    paths.push_back(root.resolve("/dev/" + e.name));
  }
  // O_RDWR is what the device cgroup (Slurm ConstrainDevices, a container's device list)
  // refuses; access() would not consult it. O_NOFOLLOW outside the live root, so that an
  // image's link never opens a device of the machine running cmax.
  const int flags = O_RDWR | O_CLOEXEC | O_NONBLOCK | (root.is_live() ? 0 : O_NOFOLLOW);
  const auto errs = open_each(paths, flags, kGpuOpenTimeout);
  for (std::size_t i = 0; i < f.gpus.size(); ++i) {
    f.gpus[i].open_errno = errs[i];
    if (errs[i] == ETIMEDOUT)
      f.gpus[i].error = fmt::format("open /dev/{}: no answer within {} s (a GPU initialising without persistence "
                                    "mode, or a wedged driver)",
                                    names[i], kGpuOpenTimeout.count() / 1000);
    else if (errs[i] != 0)
      f.gpus[i].error = fmt::format("open /dev/{}: {}", names[i], std::strerror(errs[i]));
  }
  std::sort(f.gpus.begin(), f.gpus.end(),
            [](const GpuNode& a, const GpuNode& b) { return a.minor < b.minor; });
  if (f.env.nvidia_visible_devices == kVolumeDevicesDir)
    f.volume_devices = list(root, kVolumeDevicesDir);
  else
    f.volume_devices = PathRead{std::string(kVolumeDevicesDir), ReadState::absent};
}

void collect_ib(const core::HostRoot& root, HostIsolationFacts& f) {
  const std::string base = "/sys/class/infiniband";
  std::vector<core::DirEntry> devices;
  f.ib_class = list(root, base, &devices);
  for (const auto& dev : devices) {
    const std::string ports_dir = base + "/" + dev.name + "/ports";
    std::vector<core::DirEntry> ports;
    PathRead ports_read = list(root, ports_dir, &ports);
    if (ports_read.state != ReadState::read) {
      IbPort p{dev.name};
      p.link_layer = ports_read;  // unreadable: the port's layer is unknown
      f.ib_ports.push_back(std::move(p));
      continue;
    }
    for (const auto& port : ports) {
      IbPort p{dev.name + "/" + port.name};
      const std::string port_dir = ports_dir + "/" + port.name;
      p.link_layer = read_text(root, port_dir + "/link_layer", 256);
      if (p.link_layer.state == ReadState::read)
        p.link_layer.text = std::string(core::trim(p.link_layer.text));
      if (p.link_layer.state == ReadState::read && p.link_layer.text == "InfiniBand") {
        std::vector<core::DirEntry> indices;
        PathRead table = list(root, port_dir + "/pkeys", &indices);
        if (table.state != ReadState::read) p.pkeys_error = table.error;
        std::sort(indices.begin(), indices.end(), [](const auto& a, const auto& b) {
          return a.name.size() != b.name.size() ? a.name.size() < b.name.size() : a.name < b.name;
        });
        for (const auto& index : indices) {
          PathRead entry = read_text(root, port_dir + "/pkeys/" + index.name, 256);
          if (entry.state != ReadState::read) {
            p.pkeys_error = entry.error;
            break;
          }
          p.pkeys.emplace_back(index.name, std::string(core::trim(entry.text)));
        }
      }
      f.ib_ports.push_back(std::move(p));
    }
  }
}

void collect_namespaces(const core::HostRoot& root, HostIsolationFacts& f) {
  f.self_net = read_link(root, "/proc/self/ns/net");
  f.pid1_net = read_link(root, "/proc/1/ns/net");
  f.self_pid = read_link(root, "/proc/self/ns/pid");
  f.pid1_pid = read_link(root, "/proc/1/ns/pid");
  f.pid1_comm = read_text(root, "/proc/1/comm", 256);
  f.self_cgroup = read_text(root, "/proc/self/cgroup", 64 * 1024);
  f.pid1_cgroup = read_text(root, "/proc/1/cgroup", 64 * 1024);
  f.net_dev = read_text(root, "/proc/self/net/dev");
  f.dockerenv = present(root, "/.dockerenv");
  f.containerenv = present(root, "/run/.containerenv");
  for (std::string_view table : {"tcp", "tcp6", "udp", "udp6"})
    f.socket_tables.push_back(read_text(root, fmt::format("/proc/self/net/{}", table)));
}

void collect_processes(const core::HostRoot& root, HostIsolationFacts& f) {
  std::vector<core::DirEntry> entries;
  f.proc = list(root, "/proc", &entries);
  f.proc.text.clear();
  f.mounts = read_text(root, "/proc/mounts");
  std::size_t seen = 0;
  for (const auto& e : entries) {
    if (!all_digits(e.name)) continue;
    if (++seen > kMaxProcesses) {
      f.proc_truncated = true;
      break;
    }
    const std::string dir = "/proc/" + e.name;
    auto status = root.read_prefix(dir + "/status", kStatusBytes);
    std::optional<unsigned> uid;
    if (status) uid = status_real_uid(*status);
    if (!uid) {
      if (!root.exists(dir)) continue;  // exited during the scan
      ++f.status_unreadable;
      if (f.status_error.empty())
        f.status_error =
            status ? fmt::format("read {}/status: no Uid: line", dir) : status.error().message;
      continue;
    }
    if (*uid == 0 || *uid == f.env.uid) continue;
    auto pid = core::parse_uint(e.name);
    f.others.push_back({static_cast<int>(pid.value_or(0)), *uid, read_link(root, dir + "/ns/net")});
  }
}

void collect_munge(const core::HostRoot& root, HostIsolationFacts& f) {
  f.munge_key = stat_path(root, "/etc/munge/munge.key");
  f.munge_etc = stat_path(root, "/etc/munge");
  f.munge_dir = stat_path(root, "/run/munge");
  f.munge_socket = stat_path(root, "/run/munge/munge.socket.2");
  f.passwd = read_text(root, "/etc/passwd");
}

std::optional<std::string> env_var(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

}  // namespace

HostIsolationFacts collect_host_isolation(const core::HostRoot& root, const HostIsolationEnv& env) {
  HostIsolationFacts f;
  f.env = env;
  collect_gpus(root, f);
  f.toolkit_config = read_text(root, "/etc/nvidia-container-runtime/config.toml", 1u << 20);
  collect_ib(root, f);
  collect_namespaces(root, f);
  collect_processes(root, f);
  collect_munge(root, f);
  return f;
}

HostIsolationEnv current_env() {
  HostIsolationEnv env;
  env.cuda_visible_devices = env_var("CUDA_VISIBLE_DEVICES");
  env.nvidia_visible_devices = env_var("NVIDIA_VISIBLE_DEVICES");
  env.slurm_job_id = env_var("SLURM_JOB_ID");
  env.slurm_job_gpus = env_var("SLURM_JOB_GPUS");
  env.slurm_step_gpus = env_var("SLURM_STEP_GPUS");
  env.kubernetes_service_host = env_var("KUBERNETES_SERVICE_HOST");
  env.uid = ::getuid();
  return env;
}

// The child calls only open, close, write and _exit, so forking from a threaded process is safe.
std::vector<int> open_each(const std::vector<std::string>& paths, int flags, std::chrono::milliseconds timeout) {
  std::vector<int> result(paths.size(), ETIMEDOUT);
  if (paths.empty()) return result;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    std::fill(result.begin(), result.end(), errno);
    return result;
  }
  core::UniqueFd read_end(fds[0]), write_end(fds[1]);
  std::vector<const char*> cpaths;
  for (const auto& p : paths) cpaths.push_back(p.c_str());
  const pid_t pid = ::fork();
  if (pid < 0) {
    std::fill(result.begin(), result.end(), errno);
    return result;
  }
  if (pid == 0) {
    for (const char* path : cpaths) {
      int fd = ::open(path, flags);
      int err = fd >= 0 ? 0 : errno;
      if (fd >= 0) ::close(fd);
      if (::write(write_end.get(), &err, sizeof err) != static_cast<ssize_t>(sizeof err)) ::_exit(1);
    }
    ::_exit(0);
  }
  write_end.reset();  // the child's copy is the only writer left: its exit ends the pipe
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::size_t got = 0;
  while (got < paths.size()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{read_end.get(), POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    int err = 0;
    ssize_t r = ::read(read_end.get(), &err, sizeof err);
    if (r != static_cast<ssize_t>(sizeof err)) break;  // the child died or closed the pipe
    result[got++] = err;
  }
  read_end.reset();
  if (got < paths.size()) ::kill(pid, SIGKILL);
  int status = 0;
  // A child stuck in the kernel cannot be reaped until its open returns; do not wait for it.
  for (int i = 0; i < 20 && ::waitpid(pid, &status, WNOHANG) == 0; ++i) ::usleep(5000);
  return result;
}

}  // namespace cmax::isolation
