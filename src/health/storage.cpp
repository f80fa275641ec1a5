// The storage checks: what a training job asks of its shared filesystem. Each works in a fresh
// directory under ActiveOptions::storage_path and removes it. They have no time limits of their
// own: the runner runs each in a child with one, so a hung filesystem ends the child, not cmax.

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "core/unique_fd.h"
#include "health/active.h"
#include "health/judge.h"

namespace cmax::health {
namespace {

namespace fs = std::filesystem;
using audit::Outcome;
using Clock = std::chrono::steady_clock;
using core::UniqueFd;

constexpr std::size_t kBlockBytes = 1u << 20;
constexpr std::size_t kFsyncBytes = 4096;
constexpr std::size_t kFilesPerDir = 20;
constexpr std::size_t kSubdirsPerPackage = 8;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A failed system call: which step, on what, and errno.
struct IoError {
  std::string step;  // "create seq.bin", "fdatasync fsync.bin"
  int error = 0;
};

IoError io_error(std::string step) { return {std::move(step), errno}; }

// A value or the IoError that prevented it (cmax::Result carries text; these checks need errno).
template <class T>
class Io {
 public:
  Io(T value) : value_(std::move(value)) {}        // NOLINT: implicit, like Result
  Io(IoError error) : error_(std::move(error)) {}  // NOLINT
  explicit operator bool() const { return value_.has_value(); }
  T& operator*() { return *value_; }
  T* operator->() { return &*value_; }
  const IoError& error() const { return error_; }

