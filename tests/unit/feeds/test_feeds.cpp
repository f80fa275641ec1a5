// The vendors' security feeds, read from recorded originals (tests/data/feeds, provenance in
// NOTES.md): each reader on its own documents and their traps, the update that rebuilds the floors
// from them (it must reproduce the built-in data/min-versions.json, and a newer bulletin must raise
// the right floor), and the fetch against a local server standing in for the vendors' hosts.

#include <gtest/gtest.h>
#include <httplib.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "audit/floors.h"
#include "feeds/amd_bulletin.h"
#include "feeds/fetch.h"
#include "feeds/nvidia_csaf.h"
#include "feeds/osv.h"
#include "feeds/phrase.h"
#include "feeds/read.h"
#include "feeds/update.h"

namespace cmax::feeds {
namespace {

using nlohmann::ordered_json;

std::filesystem::path feeds_dir() { return std::filesystem::path(CMAX_SOURCE_DIR) / "tests" / "data" / "feeds"; }

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

FeedDocument read(const std::string& rel) {
  auto d = read_feed_document(slurp(feeds_dir() / rel), rel);
  EXPECT_TRUE(d) << rel << ": " << (d ? "" : d.error().message);
  return d ? *d : FeedDocument{};
}

std::vector<const FeedFix*> fixes_of(const FeedDocument& d, std::string_view component, std::string_view train) {
  std::vector<const FeedFix*> out;
  for (const auto& f : d.fixes)
    if (f.component == component && f.train == train) out.push_back(&f);
  return out;
}

std::string fixed_of(const FeedDocument& d, std::string_view component, std::string_view train) {
  auto f = fixes_of(d, component, train);
  return f.empty() ? std::string("<none>") : f.front()->fixed;
}

bool has_note(const std::vector<FeedNote>& notes, std::string_view part) {
  return std::any_of(notes.begin(), notes.end(), [&](const FeedNote& n) { return n.message.find(part) != std::string::npos; });
}

const ordered_json* component(const ordered_json& floors, std::string_view name) {
  for (const auto& c : floors["components"])
    if (c.value("component", "") == name) return &c;
  return nullptr;
}

std::string train_floor(const ordered_json& floors, std::string_view name, std::string_view train) {
  const auto* c = component(floors, name);
  if (!c) return "<no component>";
  for (const auto& t : (*c)["trains"])
    if (t.value("train", "") == train) return t.value("floor", "");
  return "<no train>";
}

// ---- phrases ---------------------------------------------------------------------------------------

TEST(FeedPhrase, FixedVersionsFromTheBulletinsWording) {
  EXPECT_EQ(fixed_versions_in("580.159.03"), std::vector<std::string>{"580.159.03"});
  EXPECT_EQ(fixed_versions_in("46.3008 or newer"), std::vector<std::string>{"46.3008"});
  EXPECT_EQ(fixed_versions_in("25.10.6 or newer,"), std::vector<std::string>{"25.10.6"});
  // The driver, not the vGPU release it ships in.
  EXPECT_EQ(fixed_versions_in("595.71.05(vGPU 20.1)"), std::vector<std::string>{"595.71.05"});
  EXPECT_EQ(fixed_versions_in("CUDA Toolkit 12.9 Update 1"), std::vector<std::string>{"12.9.1"});
  EXPECT_EQ(fixed_versions_in("12.6U1"), std::vector<std::string>{"12.6.1"});
  EXPECT_EQ(fixed_versions_in("0.13.1 and 0.12.3"), (std::vector<std::string>{"0.13.1", "0.12.3"}));
  EXPECT_TRUE(fixed_versions_in("Contact your NVIDIA Customer Program Manager").empty());
  EXPECT_EQ(inclusive_affected_in("1.7.21 and older versions").value_or(""), "1.7.21");
  EXPECT_FALSE(inclusive_affected_in("23.10.23 or newer").has_value());
  EXPECT_EQ(date_part("2026-05-26T17:00:00Z"), "2026-05-26");
  EXPECT_EQ(date_part("garbage"), "");
}

// ---- NVIDIA CSAF -----------------------------------------------------------------------------------

TEST(NvidiaCsaf, DriverBulletinGivesOneFloorPerLinuxBranchAndDefinesTheSet) {
  auto d = read("nvidia-csaf/5821.json");
  EXPECT_EQ(d.id, "5821");
  EXPECT_EQ(d.date, "2026-05-21");
  EXPECT_EQ(fixed_of(d, "nvidia-driver", "580"), "580.159.03");
  EXPECT_EQ(fixed_of(d, "nvidia-driver", "595"), "595.71.05");
  EXPECT_EQ(fixed_of(d, "nvidia-driver", "535"), "535.309.01");
  // R570 and R590 get no fix in May 2026; Windows and vGPU leaves are not Linux branches.
  EXPECT_TRUE(fixes_of(d, "nvidia-driver", "570").empty());
  EXPECT_TRUE(fixes_of(d, "nvidia-driver", "590").empty());
  for (const auto& f : d.fixes) {
    EXPECT_TRUE(f.defines_set);
    EXPECT_EQ(f.component, "nvidia-driver");
    EXPECT_EQ(f.fixed.substr(0, 3), f.train) << f.fixed;
  }
  // CVE-2026-24193 is not fixed on R595 (NVIDIA's own product_status), so it is not in its CVEs.
  auto r595 = fixes_of(d, "nvidia-driver", "595");
  ASSERT_FALSE(r595.empty());
  EXPECT_EQ(std::count(r595.front()->cves.begin(), r595.front()->cves.end(), "CVE-2026-24193"), 0);
}

TEST(NvidiaCsaf, ToolkitExporterAndCudaBulletins) {
  EXPECT_EQ(fixed_of(read("nvidia-csaf/5850.json"), "nvidia-container-toolkit", ""), "1.19.1");
  EXPECT_EQ(fixed_of(read("nvidia-csaf/5659.json"), "nvidia-container-toolkit", ""), "1.17.8");
  auto dcgm = read("nvidia-csaf/5857.json");
  EXPECT_EQ(fixed_of(dcgm, "dcgm", ""), "4.5.3");
  EXPECT_EQ(fixed_of(dcgm, "dcgm-exporter", ""), "4.8.2");
  auto cuda = read("nvidia-csaf/5755.json");
  EXPECT_EQ(fixed_of(cuda, "cuda-toolkit", ""), "13.1");
  auto f = fixes_of(cuda, "cuda-toolkit", "");
  ASSERT_FALSE(f.empty());
  // Where the document drops the CVE's description, the weakness names it.
  EXPECT_EQ(f.front()->summaries.at("CVE-2025-33229"), "Uncontrolled Search Path Element (CWE-427)");
}

TEST(NvidiaCsaf, NetworkingFirmwareFloorsPerChipPrefix) {
  auto d = read("nvidia-csaf/5699.json");
  // "46.3008 or newer" on ConnectX-7 is fw_ver 28.46.3008; on BlueField-3, 32.46.3008.
  EXPECT_EQ(fixed_of(d, "connectx-firmware", "28.46"), "28.46.3008");
  EXPECT_EQ(fixed_of(d, "connectx-firmware", "32.46"), "32.46.3008");
  EXPECT_EQ(fixed_of(d, "connectx-firmware", "40.46"), "40.46.3008");
  EXPECT_EQ(fixed_of(d, "connectx-firmware", "12.28"), "12.28.4702");
  // A device with no known fw_ver prefix is named, never guessed.
  EXPECT_TRUE(has_note(d.notes, "no firmware prefix known for 'connectx-6 de'"));
}

TEST(NvidiaCsaf, VirtioNetRenumberedLineMovesToTheNewScheme) {
  auto d = read("nvidia-csaf/5815.json");
  EXPECT_EQ(fixed_of(d, "bluefield-virtio-net", "23.10"), "23.10.23");
  EXPECT_EQ(fixed_of(d, "bluefield-virtio-net", "24.10"), "24.10.50");
  // "1.7.21 and older versions" is fixed by 23.10.23.
  EXPECT_EQ(fixed_of(d, "bluefield-virtio-net", "1"), "23.10.23");
}

TEST(NvidiaCsaf, GarbageIsAClearErrorNeverACrash) {
  for (std::string_view text : {"", "{", "[]", R"({"document": 3})", R"({"document": {}, "product_tree": 7})"}) {
    auto d = read_nvidia_csaf(text, "bad.json");
    if (d) EXPECT_TRUE(d->fixes.empty());
    else EXPECT_NE(d.error().message.find("bad.json"), std::string::npos);
  }
}

// ---- OSV ---------------------------------------------------------------------------------------

TEST(Osv, RuncAdvisoryReleaseCandidateBecomesItsRelease) {
  auto d = read("osv/GHSA-xjvp-4fhw-gc47.json");
  EXPECT_EQ(d.kind, "osv");
  EXPECT_EQ(fixed_of(d, "runc", "1.3"), "1.3.6");
  EXPECT_EQ(fixed_of(d, "runc", "1.4"), "1.4.3");
  EXPECT_EQ(fixed_of(d, "runc", "1.5"), "1.5.0");
  EXPECT_TRUE(has_note(d.notes, "'1.5.0-rc.3' is a pre-release"));
  for (const auto& f : d.fixes) EXPECT_EQ(f.cves, std::vector<std::string>{"CVE-2026-41579"});
}

TEST(Osv, QueryResponseSkipsGoPseudoVersions) {
  auto d = read("osv/osv-api-runc-query.json");
  EXPECT_EQ(d.kind, "osv-query");
  EXPECT_TRUE(has_note(d.notes, "Go pseudo-version"));
  for (const auto& f : d.fixes) EXPECT_EQ(f.fixed.find(".0.20"), std::string::npos) << f.fixed;
}

// A record in OSV's schema for the modules cmax maps (no recorded original of a containerd or a
// docker/docker record is in tests/data/feeds: NOTES.md section 3.3).
TEST(Osv, ContainerdModulesDockerIncompatibleAndMobyV2) {
  auto rec = nlohmann::json::parse(R"({
    "id": "GHSA-test-0000-0000", "published": "2026-09-24T00:00:00Z", "aliases": ["CVE-2026-53493"],
    "affected": [
      {"package": {"ecosystem": "Go", "name": "github.com/containerd/containerd"},
       "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "1.7.36"}]}]},
      {"package": {"ecosystem": "Go", "name": "github.com/containerd/containerd/v2"},
       "ranges": [{"type": "SEMVER", "events": [{"introduced": "2.0.0"}, {"fixed": "2.0.13"},
                                                {"introduced": "2.4.0"}, {"fixed": "2.4.1"}]}]},
      {"package": {"ecosystem": "Go", "name": "github.com/docker/docker"},
       "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "28.3.3+incompatible"}]}]},
      {"package": {"ecosystem": "Go", "name": "github.com/moby/moby/v2"},
       "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "2.0.0-beta.1"}]}]}
    ]})");
  auto d = read_osv_record(rec, "test");
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(fixed_of(*d, "containerd", "1.7"), "1.7.36");
  EXPECT_EQ(fixed_of(*d, "containerd", "2.0"), "2.0.13");
  EXPECT_EQ(fixed_of(*d, "containerd", "2.4"), "2.4.1");
  EXPECT_EQ(fixed_of(*d, "docker", "28.3"), "28.3.3");
  EXPECT_FALSE(fixes_of(*d, "docker", "28.3").front()->defines_set);
  EXPECT_TRUE(fixes_of(*d, "containerd", "1.7").front()->defines_set);
  EXPECT_TRUE(has_note(d->notes, "not Docker Engine releases"));
  for (const auto& f : d->fixes) EXPECT_NE(f.fixed, "2.0.0");
}

// ---- Ubuntu notices ------------------------------------------------------------------------------

TEST(UbuntuUsn, KernelFixesKeyedByReleaseAndSourcePackage) {
  auto d = read("ubuntu/USN-8373-1.json");
  EXPECT_EQ(d.kind, "ubuntu-usn");
  EXPECT_EQ(fixed_of(d, "kernel", "ubuntu-24.04"), "6.8.0-124.124");
  EXPECT_EQ(fixed_of(d, "kernel", "ubuntu-24.04/linux-nvidia"), "6.8.0-1055.58");
  EXPECT_EQ(fixed_of(d, "kernel", "ubuntu-22.04/linux-hwe-6.8"), "6.8.0-124.124~22.04.1");
  // upstream[] is empty in this notice: the CVEs come from its details.
  EXPECT_TRUE(has_note(d.notes, "upstream[] is empty"));
  auto f = fixes_of(d, "kernel", "ubuntu-24.04");
  ASSERT_FALSE(f.empty());
  EXPECT_NE(std::find(f.front()->cves.begin(), f.front()->cves.end(), "CVE-2026-46300"), f.front()->cves.end());
}

TEST(UbuntuUsn, ANoticeForAnotherPackageGivesNoKernelFix) {
  auto d = read("ubuntu/USN-7744-1.json");  // qemu
  EXPECT_TRUE(d.fixes.empty());
}

// ---- AMD bulletins -------------------------------------------------------------------------------

TEST(AmdBulletin, RowspansCarryPerColumn) {
  auto rows = html_tables_rows(R"(<table>
    <tr><th>Program</th><th>CVE</th><th>Mitigation</th><th>Date</th></tr>
    <tr><td rowspan="3">AMD Instinct&trade; MI210<br />AMD Instinct MI250</td><td>CVE-1</td>
        <td rowspan="2">ROCm 7.0</td><td rowspan="3">2025-09-16</td></tr>
    <tr><td>CVE-2<sup>1</sup></td></tr>
    <tr><td>CVE-3</td><td>GIM Driver 8.4</td></tr>
  </table>)");
  ASSERT_GE(rows.size(), 4u);
  EXPECT_EQ(rows[1], (std::vector<std::string>{"AMD Instinct\u2122 MI210 AMD Instinct MI250", "CVE-1", "ROCm 7.0", "2025-09-16"}));
  EXPECT_EQ(rows[2], (std::vector<std::string>{"AMD Instinct\u2122 MI210 AMD Instinct MI250", "CVE-2 1", "ROCm 7.0", "2025-09-16"}));
  EXPECT_EQ(rows[3], (std::vector<std::string>{"AMD Instinct\u2122 MI210 AMD Instinct MI250", "CVE-3", "GIM Driver 8.4", "2025-09-16"}));
}

TEST(AmdBulletin, RocmFloorsPerInstinctModel) {
  auto d = read("amd/amd-sb-6027.html");
  EXPECT_EQ(d.kind, "amd-bulletin");
  EXPECT_EQ(d.id, "AMD-SB-6027");
  EXPECT_EQ(d.date, "2026-05-12");
  auto newest = [&](std::string_view model) {
    std::string best;
    for (const auto* f : fixes_of(d, "rocm", model))
      if (best.empty() || core::compare_versions(*core::parse_version(f->fixed), *core::parse_version(best)) > 0)
        best = f->fixed;
    return best;
  };
  EXPECT_EQ(newest("MI210"), "7.0.1");
  // "BKC 26 (ROCm 7.0.1)": the firmware bundle pairs with ROCm 7.0.1.
  EXPECT_EQ(newest("MI300A"), "7.0.1");
  EXPECT_EQ(newest("MI300X"), "6.3.1");
  // "ROC 6.3" is AMD's typo for ROCm 6.3 (MI308X, CVE-2024-36323).
  bool roc = false;
  for (const auto* f : fixes_of(d, "rocm", "MI308X"))
    roc = roc || (f->fixed == "6.3" && std::find(f->cves.begin(), f->cves.end(), "CVE-2024-36323") != f->cves.end());
  EXPECT_TRUE(roc);
  // GIM (the SR-IOV host driver) and "No fix planned" are notes, never floors.
  EXPECT_TRUE(has_note(d.notes, "GIM Driver 8.4"));
  EXPECT_TRUE(has_note(d.notes, "CVE-2024-21950 on MI300A: no fix planned"));
}

TEST(AmdBulletin, LinuxGpuDriverFloor) {
  auto d = read("amd/amd-sb-6034.html");
  EXPECT_EQ(d.id, "AMD-SB-6034");
  EXPECT_EQ(d.date, "2026-09-08");
  EXPECT_EQ(fixed_of(d, "amd-gpu-driver", ""), "31.40");
  EXPECT_EQ(fixes_of(d, "amd-gpu-driver", "").front()->cves, std::vector<std::string>{"CVE-2026-43603"});
}

TEST(AmdBulletin, IndexListsTheGpuBulletinsOnly) {
  auto ids = amd_index_gpu_bulletins(slurp(feeds_dir() / "amd" / "amd-product-security-index.html"));
  // "  AMD-SB-6010" (leading spaces, GPU Memory Leaks) is one; the TPM and Vitis rows and the
  // Security Brief are not.
  EXPECT_NE(std::find(ids.begin(), ids.end(), "AMD-SB-6010"), ids.end());
  EXPECT_NE(std::find(ids.begin(), ids.end(), "AMD-SB-6027"), ids.end());
  EXPECT_NE(std::find(ids.begin(), ids.end(), "AMD-SB-6024"), ids.end());
  EXPECT_EQ(std::find(ids.begin(), ids.end(), "AMD-SB-7064"), ids.end());
  EXPECT_EQ(std::find(ids.begin(), ids.end(), "AMD-SB-8015"), ids.end());
  // The index page is not a bulletin.
  EXPECT_FALSE(read_amd_bulletin(slurp(feeds_dir() / "amd" / "amd-product-security-index.html"), "index.html"));
}

// ---- the update ----------------------------------------------------------------------------------

FeedSet recorded() {
  auto set = read_feed_dir(feeds_dir());
  EXPECT_TRUE(set) << set.error().message;
  return set ? *set : FeedSet{};
}

TEST(FloorsUpdate, RecordedFeedsReproduceTheBuiltInFloors) {
  auto set = recorded();
  EXPECT_GE(set.documents.size(), 19u);
  auto up = update_floors(audit::builtin_floors_text(), set.documents, "2026-12-05");
  ASSERT_TRUE(up) << up.error().message;
  std::string changes = render_update(*up);
  EXPECT_EQ(up->floor_changes(), 0u) << changes;
  // Every component a feed covers was compared, not skipped.
  for (std::string_view fed : {"nvidia-driver", "cuda-toolkit", "nvidia-container-toolkit", "dcgm", "dcgm-exporter",
                               "connectx-firmware", "bluefield-virtio-net", "runc", "amd-gpu-driver", "rocm"})
    for (const auto& u : up->unfed) EXPECT_NE(u.rfind(std::string(fed) + " ", 0), 0u) << fed << " was not fed";
  // The floors the feeds give are the ones the file holds.
  EXPECT_EQ(train_floor(up->floors, "nvidia-driver", "580"), "580.159.03");
  EXPECT_EQ(train_floor(up->floors, "runc", "1.4"), "1.4.3");
  EXPECT_EQ((*component(up->floors, "rocm"))["models"].value("MI300A", ""), "7.0.1");
  EXPECT_EQ(up->floors.value("updated", ""), "2026-12-05");
}

TEST(FloorsUpdate, ANewerDriverBulletinRaisesAddsAndRemovesBranches) {
  // Floors as of January 2026: the driver lines as bulletin 5747 left them.
  auto base = ordered_json::parse(audit::builtin_floors_text());
  for (auto& c : base["components"])
    if (c.value("component", "") == "nvidia-driver") {
      c["trains"] = ordered_json::array();
      c.erase("floor");
      c["date"] = "2026-01-01";
    }
  auto jan = update_floors(base.dump(), {read("nvidia-csaf/5747.json")}, "2026-02-01");
  ASSERT_TRUE(jan) << jan.error().message;
  EXPECT_EQ(train_floor(jan->floors, "nvidia-driver", "580"), "580.126.09");
  EXPECT_EQ(train_floor(jan->floors, "nvidia-driver", "570"), "570.211.01");
  EXPECT_EQ(train_floor(jan->floors, "nvidia-driver", "590"), "590.48.01");
  // May 2026 (5821): R580 and R535 raised, R595 added, R570 and R590 dropped (no fix listed).
  auto may = update_floors(jan->floors.dump(), {read("nvidia-csaf/5821.json")}, "2026-06-01");
  ASSERT_TRUE(may) << may.error().message;
  EXPECT_EQ(train_floor(may->floors, "nvidia-driver", "580"), "580.159.03");
  EXPECT_EQ(train_floor(may->floors, "nvidia-driver", "535"), "535.309.01");
  EXPECT_EQ(train_floor(may->floors, "nvidia-driver", "595"), "595.71.05");
  EXPECT_EQ(train_floor(may->floors, "nvidia-driver", "570"), "<no train>");
  EXPECT_EQ(train_floor(may->floors, "nvidia-driver", "590"), "<no train>");
  const auto* drv = component(may->floors, "nvidia-driver");
  EXPECT_EQ(drv->value("date", ""), "2026-05-21");
  EXPECT_EQ(drv->value("source", ""), "https://nvidia.custhelp.com/app/answers/detail/a_id/5821");
  std::string diff = render_update(*may);
  EXPECT_NE(diff.find("580.126.09 -> 580.159.03"), std::string::npos) << diff;
  // An older bulletin read after the newer one lowers nothing and removes nothing.
  auto again = update_floors(may->floors.dump(), {read("nvidia-csaf/5747.json"), read("nvidia-csaf/5703.json")}, "2026-06-02");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->floor_changes(), 0u) << render_update(*again);
}

TEST(FloorsUpdate, NeverLowersAFloor) {
  auto base = ordered_json::parse(audit::builtin_floors_text());
  for (auto& c : base["components"])
    if (c.value("component", "") == "nvidia-container-toolkit") c["floor"] = "1.99.0";
  auto up = update_floors(base.dump(), {read("nvidia-csaf/5850.json")}, "2026-12-05");
  ASSERT_TRUE(up);
  EXPECT_EQ((*component(up->floors, "nvidia-container-toolkit")).value("floor", ""), "1.99.0");
}

TEST(FloorsUpdate, ModelFloorsAreRaisedAndAdded) {
  auto base = ordered_json::parse(audit::builtin_floors_text());
  for (auto& c : base["components"])
    if (c.value("component", "") == "rocm") c["models"] = {{"MI210", "6.4.2"}};
  auto up = update_floors(base.dump(), {read("amd/amd-sb-6027.html")}, "2026-12-05");
  ASSERT_TRUE(up);
  const auto& models = (*component(up->floors, "rocm"))["models"];
  EXPECT_EQ(models.value("MI210", ""), "7.0.1");
  EXPECT_EQ(models.value("MI300A", ""), "7.0.1");
  EXPECT_EQ(models.value("MI308X", ""), "6.4.2");
}

TEST(FloorsUpdate, ANonFloorsBaseIsAnError) {
  EXPECT_FALSE(update_floors("{}", {}, "2026-12-05"));
  EXPECT_FALSE(update_floors("not json", {}, "2026-12-05"));
}

TEST(FloorsUpdate, EveryBuiltInComponentHasItsAdvisoryAndDate) {
  auto floors = audit::builtin_floors();
  ASSERT_TRUE(floors);
  for (const auto& c : floors->components) {
    EXPECT_FALSE(c.source.empty()) << c.component;
    EXPECT_EQ(c.date.size(), 10u) << c.component;
    EXPECT_FALSE(c.fix_available.empty()) << c.component;
  }
  EXPECT_EQ(floors->max_age_days, 45);
  EXPECT_EQ(floors->grace_days, 3);
}

// ---- the fetch -----------------------------------------------------------------------------------

TEST(FeedsFetch, FromLocalStandInsForTheVendorsHosts) {
  httplib::Server server;
  int hits_osv = 0;
  server.Get(R"(/repos/NVIDIA/product-security/contents/(\d+))", [](const httplib::Request& req, httplib::Response& res) {
    if (req.matches[1] == "2026") res.set_content(R"([{"name":"5821","type":"dir"},{"name":"README.md"},{"name":"4000"}])", "application/json");
    else res.set_content("[]", "application/json");
  });
  server.Get("/NVIDIA/product-security/main/2026/5821/5821.json", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(slurp(feeds_dir() / "nvidia-csaf" / "5821.json"), "application/json");
  });
  server.Post("/v1/query", [&](const httplib::Request& req, httplib::Response& res) {
    ++hits_osv;
    if (req.body.find("opencontainers/runc") != std::string::npos)
      res.set_content(slurp(feeds_dir() / "osv" / "osv-api-runc-query.json"), "application/json");
    else
      res.set_content("{}", "application/json");
  });
  server.Get(R"(/canonical/ubuntu-security-notices/main/osv/usn/(USN-[0-9-]+)\.json)",
             [](const httplib::Request& req, httplib::Response& res) {
               auto p = feeds_dir() / "ubuntu" / (req.matches[1].str() + ".json");
               if (std::filesystem::exists(p)) res.set_content(slurp(p), "application/json");
               else res.status = 404;
             });
  server.Get("/en/resources/product-security.html", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(slurp(feeds_dir() / "amd" / "amd-product-security-index.html"), "text/html");
  });
  server.Get(R"(/en/resources/product-security/bulletin/(amd-sb-[0-9]+)\.html)", [](const httplib::Request& req, httplib::Response& res) {
    auto p = feeds_dir() / "amd" / (req.matches[1].str() + ".html");
    if (std::filesystem::exists(p)) res.set_content(slurp(p), "text/html");
    else res.status = 404;
  });
  int port = server.bind_to_any_port("127.0.0.1");
  std::thread t([&] { server.listen_after_bind(); });
  std::string base = "http://127.0.0.1:" + std::to_string(port);
  FetchOptions o;
  o.github_api = o.github_raw = o.osv_api = o.amd = base;
  o.year = 2026;
  o.timeout = std::chrono::milliseconds(5000);
  auto got = fetch_feeds(audit::builtin_floors_text(), o);
  server.stop();
  t.join();
  ASSERT_TRUE(got) << got.error().message;
  std::vector<std::string> names;
  for (const auto& [name, body] : got->documents) names.push_back(name);
  auto has = [&](std::string_view n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  EXPECT_TRUE(has("nvidia-csaf/5821.json"));
  EXPECT_FALSE(has("nvidia-csaf/4000.json"));  // older than every bulletin the floors cite
  EXPECT_TRUE(has("osv/runc-query.json"));
  EXPECT_TRUE(has("ubuntu/USN-8373-1.json"));
  EXPECT_TRUE(has("amd/amd-sb-6034.html"));
  EXPECT_TRUE(has("amd/amd-sb-6027.html"));
  EXPECT_EQ(hits_osv, 4);
  // A USN the stand-in does not have is a note, not a failure.
  for (const auto& [name, body] : got->documents) {
    auto d = read_feed_document(body, name);
    if (name.starts_with("osv/") && name != "osv/runc-query.json") continue;  // "{}": no vulns
    EXPECT_TRUE(d) << name << ": " << (d ? "" : d.error().message);
  }
}

TEST(FeedsFetch, NothingReachableIsAClearErrorWithinTheTimeout) {
  // A port bound and closed again: nothing listens there, connections are refused.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  int port = ntohs(addr.sin_port);
  ::close(fd);
  FetchOptions o;
  o.github_api = o.github_raw = o.osv_api = o.amd = "http://127.0.0.1:" + std::to_string(port);
  o.year = 2026;
  o.timeout = std::chrono::milliseconds(2000);
  auto start = std::chrono::steady_clock::now();
  auto got = fetch_feeds(audit::builtin_floors_text(), o);
  // One refused connection per host, the rest skipped.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  ASSERT_FALSE(got);
  EXPECT_NE(got.error().message.find("--feeds DIR"), std::string::npos) << got.error().message;
}

}  // namespace
}  // namespace cmax::feeds
