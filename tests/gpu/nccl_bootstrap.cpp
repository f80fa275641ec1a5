// nccl_bootstrap: the first thing every NCCL job does, without a GPU. ncclGetUniqueId starts NCCL's
// bootstrap (socket transport on the interface NCCL_SOCKET_IFNAME names) and returns the handle
// rank 0 sends to the others; cmax-collbench's NCCL backend broadcasts exactly this with MPI.
// Prints one JSON line: {"nccl_version": 23206, "family": 2, "address": "127.0.0.1", "port": N}.
// Exit 0 when the id was made, 1 when NCCL failed (the error on stderr).
//
// The handle's layout is NCCL's struct ncclBootstrapHandle { uint64_t magic; union ncclSocketAddress
// addr; } (src/include/bootstrap.h, NCCL 2.x): a sockaddr after an 8-byte magic. A test reads the
// address back to show that the bootstrap listens on loopback, not merely that a call returned.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <nccl.h>

#include <cstdio>
#include <cstring>

int main() {
  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess) {
    std::fprintf(stderr, "nccl_bootstrap: ncclGetVersion failed\n");
    return 1;
  }
  ncclUniqueId id;
  const ncclResult_t r = ncclGetUniqueId(&id);
  if (r != ncclSuccess) {
    std::fprintf(stderr, "nccl_bootstrap: ncclGetUniqueId: %s (%s)\n", ncclGetErrorString(r), ncclGetLastError(nullptr));
    return 1;
  }
  sockaddr_storage addr{};
  std::memcpy(&addr, id.internal + 8, sizeof(addr) < sizeof(id.internal) - 8 ? sizeof(addr) : sizeof(id.internal) - 8);
  char text[INET6_ADDRSTRLEN] = "";
  int port = 0;
  if (addr.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
    port = ntohs(in->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
    port = ntohs(in6->sin6_port);
  }
  std::printf("{\"nccl_version\": %d, \"family\": %d, \"address\": \"%s\", \"port\": %d}\n", version,
              static_cast<int>(addr.ss_family), text, port);
  return 0;
}