 private:
  std::optional<T> value_;
  IoError error_;
};
struct Done {};

// A CheckResult for `id` with the table's title and category.
CheckResult start(std::string_view id, const ActiveOptions& o) {
  CheckResult r;
  r.id = std::string(id);
  r.category = audit::Category::storage;
  for (const auto& c : all_active_checks())
    if (c.id == id) {
      r.category = c.category;
      r.title = std::string(c.title);
    }
  r.target = o.storage_path;
  return r;
}

bool not_applicable(CheckResult& r, const ActiveOptions& o) {
  if (!o.storage_path.empty()) return false;
  r.outcome = Outcome::not_applicable;
  r.reason = "no --path given: pass a directory on the shared filesystem to test";
  r.summary = "not run (no --path)";
  return true;
}

// A filesystem that answers with an I/O or network error is a finding; a path we may not write
// or that does not exist is the operator's to fix, and says nothing about the filesystem.
void from_io_error(CheckResult& r, const IoError& e) {
  const char* what = std::strerror(e.error);
  switch (e.error) {
    case ENOENT:
    case ENOTDIR:
    case EACCES:
    case EPERM:
    case EROFS:
    case EDQUOT:
    case ENAMETOOLONG:
    case ELOOP:
      r.outcome = Outcome::unverified;
      r.reason = fmt::format("{} under {}: {}; give a --path on the shared filesystem that this "
                             "user can write to", e.step, r.target, what);
      break;
    case ENOSPC:
      r.outcome = Outcome::fail;
      r.reason = fmt::format("{} under {}: {}: the filesystem is full; jobs cannot write "
                             "checkpoints there", e.step, r.target, what);
      break;
    default:
      r.outcome = Outcome::fail;
      r.reason = fmt::format("{} under {}: {}; check the mount (`mount`, `dmesg`) and the "
                             "filesystem's servers", e.step, r.target, what);
      break;
  }
  r.summary = fmt::format("{}: {}", e.step, what);
}

// A fresh directory under the tested path, removed with everything in it on destruction.
class ScratchDir {
 public:
  static Io<ScratchDir> make(const std::string& parent);
  ScratchDir(ScratchDir&& other) noexcept : path_(std::exchange(other.path_, {})) {}
  ScratchDir& operator=(ScratchDir&&) = delete;
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  explicit ScratchDir(fs::path p) : path_(std::move(p)) {}
  fs::path path_;
};

// The percentile `p` (0..1) of sorted `v` by nearest rank; 0 for an empty v.
double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

// Judges the measurements named in `judged` (the first ones, with table keys) against
// `<id>.<name>`; the worst verdict wins, and its reasons are joined.
void judge_all(CheckResult& r, const Thresholds& t, std::size_t judged) {
  Outcome out = Outcome::pass;
  std::string why;
  for (std::size_t i = 0; i < judged && i < r.measurements.size(); ++i) {
    auto& m = r.measurements[i];
    auto j = judge(m, t, fmt::format("{}.{}", r.id, m.name));
    out = worse(out, j.outcome);
    if (!j.reason.empty()) why += (why.empty() ? "" : "; ") + j.reason;
  }
  r.outcome = out;
  if (out != Outcome::pass)
    r.reason = fmt::format("{} (thresholds: {}; see docs/checks-active.md)", why, t.origin());
}

// Fills `buf` with bytes a compressing or deduplicating filesystem cannot shrink.
void fill_incompressible(std::vector<char>& buf, std::uint64_t seed) {
  std::uint64_t x = seed | 1;
  for (std::size_t i = 0; i + 8 <= buf.size(); i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(buf.data() + i, &x, 8);
  }
}

Io<Done> write_all(int fd, const char* data, std::size_t n, const std::string& what) {
  while (n > 0) {
    ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return io_error("write " + what);
    data += w;
    n -= static_cast<std::size_t>(w);
  }
  return Done{};
}

// Writes `bytes` to a new file `path` in 1 MiB blocks, then fsync; the seconds it took.
Io<double> write_file(const fs::path& path, std::uint64_t bytes) {
  const std::string name = path.filename().string();
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!fd) return io_error("create " + name);
  std::vector<char> block(kBlockBytes);
  fill_incompressible(block, bytes);
  auto t0 = Clock::now();
  for (std::uint64_t done = 0; done < bytes;) {
    auto n = static_cast<std::size_t>(std::min<std::uint64_t>(kBlockBytes, bytes - done));
    // A different block each time, so no layer can deduplicate them.
    std::memcpy(block.data(), &done, sizeof done);
    if (auto w = write_all(fd.get(), block.data(), n, name); !w) return w.error();
    done += n;
  }
  if (::fsync(fd.get()) != 0) return io_error("fsync " + name);
  if (::close(fd.release()) != 0) return io_error("close " + name);
  return seconds_since(t0);
}

std::string gbps_summary(std::uint64_t bytes, double secs, double gbps) {
  return fmt::format("{} MiB in {:.3f} s: {:.2f} GB/s", bytes >> 20, secs, gbps);
}

// The share of `path`'s pages resident in this node's page cache (0..1), or nullopt when the
// filesystem does not let us tell.
std::optional<double> resident_share(int fd, std::uint64_t bytes) {
  if (bytes == 0) return 0.0;
  void* map = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) return std::nullopt;
  const long page = ::sysconf(_SC_PAGESIZE);
  const std::size_t pages = (bytes + static_cast<std::size_t>(page) - 1) / static_cast<std::size_t>(page);
  std::vector<unsigned char> vec(pages);
  std::optional<double> share;
  if (::mincore(map, bytes, vec.data()) == 0) {
    auto resident = std::count_if(vec.begin(), vec.end(), [](unsigned char c) { return c & 1; });
    share = static_cast<double>(resident) / static_cast<double>(pages);
  }
  ::munmap(map, bytes);
  return share;
}

// The directories of the metadata tree in walk order: pkg0, pkg0/sub0..sub7, pkg1, ... as deep
// as a site-packages tree (site-packages/torch/nn/modules/*.py is three levels).
std::vector<fs::path> tree_dirs(std::size_t files) {
  std::size_t count = std::max<std::size_t>(1, (files + kFilesPerDir - 1) / kFilesPerDir);
  std::vector<fs::path> dirs;
  for (std::size_t p = 0; dirs.size() < count; ++p) {
    fs::path pkg = fmt::format("pkg{}", p);
    dirs.push_back(pkg);
    for (std::size_t s = 0; s < kSubdirsPerPackage && dirs.size() < count; ++s)
      dirs.push_back(pkg / fmt::format("sub{}", s) / "modules");
  }
  return dirs;
}

