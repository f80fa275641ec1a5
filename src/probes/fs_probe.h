#pragma once
// Mount responsiveness: does each configured mount still answer stat, statfs and a readdir?
// Each check runs in a forked child so that a mount which never answers (a dead NFS server, a
// hung FUSE daemon) blocks the child, not the agent. The parent waits on pidfds with one deadline.
//
// What is reported (one open fs_hung per mount at most, closed by fs_ok):
// - fs_hung: the check did not finish within the timeout (subject "stat did not return within
//   5000 ms", code -1), or failed with an errno that says the mount itself is broken:
//   ENOTCONN (a FUSE daemon died), ESTALE, EIO, ETIMEDOUT, EHOSTDOWN and the other transport
//   errors (subject "statfs failed: Transport endpoint is not connected", code = errno).
// - fs_ok: a check succeeded after fs_hung.
// - A path that does not exist or cannot be reached for a local reason (ENOENT, ENOTDIR, EACCES,
//   EPERM, ELOOP, ENAMETOOLONG) is a configuration error, not a fault of the node: no finding (a
//   typo in the mount list must not drain a node), but status() carries it for the agent to log.
//   Any other errno (ENOMEM, EMFILE, ...) says nothing about the mount and is handled the same way.
//
// A child past its deadline is sent SIGKILL. One blocked in uninterruptible sleep (a FUSE request
// the daemon is still holding, a hard NFS mount) does not die: its pidfd is kept, no new check of
// that mount starts while it lives, and the mount stays hung without a repeated finding. Once it
// exits it is reaped and the next poll checks the mount afresh.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/unique_fd.h"
#include "probes/probe.h"

namespace cmax::probes {

/// The steps of one check, in order. The child writes a step's number to a pipe as it begins it,
/// so a check that times out can be named by the step it was stuck in; it exits 0 when all
/// answered, else with the failing step's errno as its exit code.
enum class FsStep : std::uint8_t { stat = 1, statfs = 2, opendir = 3, readdir = 4 };
/// "stat", "statfs", "opendir", "readdir".
std::string_view to_string(FsStep step);

/// What a failed check's errno says (see the file comment).
enum class FsErrorClass : std::uint8_t {
  broken,        ///< the mount is there but does not work: fs_hung
  config,        ///< the path is wrong or not ours to read: no finding
  inconclusive,  ///< a local resource problem; says nothing about the mount: no finding
};
/// Pure classification of an errno from stat, statfs, open or getdents64.
FsErrorClass classify_fs_errno(int error);

/// Options for FsProbe.
struct FsOptions {
  std::vector<std::string> mounts;          ///< absolute paths of mount points to watch
  std::chrono::milliseconds timeout{5000};  ///< a check older than this is hung
};

/// One mount as the probe sees it now (for logs and metrics).
struct FsMountStatus {
  std::string path;
  bool hung = false;      ///< an fs_hung is open (no fs_ok yet)
  bool checking = false;  ///< a check process is outstanding
  bool stuck = false;     ///< that process is past its deadline and killed, but has not exited
  std::string problem;  ///< the last configuration or local error ("stat: No such file ..."), or ""
};

/// The "fs" probe. A check that outlives one poll's budget carries over to the next poll, so poll()
/// returns within its budget (plus a few milliseconds) whatever the timeout. At most one check
/// process per mount at any time. Not thread-safe; one thread polls. Move-only.
class FsProbe final : public Probe {
 public:
  /// Errors for a relative or duplicate path or a timeout that is not positive. Does no I/O on
  /// the mounts (a stat here could hang).
  static Result<FsProbe> create(FsOptions options);

  FsProbe(FsProbe&&) noexcept = default;
  FsProbe& operator=(FsProbe&&) = delete;
  FsProbe(const FsProbe&) = delete;
  FsProbe& operator=(const FsProbe&) = delete;
  /// Kills outstanding check processes and reaps those that exit within about 100 ms; one stuck
  /// in uninterruptible sleep cannot be waited for without blocking and is left to the kernel.
  ~FsProbe() override;

  std::string_view name() const override { return "fs"; }
  Result<std::vector<Finding>> poll(std::chrono::milliseconds budget) override;

  /// Every configured mount, in configuration order.
  std::vector<FsMountStatus> status() const;
  /// "PATH: PROBLEM" for each mount with a configuration or local error.
  std::vector<std::string> problems() const override;

 private:
  using Clock = std::chrono::steady_clock;

  struct Mount {
    std::string path;
    bool hung = false;
    std::string problem;
    // The outstanding check, when pid > 0.
    pid_t pid = -1;
    core::UniqueFd pidfd;
    core::UniqueFd progress;  ///< read end of the pipe the child writes step numbers to
    Clock::time_point started{};
    bool killed = false;
    FsStep step = FsStep::stat;  ///< the last step the child said it began
  };

  explicit FsProbe(FsOptions options);
  void start_check(Mount& m);
  void read_progress(Mount& m);
  bool try_reap(Mount& m, std::vector<Finding>& findings);
  void time_out(Mount& m, std::vector<Finding>& findings);

  std::chrono::milliseconds timeout_;
  std::vector<Mount> mounts_;
  std::vector<pid_t> orphans_;  ///< killed checks that had no pidfd, reaped without waiting
};

}  // namespace cmax::probes
