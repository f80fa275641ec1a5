#include "core/host.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/unique_fd.h"

namespace cmax::core {
namespace {

std::string normalize_root(std::string root) {
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  return root.empty() ? std::string("/") : root;
}

}  // namespace

std::string join_path(std::string_view a, std::string_view b) {
  std::string out(a);
  while (!out.empty() && out.back() == '/') out.pop_back();
  while (!b.empty() && b.front() == '/') b.remove_prefix(1);
  out += '/';
  out += b;
  return out;
}

HostRoot::HostRoot(std::string root) : root_(normalize_root(std::move(root))), live_(root_ == "/") {}

std::string HostRoot::resolve(std::string_view host_path) const {
  if (live_) return std::string(host_path);
  return join_path(root_, host_path);
}

Result<int> HostRoot::open_in_root(std::string_view host_path, int flags) const {
  std::string path(host_path);
  if (live_) {
    int fd = ::open(path.c_str(), flags | O_CLOEXEC);
    if (fd < 0) return fail("open {}: {}", path, std::strerror(errno));
    return fd;
  }
  UniqueFd root(::open(root_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root) return fail("open host root {}: {}", root_, std::strerror(errno));
  open_how how{};
  how.flags = static_cast<std::uint64_t>(flags | O_CLOEXEC);
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  std::string_view rel_view = host_path;
  while (!rel_view.empty() && rel_view.front() == '/') rel_view.remove_prefix(1);
  const std::string rel = rel_view.empty() ? std::string(".") : std::string(rel_view);
  long fd = ::syscall(SYS_openat2, root.get(), rel.c_str(), &how, sizeof(how));
  if (fd < 0 && errno == ENOSYS) fd = ::openat(root.get(), rel.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return fail("open {} (in host root {}): {}", path, root_, std::strerror(errno));
  return static_cast<int>(fd);
}

Result<std::string> HostRoot::read_prefix(std::string_view host_path, std::size_t max_bytes) const {
  // O_NONBLOCK so that a FIFO planted where a file should be cannot block the audit.
  auto fd_or = open_in_root(host_path, O_RDONLY | O_NONBLOCK);
  if (!fd_or) return Unexpected<Error>{fd_or.error()};
  UniqueFd fd(*fd_or);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return fail("stat {}: {}", host_path, std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return fail("read {}: not a regular file", host_path);
  std::string out;
  out.resize(std::min<std::size_t>(max_bytes, st.st_size > 0 ? st.st_size + 1 : 4096));
  std::size_t used = 0;
  while (used < max_bytes) {
    if (used == out.size()) out.resize(std::min(max_bytes, out.size() * 2));
    ssize_t n = ::read(fd.get(), out.data() + used, out.size() - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("read {}: {}", host_path, std::strerror(errno));
    }
    if (n == 0) break;
    used += static_cast<std::size_t>(n);
  }
  out.resize(used);
  return out;
}

Result<std::string> HostRoot::read_file(std::string_view host_path, std::size_t max_bytes) const {
  auto data = read_prefix(host_path, max_bytes + 1);
  if (!data) return data;
  if (data->size() > max_bytes)
    return fail("read {}: file is larger than {} bytes; refusing to parse a partial file", host_path,
                max_bytes);
  return data;
}

bool HostRoot::exists(std::string_view host_path) const {
  auto fd = open_in_root(host_path, O_PATH);
  if (!fd) return false;
  ::close(*fd);
  return true;
}

Result<std::vector<DirEntry>> HostRoot::list_dir(std::string_view host_path) const {
  auto fd_or = open_in_root(host_path, O_RDONLY | O_DIRECTORY);
  if (!fd_or) return Unexpected<Error>{fd_or.error()};
  DIR* dir = ::fdopendir(*fd_or);
  if (dir == nullptr) {
    ::close(*fd_or);
    return fail("list {}: {}", host_path, std::strerror(errno));
  }
  std::vector<DirEntry> out;
  while (dirent* e = ::readdir(dir)) {
    std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    DirEntry entry{std::string(name), e->d_type == DT_DIR, e->d_type == DT_LNK};
    out.push_back(std::move(entry));
  }
  ::closedir(dir);
  std::sort(out.begin(), out.end(), [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  return out;
}

Result<std::string> HostRoot::read_link(std::string_view host_path) const {
  std::string path = resolve(host_path);
  std::string buf(4096, '\0');
  ssize_t n = ::readlink(path.c_str(), buf.data(), buf.size());
  if (n < 0) return fail("readlink {}: {}", host_path, std::strerror(errno));
  buf.resize(static_cast<std::size_t>(n));
  return buf;
}

}  // namespace cmax::core