// 1-4 KiB, varied like Python sources.
std::size_t small_file_bytes(std::size_t k) { return 1024 + (k * 769) % 3073; }

Io<Done> build_tree(const fs::path& root, std::size_t files) {
  std::vector<char> data(4096);
  fill_incompressible(data, files);
  auto dirs = tree_dirs(files);
  std::size_t k = 0;
  for (const auto& d : dirs) {
    fs::path dir = root / d;
    // Parents first: pkgN/subM, then pkgN/subM/modules.
    for (const fs::path& p : {dir.parent_path(), dir})
      if (::mkdir(p.c_str(), 0700) != 0 && errno != EEXIST)
        return io_error("mkdir " + p.lexically_relative(root).string());
    for (std::size_t i = 0; i < kFilesPerDir && k < files; ++i, ++k) {
      fs::path f = dir / fmt::format("mod{}.py", i);
      UniqueFd fd(::open(f.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
      if (!fd) return io_error("create " + f.lexically_relative(root).string());
      if (auto w = write_all(fd.get(), data.data(), small_file_bytes(k), f.filename().string()); !w)
        return w.error();
    }
  }
  return Done{};
}

struct Walk {
  std::vector<double> per_file_us;  // stat + open + read + close, each file
  double total_s = 0;               // the whole walk, directory listings included
};

// What `import` does to each module: list the package directory, then stat, open, read and
// close each file in directory order.
Io<Walk> walk_tree(const fs::path& root, std::size_t files) {
  Walk w;
  w.per_file_us.reserve(files);
  std::vector<char> buf(8192);
  auto t0 = Clock::now();
  for (const auto& d : tree_dirs(files)) {
    fs::path dir = root / d;
    DIR* dp = ::opendir(dir.c_str());
    if (!dp) return io_error("opendir " + d.string());
    std::vector<std::string> names;
    errno = 0;
    while (dirent* e = ::readdir(dp)) {
      std::string_view n = e->d_name;
      if (n.ends_with(".py")) names.emplace_back(n);
    }
    int read_errno = errno;
    ::closedir(dp);
    if (read_errno != 0) {
      errno = read_errno;
      return io_error("readdir " + d.string());
    }
    for (const auto& n : names) {
      fs::path f = dir / n;
      auto f0 = Clock::now();
      struct stat st;
      if (::stat(f.c_str(), &st) != 0) return io_error("stat " + n);
      UniqueFd fd(::open(f.c_str(), O_RDONLY | O_CLOEXEC));
      if (!fd) return io_error("open " + n);
      for (;;) {
        ssize_t got = ::read(fd.get(), buf.data(), buf.size());
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return io_error("read " + n);
        if (got == 0) break;
      }
      fd.reset();
      w.per_file_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - f0).count());
    }
  }
  w.total_s = seconds_since(t0);
  return w;
}

}  // namespace

Io<ScratchDir> ScratchDir::make(const std::string& parent) {
  char host[64] = {0};
  if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "node");
  std::string short_host(host);
  short_host = short_host.substr(0, short_host.find('.'));
  // The host name in it, so an operator who finds a leftover knows whose it is.
  std::string tmpl = (fs::path(parent) / fmt::format("cmax-check-{}-XXXXXX", short_host)).string();
  if (::mkdtemp(tmpl.data()) == nullptr)
    return io_error("create a scratch directory");
  return ScratchDir(fs::path(tmpl));
}

