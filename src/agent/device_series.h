#pragma once
// The per-device series cmaxd exports (metrics.h): fault lines and incidents by kind, code and
// device, counted on every repeat (dcgm-exporter #500: a counter that misses repeats hides a GPU
// that keeps failing), and whether the node is held for an incident on a device, which returns to 0
// when the node is back in service. Written by the agent's detection and action threads, read by the
// metrics server; one mutex, bounded: past kMaxSeries distinct devices new ones fold into "_other".

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace cmax::agent {

struct DeviceKey {
  std::string kind, code, device;
  auto operator<=>(const DeviceKey&) const = default;
};

class DeviceSeries {
 public:
  /// Distinct (kind, code, device) keys kept; further devices count under device "_other".
  static constexpr std::size_t kMaxSeries = 512;

  /// One fault line (or probe finding) that joined an incident; `opened`: it opened the incident.
  void line(const DeviceKey& key, bool opened);
  /// The node is held (or no longer held) for an incident on this device.
  void set_open(std::string_view kind, std::string_view device, bool open);
  /// Every device's incident is over: the node is back in service (resumed by anyone) or cleared.
  void close_all();

  struct Snapshot {
    std::vector<std::pair<DeviceKey, std::uint64_t>> lines, incidents;
    std::vector<std::pair<std::pair<std::string, std::string>, bool>> open;  ///< (kind, device) -> open
  };
  Snapshot snapshot() const;

 private:
  DeviceKey bounded(const DeviceKey& key) const;  // call with mu_ held
  mutable std::mutex mu_;
  std::map<DeviceKey, std::uint64_t> lines_, incidents_;
  std::map<std::pair<std::string, std::string>, bool> open_;
};

/// A label value in the Prometheus text format: backslash, double quote and newline escaped.
std::string escape_label(std::string_view v);

}  // namespace cmax::agent
