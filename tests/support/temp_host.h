#pragma once
// A throwaway host tree for tests: write files at host paths, then audit it through a HostRoot.
// Removed on destruction.

#include <filesystem>
#include <string>
#include <string_view>

#include "audit/check.h"
#include "audit/collectors/collector.h"
#include "audit/facts.h"
#include "audit/floors.h"
#include "core/clock.h"
#include "core/host.h"

namespace cmax::test {

class TempHost {
 public:
  TempHost();
  ~TempHost();
  TempHost(const TempHost&) = delete;
  TempHost& operator=(const TempHost&) = delete;

  /// Writes `content` at host path `path` ("/etc/nccl.conf"), creating parent directories.
  void write(std::string_view path, std::string_view content);
  void mkdir(std::string_view path);
  void symlink(std::string_view target, std::string_view link_path);
  /// Copies a file from the source tree (e.g. tests/fixtures/...) to host path `path`.
  void copy_from(const std::filesystem::path& source, std::string_view path);
  const std::filesystem::path& dir() const { return dir_; }
  core::HostRoot host() const { return core::HostRoot(dir_.string()); }

 private:
  std::filesystem::path dir_;
};

/// Facts from running one collector against a host root (PATH empty: no tools found on this machine).
audit::Facts collect_with(const core::HostRoot& host, audit::CollectFn fn);

/// The built-in floors (aborts the test on error).
const audit::Floors& test_floors();

/// Runs the check with `id` from the table against `facts`.
audit::Finding run_check_by_id(std::string_view id, const audit::Facts& facts,
                               audit::Harness harness = audit::kStandalone);

/// The directory of checked-in fixtures (tests/fixtures).
std::filesystem::path fixtures_dir();
/// ../shared/data next to the checkout, where the project's real public samples live.
std::filesystem::path shared_data_dir();

}  // namespace cmax::test
