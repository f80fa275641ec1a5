#pragma once
// What a vendor security feed says about one component: the release that fixes it on one release
// line, the CVEs, and the document that says so. Every reader in feeds/ turns its documents into
// these; update.h merges them into a floors file.

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace cmax::feeds {

/// No feed document is larger: the bound of a fetch and of a recorded file read.
inline constexpr std::size_t kMaxFeedDocumentBytes = 16u << 20;

struct FeedFix {
  std::string component;  ///< a floors component ("nvidia-driver"), or "kernel" for distro kernel fixes
  std::string train;      ///< "580", "28.46", "1.4"; "" for a single floor; for "kernel" the distro key
                          ///< ("ubuntu-24.04" or "ubuntu-24.04/linux-aws")
  std::string fixed;      ///< the first fixed release on that line ("580.159.03", "6.8.0-124.124")
  std::vector<std::string> cves;
  std::string document;   ///< "NVIDIA CSAF 5821 (rev 3.0.0)"
  std::string advisory;   ///< the advisory's URL
  std::string date;       ///< YYYY-MM-DD the document was last revised
  /// The lines this document lists are the supported set: a line it does not list gets no fix
  /// (an NVIDIA driver bulletin's branches; a runc advisory's release branches).
  bool defines_set = false;
  /// What the document says of each CVE, where it says it: a one-line summary and a severity.
  std::map<std::string, std::string> summaries, severities;
};

/// Something a reader dropped or doubted, for the user to see.
struct FeedNote {
  std::string document;
  std::string message;
};

/// One document read: what kind it is, its id and date, its fixes and notes.
struct FeedDocument {
  std::string kind;  ///< "nvidia-csaf", "osv", "osv-query", "ubuntu-usn"
  std::string id;    ///< "5821", "GHSA-xjvp-4fhw-gc47", "USN-8373-1"
  std::string date;  ///< YYYY-MM-DD
  std::vector<FeedFix> fixes;
  std::vector<FeedNote> notes;
};

}  // namespace cmax::feeds
