// isolation.host.proc_visibility, isolation.host.munge_key and isolation.host.munge_socket: what
// other local users can see of this tenant, and whether they can forge MUNGE credentials.

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <set>

#include "isolation/host_judge.h"

namespace cmax::isolation::host_judge {
namespace {

constexpr CheckText kProcText = {
    "proc_visibility", "Other users' processes visible in /proc",
    "/proc mounted with hidepid=invisible (2), so a tenant sees only its own processes",
    "Counts the processes in /proc owned by users other than root and this one (real uid from "
    "/proc/<pid>/status) and reads the proc mount's hidepid= option in /proc/mounts. Without "
    "hidepid every tenant can read the others' command lines (often holding tokens and paths), "
    "environment metadata, and resource use.",
    "Mount /proc with hidepid=invisible (hidepid=2; e.g. `proc /proc proc "
    "defaults,hidepid=invisible,gid=<monitoring group> 0 0` in /etc/fstab, and "
    "ProtectProc=invisible for services), keeping a gid= exemption for monitoring agents."};

constexpr CheckText kMungeKeyText = {
    "munge_key", "MUNGE key readable by other users",
    "/etc/munge/munge.key a regular file, mode 0600 or 0400, owned by the munge user",
    "Stats /etc/munge/munge.key. Whoever can read the key can mint MUNGE credentials for any uid, "
    "which Slurm accepts as proof of identity: a tenant with the key can run jobs as, and read "
    "the data of, any user, root included.",
    "chown munge:munge /etc/munge/munge.key && chmod 0400 /etc/munge/munge.key (and /etc/munge "
    "0700); if the key was ever readable by others, generate a new one (mungekey or "
    "create-munge-key) "
    "and restart munged on every node."};

constexpr CheckText kMungeSocketText = {
    "munge_socket", "MUNGE socket directory writable by other users",
    "/run/munge not writable by group or others (or sticky), owned by munge or root; "
    "munge.socket.2 owned by munge",
    "Stats /run/munge and /run/munge/munge.socket.2. Slurm trusts whatever answers on that "
    "socket: a tenant who can replace it can hand out forged credentials to every local client.",
    "chown munge:munge /run/munge && chmod 0755 /run/munge (systemd: RuntimeDirectory=munge "
    "with RuntimeDirectoryMode=0755 in munge.service), and restart munged."};

}  // namespace

Finding judge_proc(const HostIsolationFacts& f) {
  Finding x = base(kProcText, "/proc/<pid>/status, /proc/mounts");
  if (!is_read(f.proc))
    return with(std::move(x), Outcome::unverified, "cannot list /proc: " + f.proc.error);
  std::optional<std::string_view> options;
  if (is_read(f.mounts)) options = proc_mount_options(f.mounts.text);
  const std::string_view hidepid = options ? hidepid_option(*options) : std::string_view();
  const bool hides = hidepid_hides(hidepid);
  const std::string mount_note = !is_read(f.mounts) ? "/proc/mounts not readable"
                                 : !options         ? "no proc mount on /proc in /proc/mounts"
                                 : hidepid.empty()
                                     ? "/proc mounted without hidepid"
                                     : fmt::format("/proc mounted with hidepid={}", hidepid);
  if (options) x.evidence_value = one_line(*options, 200);
  std::set<unsigned> users;
  for (const auto& p : f.others) users.insert(p.uid);
  x.observed =
      fmt::format("{} of {} visible; {}", plural(f.others.size(), "process", "processes"),
                  plural(users.size(), "other non-root user", "other non-root users"), mount_note);
  const std::string visible =
      fmt::format("{} of {} are visible: their command lines and environment metadata can be read",
                  plural(f.others.size(), "process", "processes"),
                  plural(users.size(), "other user", "other users"));
  if (f.env.uid == 0) {
    // Root sees every process whatever hidepid says, so the mount option is the evidence.
    if (hides)
      return with(std::move(x), Outcome::pass,
                  fmt::format("hidepid={} hides other users' processes from tenants (root sees "
                              "every process regardless)",
                              hidepid));
    if (!f.others.empty() && !options)
      return with(std::move(x), Outcome::unverified,
                  "running as root, which sees every process; whether tenants see them depends on "
                  "hidepid, and " +
                      mount_note);
    if (!f.others.empty())
      return with(std::move(x), Outcome::warn, visible + " to every tenant (no hidepid)");
    if (f.status_unreadable > 0)
      return with(std::move(x), Outcome::unverified,
                  fmt::format("the owner of {} is not readable ({})",
                              plural(f.status_unreadable, "process", "processes"), f.status_error));
    return with(std::move(x), Outcome::pass, "no process of another non-root user is running");
  }
  if (!f.others.empty()) return with(std::move(x), Outcome::warn, visible);
  if (f.proc_truncated)
    return with(std::move(x), Outcome::unverified, "the process scan stopped at its bound");
  if (f.status_unreadable > 0 && !hides)
    return with(std::move(x), Outcome::unverified,
                fmt::format("the owner of {} is not readable ({}); {}",
                            plural(f.status_unreadable, "process", "processes"), f.status_error,
                            mount_note));
  return with(std::move(x), Outcome::pass,
              hides ? fmt::format("hidepid={} hides other users' processes", hidepid)
                    : std::string("no process of another non-root user is visible"));
}

Finding judge_munge_key(const HostIsolationFacts& f) {
  Finding x = base(kMungeKeyText, f.munge_key.path);
  const PathStat& k = f.munge_key;
  if (k.error_number == ENOENT && f.munge_dir.error_number == ENOENT)
    return with(std::move(x), Outcome::not_applicable,
                "munge not installed (no /etc/munge/munge.key, no /run/munge)");
  if (k.error_number == ENOENT)
    return with(std::move(x), Outcome::unverified,
                "munge runs here (/run/munge exists) but /etc/munge/munge.key is absent: the key "
                "lives elsewhere (munged --key-file) or is not visible from here");
  if (k.error_number == EACCES && f.munge_etc.error_number == 0 && S_ISDIR(f.munge_etc.mode) &&
      (f.munge_etc.mode & 0011) == 0) {
    x.observed = fmt::format("key not reachable: /etc/munge is mode {} owned by {}",
                             mode_text(f.munge_etc.mode), user_name(f, f.munge_etc.uid));
    x.evidence_value = x.observed;
    return with(std::move(x), Outcome::pass,
                "other users cannot reach the key: /etc/munge grants group and others no search "
                "permission (" +
                    k.error + ")");
  }
  if (k.error_number != 0)
    return with(std::move(x), Outcome::unverified, "cannot stat the key: " + k.error);
  const std::string owner = user_name(f, k.uid);
  x.observed = fmt::format("munge.key is mode {} owned by {}", mode_text(k.mode), owner);
  x.evidence_value = fmt::format("mode {} uid {}", mode_text(k.mode), k.uid);
  if (!S_ISREG(k.mode))
    return with(std::move(x), Outcome::unverified, "munge.key is not a regular file");
  if (k.mode & 0077) {
    const std::string who = (k.mode & 0007) ? "any local user" : "members of its group";
    const std::string what = (k.mode & 0044)
                                 ? "forge MUNGE credentials and impersonate any user to Slurm"
                                 : "replace it with a key they know, then forge MUNGE credentials";
    return with(std::move(x), Outcome::fail,
                fmt::format("munge.key is mode {}: {} can {}", mode_text(k.mode), who, what));
  }
  auto munge = munge_uid(f);
  if (!munge) return with(std::move(x), Outcome::unverified, munge_user_problem(f));
  if (k.uid != *munge)
    return with(
        std::move(x), Outcome::warn,
        fmt::format("munge.key is owned by {}, not the munge user (uid {})", owner, *munge));
  return with(std::move(x), Outcome::pass,
              fmt::format("only munge can read the key (mode {})", mode_text(k.mode)));
}

Finding judge_munge_socket(const HostIsolationFacts& f) {
  Finding x = base(kMungeSocketText, f.munge_dir.path);
  const PathStat& d = f.munge_dir;
  const PathStat& s = f.munge_socket;
  if (d.error_number == ENOENT)
    return with(std::move(x), Outcome::not_applicable,
                f.munge_key.error_number == ENOENT
                    ? "munge not installed (no /etc/munge/munge.key, no /run/munge)"
                    : "munged does not run here (no /run/munge)");
  if (d.error_number != 0)
    return with(std::move(x), Outcome::unverified, "cannot stat /run/munge: " + d.error);
  if (!S_ISDIR(d.mode))
    return with(std::move(x), Outcome::unverified, "/run/munge is not a directory");
  auto munge = munge_uid(f);
  x.observed =
      fmt::format("/run/munge is mode {} owned by {}", mode_text(d.mode), user_name(f, d.uid));
  x.evidence_value = fmt::format("/run/munge mode {} uid {}", mode_text(d.mode), d.uid);
  Worst v;
  if ((d.mode & 0022) && !(d.mode & S_ISVTX))
    v.add(Outcome::fail,
          fmt::format("/run/munge is mode {}: a tenant could replace the socket and hand out "
                      "forged credentials",
                      mode_text(d.mode)));
  if (d.uid != 0) {
    if (!munge)
      v.add(Outcome::unverified, munge_user_problem(f));
    else if (d.uid != *munge)
      v.add(Outcome::fail, fmt::format("/run/munge is owned by {}, who could replace the socket",
                                       user_name(f, d.uid)));
  }
  if (s.error_number == ENOENT) {
    x.observed += "; no munge.socket.2 (munged not running?)";
  } else if (s.error_number != 0) {
    v.add(Outcome::unverified, "cannot stat the socket: " + s.error);
  } else {
    x.observed += fmt::format("; munge.socket.2 owned by {}", user_name(f, s.uid));
    x.evidence_value += fmt::format("; munge.socket.2 mode {} uid {}", mode_text(s.mode), s.uid);
    if (!S_ISSOCK(s.mode))
      v.add(Outcome::warn, "munge.socket.2 is not a socket");
    else if (!munge)
      v.add(Outcome::unverified, munge_user_problem(f));
    else if (s.uid != *munge)
      v.add(Outcome::warn,
            fmt::format("munge.socket.2 is owned by {}, not the munge user", user_name(f, s.uid)));
  }
  if (!v.any()) v.add(Outcome::pass, "only munge (or root) can replace the socket");
  v.apply(x);
  return x;
}
}  // namespace cmax::isolation::host_judge
