// Kernel tunables the checks judge, read from /proc/sys. One explicit table.

#include <fmt/format.h>

#include "audit/collectors/collector.h"

namespace cmax::audit {
namespace {

struct Sysctl {
  std::string_view name;  ///< dotted sysctl name
  std::string_view path;
};

constexpr Sysctl kSysctls[] = {
    {"kernel.perf_event_paranoid", "/proc/sys/kernel/perf_event_paranoid"},
    {"kernel.kptr_restrict", "/proc/sys/kernel/kptr_restrict"},
    {"kernel.dmesg_restrict", "/proc/sys/kernel/dmesg_restrict"},
    {"kernel.randomize_va_space", "/proc/sys/kernel/randomize_va_space"},
    {"kernel.unprivileged_bpf_disabled", "/proc/sys/kernel/unprivileged_bpf_disabled"},
    {"kernel.yama.ptrace_scope", "/proc/sys/kernel/yama/ptrace_scope"},
    {"kernel.numa_balancing", "/proc/sys/kernel/numa_balancing"},
    {"kernel.printk_devkmsg", "/proc/sys/kernel/printk_devkmsg"},
    {"vm.overcommit_memory", "/proc/sys/vm/overcommit_memory"},
    {"fs.suid_dumpable", "/proc/sys/fs/suid_dumpable"},
};

}  // namespace

void collect_sysctl(const CollectContext& ctx, Facts& facts) {
  for (const auto& s : kSysctls) read_fact(ctx, facts, fmt::format("sysctl.{}", s.name), s.path, 4096);
  read_fact(ctx, facts, "mm.thp_enabled", "/sys/kernel/mm/transparent_hugepage/enabled", 4096);
}

}  // namespace cmax::audit
