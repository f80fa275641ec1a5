#pragma once
// A YAML document as JSON, typed as Kubernetes' (and Helm's) YAML decoder types scalars: quoted is a
// string; plain true/false, integers, floats and null are typed; the rest is a string. For tests
// that compare manifests, charts and API objects.

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

namespace cmax::test {

nlohmann::json yaml_to_json(const YAML::Node& n);

}  // namespace cmax::test
