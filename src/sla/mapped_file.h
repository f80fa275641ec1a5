#pragma once
// A user-named input file mapped read-only (RAII): a year of events is hundreds of MB, and
// reading it through a stream into a growing string copied it several times. Pipes and other
// files that cannot be mapped are read whole instead.

#include <cstddef>
#include <string>
#include <string_view>

#include "core/result.h"

namespace cmax::sla {

class MappedFile {
 public:
  /// Maps `path`, or reads it when it is not a regular file; an error names the path. Files over
  /// `max_bytes` are an error.
  static Result<MappedFile> open(const std::string& path, std::size_t max_bytes);
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::string_view text() const { return map_ ? std::string_view(static_cast<const char*>(map_), size_) : owned_; }

 private:
  MappedFile() = default;
  void* map_ = nullptr;
  std::size_t size_ = 0;
  std::string owned_;
};

}  // namespace cmax::sla
