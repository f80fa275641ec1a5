#include "signals/scanner.h"


#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "signals/classify.h"
#include "signals/host_map.h"
#include "signals/prefix.h"

namespace cmax::signals {

Result<Scanner> Scanner::create(Correlator& correlator, ScanOptions options) {
  auto p = Prefilter::create(anchor_literals(), options.isa);
  if (!p) return Unexpected<Error>{p.error()};
  return Scanner(correlator, std::move(*p), options);
}

void Scanner::handle_line(std::string_view line, AnchorSet anchors, const std::string& node) {
  ++stats_.candidate_lines;
  if (line.size() > options_.max_line_bytes) {
    ++stats_.skipped_long;
    return;
  }
  LineInfo info = parse_line_prefix(line, options_.assumed_year);
  const std::string* who = &node;
  std::string host_node;
  // A continuation line (indented, no prefix of its own: the rest of a multi-line printk as
  // dmesg and journalctl print it) belongs to the line before it: its host and time.
  const bool continuation = !line.empty() && (line.front() == ' ' || line.front() == '\t') && info.host.empty() &&
                            !info.has_time && info.rank < 0 && info.kmsg_prio < 0;
  if (continuation && !last_host_.empty()) info.host = last_host_;  // views into members that outlive the line
  if (continuation && last_has_time_) {
    info.stamp = last_stamp_;
    info.time = last_time_;
    info.has_time = true;
    info.wall_clock = last_wall_;
  }
  if (!continuation) {
    last_host_.assign(info.host);
    last_stamp_.assign(info.stamp);
    last_has_time_ = info.has_time;
    last_time_ = info.time;
    last_wall_ = info.wall_clock;
  }
  if (!info.host.empty()) {
    host_node = std::string(info.host);
    who = &host_node;
  } else if (info.rank >= 0) {
    rank_node_ = fmt::format("{}/task{}", node, info.rank);
    who = &rank_node_;
  }
  // A drill's marker is read whatever its origin (drills write from userspace).
  if (anchors & drill_marker_anchor()) {
    if (auto mk = parse_drill_marker(info.message)) {
      ++stats_.drill_markers;
      drill_tracker_.on_marker(*who, *mk);
      return;
    }
  }
  if (options_.kernel_origin_only && info.kmsg_prio >= 0 && (info.kmsg_prio >> 3) != 0) {
    ++stats_.userspace_dropped;
    return;
  }
  auto sig = classify(info.message, anchors);
  if (!sig) {
    if (anchors & context_anchors()) {
      if (auto head = off_bus_head(info.message)) off_bus_head_[*who] = std::string(*head);
    }
    return;
  }
  ++stats_.signals;
  if (sig->kind == Kind::gpu_off_bus && sig->device.empty())
    if (auto it = off_bus_head_.find(*who); it != off_bus_head_.end()) sig->device = it->second;
  std::string mapped;
  if (!options_.live_sys_root.empty() && !sig->device.empty() && !is_pci(sig->device) &&
      (sig->kind == Kind::efa_admin || sig->kind == Kind::ib_health || sig->kind == Kind::mlx5_fatal)) {
    mapped = rdma_device_pci(sig->device, options_.live_sys_root);
    if (!mapped.empty()) sig->device = mapped;
  }
  if (options_.driver_branch > 0) sig->driver_branch = options_.driver_branch;
  if (auto drill = drill_tracker_.match(*who, info.message, info.wall_clock ? info.time : 0)) {
    ++stats_.drill_lines;
    if (drills_ != nullptr) {
      Event e{who, &info, &*sig, line, drill->id};
      (void)drills_->add(e);
    }
    return;
  }
  Event e{who, &info, &*sig, line};
  if (!correlator_->add(e)) ++stats_.ignored;
}

Result<void> Scanner::scan_lines(std::string_view text, const std::string& node) {
  candidates_.clear();
  prefilter_.find_lines(text, candidates_);
  for (const Candidate& c : candidates_) handle_line(text.substr(c.begin, c.end - c.begin), c.literals, node);
  return ok();
}

Result<void> Scanner::scan_text(std::string_view text, const std::string& node) {
  stats_.bytes += text.size();
  return scan_lines(text, node);
}

Result<void> Scanner::scan(ByteSource& source, const std::string& node) {
  std::vector<char> buf(options_.chunk_bytes);
  std::size_t carry = 0;
  bool skipping = false;  // inside a line longer than the buffer: drop bytes to its end
  for (;;) {
    auto n = source.read(buf.data() + carry, buf.size() - carry);
    if (!n) {
      stats_.lost_records += source.lost();
      if (carry > 0 && !skipping) (void)scan_lines(std::string_view(buf.data(), carry), node);
      return Unexpected<Error>{n.error()};
    }
    stats_.bytes += *n;
    std::size_t filled = carry + *n;
    if (*n == 0) {  // end: the last line has no newline
      if (filled > 0 && !skipping) {
        auto r = scan_lines(std::string_view(buf.data(), filled), node);
        if (!r) return r;
      }
      break;
    }
    std::string_view data(buf.data(), filled);
    std::size_t start = 0;
    if (skipping) {
      auto nl = data.find('\n', carry);
      if (nl == std::string_view::npos) {
        carry = 0;
        continue;
      }
      skipping = false;
      start = nl + 1;
    }
    auto last_nl = data.rfind('\n');
    if (last_nl == std::string_view::npos || last_nl < start) {
      if (start == 0 && filled == buf.size()) {  // one line fills the whole buffer: skip it
        ++stats_.overlong_lines;
        skipping = true;
        carry = 0;
      } else {
        std::memmove(buf.data(), buf.data() + start, filled - start);
        carry = filled - start;
      }
      continue;
    }
    auto r = scan_lines(data.substr(start, last_nl + 1 - start), node);
    if (!r) return r;
    carry = filled - (last_nl + 1);
    std::memmove(buf.data(), buf.data() + last_nl + 1, carry);
  }
  stats_.lost_records += source.lost();
  return ok();
}

Result<std::string> Scanner::scan_path(const std::string& path, const std::string& node) {
  auto src = open_file_source(path);
  if (!src) return Unexpected<Error>{src.error()};
  std::string what = (*src)->describe();
  auto r = scan(**src, node);
  if (!r) return Unexpected<Error>{r.error()};
  return what;
}

std::string node_from_path(std::string_view path) {
  auto slash = path.rfind('/');
  std::string_view dir = slash == std::string_view::npos ? std::string_view{} : path.substr(0, slash);
  std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  for (bool changed = true; changed;) {
    changed = false;
    for (std::string_view ext : {".gz", ".zst", ".log", ".txt", ".kern", ".dmesg", ".journal"}) {
      if (name.size() > ext.size() && name.ends_with(ext)) {
        name.remove_suffix(ext.size());
        changed = true;
      }
    }
    // rotated logs: kern.log.1, syslog.2
    // "kern.log.1" -> "kern.log", but never into an address ("10.0.0.5" stays whole).
    auto dot = name.rfind('.');
    bool has_letter = name.substr(0, dot == std::string_view::npos ? 0 : dot).find_first_not_of("0123456789.") !=
                      std::string_view::npos;
    if (dot != std::string_view::npos && dot + 1 < name.size() && has_letter &&
        name.substr(dot + 1).find_first_not_of("0123456789") == std::string_view::npos) {
      name = name.substr(0, dot);
      changed = true;
    }
  }
  for (std::string_view generic : {"kern", "syslog", "messages", "dmesg", "journal", "kernel"}) {
    if (name == generic && !dir.empty()) {
      auto ds = dir.rfind('/');
      return std::string(ds == std::string_view::npos ? dir : dir.substr(ds + 1));
    }
  }
  return std::string(name.empty() ? path : name);
}

}  // namespace cmax::signals
