#pragma once
// Where the host is live, a kernel line's device name mapped to what the rest of cmax keys on: an
// RDMA device ("efa_0", "mlx5_3", "rdmap16s27") to its PCI address through sysfs
// (/sys/class/infiniband/<dev>/device -> ../../../0000:00:06.0), and the NVIDIA driver's branch
// from /proc/driver/nvidia/version. Reads the filesystem; classify() stays pure.

#include <string>
#include <string_view>

namespace cmax::signals {

/// The PCI address of RDMA device `name` under `sys_root` ("/sys"), or "" when there is none.
std::string rdma_device_pci(std::string_view name, const std::string& sys_root = "/sys");

/// The branch (570, 580...) /proc/driver/nvidia/version under `proc_root` names, or -1.
int nvidia_driver_branch(const std::string& proc_root = "/proc");

}  // namespace cmax::signals
