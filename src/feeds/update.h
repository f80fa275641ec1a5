#pragma once
// Builds a new floors file from the current one and what the feeds say: a floor is raised to the
// newest fix of its line, a line a feed adds is added, and where the newest document of a kind that
// lists the supported lines (an NVIDIA driver bulletin, a runc advisory) leaves a line out, that line
// is removed (it gets no fix). Floors are never lowered; components no feed covers are kept as
// recorded and named. Works on the JSON document, so every field it does not own is kept.

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "feeds/fix.h"

namespace cmax::feeds {

struct FloorChange {
  std::string component;  ///< "nvidia-driver", or "kernel CVE-2026-46300"
  std::string kind;       ///< "raised", "added", "removed", "floor", "cves"
  std::string line;       ///< the train or distro key ("580", "ubuntu-24.04/linux-aws"), "" for the floor
  std::string from, to;
  std::string because;    ///< the document and its date
};

struct FloorsUpdate {
  nlohmann::ordered_json floors;  ///< the new floors document
  std::vector<FloorChange> changes;
  std::vector<FeedNote> notes;
  std::vector<std::string> unfed;  ///< components no document covers: kept as recorded
  /// Changes that move a floor (not CVE lists): what "reproduces the current floors" counts.
  std::size_t floor_changes() const;
};

/// `today` (YYYY-MM-DD) becomes the new `updated`.
Result<FloorsUpdate> update_floors(std::string_view base_json, const std::vector<FeedDocument>& documents,
                                   std::string_view today);

/// A readable diff: one line per change, then the notes and the components no feed covers.
std::string render_update(const FloorsUpdate& update);

}  // namespace cmax::feeds