CheckResult check_storage_metadata(const ActiveOptions& o, const Thresholds& t) {
  auto r = start("storage.metadata", o);
  if (not_applicable(r, o)) return r;
  auto t0 = Clock::now();
  const std::size_t files = std::max<std::size_t>(o.metadata_files, 1);
  auto dir = ScratchDir::make(o.storage_path);
  if (!dir) {
    from_io_error(r, dir.error());
    return r;
  }
  if (auto b = build_tree(dir->path(), files); !b) {
    from_io_error(r, b.error());
    return r;
  }
  auto walk = walk_tree(dir->path(), files);
  if (!walk) {
    from_io_error(r, walk.error());
    return r;
  }
  auto& us = walk->per_file_us;
  std::sort(us.begin(), us.end());
  const double rate = walk->total_s > 0 ? static_cast<double>(us.size()) / walk->total_s : 0;
  r.measurements = {{"p99_us", percentile(us, 0.99), "us", {}, {}},
                    {"files_per_s", rate, "files/s", {}, {}},
                    {"p50_us", percentile(us, 0.50), "us", {}, {}},
                    {"max_us", us.empty() ? 0 : us.back(), "us", {}, {}},
                    {"files", static_cast<double>(us.size()), "files", {}, {}},
                    {"walk_s", walk->total_s, "s", {}, {}}};
  r.summary = fmt::format("{} files in {} dirs: p50 {:.0f} us, p99 {:.0f} us per file, {:.0f} files/s",
                          us.size(), tree_dirs(files).size(), percentile(us, 0.50),
                          percentile(us, 0.99), rate);
  judge_all(r, t, 2);
  if (r.outcome == Outcome::pass)
    r.reason = "the files were just written from this node, so their data may come from its page "
               "cache; the metadata round trips (stat, open) still reach a networked filesystem";
  r.duration_s = seconds_since(t0);
  return r;
}

CheckResult check_storage_seq_write(const ActiveOptions& o, const Thresholds& t) {
  auto r = start("storage.seq_write", o);
  if (not_applicable(r, o)) return r;
  auto t0 = Clock::now();
  auto dir = ScratchDir::make(o.storage_path);
  if (!dir) {
    from_io_error(r, dir.error());
    return r;
  }
  auto secs = write_file(dir->path() / "seq.bin", o.seq_bytes);
  if (!secs) {
    from_io_error(r, secs.error());
    return r;
  }
  const double gbps = *secs > 0 ? static_cast<double>(o.seq_bytes) / 1e9 / *secs : 0;
  r.measurements = {{"gbps", gbps, "GB/s", {}, {}},
                    {"bytes", static_cast<double>(o.seq_bytes), "bytes", {}, {}},
                    {"seconds", *secs, "s", {}, {}}};
  r.summary = gbps_summary(o.seq_bytes, *secs, gbps) + " (1 MiB writes, then fsync)";
  judge_all(r, t, 1);
  r.duration_s = seconds_since(t0);
  return r;
}

