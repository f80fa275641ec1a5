#pragma once
// Kernel messages -> Signals. Pure, no regex: each kind has an anchor literal (used by the
// prefilter to find candidate lines fast) and a hand-written parser for its fields.

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "signals/signal.h"

namespace cmax::signals {

/// The literals the prefilter looks for. Every line classify() can recognise contains one.
std::span<const std::string_view> anchor_literals();

/// Which anchor literals a line holds: bit i for anchor_literals()[i].
using AnchorSet = std::uint64_t;

/// The bit of drill_marker.h's kDrillMarker among the anchors.
AnchorSet drill_marker_anchor();

/// Anchors of lines that are context, not signals: the first line of the driver's three-line
/// fallen-off-the-bus message.
AnchorSet context_anchors();
/// "NVRM: The NVIDIA GPU 0000:b3:00.0" (the three-line message's head): the address.
std::optional<std::string_view> off_bus_head(std::string_view message);

/// The signal a kernel message (prefixes removed) reports, or nullopt for anything else.
std::optional<Signal> classify(std::string_view message);
/// The same, faster: `present` must hold (at least) the anchors that occur in `message`, as the
/// prefilter reports them for its line; tests only the branches those anchors allow.
std::optional<Signal> classify(std::string_view message, AnchorSet present);

/// "0000:3b:00.0" and "0000:3b:00" name the same GPU: the address without its PCI function.
std::string_view pci_without_function(std::string_view pci);
/// True when `s` looks like a PCI address "DDDD:BB:SS[.F]".
bool is_pci(std::string_view s);

}  // namespace cmax::signals
