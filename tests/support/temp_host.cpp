#include "support/temp_host.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace cmax::test {
namespace {

std::filesystem::path under(const std::filesystem::path& root, std::string_view host_path) {
  while (!host_path.empty() && host_path.front() == '/') host_path.remove_prefix(1);
  return root / std::filesystem::path(std::string(host_path));
}

}  // namespace

TempHost::TempHost() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "cmax-host-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
}

TempHost::~TempHost() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void TempHost::write(std::string_view path, std::string_view content) {
  auto p = under(dir_, path);
  std::filesystem::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
}

void TempHost::mkdir(std::string_view path) { std::filesystem::create_directories(under(dir_, path)); }

void TempHost::symlink(std::string_view target, std::string_view link_path) {
  auto p = under(dir_, link_path);
  std::filesystem::create_directories(p.parent_path());
  std::filesystem::create_symlink(std::string(target), p);
}

void TempHost::copy_from(const std::filesystem::path& source, std::string_view path) {
  auto p = under(dir_, path);
  std::filesystem::create_directories(p.parent_path());
  std::filesystem::copy_file(source, p, std::filesystem::copy_options::overwrite_existing);
}

audit::Facts collect_with(const core::HostRoot& host, audit::CollectFn fn) {
  audit::CollectContext ctx{host, std::chrono::milliseconds(2000), std::string()};
  audit::Facts facts;
  fn(ctx, facts);
  return facts;
}

const audit::Floors& test_floors() {
  static const audit::Floors floors = [] {
    auto f = audit::builtin_floors();
    if (!f) throw std::runtime_error(f.error().message);
    return std::move(*f);
  }();
  return floors;
}

audit::Finding run_check_by_id(std::string_view id, const audit::Facts& facts, audit::Harness harness) {
  static core::FixedClock clock(std::chrono::sys_days(std::chrono::year(2026) / 12 / 2));
  for (const auto& c : audit::all_checks()) {
    if (c.id != id) continue;
    audit::CheckContext ctx{facts, test_floors(), harness, clock};
    return audit::run_check(c, ctx);
  }
  throw std::runtime_error("no check " + std::string(id));
}

std::filesystem::path fixtures_dir() { return std::filesystem::path(CMAX_SOURCE_DIR) / "tests" / "fixtures"; }

std::filesystem::path shared_data_dir() {
  return std::filesystem::path(CMAX_SOURCE_DIR).parent_path() / "shared" / "data";
}

}  // namespace cmax::test
