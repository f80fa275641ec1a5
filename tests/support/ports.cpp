#include "support/ports.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <iterator>

#include "core/unique_fd.h"

namespace cmax::test {
namespace {

// Below Linux's default ephemeral range (32768-60999), so no outgoing connection holds one of ours.
constexpr int kPortLow = 20000;
constexpr int kPortHigh = 32000;

}  // namespace

bool port_free(int port) {
  core::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_ANY);  // the daemons listen on every address
  return fd && ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
}

int free_loopback_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = -1;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  if (fd >= 0) ::close(fd);
  return port;
}

Result<int> pick_ports(std::mt19937_64& rng, int count) {
  std::uniform_int_distribution<int> base(kPortLow, kPortHigh - count);
  for (int tries = 0; tries < 100; ++tries) {
    int b = base(rng);
    bool all = true;
    for (int i = 0; i < count && all; ++i) all = port_free(b + i);
    if (all) return b;
  }
  return fail("pick ports: no {} consecutive free TCP ports in {}-{}", count, kPortLow, kPortHigh);
}

std::uint64_t port_seed() { return (std::uint64_t{std::random_device{}()} << 32) ^ static_cast<std::uint64_t>(::getpid()); }

std::string tail_of_file(const std::string& path, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.size() > max_bytes ? "..." + text.substr(text.size() - max_bytes) : text;
}

}  // namespace cmax::test
