// hang_fs: an empty FUSE filesystem (one root directory) whose getattr and statfs do not return
// while a control file exists, and answer normally otherwise. A process that stats the mount while
// it hangs waits in the kernel for the daemon's reply, as on a dead NFS server, and a SIGKILL does
// not end it once the daemon has taken the request (fs/fuse/dev.c request_wait_answer).
//
// Usage: hang_fs CONTROL_FILE MOUNTPOINT [fuse options...]   (e.g. -f -s for foreground,
// single-threaded). CONTROL_FILE is outside the mount; create it to hang, remove it to answer.

#define FUSE_USE_VERSION 31

#include <fuse.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace {

const char* g_control = nullptr;

// Polls rather than blocking for good, so removing the control file ends every hang.
void hang_while_control_exists() {
  while (::access(g_control, F_OK) == 0) {
    timespec pause{0, 20 * 1000 * 1000};
    ::nanosleep(&pause, nullptr);
  }
}

void* hang_init(fuse_conn_info* /*conn*/, fuse_config* cfg) {
  // No attribute or entry caching: every stat reaches getattr, so a hang is seen at once.
  cfg->attr_timeout = 0;
  cfg->entry_timeout = 0;
  cfg->negative_timeout = 0;
  return nullptr;
}

int hang_getattr(const char* path, struct stat* st, fuse_file_info* /*fi*/) {
  hang_while_control_exists();
  if (std::strcmp(path, "/") != 0) return -ENOENT;
  std::memset(st, 0, sizeof *st);
  st->st_mode = S_IFDIR | 0755;
  st->st_nlink = 2;
  st->st_uid = ::getuid();
  st->st_gid = ::getgid();
  return 0;
}

int hang_statfs(const char* /*path*/, struct statvfs* sv) {
  hang_while_control_exists();
  std::memset(sv, 0, sizeof *sv);
  sv->f_bsize = 4096;
  sv->f_frsize = 4096;
  sv->f_blocks = 1024;
  sv->f_bfree = 1024;
  sv->f_bavail = 1024;
  sv->f_files = 16;
  sv->f_ffree = 15;
  sv->f_namemax = 255;
  return 0;
}

int hang_readdir(const char* path, void* buf, fuse_fill_dir_t fill, off_t /*offset*/,
                 fuse_file_info* /*fi*/, fuse_readdir_flags /*flags*/) {
  if (std::strcmp(path, "/") != 0) return -ENOENT;
  fill(buf, ".", nullptr, 0, static_cast<fuse_fill_dir_flags>(0));
  fill(buf, "..", nullptr, 0, static_cast<fuse_fill_dir_flags>(0));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: hang_fs CONTROL_FILE MOUNTPOINT [fuse options...]\n");
    return 2;
  }
  g_control = argv[1];
  fuse_operations ops{};
  ops.init = hang_init;
  ops.getattr = hang_getattr;
  ops.statfs = hang_statfs;
  ops.readdir = hang_readdir;
  // fuse_main sees "hang_fs MOUNTPOINT [options...]".
  argv[1] = argv[0];
  return fuse_main(argc - 1, argv + 1, &ops, nullptr);
}
