#pragma once
// Fetches the feed documents a floors file's components come from, from the vendors' own
// publications: NVIDIA's CSAF bulletins (github.com/NVIDIA/product-security, this year's and last
// year's newer than the oldest one the file cites), runc's, containerd's and the docker/docker
// module's advisories (api.osv.dev), the Ubuntu notices the kernel CVE table cites
// (canonical/ubuntu-security-notices), and AMD's GPU bulletins (the ones cited, and the newer
// ones its product-security index lists). Only `cmax floors
// update --fetch` calls it: nothing else in cmax goes to the network.

#include <chrono>
#include <string>
#include <vector>

#include "core/result.h"
#include "feeds/fix.h"

namespace cmax::feeds {

struct FetchOptions {
  std::string github_api = "https://api.github.com";
  std::string github_raw = "https://raw.githubusercontent.com";
  std::string osv_api = "https://api.osv.dev";
  std::string amd = "https://www.amd.com";
  std::chrono::milliseconds timeout{20000};  ///< per request
  int year = 0;                               ///< this year (0: from the clock)
  std::size_t max_documents = 400;            ///< a bound on what one update reads
};

/// The raw documents fetched (name -> JSON text), and notes on what could not be.
struct Fetched {
  std::vector<std::pair<std::string, std::string>> documents;
  std::vector<FeedNote> notes;
};

/// Fails only when nothing at all could be fetched; every unreachable source is a note.
Result<Fetched> fetch_feeds(std::string_view base_floors_json, const FetchOptions& options);

}  // namespace cmax::feeds
