#include "core/svg_text.h"

#include <cmath>

#include "core/json_text.h"

namespace cmax::core {

void append_xml_text(std::string& out, std::string_view text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(c) >= 0x80) {
          // A label may be any bytes (a directory name, a log line); the document stays UTF-8.
          const std::size_t n = utf8_sequence_length(text, i);
          if (n == 0) {
            out += "\xEF\xBF\xBD";
          } else {
            out.append(text.substr(i, n));
            i += n - 1;
          }
        } else if (static_cast<unsigned char>(c) < 0x20) {
          out += ' ';
        } else {
          out += c;
        }
    }
  }
}

std::string xml_text(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  append_xml_text(out, text);
  return out;
}

double nice_tick_step(double top) {
  const double raw = top / 6;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) return m * mag;
  return 10 * mag;
}

}  // namespace cmax::core
