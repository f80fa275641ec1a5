#include "core/text_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>

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

}  // namespace cmax::core
