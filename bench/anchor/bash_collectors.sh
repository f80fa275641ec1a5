#!/usr/bin/env bash
# The anchor for bench/audit_wall.sh: the same facts gathered the way the public ClusterMAX cmax
# collectors do it (bash, one process per probe, KEY=VALUE lines), written for this comparison
# only. It judges nothing; cmax also judges 59 checks, so the ratio flatters the anchor.
set -u
kv() { printf '%s=%s\n' "$1" "$2"; }
kv OS_ID "$(. /etc/os-release 2>/dev/null; echo "${ID:-}")"
kv OS_VERSION "$(. /etc/os-release 2>/dev/null; echo "${VERSION_ID:-}")"
kv KERNEL "$(uname -r)"
kv KERNEL_VERSION "$(cat /proc/version)"
kv CMDLINE "$(cat /proc/cmdline)"
kv KERNELS_INSTALLED "$(ls /lib/modules 2>/dev/null | tr '\n' ' ')"
for s in kernel/perf_event_paranoid kernel/kptr_restrict kernel/dmesg_restrict kernel/randomize_va_space \
         kernel/unprivileged_bpf_disabled kernel/numa_balancing fs/suid_dumpable; do
  kv "SYSCTL_${s//\//_}" "$(cat /proc/sys/$s 2>/dev/null)"
done
kv GPU_COUNT "$(grep -l 0x10de /sys/bus/pci/devices/*/vendor 2>/dev/null | wc -l)"
kv NVIDIA_DRIVER "$(grep -o 'Module  *[0-9.]*' /proc/driver/nvidia/version 2>/dev/null)"
kv NVIDIA_OPEN "$(grep -ci 'open kernel' /proc/driver/nvidia/version 2>/dev/null)"
kv MODULES "$(grep -E '^(nvidia|nvidia_peermem|mlx5_core|ib_core)' /proc/modules | cut -d' ' -f1 | tr '\n' ' ')"
for t in runc containerd docker nvidia-ctk dcgmi sinfo munged nvcc enroot apptainer mpirun kubelet; do
  if command -v "$t" >/dev/null 2>&1; then kv "VERSION_$t" "$("$t" --version 2>&1 | head -1)"; else kv "VERSION_$t" ""; fi
done
kv DPKG_RUNC "$(dpkg-query -W -f='${Version}' runc 2>/dev/null)"
kv DPKG_MUNGE "$(dpkg-query -W -f='${Version}' munge 2>/dev/null)"
kv CUDA "$(cat /usr/local/cuda/version.json 2>/dev/null | grep -o '"version" *: *"[^"]*"' | head -1)"
kv NCCL_CONF "$(cat /etc/nccl.conf 2>/dev/null | tr '\n' ';')"
kv SLURM_CONF "$(grep -iE '^(HealthCheckProgram|HealthCheckInterval|TopologyPlugin)' /etc/slurm/slurm.conf 2>/dev/null | tr '\n' ';')"
kv IB_DEVICES "$(ls /sys/class/infiniband 2>/dev/null | tr '\n' ' ')"
kv IOMMU_GROUPS "$(ls /sys/kernel/iommu_groups 2>/dev/null | wc -l)"
kv MOUNTS "$(awk '$3 ~ /nfs|lustre|gpfs|wekafs|beegfs|ceph/ {print $2}' /proc/mounts | tr '\n' ' ')"
kv GOVERNOR "$(cat /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor 2>/dev/null | sort -u | tr '\n' ' ')"
kv XID_7D "$(dmesg 2>/dev/null | grep -c 'NVRM: Xid')"
kv PERSISTENCED "$(pgrep -x nvidia-persistenced || true)"
kv SUDO_NOPASSWD "$(grep -rh NOPASSWD /etc/sudoers /etc/sudoers.d 2>/dev/null | head -1)"
