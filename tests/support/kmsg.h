#pragma once
// Writing to this machine's real /dev/kmsg from tests. Tests share the ring buffer with each other
// and with earlier runs: each injects faults on a PCI address of its own (unique_pci) and asserts
// only about that address.

#include <string>

namespace cmax::test {

/// Writes one record ("<3>..." sets the level) to /dev/kmsg; false when it cannot (not root).
bool write_kmsg(const std::string& line);

/// A PCI address ("0a3f:5c:00") unlikely to be used by any other test or earlier run.
std::string unique_pci();

/// Lifts the kernel's limit on userspace writes to /dev/kmsg (10 per 5 s, dropped silently past
/// it) while alive; machine-wide, restored on destruction.
class DevkmsgUnlimited {
 public:
  DevkmsgUnlimited();
  ~DevkmsgUnlimited();
  DevkmsgUnlimited(const DevkmsgUnlimited&) = delete;
  DevkmsgUnlimited& operator=(const DevkmsgUnlimited&) = delete;

 private:
  std::string old_;
};

}  // namespace cmax::test
