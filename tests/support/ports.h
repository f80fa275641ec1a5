#pragma once
// Free TCP ports for the daemons a test starts (Slurm, etcd, kube-apiserver): chosen from a random
// base below Linux's ephemeral range, so tests running side by side rarely even try the same ones.

#include <cstdint>
#include <random>
#include <string_view>

#include "core/result.h"

namespace cmax::test {

/// Nothing listens on `port` on any address (a bind to it succeeds now).
bool port_free(int port);

/// The first of `count` consecutive free ports from a random base in 20000-32000. A daemon can still
/// lose the port before it binds: callers retry on other ports when one dies at start.
Result<int> pick_ports(std::mt19937_64& rng, int count);

/// A free TCP port on 127.0.0.1 (bound to port 0 and released; the caller binds it next), or -1.
int free_loopback_port();

/// A random seed from the device and the pid, for pick_ports.
std::uint64_t port_seed();

/// The last `max_bytes` of a log file ("..." first when cut), for an error that a daemon died.
std::string tail_of_file(const std::string& path, std::size_t max_bytes = 1500);

}  // namespace cmax::test
