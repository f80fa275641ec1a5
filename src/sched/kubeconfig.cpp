#include "sched/kubeconfig.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>

#include "core/strings.h"
#include "core/text_file.h"

namespace cmax::sched {
namespace {

constexpr std::size_t kMaxKubeconfigBytes = 4u << 20;

std::string scalar(const YAML::Node& n, const char* key) {
  const YAML::Node v = n[key];
  return v && v.IsScalar() ? v.as<std::string>() : std::string();
}

// A YAML boolean as yaml-cpp reads one (true/True/TRUE, yes, on, y); false when absent or not one.
bool truthy(const YAML::Node& n, const char* key) {
  const YAML::Node v = n[key];
  bool value = false;
  return v && v.IsScalar() && YAML::convert<bool>::decode(v, value) && value;
}

std::string absolute(std::string_view path, std::string_view dir) {
  if (path.empty() || path.front() == '/' || dir.empty()) return std::string(path);
  return fmt::format("{}/{}", dir, path);
}

// `list` of {name: N, KEY: {...}} entries; entries without a name or KEY map are skipped.
template <typename Fn>
void each_named(const YAML::Node& root, const char* list, const char* key, Fn fn) {
  const YAML::Node items = root[list];
  if (!items || !items.IsSequence()) return;
  for (const auto& item : items) {
    if (!item.IsMap()) continue;
    std::string name = scalar(item, "name");
    const YAML::Node body = item[key];
    if (name.empty() || !body || !body.IsMap()) continue;
    fn(name, body);
  }
}

std::string describe_unsupported(const YAML::Node& user) {
  if (const YAML::Node exec = user["exec"]; exec && exec.IsMap()) {
    std::string command = scalar(exec, "command");
    return fmt::format("exec credential plugin{}", command.empty() ? "" : " " + command);
  }
  if (const YAML::Node ap = user["auth-provider"]; ap && ap.IsMap()) {
    std::string name = scalar(ap, "name");
    return fmt::format("auth-provider{}", name.empty() ? "" : " " + name);
  }
  if (user["client-certificate"] || user["client-certificate-data"] || user["client-key"] ||
      user["client-key-data"])
    return "client certificate";
  if (user["username"] || user["password"]) return "basic auth";
  return {};
}

template <typename T>
const T* find_named(const std::vector<T>& items, std::string_view name) {
  auto it = std::find_if(items.begin(), items.end(), [&](const T& x) { return x.name == name; });
  return it == items.end() ? nullptr : &*it;
}

}  // namespace

Result<std::string> decode_base64(std::string_view text) {
  std::string out;
  std::uint32_t acc = 0;
  int bits = 0;
  bool padding = false;
  for (char c : text) {
    int v;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == '+') v = 62;
    else if (c == '/') v = 63;
    else if (c == '=') {
      padding = true;
      continue;
    } else if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
      continue;
    } else {
      return fail("decode base64: '{}' is not a base64 character", core::clip(std::string(1, c), 4));
    }
    if (padding) return fail("decode base64: data after '=' padding");
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  if (bits >= 6) return fail("decode base64: the text ends in the middle of a byte");
  return out;
}

Result<Kubeconfig> parse_kubeconfig(std::string_view yaml, std::string_view dir) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return fail("read kubeconfig: not YAML (line {}: {})", e.mark.line + 1, e.msg);
  }
  if (!root || root.IsNull()) return Kubeconfig{};  // an empty file, as kubectl allows
  if (!root.IsMap()) return fail("read kubeconfig: the top level is not a map (want kind: Config)");
  if (std::string kind = scalar(root, "kind"); !kind.empty() && kind != "Config")
    return fail("read kubeconfig: kind is {}, not Config", kind);
  Kubeconfig out;
  try {
    out.current_context = scalar(root, "current-context");
    std::string error;
    each_named(root, "clusters", "cluster", [&](const std::string& name, const YAML::Node& c) {
      KubeconfigCluster cl;
      cl.name = name;
      cl.server = scalar(c, "server");
      cl.ca_file = absolute(scalar(c, "certificate-authority"), dir);
      cl.insecure = truthy(c, "insecure-skip-tls-verify");
      if (std::string data = scalar(c, "certificate-authority-data"); !data.empty()) {
        auto pem = decode_base64(data);
        if (!pem && error.empty())
          error = fmt::format("read kubeconfig: cluster {}: certificate-authority-data: {}", name, pem.error().message);
        else if (pem)
          cl.ca_pem = std::move(*pem);
      }
      out.clusters.push_back(std::move(cl));
    });
    if (!error.empty()) return fail("{}", error);
    each_named(root, "users", "user", [&](const std::string& name, const YAML::Node& u) {
      KubeconfigUser user;
      user.name = name;
      user.token = scalar(u, "token");
      user.token_file = absolute(scalar(u, "tokenFile"), dir);
      if (user.token.empty() && user.token_file.empty()) user.unsupported = describe_unsupported(u);
      out.users.push_back(std::move(user));
    });
    each_named(root, "contexts", "context", [&](const std::string& name, const YAML::Node& c) {
      out.contexts.push_back({name, scalar(c, "cluster"), scalar(c, "user"), scalar(c, "namespace")});
    });
  } catch (const YAML::Exception& e) {
    return fail("read kubeconfig: {}", e.msg);
  }
  return out;
}

