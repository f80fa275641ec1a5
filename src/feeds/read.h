#pragma once
// Reads a feed document whatever its kind: an NVIDIA CSAF bulletin, an OSV record, an osv.dev query
// response or a Canonical USN record (told apart by their own fields), or an AMD bulletin page
// (a *.html name). Pure; and a directory of them.

#include <filesystem>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "feeds/fix.h"

namespace cmax::feeds {

Result<FeedDocument> read_feed_document(std::string_view text, std::string_view name);

/// Every *.json and *.html under `dir` (sorted by name), read; a file that is not a feed document is a note.
struct FeedSet {
  std::vector<FeedDocument> documents;
  std::vector<FeedNote> notes;
};
Result<FeedSet> read_feed_dir(const std::filesystem::path& dir);

}  // namespace cmax::feeds
