#pragma once
// PCI configuration space as sysfs gives it (/sys/bus/pci/devices/<bdf>/config: 64 bytes to an
// unprivileged reader, 256 for conventional PCI, 4096 for PCI Express read as root): the extended
// capability list and the ACS (Access Control Services) control register; and the upstream bridge
// chain of a device from its sysfs path. Pure.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cmax::audit {

/// Where the PCI Express extended capability list starts, and the size of a full PCIe config space.
inline constexpr std::size_t kPciExtCapStart = 0x100;
inline constexpr std::size_t kPciConfigExtendedBytes = 4096;
/// Extended capability IDs (PCIe base spec 7.6 / Linux pci_regs.h PCI_EXT_CAP_ID_*).
inline constexpr std::uint16_t kPciExtCapAer = 0x0001;
inline constexpr std::uint16_t kPciExtCapAcs = 0x000D;

/// True when `config` reaches past the 256-byte conventional space, so extended capabilities
/// are visible (an unprivileged or conventional read is not).
bool has_extended_config(std::string_view config);

/// One extended capability header: ID (bits 0-15), version (16-19), at `offset`.
struct PciExtCap {
  std::uint16_t id = 0;
  std::uint8_t version = 0;
  std::uint16_t offset = 0;
};

/// The extended capability list from 0x100, in list order. Stops (keeping what it found) at the
/// end marker, an all-ones or all-zero header, a next pointer below 0x100 or past the buffer, and
/// a pointer that revisits an offset (a loop). Empty when the buffer does not reach 0x104.
std::vector<PciExtCap> parse_pci_ext_caps(std::string_view config);

/// The ACS Control register (ACS capability + 6), decoded.
struct AcsControl {
  std::uint16_t cap_offset = 0;  ///< where the ACS capability sits in config space
  std::uint16_t raw = 0;
  bool source_validation = false;     ///< SV, bit 0
  bool translation_blocking = false;  ///< TB, bit 1
  bool request_redirect = false;      ///< RR, bit 2: P2P requests sent up to the root complex
  bool completion_redirect = false;   ///< CR, bit 3: P2P completions sent up likewise
  bool upstream_forwarding = false;   ///< UF, bit 4
  bool egress_control = false;        ///< EC, bit 5
  bool direct_translated = false;     ///< DT, bit 6

  /// RR or CR: peer-to-peer traffic below this port detours through the root complex.
  bool redirects_p2p() const { return request_redirect || completion_redirect; }
};

/// The ACS control of a device; nullopt when it has no ACS capability or the buffer is too short
/// to hold it (check has_extended_config to tell the two apart).
std::optional<AcsControl> parse_acs_control(std::string_view config);

/// lspci's spelling of the control bits: "SV+ TB- RR+ CR+ UF+ EC- DT-".
std::string describe_acs(const AcsControl& acs);

/// True for a PCI address "DDDD:BB:DD.F" (hex; the domain may be longer than 4 digits, as VMD
/// domains "10000:00:00.0" are).
bool is_pci_address(std::string_view s);

/// The PCI addresses above a device in its sysfs device path, outermost first, without the device
/// itself: "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0" ->
/// {"0000:00:01.0", "0000:01:00.0", "0000:02:00.0"}. Host bridges ("pci0000:00") are not devices
/// and are skipped.
std::vector<std::string> pci_upstream_chain(std::string_view device_path);

/// The absolute path a symlink at `link_path` points to, resolved lexically: a relative `target`
/// ("../../../devices/pci0000:00/0000:00:01.0") is taken from the link's directory and "." and
/// ".." are folded; an absolute target is only normalised. Never reads the filesystem.
std::string resolve_link_target(std::string_view link_path, std::string_view target);

}  // namespace cmax::audit
