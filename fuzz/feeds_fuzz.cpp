// libFuzzer target: the vendor feed readers (NVIDIA CSAF, OSV records and osv.dev responses, Ubuntu
// USNs, AMD bulletin pages) and the floors update that merges what they read into the built-in file.
// The first byte picks the reader; the rest is the document.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "audit/floors.h"
#include "feeds/amd_bulletin.h"
#include "feeds/phrase.h"
#include "feeds/read.h"
#include "feeds/update.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  cmax::Result<cmax::feeds::FeedDocument> doc = cmax::fail("none");
  switch (data[0] % 3) {
    case 0: doc = cmax::feeds::read_feed_document(in, "fuzz.json"); break;
    case 1: doc = cmax::feeds::read_feed_document(in, "amd-sb-6027.html"); break;
    default:
      (void)cmax::feeds::amd_index_gpu_bulletins(in);
      (void)cmax::feeds::fixed_versions_in(in);
      (void)cmax::feeds::inclusive_affected_in(in);
      (void)cmax::feeds::html_tables_rows(in);
      return 0;
  }
  if (doc) (void)cmax::feeds::update_floors(cmax::audit::builtin_floors_text(), {*doc}, "2026-12-05");
  return 0;
}
