// libFuzzer target: the version parser and both orderings. Invariants checked on every input:
// compare(a, a) == 0, antisymmetry, train membership implies parts prefix, a package's upstream
// carries no epoch and orders antisymmetrically, no crash on any bytes.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/version.h"

namespace {

int sign(int x) { return (x > 0) - (x < 0); }

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  // Split the input in two versions at the first newline (or the middle).
  auto nl = input.find('\n');
  std::string_view a = nl == std::string_view::npos ? input.substr(0, size / 2) : input.substr(0, nl);
  std::string_view b = nl == std::string_view::npos ? input.substr(size / 2) : input.substr(nl + 1);

  auto va = cmax::core::parse_version(a);
  auto vb = cmax::core::parse_version(b);
  if (va) {
    check(cmax::core::compare_versions(*va, *va) == 0);
    check(!va->parts.empty());
    check(cmax::core::in_train(*va, *va));
  }
  if (va && vb) {
    int ab = cmax::core::compare_versions(*va, *vb);
    int ba = cmax::core::compare_versions(*vb, *va);
    check(sign(ab) == -sign(ba));
    (void)cmax::core::in_train(*va, *vb);
  }
  // A package's upstream: no epoch, a text inside the input, and the same order as dpkg's
  // between two packages of one epoch and one revision.
  const auto pa = cmax::core::split_package_version(a);
  check(pa.upstream.size() <= a.size() && pa.revision.size() <= a.size());
  if (auto ua = cmax::core::parse_package_upstream(a)) {
    check(ua->epoch == 0);
    check(cmax::core::compare_versions(*ua, *ua) == 0);
    if (auto ub = cmax::core::parse_package_upstream(b)) {
      check(sign(cmax::core::compare_versions(*ua, *ub)) == -sign(cmax::core::compare_versions(*ub, *ua)));
    }
  }
  check(cmax::core::dpkg_compare(a, a) == 0);
  check(sign(cmax::core::dpkg_compare(a, b)) == -sign(cmax::core::dpkg_compare(b, a)));
  (void)cmax::core::find_version_token(input);
  (void)cmax::core::find_version_token(input, "version");
  return 0;
}
