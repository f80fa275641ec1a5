#include "support/yaml_json.h"

#include <cerrno>
#include <cstdlib>
#include <string>

namespace cmax::test {
namespace {

using json = nlohmann::json;

// A YAML scalar as Kubernetes' YAML decoder would type it: quoted is a string; plain true/false,
// integers, floats and null are typed; the rest is a string.
json scalar(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (n.Tag() == "!") return s;
  if (s == "true" || s == "True") return true;
  if (s == "false" || s == "False") return false;
  if (s == "null" || s == "~" || s.empty()) return nullptr;
  char* end = nullptr;
  errno = 0;
  long long i = std::strtoll(s.c_str(), &end, 10);
  if (errno == 0 && end && *end == '\0') return i;
  double d = std::strtod(s.c_str(), &end);
  if (end && *end == '\0' && s.find_first_of("0123456789") != std::string::npos) return d;
  return s;
}

}  // namespace

json yaml_to_json(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      json o = json::object();
      for (const auto& kv : n) o[kv.first.Scalar()] = yaml_to_json(kv.second);
      return o;
    }
    case YAML::NodeType::Sequence: {
      json a = json::array();
      for (const auto& v : n) a.push_back(yaml_to_json(v));
      return a;
    }
    case YAML::NodeType::Scalar:
      return scalar(n);
    default:
      return nullptr;
  }
}

}  // namespace cmax::test
