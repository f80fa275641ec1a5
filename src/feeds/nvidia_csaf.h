#pragma once
// NVIDIA security bulletins in CSAF 2.0 (github.com/NVIDIA/product-security): the product tree's
// leaves (architecture branch, product label, version phrase) and which vulnerabilities list them
// as fixed or known_affected. NVIDIA's files carry no remediations and no version ranges; a fix
// is a leaf in product_status.fixed. Pure.

#include <string_view>

#include "core/result.h"
#include "feeds/fix.h"

namespace cmax::feeds {

/// Reads one NVIDIA CSAF document into the fixes of the components cmax floors: the Linux data
/// center driver per branch (label Tesla under Linux(Rnnn); a leaf whose major is not the branch is
/// dropped with a note), CUDA Toolkit, NVIDIA Container Toolkit, DCGM, DCGM Exporter, ConnectX and
/// BlueField firmware per chip (CHIP.RELEASE trains from RELEASE.BUILD fixes) and the BlueField-3
/// VIRTIO-Net controller per line. Other products are ignored.
Result<FeedDocument> read_nvidia_csaf(std::string_view json_text, std::string_view name);

}  // namespace cmax::feeds
