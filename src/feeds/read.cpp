#include "feeds/read.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/text_file.h"
#include "feeds/amd_bulletin.h"
#include "feeds/nvidia_csaf.h"
#include "feeds/osv.h"

namespace cmax::feeds {

Result<FeedDocument> read_feed_document(std::string_view text, std::string_view name) {
  if (name.ends_with(".html")) return read_amd_bulletin(text, std::filesystem::path(name).filename().string());
  auto doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return fail("read feed {}: not a JSON object", name);
  if (doc.contains("document") && doc["document"].is_object() && doc["document"].contains("csaf_version"))
    return read_nvidia_csaf(text, name);
  if (doc.contains("vulns")) return read_osv_query(doc, name);
  std::string id = doc.value("id", "");
  if (id.starts_with("USN-")) return read_usn(doc, name);
  if (!id.empty() && doc.contains("affected")) return read_osv_record(doc, name);
  return fail("read feed {}: neither CSAF, OSV, an osv.dev response nor a USN record", name);
}

Result<FeedSet> read_feed_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    return fail("read feeds {}: not a directory; pass --feeds a directory of recorded feed documents", dir.string());
  std::vector<std::filesystem::path> files;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec); !ec && it != std::filesystem::end(it);
       it.increment(ec))
    if (it->is_regular_file() && (it->path().extension() == ".json" || it->path().extension() == ".html"))
      files.push_back(it->path());
  if (ec) return fail("read feeds {}: {}", dir.string(), ec.message());
  std::sort(files.begin(), files.end());
  FeedSet set;
  for (const auto& f : files) {
    auto name = std::filesystem::relative(f, dir).string();
    auto text = core::read_text_file(f.string(), kMaxFeedDocumentBytes, "; not a feed document");
    if (!text) {
      set.notes.push_back({name, text.error().message});
      continue;
    }
    auto d = read_feed_document(*text, name);
    if (!d) {
      set.notes.push_back({name, d.error().message});
      continue;
    }
    set.documents.push_back(std::move(*d));
  }
  return set;
}

}  // namespace cmax::feeds
