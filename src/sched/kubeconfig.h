#pragma once
// kubeconfig files (kubectl's ~/.kube/config, or the files $KUBECONFIG lists): which API server,
// CA and bearer token a context names. yaml-cpp stays in the .cpp. Only what KubeClient can use is
// accepted: a bearer token (inline or a tokenFile) over https verified against a CA. Client
// certificates, exec and auth-provider plugins, and insecure-skip-tls-verify are refused with a
// message that says what to pass instead: cmax never runs a program named in a kubeconfig and
// never sends a token to a server it did not verify.

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "sched/kubernetes.h"

namespace cmax::sched {

/// One `clusters[]` entry.
struct KubeconfigCluster {
  std::string name;
  std::string server;
  std::string ca_file;  ///< certificate-authority, made absolute against the file's directory
  std::string ca_pem;   ///< certificate-authority-data, base64-decoded
  bool insecure = false;  ///< insecure-skip-tls-verify
};

/// One `users[]` entry.
struct KubeconfigUser {
  std::string name;
  std::string token;
  std::string token_file;   ///< tokenFile, made absolute against the file's directory
  std::string unsupported;  ///< "client certificate", "exec plugin aws", "auth-provider oidc", or ""
};

/// One `contexts[]` entry.
struct KubeconfigContext {
  std::string name, cluster, user, ns;
};

/// One file, or several merged.
struct Kubeconfig {
  std::string current_context;
  std::vector<KubeconfigCluster> clusters;
  std::vector<KubeconfigUser> users;
  std::vector<KubeconfigContext> contexts;
  std::vector<std::string> files;  ///< where it was read, in order
};

/// What a context resolves to.
struct KubeconfigChoice {
  std::string context;
  std::string server;
  std::string ca_file, ca_pem;
  std::string token, token_file;
  std::string ns;      ///< the context's namespace, or ""
  std::string source;  ///< "context NAME of FILE[, FILE]"
};

/// Pure: one kubeconfig's text. Relative paths resolve against `dir`. An error names the file
/// part that is malformed (not YAML, not a Config, a bad base64 CA).
Result<Kubeconfig> parse_kubeconfig(std::string_view yaml, std::string_view dir);

/// kubectl's merge of several files: the first file that sets current-context wins, and for each
/// cluster, user and context name the first file that defines it.
Kubeconfig merge_kubeconfigs(const std::vector<Kubeconfig>& files);

/// Pure: the context `name` (empty: current-context) resolved; an error names what is missing or
/// not supported and what to pass instead.
Result<KubeconfigChoice> choose_context(const Kubeconfig& config, std::string_view name);

/// The files to read: `path` when given, else $KUBECONFIG's entries (`kubeconfig_env`, colon
/// separated, empty entries skipped), else HOME/.kube/config. Pure.
std::vector<std::string> kubeconfig_files(std::string_view path, const char* kubeconfig_env, const char* home);

/// Reads and merges `files` (a missing file in a $KUBECONFIG list is skipped, as kubectl does; all
/// missing is an error) and chooses `context`.
Result<KubeconfigChoice> load_kubeconfig(const std::vector<std::string>& files, std::string_view context);

/// Options for KubeClient from a choice: api_url, the inline or file token and CA.
KubernetesOptions to_options(const KubeconfigChoice& choice);

/// Pure: standard base64 (RFC 4648, padding optional, whitespace skipped); an error for any other
/// character.
Result<std::string> decode_base64(std::string_view text);

}  // namespace cmax::sched
