#include "drill/inject.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>

#include "core/unique_fd.h"

namespace cmax::drill {

Result<void> inject_kmsg(const std::vector<KmsgLine>& lines, const std::string& kmsg_path,
                         std::chrono::steady_clock::time_point t0, std::vector<Injected>& done) {
  core::UniqueFd fd(::open(kmsg_path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return fail("open {} for writing: {}: run the drill as root on the target node", kmsg_path, std::strerror(errno));
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto& l = lines[i];
    if (l.level < 0 || l.level > 7) return fail("line {}: kernel level {} is not 0-7", i + 1, l.level);
    if (l.after_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(l.after_ms));
    std::string record = fmt::format("<{}>{}\n", l.level, l.text);
    const auto now = std::chrono::steady_clock::now();
    const double wall = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    ssize_t n = ::write(fd.get(), record.data(), record.size());
    if (n != static_cast<ssize_t>(record.size()))
      return fail("write line {} to {}: {}", i + 1, kmsg_path, n < 0 ? std::strerror(errno) : "short write");
    done.push_back(Injected{wall, std::chrono::duration_cast<std::chrono::microseconds>(now - t0).count(), l.level, l.text});
  }
  return ok();
}

DevkmsgGuard DevkmsgGuard::raise(const std::string& sysctl) {
  DevkmsgGuard g;
  g.sysctl_ = sysctl;
  std::ifstream in(sysctl);
  std::string mode;
  in >> mode;
  if (mode != "ratelimit") {
    g.note_ = mode.empty() ? "printk_devkmsg unreadable: left alone" : "printk_devkmsg is " + mode + ": left alone";
    return g;
  }
  std::ofstream out(sysctl);
  out << "on\n";
  out.flush();
  if (!out) {
    g.note_ = "printk_devkmsg is ratelimit and could not be set on: lines past 10 per 5 s may be dropped";
    return g;
  }
  g.old_ = mode;
  g.note_ = "printk_devkmsg was ratelimit: set on for the drill's writes, put back after";
  return g;
}

DevkmsgGuard::~DevkmsgGuard() {
  if (old_.empty()) return;
  std::ofstream out(sysctl_);
  out << old_ << "\n";
}

std::string devkmsg_ratelimit_warning(std::size_t lines, const std::string& sysctl) {
  std::ifstream in(sysctl);
  std::string mode;
  in >> mode;
  if (mode == "on" || lines <= 10) return "";
  return fmt::format("{} is \"{}\": the kernel drops userspace writes past 10 per 5 s, and this drill writes {} lines "
                     "(echo on > {} for the drill, and back after)",
                     sysctl, mode.empty() ? "unreadable" : mode, lines, sysctl);
}

}  // namespace cmax::drill
