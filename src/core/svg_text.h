#pragma once
// Helpers shared by the SVG chart writers (nccl charts, endpoint compare charts): XML text that
// is always well-formed, and tick steps for a linear axis. Pure.

#include <string>
#include <string_view>

namespace cmax::core {

/// Appends `text` escaped for XML text or an attribute value: & < > " ' as entities, control
/// characters (not allowed in XML 1.0) as spaces, bytes that are not valid UTF-8 as U+FFFD.
void append_xml_text(std::string& out, std::string_view text);
/// The same, returned.
std::string xml_text(std::string_view text);

/// A tick step of 1, 2 or 5 times a power of ten that cuts [0, top] into at most ~8 intervals;
/// `top` > 0.
double nice_tick_step(double top);

}  // namespace cmax::core
