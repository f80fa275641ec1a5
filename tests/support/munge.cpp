#include "support/munge.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

#include "core/process.h"
#include "core/strings.h"
#include "support/daemon.h"

namespace cmax::test {
namespace {

constexpr const char* kRunDir = "/run/munge";
constexpr const char* kKey = "/etc/munge/munge.key";

// Runs a short command; argv[0] is looked up in sbin too.
Result<core::ProcessResult> run(std::vector<std::string> argv) {
  auto exe = find_system_program(argv[0]);
  if (!exe) return fail("run {}: not found (scripts/setup-deps --test installs munge)", argv[0]);
  argv[0] = *exe;
  return core::run_process({std::move(argv), std::chrono::seconds(5), 1u << 16});
}

// `program` run as user munge, so what it creates is owned by the user munged runs as.
Result<core::ProcessResult> run_as_munge(std::string_view program, std::vector<std::string> args) {
  auto exe = find_system_program(program);
  if (!exe) return fail("run {}: not found (scripts/setup-deps --test installs munge)", program);
  args.insert(args.begin(), {"runuser", "-u", "munge", "--", *exe});
  return run(std::move(args));
}

bool munge_answers() {
  auto r = run({"munge", "-n"});
  return r && r->exit_code == 0 && !r->out.empty();
}

}  // namespace

Result<void> ensure_munged(std::chrono::milliseconds timeout) {
  if (munge_answers()) return ok();
  errno = 0;
  const passwd* pw = ::getpwnam("munge");
  if (pw == nullptr)
    return fail("start munged: no user munge (install munge: scripts/setup-deps --test)");
  if (::mkdir(kRunDir, 0755) != 0 && errno != EEXIST)
    return fail("start munged: mkdir {}: {}", kRunDir, std::strerror(errno));
  if (::chown(kRunDir, pw->pw_uid, pw->pw_gid) != 0 || ::chmod(kRunDir, 0755) != 0)
    return fail("start munged: chown {} to munge: {}", kRunDir, std::strerror(errno));

  std::error_code ec;
  if (!std::filesystem::exists(kKey, ec)) {
    auto key = run_as_munge("mungekey", {"-c"});
    if (!key) return fail("create {}: {}", kKey, key.error().message);
    if (key->exit_code != 0 && !std::filesystem::exists(kKey, ec))
      return fail("create {}: mungekey exited {}: {}", kKey, key->exit_code,
                  core::clip(core::trim(key->err)));
  }

  // munged daemonizes. Its exit status is not checked: a test running beside this one may have
  // started it first, and then this one fails on the lock; `munge -n` decides.
  auto started = run_as_munge("munged", {});
  if (!started) return fail("start munged: {}", started.error().message);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (munge_answers()) return ok();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return fail("start munged: `munge -n` still fails after {} ms; munged said: {}", timeout.count(),
              core::clip(core::trim(started->err)));
}

}  // namespace cmax::test
