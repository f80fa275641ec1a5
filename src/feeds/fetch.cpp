#include "feeds/fetch.h"

#include <curl/curl.h>

#include <mutex>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/strings.h"
#include "feeds/amd_bulletin.h"

namespace cmax::feeds {
namespace {

struct Reply {
  long status = 0;
  std::string body;
};

std::size_t append(char* data, std::size_t size, std::size_t n, void* user) {
  auto* out = static_cast<std::string*>(user);
  if (out->size() + size * n > kMaxFeedDocumentBytes) return 0;
  out->append(data, size * n);
  return size * n;
}

// Hosts that did not answer at all: the rest of their requests are skipped, so an unreachable
// network costs one timeout per host, not one per document.
struct Unreachable {
  std::set<std::string> hosts;
};

std::string host_of(const std::string& url) { return std::string(core::url_origin(url)); }

Result<Reply> request(const std::string& url, const FetchOptions& o, const std::string& post_json = {},
                      Unreachable* down = nullptr) {
  if (down && down->hosts.count(host_of(url)))
    return fail("fetch {}: skipped; {} did not answer an earlier request", url, host_of(url));
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  CURL* c = curl_easy_init();
  if (!c) return fail("fetch {}: cannot start a transfer", url);
  Reply r;
  char error[CURL_ERROR_SIZE] = {0};
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Accept: application/json, text/html;q=0.9, */*;q=0.5");
  if (!post_json.empty()) headers = curl_slist_append(headers, "Content-Type: application/json");
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  if (!post_json.empty()) curl_easy_setopt(c, CURLOPT_POSTFIELDS, post_json.c_str());
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 3L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(o.timeout.count()));
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(o.timeout.count()));
  curl_easy_setopt(c, CURLOPT_USERAGENT, "cmax floors update");
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &append);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  CURLcode rc = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(c);
  if (rc != CURLE_OK) {
    if (down && (rc == CURLE_COULDNT_CONNECT || rc == CURLE_OPERATION_TIMEDOUT || rc == CURLE_COULDNT_RESOLVE_HOST))
      down->hosts.insert(host_of(url));
    return fail("fetch {}: {}", url, error[0] ? error : curl_easy_strerror(rc));
  }
  if (r.status < 200 || r.status >= 300) return fail("fetch {}: HTTP {}", url, r.status);
  return r;
}

}  // namespace

Result<Fetched> fetch_feeds(std::string_view base_json, const FetchOptions& o) {
  auto base = nlohmann::json::parse(base_json, nullptr, false);
  if (base.is_discarded() || !base.is_object()) return fail("fetch feeds: the base floors file is not JSON");
  Fetched out;
  Unreachable down;
  int year = o.year;
  if (year == 0) {
    core::SystemClock clock;
    auto days = std::chrono::floor<std::chrono::days>(clock.now());
    year = static_cast<int>(std::chrono::year_month_day(days).year());
  }
  // NVIDIA: the bulletin ids the file cites, and every newer bulletin of this year and last.
  static const std::regex a_id(R"(a_id/([0-9]+))");
  long oldest = 0;
  std::string text = base.dump();
  for (auto it = std::sregex_iterator(text.begin(), text.end(), a_id); it != std::sregex_iterator(); ++it) {
    long id = std::stol((*it)[1].str());
    if (oldest == 0 || id < oldest) oldest = id;
  }
  for (int y : {year - 1, year}) {
    auto listing = request(fmt::format("{}/repos/NVIDIA/product-security/contents/{}", o.github_api, y), o, {}, &down);
    if (!listing) {
      out.notes.push_back({"NVIDIA product-security", listing.error().message});
      continue;
    }
    auto entries = nlohmann::json::parse(listing->body, nullptr, false);
    if (!entries.is_array()) {
      out.notes.push_back({"NVIDIA product-security", fmt::format("the {} listing is not a JSON array", y)});
      continue;
    }
    for (const auto& e : entries) {
      std::string id = e.is_object() ? e.value("name", "") : "";
      if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos) continue;
      if (oldest != 0 && std::stol(id) < oldest) continue;
      if (out.documents.size() >= o.max_documents) break;
      auto doc = request(fmt::format("{}/NVIDIA/product-security/main/{}/{}/{}.json", o.github_raw, y, id, id), o, {}, &down);
      if (doc) out.documents.emplace_back(fmt::format("nvidia-csaf/{}.json", id), std::move(doc->body));
      else out.notes.push_back({fmt::format("NVIDIA {}", id), doc.error().message});
    }
  }
  // runc, containerd and Docker Engine (to 28.x): every OSV record for their Go modules.
  for (auto [file, module] : {std::pair<const char*, const char*>{"runc", "github.com/opencontainers/runc"},
                              {"containerd", "github.com/containerd/containerd"},
                              {"containerd-v2", "github.com/containerd/containerd/v2"},
                              {"docker", "github.com/docker/docker"}}) {
    auto osv = request(fmt::format("{}/v1/query", o.osv_api), o,
                       fmt::format(R"({{"package":{{"name":"{}","ecosystem":"Go"}}}})", module), &down);
    if (osv) out.documents.emplace_back(fmt::format("osv/{}-query.json", file), std::move(osv->body));
    else out.notes.push_back({"osv.dev", osv.error().message});
  }
  // AMD: the GPU bulletins cited, and those the index lists that are newer than the oldest cited.
  static const std::regex amd_sb(R"(amd-sb-([0-9]+))", std::regex::icase);
  std::set<long> amd_ids;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), amd_sb); it != std::sregex_iterator(); ++it)
    amd_ids.insert(std::stol((*it)[1].str()));
  if (auto index = request(fmt::format("{}/en/resources/product-security.html", o.amd), o, {}, &down); index) {
    for (const auto& id : amd_index_gpu_bulletins(index->body)) {
      long n = std::stol(id.substr(7));
      if (amd_ids.empty() || n >= *amd_ids.begin()) amd_ids.insert(n);
    }
  } else {
    out.notes.push_back({"AMD product security", index.error().message});
  }
  for (long id : amd_ids) {
    if (out.documents.size() >= o.max_documents) break;
    auto doc = request(fmt::format("{}/en/resources/product-security/bulletin/amd-sb-{}.html", o.amd, id), o, {}, &down);
    if (doc) out.documents.emplace_back(fmt::format("amd/amd-sb-{}.html", id), std::move(doc->body));
    else out.notes.push_back({fmt::format("AMD-SB-{}", id), doc.error().message});
  }
  // Ubuntu: the notices the kernel CVE table cites.
  static const std::regex usn(R"(USN-[0-9]+-[0-9]+)");
  std::set<std::string> usns;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), usn); it != std::sregex_iterator(); ++it) usns.insert(it->str());
  for (const auto& id : usns) {
    auto doc = request(fmt::format("{}/canonical/ubuntu-security-notices/main/osv/usn/{}.json", o.github_raw, id), o, {}, &down);
    if (doc) out.documents.emplace_back(fmt::format("ubuntu/{}.json", id), std::move(doc->body));
    else out.notes.push_back({id, doc.error().message});
  }
  if (out.documents.empty())
    return fail("fetch feeds: no document could be fetched ({}); check the network, or pass --feeds DIR of recorded "
                "documents",
                out.notes.empty() ? std::string("nothing to fetch") : out.notes.front().message);
  return out;
}

}  // namespace cmax::feeds