CheckResult check_storage_seq_read(const ActiveOptions& o, const Thresholds& t) {
  auto r = start("storage.seq_read", o);
  if (not_applicable(r, o)) return r;
  auto t0 = Clock::now();
  auto dir = ScratchDir::make(o.storage_path);
  if (!dir) {
    from_io_error(r, dir.error());
    return r;
  }
  const fs::path file = dir->path() / "seq.bin";
  if (auto w = write_file(file, o.seq_bytes); !w) {
    from_io_error(r, w.error());
    return r;
  }
  UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    from_io_error(r, io_error("open seq.bin"));
    return r;
  }
  // Drop the file from this node's page cache, so the read goes to the filesystem.
  int advice = ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED);
  auto cached = resident_share(fd.get(), o.seq_bytes);
  std::vector<char> block(kBlockBytes);
  std::uint64_t got_bytes = 0;
  auto r0 = Clock::now();
  for (;;) {
    ssize_t n = ::read(fd.get(), block.data(), block.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      from_io_error(r, io_error("read seq.bin"));
      return r;
    }
    if (n == 0) break;
    got_bytes += static_cast<std::uint64_t>(n);
  }
  const double secs = seconds_since(r0);
  if (got_bytes != o.seq_bytes) {
    r.outcome = Outcome::fail;
    r.reason = fmt::format("read seq.bin under {}: {} bytes back of the {} written; the "
                           "filesystem lost data or truncated the file", r.target, got_bytes,
                           o.seq_bytes);
    r.summary = fmt::format("short read: {} of {} bytes", got_bytes, o.seq_bytes);
    return r;
  }
  const double gbps = secs > 0 ? static_cast<double>(got_bytes) / 1e9 / secs : 0;
  r.measurements = {{"gbps", gbps, "GB/s", {}, {}},
                    {"bytes", static_cast<double>(got_bytes), "bytes", {}, {}},
                    {"seconds", secs, "s", {}, {}}};
  if (cached) r.measurements.push_back({"cached_fraction", *cached, "fraction", {}, {}});
  r.summary = gbps_summary(got_bytes, secs, gbps) + " (1 MiB reads)";
  judge_all(r, t, 1);
  std::string cache_note;
  if (advice != 0)
    cache_note = fmt::format("posix_fadvise(DONTNEED) failed ({}), so this node's page cache may "
                             "have served the read", std::strerror(advice));
  else if (!cached)
    cache_note = "the filesystem does not say which pages are cached (mincore), so this node's "
                 "page cache may have served part of the read";
  else if (*cached > 0.1)
    cache_note = fmt::format("{:.0f}% of the file was still in this node's page cache after "
                             "posix_fadvise(DONTNEED) (a memory-backed filesystem such as tmpfs "
                             "keeps it), so the number is the cache's, not the filesystem's",
                             *cached * 100);
  else
    cache_note = "the file was dropped from this node's page cache first; a server-side cache "
                 "may still have served it";
  r.reason = r.reason.empty() ? cache_note : r.reason + "; " + cache_note;
  r.duration_s = seconds_since(t0);
  return r;
}

CheckResult check_storage_fsync(const ActiveOptions& o, const Thresholds& t) {
  auto r = start("storage.fsync", o);
  if (not_applicable(r, o)) return r;
  auto t0 = Clock::now();
  auto dir = ScratchDir::make(o.storage_path);
  if (!dir) {
    from_io_error(r, dir.error());
    return r;
  }
  const fs::path file = dir->path() / "fsync.bin";
  UniqueFd fd(::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!fd) {
    from_io_error(r, io_error("create fsync.bin"));
    return r;
  }
  std::vector<char> block(kFsyncBytes);
  fill_incompressible(block, 42);
  const int count = std::max(o.fsync_count, 1);
  std::vector<double> ms;
  ms.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    auto f0 = Clock::now();
    std::memcpy(block.data(), &i, sizeof i);
    ssize_t w = ::pwrite(fd.get(), block.data(), block.size(), static_cast<off_t>(i) * kFsyncBytes);
    if (w != static_cast<ssize_t>(block.size())) {
      if (w >= 0) errno = EIO;
      from_io_error(r, io_error("pwrite fsync.bin"));
      return r;
    }
    if (::fdatasync(fd.get()) != 0) {
      from_io_error(r, io_error("fdatasync fsync.bin"));
      return r;
    }
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - f0).count());
  }
  std::sort(ms.begin(), ms.end());
  r.measurements = {{"p99_ms", percentile(ms, 0.99), "ms", {}, {}},
                    {"p50_ms", percentile(ms, 0.50), "ms", {}, {}},
                    {"max_ms", ms.back(), "ms", {}, {}},
                    {"count", static_cast<double>(ms.size()), "writes", {}, {}}};
  r.summary = fmt::format("{} x 4 KiB pwrite + fdatasync: p50 {:.2f} ms, p99 {:.2f} ms, max {:.2f} ms",
                          ms.size(), percentile(ms, 0.50), percentile(ms, 0.99), ms.back());
  judge_all(r, t, 1);
  r.duration_s = seconds_since(t0);
  return r;
}

}  // namespace cmax::health
