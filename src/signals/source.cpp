#include "signals/source.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "core/process.h"
#include "core/unique_fd.h"

extern char** environ;

namespace cmax::signals {
namespace {

using core::UniqueFd;

Result<std::size_t> read_fd(int fd, char* buf, std::size_t cap, const std::string& what) {
  for (;;) {
    ssize_t n = ::read(fd, buf, cap);
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno == EINTR) continue;
    return fail("read {}: {}", what, std::strerror(errno));
  }
}

class PlainSource final : public ByteSource {
 public:
  PlainSource(UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {
    ::posix_fadvise(fd_.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  }
  Result<std::size_t> read(char* buf, std::size_t cap) override { return read_fd(fd_.get(), buf, cap, path_); }
  std::string describe() const override { return path_; }

 private:
  UniqueFd fd_;
  std::string path_;
};

class GzipSource final : public ByteSource {
 public:
  GzipSource(gzFile f, std::string path) : f_(f), path_(std::move(path)) { gzbuffer(f_, 1u << 17); }
  ~GzipSource() override { gzclose(f_); }
  Result<std::size_t> read(char* buf, std::size_t cap) override {
    unsigned want = static_cast<unsigned>(std::min<std::size_t>(cap, 1u << 30));
    int n = gzread(f_, buf, want);
    int code = Z_OK;
    if (n == 0) gzerror(f_, &code);  // a stream cut short reads as 0 bytes with Z_BUF_ERROR
    if (n == 0 && code == Z_BUF_ERROR)
      return fail("decompress {}: the gzip stream ends early (truncated file?)", path_);
    if (n < 0) {
      int err_code = 0;
      const char* msg = gzerror(f_, &err_code);
      return fail("decompress {}: {} (truncated or damaged gzip file?)", path_, msg ? msg : "error");
    }
    return static_cast<std::size_t>(n);
  }
  std::string describe() const override { return path_ + " (gzip)"; }

 private:
  gzFile f_;
  std::string path_;
};

class ZstdSource final : public ByteSource {
 public:
  ZstdSource(UniqueFd fd, std::string path)
      : fd_(std::move(fd)), path_(std::move(path)), dctx_(ZSTD_createDCtx()), in_(ZSTD_DStreamInSize()) {}
  ~ZstdSource() override { ZSTD_freeDCtx(dctx_); }
  Result<std::size_t> read(char* buf, std::size_t cap) override {
    ZSTD_outBuffer out{buf, cap, 0};
    while (out.pos == 0) {
      if (in_pos_ == in_len_) {
        auto n = read_fd(fd_.get(), in_.data(), in_.size(), path_);
        if (!n) return n;
        if (*n == 0) {
          if (!frame_done_) return fail("decompress {}: the zstd stream ends mid-frame (truncated file?)", path_);
          return std::size_t{0};
        }
        in_len_ = *n;
        in_pos_ = 0;
      }
      ZSTD_inBuffer in{in_.data(), in_len_, in_pos_};
      std::size_t rc = ZSTD_decompressStream(dctx_, &out, &in);
      in_pos_ = in.pos;
      if (ZSTD_isError(rc)) return fail("decompress {}: {}", path_, ZSTD_getErrorName(rc));
      frame_done_ = rc == 0;
    }
    return out.pos;
  }
  std::string describe() const override { return path_ + " (zstd)"; }

 private:
  UniqueFd fd_;
  std::string path_;
  ZSTD_DCtx* dctx_;
  std::vector<char> in_;
  std::size_t in_len_ = 0, in_pos_ = 0;
  bool frame_done_ = true;
};

class KmsgSource final : public ByteSource {
 public:
  KmsgSource(UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}
  Result<std::size_t> read(char* buf, std::size_t cap) override {
    std::size_t used = 0;
    char rec[8192];
    while (cap - used > sizeof rec) {
      ssize_t n = ::read(fd_.get(), rec, sizeof rec);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EPIPE) {  // records overwritten before we read them: count, carry on
          ++lost_;
          continue;
        }
        if (errno == EAGAIN) break;
        return fail("read {}: {}", path_, std::strerror(errno));
      }
      if (n == 0) break;
      std::size_t len = static_cast<std::size_t>(n);
      const void* nl = std::memchr(rec, '\n', len);
      if (nl) len = static_cast<std::size_t>(static_cast<const char*>(nl) - rec);
      std::memcpy(buf + used, rec, len);
      used += len;
      buf[used++] = '\n';
    }
    return used;
  }
  std::string describe() const override { return path_; }
  std::uint64_t lost() const override { return lost_; }

