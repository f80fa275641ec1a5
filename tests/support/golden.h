#pragma once
// A golden input of the tests, as bytes: tests/golden/<format>/<name> in the source tree (empty
// when missing; the test's own assertions then say what was expected).

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

namespace cmax::test {

inline std::string read_golden(std::string_view format, std::string_view name) {
  std::ifstream in(std::filesystem::path(CMAX_SOURCE_DIR) / "tests" / "golden" / format / name, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace cmax::test
