#pragma once
// A minimal XML pull scanner and element tree, enough for `nvidia-smi -q -x`: a prolog
// (`<?xml ...?>`), a DOCTYPE, comments, CDATA, elements with quoted attributes, self-closing tags,
// and text with the five predefined entities and numeric character references. No namespaces, no
// DTD entities, no validation. Nesting is tracked on an explicit stack capped at `max_depth`, so
// hostile input cannot recurse or grow the stack without bound; every malformed input is an
// error naming the line and byte offset. Pure: string_view in, values out.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"

namespace cmax::gputools {

/// The default nesting cap: nvidia-smi's deepest element is about 8 levels down.
inline constexpr std::size_t kXmlMaxDepth = 64;

/// One step of the scan. For `open`, `name` and `attributes`; for `close`, `name`; for `text`,
/// `text` (entities decoded, whitespace kept). `self_closing` opens are followed by their close.
struct XmlEvent {
  enum class Kind { open, close, text };
  Kind kind = Kind::text;
  std::string name;
  std::vector<std::pair<std::string, std::string>> attributes;  ///< in document order, decoded
  std::string text;
  std::size_t line = 1;  ///< where the event starts (1-based)
};

/// Pulls events from one document held by the caller (the view must outlive the scanner). Not
/// thread-safe. After an error, every later call returns an error.
class XmlScanner {
 public:
  explicit XmlScanner(std::string_view doc, std::size_t max_depth = kXmlMaxDepth);

  /// The next event, or nullopt once the root element has closed and only whitespace,
  /// comments and processing instructions follow. Errors: "line L (offset O): what".
  Result<std::optional<XmlEvent>> next();

  /// Elements open now.
  std::size_t depth() const { return stack_.size(); }

 private:
  Unexpected<Error> error(std::string_view what) const;
  Result<std::optional<XmlEvent>> markup();
  Result<std::optional<XmlEvent>> open_tag();
  Result<std::optional<XmlEvent>> close_tag();
  Result<std::optional<XmlEvent>> text_run();
  bool skip_past(std::string_view end);  // advances past `end`; false at end of input
  void advance(std::size_t n);

  std::string_view doc_;
  std::size_t max_depth_;
  std::size_t pos_ = 0;
  std::size_t line_ = 1;
  std::vector<std::string> stack_;  // open element names
  bool root_seen_ = false;
  bool failed_ = false;
  std::optional<XmlEvent> pending_close_;  // the close that follows a self-closing open
};

/// One element with its direct text (entities decoded, leading and trailing whitespace trimmed,
/// text pieces around children concatenated) and children in document order.
struct XmlElement {
  std::string name;
  std::vector<std::pair<std::string, std::string>> attributes;
  std::string text;
  std::vector<XmlElement> children;
  std::size_t line = 1;

  /// The first child named `child_name`, or null.
  const XmlElement* child(std::string_view child_name) const;
  /// The first element down a '/'-separated path of child names ("pci/pcie_gen/max_link_gen").
  const XmlElement* find(std::string_view path) const;
  /// The attribute's value, or nullopt.
  std::optional<std::string_view> attribute(std::string_view key) const;
};

/// Parses a whole document into its root element (built without recursion). Errors name the
/// line and offset; `what` prefixes them ("parse nvidia-smi -q -x output").
Result<XmlElement> parse_xml(std::string_view doc, std::string_view what = "parse XML",
                             std::size_t max_depth = kXmlMaxDepth);

}  // namespace cmax::gputools
