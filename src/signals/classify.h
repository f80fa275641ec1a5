#pragma once
// Kernel messages -> Signals. Pure, no regex: each kind has an anchor literal (used by the
// prefilter to find candidate lines fast) and a hand-written parser for its fields.

#include <optional>
#include <span>
#include <string_view>

#include "signals/signal.h"

namespace cmax::signals {

/// The literals the prefilter looks for. Every line classify() can recognise contains one.
std::span<const std::string_view> anchor_literals();

/// The signal a kernel message (prefixes removed) reports, or nullopt for anything else.
std::optional<Signal> classify(std::string_view message);

/// "0000:3b:00.0" and "0000:3b:00" name the same GPU: the address without its PCI function.
std::string_view pci_without_function(std::string_view pci);
/// True when `s` looks like a PCI address "DDDD:BB:SS[.F]".
bool is_pci(std::string_view s);

}  // namespace cmax::signals
