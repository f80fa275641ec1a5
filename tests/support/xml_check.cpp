#include "support/xml_check.h"

#include <string>
#include <vector>

namespace cmax::test {

std::string xml_problem(std::string_view x) {
  std::vector<std::string> open;
  std::size_t i = 0;
  bool root_seen = false;
  auto check_entities = [](std::string_view text) -> bool {
    for (std::size_t k = 0; k < text.size(); ++k) {
      if (text[k] == '<') return false;
      if (text[k] != '&') continue;
      auto semi = text.find(';', k);
      if (semi == std::string_view::npos) return false;
      auto ent = text.substr(k + 1, semi - k - 1);
      if (ent != "amp" && ent != "lt" && ent != "gt" && ent != "quot" && ent != "apos")
        return false;
    }
    return true;
  };
  while (i < x.size()) {
    auto lt = x.find('<', i);
    std::string_view text = x.substr(i, lt == std::string_view::npos ? x.size() - i : lt - i);
    if (!check_entities(text)) return "bad text near offset " + std::to_string(i);
    if (open.empty() && text.find_first_not_of(" \n\r\t") != std::string_view::npos)
      return "text outside the root at " + std::to_string(i);
    if (lt == std::string_view::npos) break;
    if (x.substr(lt, 5) == "<?xml") {
      auto end = x.find("?>", lt);
      if (end == std::string_view::npos || lt != 0) return "bad XML declaration";
      i = end + 2;
      continue;
    }
    // Find the tag's end, skipping quoted attribute values.
    std::size_t k = lt + 1;
    char quote = 0;
    for (; k < x.size(); ++k) {
      if (quote) {
        if (x[k] == quote)
          quote = 0;
        else if (x[k] == '<')
          return "'<' in an attribute at " + std::to_string(k);
      } else if (x[k] == '"' || x[k] == '\'') {
        quote = x[k];
      } else if (x[k] == '>') {
        break;
      }
    }
    if (k >= x.size()) return "unterminated tag at " + std::to_string(lt);
    std::string_view tag = x.substr(lt + 1, k - lt - 1);
    if (!check_entities(tag)) return "bad entity in a tag at " + std::to_string(lt);
    if (tag.starts_with("/")) {
      std::string name(tag.substr(1));
      if (open.empty() || open.back() != name)
        return "closing </" + name + "> does not match at " + std::to_string(lt);
      open.pop_back();
    } else {
      bool self_closing = tag.ends_with("/");
      std::string name(tag.substr(0, tag.find_first_of(" \n/")));
      if (name.empty()) return "empty tag name at " + std::to_string(lt);
      if (open.empty()) {
        if (root_seen) return "a second root element at " + std::to_string(lt);
        root_seen = true;
      }
      if (!self_closing) open.push_back(name);
    }
    i = k + 1;
  }
  if (!open.empty()) return "<" + open.back() + "> is never closed";
  if (!root_seen) return "no root element";
  return "";
}

}  // namespace cmax::test
