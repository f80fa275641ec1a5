#include "agent/device_series.h"

namespace cmax::agent {

DeviceKey DeviceSeries::bounded(const DeviceKey& key) const {
  if (lines_.count(key) || lines_.size() < kMaxSeries) return key;
  return DeviceKey{key.kind, key.code, "_other"};
}

void DeviceSeries::line(const DeviceKey& key, bool opened) {
  std::lock_guard lock(mu_);
  const DeviceKey k = bounded(key);
  ++lines_[k];
  if (opened) ++incidents_[k];
}

void DeviceSeries::set_open(std::string_view kind, std::string_view device, bool open) {
  std::lock_guard lock(mu_);
  auto k = std::make_pair(std::string(kind), std::string(device));
  if (!open_.count(k) && open_.size() >= kMaxSeries) k.second = "_other";
  open_[k] = open;
}

void DeviceSeries::close_all() {
  std::lock_guard lock(mu_);
  for (auto& [k, open] : open_) open = false;
}

DeviceSeries::Snapshot DeviceSeries::snapshot() const {
  std::lock_guard lock(mu_);
  Snapshot s;
  s.lines.assign(lines_.begin(), lines_.end());
  s.incidents.assign(incidents_.begin(), incidents_.end());
  s.open.assign(open_.begin(), open_.end());
  return s;
}

std::string escape_label(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

}  // namespace cmax::agent
