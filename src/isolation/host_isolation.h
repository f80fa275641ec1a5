#pragma once
// The host half of `cmax audit isolation`: what this process can open, see and share on its own
// node (GPU device nodes, the container toolkit's envvar rule, InfiniBand partitions, network
// namespace, /proc visibility, MUNGE). Collection reads through a HostRoot; judging is pure, and
// evidence it could not read is unverified, never a pass.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "audit/model.h"
#include "core/host.h"

namespace cmax::isolation {

/// The environment the checks consult (nullopt: unset; an empty value is not unset) and the uid.
struct HostIsolationEnv {
  std::optional<std::string> cuda_visible_devices, nvidia_visible_devices, slurm_job_id,
      slurm_job_gpus, slurm_step_gpus, kubernetes_service_host;
  unsigned uid = 0;  ///< the process's real uid
};

/// Whether a host path was read: absent (ENOENT), read, or there but unreadable.
enum class ReadState : std::uint8_t { absent, read, unreadable };

/// One path read: file text, link target, or directory entry names one per line; or why not.
struct PathRead {
  std::string path;
  ReadState state = ReadState::unreadable;
  std::string text;
  std::string error;  ///< the read's error when not read
};

/// stat(2) of a path: error_number 0 when mode and uid hold the answer (ENOENT: absent).
struct PathStat {
  std::string path;
  int error_number = 0;
  std::string error;
  unsigned mode = 0, uid = 0;
};

/// One /dev/nvidiaN: open_errno 0 when open(O_RDWR|O_NONBLOCK) succeeded (closed at once).
struct GpuNode {
  unsigned minor = 0;
  int open_errno = 0;
  std::string error;
};

/// One InfiniBand port ("mlx5_0/1"), its link_layer and its pkey table (index, raw value).
struct IbPort {
  std::string name;
  PathRead link_layer;
  std::vector<std::pair<std::string, std::string>> pkeys;
  std::string pkeys_error;  ///< set when the pkey table could not be read
};

/// A process of a user neither root nor env.uid, and its /proc/<pid>/ns/net link.
struct OtherProcess {
  int pid = 0;
  unsigned uid = 0;
  PathRead net;
};

/// Everything the judges look at; each piece records whether it was read.
struct HostIsolationFacts {
  HostIsolationEnv env;
  PathRead dev;  ///< /dev (the GPU nodes come from it)
  std::vector<GpuNode> gpus;
  PathRead volume_devices;  ///< /var/run/nvidia-container-devices (volume-mounts strategy)
  PathRead toolkit_config;  ///< /etc/nvidia-container-runtime/config.toml
  PathRead ib_class;        ///< /sys/class/infiniband
  std::vector<IbPort> ib_ports;
  PathRead self_net, pid1_net, self_pid, pid1_pid, pid1_comm, self_cgroup, pid1_cgroup, net_dev;
  bool dockerenv = false, containerenv = false;
  std::vector<PathRead> socket_tables;  ///< /proc/self/net/{tcp,tcp6,udp,udp6}
  PathRead proc, mounts;                ///< the /proc listing; /proc/mounts
  std::vector<OtherProcess> others;
  std::size_t status_unreadable = 0;  ///< processes whose owner could not be read
  std::string status_error;
  bool proc_truncated = false;  ///< more processes than the scan reads
  PathStat munge_key, munge_etc, munge_dir, munge_socket;
  PathRead passwd;
};

/// Reads the facts through `root`; `env` as given. Never throws, never blocks (no network).
HostIsolationFacts collect_host_isolation(const core::HostRoot& root, const HostIsolationEnv& env);

/// Pure: one audit::Finding per check (isolation.host.*), in a fixed order.
std::vector<audit::Finding> judge_host_isolation(const HostIsolationFacts& facts);

/// Opens each path with `flags` and closes it at once, in a child process, so that an open stuck in
/// a driver (a GPU initialising without persistence mode takes seconds; a wedged one may never
/// return) costs at most `timeout` in all: the child is then killed and left to the kernel, and the
/// paths it did not report get ETIMEDOUT. Per path: 0 when it opened, else the errno.
std::vector<int> open_each(const std::vector<std::string>& paths, int flags, std::chrono::milliseconds timeout);

/// The environment of this process (getenv, getuid), for the CLI.
HostIsolationEnv current_env();

}  // namespace cmax::isolation
