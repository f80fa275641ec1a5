#include "core/text_file.h"

#include <cerrno>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace cmax::core {

Result<std::string> read_text_file(const std::string& path, std::size_t max_bytes,
                                   std::string_view too_large_hint) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail("open {}: {}", path, std::strerror(errno));
  std::string text;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<std::size_t>(in.gcount()));
    if (text.size() > max_bytes) return fail("read {}: larger than {} MiB{}", path, max_bytes >> 20, too_large_hint);
  }
  if (in.bad()) return fail("read {}: {}", path, std::strerror(errno));
  return text;
}

Result<void> write_text_file_atomic(const std::string& path, std::string_view text) {
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return fail("write {}: cannot create the file: {}", tmp, std::strerror(errno));
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      return fail("write {}: write failed (disk full?)", tmp);
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    return fail("rename {} to {}: {}", tmp, path, ec.message());
  }
  return {};
}

}  // namespace cmax::core
