// How people get onto the nodes: user and group tools, passwordless SSH between nodes, and a
// directory or SSO behind the accounts. ClusterMAX category "Orchestration" (user management).

#include <fmt/format.h>

#include "audit/checks/generic.h"
#include "audit/checks/tables.h"
#include "core/strings.h"

namespace cmax::audit::checks {
namespace {

constexpr std::uint8_t kNode = kStandalone | kSlurm;

Verdict pred_user_tools(const CheckContext& ctx, const Check&) {
  std::vector<std::string> missing, found;
  for (const char* key : {"access.useradd", "access.groupadd"}) {
    const Fact* f = ctx.facts.find(key);
    if (!f || f->status == FactStatus::error) return verdict(Outcome::unverified, {}, "useradd and groupadd", f ? f->detail : key);
    (f->status == FactStatus::present ? found : missing).push_back(f->status == FactStatus::present ? f->value : std::string(key).substr(7));
  }
  if (missing.empty()) return verdict(Outcome::pass, fmt::format("{}", fmt::join(found, " ")), "useradd and groupadd");
  return verdict(Outcome::warn, fmt::format("missing: {}", fmt::join(missing, " ")), "useradd and groupadd",
                 "accounts and groups cannot be added from the command line here");
}

Verdict pred_ssh(const CheckContext& ctx, const Check& check) {
  constexpr std::string_view kExpected = "the user's key in its own authorized_keys (shared home) or host-based auth";
  if (ctx.facts.value_or("access.ssh.hostbased") == "yes")
    return verdict(Outcome::pass, "HostbasedAuthentication yes", std::string(kExpected));
  const Fact* f = ctx.facts.find(check.fact);
  if (!f || f->status == FactStatus::error)
    return verdict(Outcome::unverified, {}, std::string(kExpected), f ? f->detail : "~/.ssh was not read");
  if (f->status == FactStatus::absent)
    return verdict(Outcome::warn, "no key pair", std::string(kExpected),
                   fmt::format("{}: ssh between nodes asks for a password (MPI launchers and pdsh fail)", f->detail));
  if (f->value.find("(in authorized_keys)") != std::string::npos) return verdict(Outcome::pass, f->value, std::string(kExpected));
  return verdict(Outcome::warn, f->value, std::string(kExpected),
                 "the user's public key is not in its authorized_keys: ssh to another node with the same home asks "
                 "for a password");
}

Verdict pred_idp(const CheckContext& ctx, const Check& check) {
  const Fact* f = ctx.facts.find(check.fact);
  if (f->status == FactStatus::present) return verdict(Outcome::pass, core::clip(f->value, 200), "a directory or SSO provider");
  return verdict(Outcome::warn, "local accounts only", "a directory or SSO provider",
                 fmt::format("{}: users and keys are managed node by node", f->detail));
}

std::optional<Verdict> guard_read(const CheckContext& ctx, const Check& check) {
  const Fact* f = ctx.facts.find(check.fact);
  if (!f) return verdict(Outcome::unverified, {}, {}, fmt::format("{} was not collected", check.fact));
  if (f->status == FactStatus::error) return verdict(Outcome::unverified, {}, {}, f->detail);
  return std::nullopt;
}

const Check kChecks[] = {
    {"orchestration.users.tools", Category::orchestration, Severity::config, false, kAnyHarness,
     "Users and groups can be added from the command line", "Orchestration: easy to add users and groups",
     "Looks for useradd and groupadd in /usr/sbin and /sbin.", "Install the passwd package (shadow-utils).", nullptr,
     pred_user_tools, "access.useradd"},
    {"orchestration.ssh.between_nodes", Category::orchestration, Severity::config, false, kSlurm,
     "Passwordless SSH between nodes", "Orchestration: passwordless SSH between compute nodes",
     "On the live host, looks for the user's key pair in ~/.ssh and its public key in ~/.ssh/authorized_keys (a "
     "home shared by every node), or HostbasedAuthentication in sshd_config.",
     "ssh-keygen -t ed25519 and append the public key to ~/.ssh/authorized_keys on the shared home (or set up "
     "host-based authentication).",
     nullptr, pred_ssh, "access.ssh.user_key"},
    {"orchestration.identity_provider", Category::orchestration, Severity::config, false, kNode,
     "Accounts come from a directory or SSO provider", "Orchestration: external identity provider (OIDC / LDAP / SSO)",
     "Looks for SSSD providers, identity-provider PAM modules (pam_sss, pam_oauth2, pam_oidc, pam_aad, pam_okta, "
     "pam_ldap, pam_krb5), an SSH certificate authority (TrustedUserCAKeys) or an AuthorizedKeysCommand.",
     "Join the nodes to the organisation's directory (SSSD) or issue SSH certificates from the SSO provider.",
     guard_read, pred_idp, "access.idp"},
};

}  // namespace

std::span<const Check> access_checks() { return kChecks; }

}  // namespace cmax::audit::checks
