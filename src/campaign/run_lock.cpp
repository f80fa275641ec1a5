#include "campaign/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/strings.h"

namespace cmax::campaign {

Result<RunLock> RunLock::acquire(const std::string& dir, const std::string& holder) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return fail("create run directory {}: {}", dir, ec.message());
  const std::string path = dir + "/" + kRunLockFile;
  core::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!fd) return fail("open {}: {}; the run directory must be writable", path, std::strerror(errno));
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) return fail("lock {}: {}", path, std::strerror(errno));
    char buf[512] = {};
    const ssize_t n = ::pread(fd.get(), buf, sizeof buf - 1, 0);
    const std::string who = n > 0 ? std::string(core::trim(std::string_view(buf, static_cast<std::size_t>(n))))
                                  : std::string("another process (it has not said who yet)");
    return fail("{} is in use by another cmax run ({}): wait for it to end or stop it (Ctrl-C), then `cmax run "
                "--resume {}`; or give this run its own --out",
                dir, who, dir);
  }
  // Ours: say who holds it (a reader sees the whole line or the old one, never a mix: it is short
  // and written at offset 0 after the truncate).
  if (::ftruncate(fd.get(), 0) != 0 || ::pwrite(fd.get(), holder.data(), holder.size(), 0) < 0)
    return fail("write {}: {}", path, std::strerror(errno));
  return RunLock(std::move(fd));
}

}  // namespace cmax::campaign
