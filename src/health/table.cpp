#include "health/active.h"

namespace cmax::health {

namespace {

using audit::Category;

// Report order: the cheap checks first, so a hung filesystem (the storage group) is found before
// the minutes the bandwidth checks take.
constexpr ActiveCheck kChecks[] = {
    {"storage.metadata", "storage", Category::storage,
     "Shared filesystem metadata latency (import torch pattern)", check_storage_metadata},
    {"storage.seq_write", "storage", Category::storage, "Shared filesystem sequential write",
     check_storage_seq_write},
    {"storage.seq_read", "storage", Category::storage, "Shared filesystem sequential read",
     check_storage_seq_read},
    {"storage.fsync", "storage", Category::storage, "Shared filesystem fsync latency",
     check_storage_fsync},
    {"memory.bandwidth", "memory", Category::reliability,
     "Memory bandwidth against the DIMM population's ceiling", check_memory_bandwidth},
    {"cpu.throughput", "cpu", Category::reliability, "Per-core CPU throughput",
     check_cpu_throughput},
    {"cpu.stall", "cpu", Category::reliability, "CPU responsiveness per NUMA node",
     check_cpu_stall},
};

}  // namespace

std::span<const ActiveCheck> all_active_checks() { return kChecks; }

}  // namespace cmax::health