Kubeconfig merge_kubeconfigs(const std::vector<Kubeconfig>& files) {
  Kubeconfig out;
  for (const auto& f : files) {
    if (out.current_context.empty()) out.current_context = f.current_context;
    for (const auto& c : f.clusters)
      if (!find_named(out.clusters, c.name)) out.clusters.push_back(c);
    for (const auto& u : f.users)
      if (!find_named(out.users, u.name)) out.users.push_back(u);
    for (const auto& c : f.contexts)
      if (!find_named(out.contexts, c.name)) out.contexts.push_back(c);
    out.files.insert(out.files.end(), f.files.begin(), f.files.end());
  }
  return out;
}

Result<KubeconfigChoice> choose_context(const Kubeconfig& config, std::string_view name) {
  const std::string files = config.files.empty() ? "the kubeconfig" : fmt::format("{}", fmt::join(config.files, ", "));
  std::string want(name.empty() ? config.current_context : std::string(name));
  if (want.empty()) return fail("kubeconfig {}: no current-context; pass --kube-context NAME", files);
  const KubeconfigContext* ctx = find_named(config.contexts, want);
  if (!ctx) return fail("kubeconfig {}: no context named {}", files, want);
  const KubeconfigCluster* cluster = find_named(config.clusters, ctx->cluster);
  if (!cluster) return fail("kubeconfig {}: context {} names cluster {}, which is not defined", files, want, ctx->cluster);
  if (cluster->server.empty()) return fail("kubeconfig {}: cluster {} has no server", files, cluster->name);
  if (cluster->insecure)
    return fail("kubeconfig {}: cluster {} sets insecure-skip-tls-verify; cmax does not send a token to a server "
                "it cannot verify: add certificate-authority or certificate-authority-data",
                files, cluster->name);
  KubeconfigChoice out;
  out.context = want;
  out.server = cluster->server;
  out.ca_file = cluster->ca_file;
  out.ca_pem = cluster->ca_pem;
  out.ns = ctx->ns;
  out.source = fmt::format("context {} of {}", want, files);
  if (!ctx->user.empty()) {
    const KubeconfigUser* user = find_named(config.users, ctx->user);
    if (!user) return fail("kubeconfig {}: context {} names user {}, which is not defined", files, want, ctx->user);
    if (!user->unsupported.empty())
      return fail("kubeconfig {}: user {} authenticates with {}, which cmax does not use (it never runs a program "
                  "from a kubeconfig); get a bearer token (kubectl create token, or the plugin's own output) and "
                  "pass it with --kube-token-file",
                  files, user->name, user->unsupported);
    out.token = user->token;
    out.token_file = user->token_file;
  }
  return out;
}

std::vector<std::string> kubeconfig_files(std::string_view path, const char* kubeconfig_env, const char* home) {
  if (!path.empty()) return {std::string(path)};
  std::vector<std::string> out;
  if (kubeconfig_env && *kubeconfig_env) {
    for (auto part : core::split_any(kubeconfig_env, ":"))
      if (!part.empty()) out.emplace_back(part);
    if (!out.empty()) return out;
  }
  if (home && *home) out.push_back(fmt::format("{}/.kube/config", home));
  return out;
}

Result<KubeconfigChoice> load_kubeconfig(const std::vector<std::string>& files, std::string_view context) {
  if (files.empty()) return fail("kubeconfig: no file to read (no --kubeconfig, KUBECONFIG or HOME)");
  std::vector<Kubeconfig> parsed;
  for (const auto& file : files) {
    if (files.size() > 1 && ::access(file.c_str(), R_OK) != 0) continue;  // kubectl skips missing entries
    auto text = core::read_text_file(file, kMaxKubeconfigBytes, ": not a kubeconfig");
    if (!text) return fail("kubeconfig: {}", text.error().message);
    const auto slash = file.rfind('/');
    auto k = parse_kubeconfig(*text, slash == std::string::npos ? "." : std::string_view(file).substr(0, slash));
    if (!k) return fail("{} ({})", k.error().message, file);
    k->files.push_back(file);
    parsed.push_back(std::move(*k));
  }
  if (parsed.empty()) return fail("read kubeconfig: none of {} exists", fmt::format("{}", fmt::join(files, ", ")));
  return choose_context(merge_kubeconfigs(parsed), context);
}

KubernetesOptions to_options(const KubeconfigChoice& c) {
  KubernetesOptions o;
  o.api_url = c.server;
  o.token_path = c.token_file;
  o.token = c.token_file.empty() ? c.token : std::string();
  o.ca_path = c.ca_file;
  o.ca_pem = c.ca_pem;
  return o;
}

}  // namespace cmax::sched
