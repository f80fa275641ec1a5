#pragma once
// A minimal XML well-formedness check for the SVG the chart writers produce (nccl charts, endpoint
// compare charts); shared by their tests.

#include <string>
#include <string_view>

namespace cmax::test {

/// One root, tags balanced and properly nested, attribute values quoted, no '<' or bare '&' in text
/// or attribute values. Returns "" when well-formed, else what is wrong and where.
std::string xml_problem(std::string_view x);

}  // namespace cmax::test
