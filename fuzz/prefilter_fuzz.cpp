// libFuzzer target: the prefilter, differentially. Every instruction set this machine has must
// return exactly what the plain definition (find_lines_naive) returns. The first byte picks the
// literal set: even, the classifier's anchors; odd, literals taken from the input itself (the
// bytes up to the first '\0', split at '\x01'), so the fuzzer also explores the bucket tables.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "signals/classify.h"
#include "signals/prefilter.h"

using cmax::signals::Candidate;
using cmax::signals::Isa;
using cmax::signals::Prefilter;

namespace {

bool same(const std::vector<Candidate>& a, const std::vector<Candidate>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].begin != b[i].begin || a[i].end != b[i].end || a[i].literals != b[i].literals) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<std::string_view> literals;
  std::string_view text = in;
  if (data[0] % 2 == 0) {
    auto a = cmax::signals::anchor_literals();
    literals.assign(a.begin(), a.end());
  } else {
    auto nul = in.find('\0');
    if (nul == std::string_view::npos) return 0;
    std::string_view spec = in.substr(0, nul);
    text = in.substr(nul + 1);
    while (!spec.empty() && literals.size() < Prefilter::kMaxLiterals) {
      auto sep = spec.find('\x01');
      std::string_view lit = spec.substr(0, sep);
      if (!lit.empty() && lit.find('\n') == std::string_view::npos) literals.push_back(lit);
      if (sep == std::string_view::npos) break;
      spec.remove_prefix(sep + 1);
    }
    if (literals.empty()) return 0;
  }
  std::vector<Candidate> want;
  Prefilter::find_lines_naive(literals, text, want);
  for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
    if (isa > cmax::signals::best_isa()) break;
    auto p = Prefilter::create(literals, isa);
    if (!p) std::abort();
    std::vector<Candidate> got;
    p->find_lines(text, got);
    if (!same(got, want)) std::abort();
  }
  return 0;
}
