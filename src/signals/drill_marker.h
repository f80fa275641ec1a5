#pragma once
// Drill lines, recognised wherever a kernel log is read. A drill (cmax drill) writes, before the
// exact lines of a failing GPU or node, one marker line that names the drill and fingerprints
// each line it is about to write; after the drill it writes an end marker. Lines that carry the
// drill's process name (cmaxdrill-<id>) are drill lines by themselves. Readers that judge a node
// (cmax scan, collect, run) list drill lines as drills and never count them as faults; detectors
// (cmaxd, cmax check) act on them while the drill is live, which is what a drill tests, and not
// after it ended, so that a node resumed by `cmax drill cleanup` is not taken out again.
//
//   cmax-drill: begin drill=1a2b scenario=xid79 node=n1 until=1764921600 lines=3f2a91c0,0012ab34
//   cmax-drill: end drill=1a2b
//
// Pure, apart from DrillTracker's state; no I/O.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cmax::signals {

/// The literal every marker starts with.
inline constexpr std::string_view kDrillMarker = "cmax-drill: ";
/// The process-name tag drill lines carry where the real format names a process.
inline constexpr std::string_view kDrillTag = "cmaxdrill-";

/// A marker line, parsed.
struct DrillMarker {
  std::string id;        ///< 1 to 16 characters: letters, digits, '-'
  bool end = false;      ///< "end": the drill is over
  std::string scenario;  ///< begin only
  std::string node;      ///< begin only: the node the drill targets, as the drill named it
  double until_unix = 0; ///< begin only: after this the drill is over whatever else is seen
  std::vector<std::uint32_t> lines;  ///< begin only: drill_line_hash of each line to come, in order
};

/// FNV-1a (32 bit) of a kernel message as the reader sees it (every prefix removed), trailing
/// spaces and carriage returns ignored.
std::uint32_t drill_line_hash(std::string_view message);

/// The begin marker's message for a drill about to write `messages` (at most 64; longer lists
/// are cut, and lines past them are recognised by their tag alone).
std::string format_drill_begin(std::string_view id, std::string_view scenario, std::string_view node,
                               double until_unix, const std::vector<std::string>& messages);
/// The end marker's message.
std::string format_drill_end(std::string_view id);

/// The marker in `message` (prefixes removed), or nullopt for any other line or a malformed one.
std::optional<DrillMarker> parse_drill_marker(std::string_view message);

/// "...name=cmaxdrill-1a2b, ..." -> "1a2b": the drill id a line's process name carries.
std::optional<std::string_view> drill_tag_of(std::string_view message);

/// A line's drill, if it is one.
struct DrillMatch {
  std::string id;
  bool live = false;  ///< the drill had not ended (no end marker, not past its until) at the line
};

/// Follows markers through a log and says which later lines are drill lines. A begin marker
/// opens its drill for the node it was read on; each fingerprint matches one later line of that
/// node; the end marker, or a line stamped past `until`, closes it (its lines still match, as
/// not live). At most kMaxOpen drills are followed per tracker; older ones are forgotten.
class DrillTracker {
 public:
  static constexpr std::size_t kMaxOpen = 64;

  /// Call for every marker seen on `node`.
  void on_marker(std::string_view node, const DrillMarker& marker);
  /// Whether `message`, read on `node` at `now_unix` (wall clock of the line, or of the reader
  /// when the line has none; 0 when unknown), is a drill line.
  std::optional<DrillMatch> match(std::string_view node, std::string_view message, double now_unix);
  /// Whether drill `id` on `node` is still running at `now_unix` as far as the markers read so far
  /// say (no end marker, not past its until). A drill whose begin marker was not read is taken
  /// for live: nothing says it ended. A reader of a whole log asks this at its end, since a
  /// drill's end marker comes after its lines.
  bool live(std::string_view node, std::string_view id, double now_unix) const;
  /// Drills seen (begun) so far, in order.
  const std::vector<std::string>& seen() const { return seen_; }

 private:
  struct Open {
    std::string node, id;
    double until_unix = 0;
    bool ended = false;
    std::vector<std::uint32_t> pending;  ///< fingerprints not matched yet
  };
  Open* find(std::string_view node, std::string_view id);
  const Open* find(std::string_view node, std::string_view id) const;
  std::vector<Open> open_;
  std::vector<std::string> seen_;
};

}  // namespace cmax::signals
