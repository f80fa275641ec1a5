#include "support/kmsg.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <random>

#include <fmt/format.h>

namespace cmax::test {

bool write_kmsg(const std::string& line) {
  int fd = ::open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ::close(fd);
  return ok;
}

std::string unique_pci() {
  std::random_device rd;
  return fmt::format("{:04x}:{:02x}:00", 0x100 + rd() % 0xe00, rd() % 256);
}

DevkmsgUnlimited::DevkmsgUnlimited() {
  std::ifstream in("/proc/sys/kernel/printk_devkmsg");
  std::getline(in, old_);
  std::ofstream("/proc/sys/kernel/printk_devkmsg") << "on\n";
}

DevkmsgUnlimited::~DevkmsgUnlimited() {
  if (!old_.empty()) std::ofstream("/proc/sys/kernel/printk_devkmsg") << old_ << "\n";
}

}  // namespace cmax::test
