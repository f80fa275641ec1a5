#include "sla/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/text_file.h"
#include "core/unique_fd.h"

namespace cmax::sla {

Result<MappedFile> MappedFile::open(const std::string& path, std::size_t max_bytes) {
  const int raw = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (raw < 0) return fail("open {}: {}; check the path", path, std::strerror(errno));
  core::UniqueFd fd(raw);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return fail("stat {}: {}", path, std::strerror(errno));
  MappedFile f;
  if (!S_ISREG(st.st_mode)) {
    auto text = core::read_text_file(path, max_bytes, "; split the events by time and run once per part");
    if (!text) return Unexpected<Error>{text.error()};
    f.owned_ = std::move(*text);
    return f;
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size > max_bytes)
    return fail("read {}: larger than {} MiB; split the events by time and run once per part", path, max_bytes >> 20);
  if (size == 0) return f;
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd.get(), 0);
  if (p == MAP_FAILED) return fail("map {}: {}", path, std::strerror(errno));
  ::madvise(p, size, MADV_SEQUENTIAL);
  f.map_ = p;
  f.size_ = size;
  return f;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : map_(std::exchange(other.map_, nullptr)), size_(std::exchange(other.size_, 0)), owned_(std::move(other.owned_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (map_) ::munmap(map_, size_);
    map_ = std::exchange(other.map_, nullptr);
    size_ = std::exchange(other.size_, 0);
    owned_ = std::move(other.owned_);
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (map_) ::munmap(map_, size_);
}

}  // namespace cmax::sla
