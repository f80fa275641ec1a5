// libFuzzer target: cmax audit isolation's parsers of what it reads from the network and the
// command line: an HTTP answer (complete or not, closed or not), a scope, an IPv4 address, a JSON
// array's length, the Kubernetes rules and access reviews and Status bodies, an IPMI answer
// datagram, and the host files of the isolation.host.* checks (TOML, /proc status, mounts,
// cgroups, net tables, passwd, pkeys). Invariants: no crash on any bytes; an address that parses formats back to text that
// parses to the same address; a parsed scope never counts more hosts than 2^32; an answer that is
// "complete" parses; a parsed IPMI answer names a channel of 0-15 and describes itself.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "isolation/host_parse.h"
#include "isolation/http_answer.h"
#include "isolation/ipmi.h"
#include "isolation/kube_review.h"
#include "isolation/scope.h"
#include "isolation/services.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  using namespace cmax::isolation;
  const std::string_view data(reinterpret_cast<const char*>(bytes), size);
  for (bool closed : {false, true}) {
    auto a = parse_http_answer(data, closed);
    if (a) check(a->body.size() <= data.size());
  }
  if (http_answer_complete(data)) check(parse_http_answer(data, false).has_value());
  const std::string_view line = data.substr(0, data.find('\n'));
  if (auto ip = parse_ipv4(line)) {
    auto again = parse_ipv4(format_ipv4(*ip));
    check(again && *again == *ip);
  }
  if (auto s = parse_scope(line)) check(scope_host_count(*s) <= (std::uint64_t{1} << 32));
  (void)json_array_length(data);
  if (auto r = parse_rules_review(data))
    for (const auto& p : dangerous_permissions()) (void)rules_allow(*r, p);
  if (auto r = parse_access_review(data)) check(!r->allowed || r->reason.size() <= data.size());
  if (auto m = status_message(data)) (void)is_rbac_forbidden(*m);
  if (auto caps = parse_ipmi_auth_caps(data)) {
    check(!describe(*caps).empty());
    check(caps->channel >= 0 && caps->channel <= 15);
  }
  (void)hex_bytes(data);
  for (const auto& e : toml_top_level(data)) {
    check(e.key.size() <= data.size());
    (void)toml_bool(e.value);
  }
  (void)status_real_uid(data);
  if (auto options = proc_mount_options(data)) (void)hidepid_hides(hidepid_option(*options));
  (void)container_cgroup_marker(data);
  auto uids = socket_table_uids(data);
  for (std::size_t i = 1; i < uids.size(); ++i) check(uids[i - 1] < uids[i]);  // sorted, unique
  (void)node_side_interfaces(data);
  if (auto uid = passwd_uid(data, "munge")) (void)passwd_name(data, *uid);
  (void)parse_pkey(line);
  return 0;
}
