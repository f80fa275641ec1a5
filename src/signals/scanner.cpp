#include "signals/scanner.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "signals/classify.h"
#include "core/unique_fd.h"
#include "signals/prefix.h"

namespace cmax::signals {

Result<Scanner> Scanner::create(Correlator& correlator, ScanOptions options) {
  auto p = Prefilter::create_shared(anchor_literals());
  if (!p) return Unexpected<Error>{p.error()};
  return Scanner(correlator, std::move(*p), options);
}

void Scanner::handle_line(std::string_view line, const std::string& node) {
  ++stats_.candidate_lines;
  if (line.size() > options_.max_line_bytes) {
    ++stats_.skipped_long;
    return;
  }
  LineInfo info = parse_line_prefix(line, options_.assumed_year);
  if (options_.kernel_origin_only && info.kmsg_prio >= 0 && (info.kmsg_prio >> 3) != 0) {
    ++stats_.userspace_dropped;
    return;
  }
  auto sig = classify(info.message);
  if (!sig) return;
  ++stats_.signals;
  const std::string* who = &node;
  std::string host_node;
  if (!info.host.empty()) {
    host_node = std::string(info.host);
    who = &host_node;
  } else if (info.rank >= 0) {
    rank_node_ = fmt::format("{}/task{}", node, info.rank);
    who = &rank_node_;
  }
  Event e{who, &info, &*sig, line};
  if (!correlator_->add(e)) ++stats_.ignored;
}

Result<void> Scanner::scan_lines(std::string_view text, const std::string& node) {
  return prefilter_.scan(text, [&](std::size_t b, std::size_t e) { handle_line(text.substr(b, e - b), node); });
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

Result<void> Scanner::scan_mapped(int fd, std::size_t size, const std::string& path, const std::string& node) {
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (map == MAP_FAILED) return fail("map {}: {}", path, std::strerror(errno));
  ::madvise(map, size, MADV_SEQUENTIAL);
  const char* base = static_cast<const char*>(map);
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t window = std::max(options_.chunk_bytes, page);
  std::size_t off = 0, released = 0;
  Result<void> result = ok();
  while (off < size && result) {
    std::size_t end = std::min(size, off + window);
    std::string_view w(base + off, end - off);
    std::size_t take;
    if (end == size) {
      take = w.size();
    } else {
      auto nl = w.rfind('\n');
      if (nl == std::string_view::npos) {
        // One line longer than the window: skip to its end without reading it.
        const void* next = std::memchr(base + end, '\n', size - end);
        ++stats_.overlong_lines;
        std::size_t skip_to = next ? static_cast<std::size_t>(static_cast<const char*>(next) - base) + 1 : size;
        stats_.bytes += skip_to - off;
        off = skip_to;
        continue;
      }
      take = nl + 1;
    }
    result = scan_lines(w.substr(0, take), node);
    stats_.bytes += take;
    off += take;
    // Give the pages behind us back: a mapped file's pages count as this process's RSS.
    std::size_t done = off / page * page;
    if (done > released) {
      ::madvise(const_cast<char*>(base) + released, done - released, MADV_DONTNEED);
      released = done;
    }
  }
  ::munmap(map, size);
  return result;
}

Result<std::string> Scanner::scan_path(const std::string& path, const std::string& node) {
  {
    core::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (!fd) return fail("open {}: {}", path, std::strerror(errno));
    struct stat st {};
    unsigned char magic[4] = {0, 0, 0, 0};
    if (::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
        ::pread(fd.get(), magic, sizeof magic, 0) >= 0 && !(magic[0] == 0x1f && magic[1] == 0x8b) &&
        !(magic[0] == 0x28 && magic[1] == 0xb5 && magic[2] == 0x2f && magic[3] == 0xfd)) {
      auto r = scan_mapped(fd.get(), static_cast<std::size_t>(st.st_size), path, node);
      if (!r) return Unexpected<Error>{r.error()};
      return path;
    }
  }
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