 private:
  UniqueFd fd_;
  std::string path_;
  std::uint64_t lost_ = 0;
};

class ProcessSource final : public ByteSource {
 public:
  ProcessSource(pid_t pid, UniqueFd out, std::string what, std::chrono::steady_clock::time_point deadline)
      : pid_(pid), out_(std::move(out)), what_(std::move(what)), deadline_(deadline) {}
  ~ProcessSource() override {
    ::kill(-pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  Result<std::size_t> read(char* buf, std::size_t cap) override {
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - std::chrono::steady_clock::now());
      if (left.count() <= 0) return fail("read {}: timed out; narrow --since or raise --timeout", what_);
      pollfd p{out_.get(), POLLIN, 0};
      int r = ::poll(&p, 1, static_cast<int>(left.count()));
      if (r < 0 && errno != EINTR) return fail("read {}: {}", what_, std::strerror(errno));
      if (r > 0) return read_fd(out_.get(), buf, cap, what_);
    }
  }
  std::string describe() const override { return what_; }

 private:
  pid_t pid_;
  UniqueFd out_;
  std::string what_;
  std::chrono::steady_clock::time_point deadline_;
};

}  // namespace

Result<std::unique_ptr<ByteSource>> open_file_source(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd) return fail("open {}: {}", path, std::strerror(errno));
  ::fcntl(fd.get(), F_SETFL, 0);  // non-blocking only for the open (a FIFO must not hang it)
  unsigned char magic[4] = {0, 0, 0, 0};
  ssize_t n = ::pread(fd.get(), magic, sizeof magic, 0);
  if (n < 0) return fail("read {}: {}", path, std::strerror(errno));
  if (n >= 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    gzFile f = gzdopen(fd.release(), "rb");
    if (!f) return fail("open {}: cannot start gzip decompression", path);
    return std::unique_ptr<ByteSource>(new GzipSource(f, path));
  }
  if (n >= 4 && magic[0] == 0x28 && magic[1] == 0xb5 && magic[2] == 0x2f && magic[3] == 0xfd)
    return std::unique_ptr<ByteSource>(new ZstdSource(std::move(fd), path));
  return std::unique_ptr<ByteSource>(new PlainSource(std::move(fd), path));
}

Result<std::unique_ptr<ByteSource>> open_kmsg_source(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return fail("open {}: {}; run as root (or with CAP_SYSLOG), or pass log files", path, std::strerror(errno));
  return std::unique_ptr<ByteSource>(new KmsgSource(std::move(fd), path));
}

Result<std::unique_ptr<ByteSource>> open_process_source(std::vector<std::string> argv, std::chrono::milliseconds timeout) {
  if (argv.empty()) return fail("run process: empty argv");
  auto exe = core::find_program(argv[0]);
  std::string what = core::describe_argv(argv);
  if (!exe) return fail("run {}: {} not found on PATH", what, argv[0]);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return fail("create pipe: {}", std::strerror(errno));
  UniqueFd rd(fds[0]), wr(fds[1]);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, wr.get(), 1);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t at;
  posix_spawnattr_init(&at);
  posix_spawnattr_setpgroup(&at, 0);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
  pid_t pid;
  int rc = ::posix_spawn(&pid, exe->c_str(), &fa, &at, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  if (rc != 0) return fail("run {}: {}", what, std::strerror(rc));
  wr.reset();
  return std::unique_ptr<ByteSource>(
      new ProcessSource(pid, std::move(rd), what, std::chrono::steady_clock::now() + timeout));
}

}  // namespace cmax::signals
