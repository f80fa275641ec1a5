// Slurm: where slurm.conf is, the settings the orchestration checks judge, the files Slurm keeps
// beside it (topology, cgroup, gres, plugstack) and the client tools on PATH.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>

#include "audit/collectors/collector.h"
#include "audit/parse/health_check.h"
#include "audit/parse/kv_conf.h"
#include "core/strings.h"

namespace cmax::audit {
namespace {

constexpr std::size_t kMaxConfBytes = 1u << 20;
constexpr int kMaxIncludeDepth = 2;

// Where packagers put slurm.conf, in the order we look. /run/slurm/conf is where slurmd caches the
// configuration it fetched from slurmctld in configless mode.
constexpr std::string_view kConfPaths[] = {"/etc/slurm/slurm.conf", "/etc/slurm-llnl/slurm.conf",
                                           "/usr/local/etc/slurm.conf", "/run/slurm/conf/slurm.conf"};

// slurm.conf settings recorded as "slurm.conf.<Key>" (present when set, absent when not).
constexpr std::string_view kKeys[] = {
    "HealthCheckProgram", "HealthCheckInterval", "HealthCheckNodeState", "TopologyPlugin", "AccountingStorageType",
    "JobAcctGatherType",  "ProctrackType",       "TaskPlugin",           "GresTypes",      "Prolog",
    "PrologFlags",        "SelectType",          "SlurmctldHost",        "ReturnToService", "RebootProgram",
    "ResumeTimeout"};

constexpr std::string_view kClientTools[] = {"sinfo", "squeue", "srun", "sbatch", "sacct", "scontrol"};

struct ConfEntry {
  std::string key;
  std::string value;
  std::string source;  // "path:line"
};

struct LoadedConf {
  std::vector<ConfEntry> entries;     // in file order, includes inline
  std::vector<std::string> included;  // files read through Include
  std::vector<std::string> problems;  // Include lines not followed: the settings may be incomplete
};

std::string dir_of(std::string_view path) {
  auto slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  return slash == 0 ? std::string("/") : std::string(path.substr(0, slash));
}

std::string_view base_of(std::string_view path) {
  auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string_view strip_comment(std::string_view line) { return line.substr(0, line.find('#')); }

// "Include nodes.conf" (any case) -> "nodes.conf"; nullopt for every other line.
std::optional<std::string_view> include_target(std::string_view line) {
  auto t = core::trim(strip_comment(line));
  if (t.size() < 9 || core::to_lower(t.substr(0, 7)) != "include" || (t[7] != ' ' && t[7] != '\t')) return std::nullopt;
  return core::unquote(core::trim(t.substr(8)));
}

// A plain file name: no glob, no variable, no "..". Only these Include lines are followed.
bool is_simple_path(std::string_view p) {
  if (p.empty() || p.find_first_of("*?[$%{") != std::string_view::npos) return false;
  for (auto part : core::split_any(p, "/"))
    if (part == "..") return false;
  return true;
}

void parse_conf_into(const CollectContext& ctx, std::string_view text, const std::string& path,
                     const std::string& conf_dir, int depth, LoadedConf& out) {
  int n = 0;
  for (auto line : core::split_lines(text)) {
    ++n;
    if (auto target = include_target(line)) {
      std::string where = fmt::format("{}:{}", path, n);
      if (!is_simple_path(*target)) {
        out.problems.push_back(fmt::format(
            "{}: Include {} not followed (only plain file names are; no patterns, variables or ..)", where, *target));
        continue;
      }
      if (depth >= kMaxIncludeDepth) {
        out.problems.push_back(
            fmt::format("{}: Include {} not followed (nested deeper than {})", where, *target, kMaxIncludeDepth));
        continue;
      }
      std::string inc = target->front() == '/' ? std::string(*target) : core::join_path(conf_dir, *target);
      std::string err;
      auto data = read_optional(ctx, inc, &err, kMaxConfBytes);
      if (!data) {
        out.problems.push_back(fmt::format("{}: Include {}: {}", where, inc, err.empty() ? "no such file" : err));
        continue;
      }
      out.included.push_back(inc);
      parse_conf_into(ctx, *data, inc, conf_dir, depth + 1, out);
      continue;
    }
    auto kv = parse_kv_conf(line);
    if (kv.size() == 1) out.entries.push_back({kv[0].key, kv[0].value, fmt::format("{}:{}", path, n)});
  }
}

std::vector<const ConfEntry*> entries_named(const LoadedConf& conf, std::string_view key) {
  std::vector<const ConfEntry*> out;
  std::string want = core::to_lower(key);
  for (const auto& e : conf.entries)
    if (core::to_lower(e.key) == want) out.push_back(&e);
  return out;
}

void record_keys(const LoadedConf& conf, const std::string& path, Facts& facts) {
  std::string incomplete = conf.problems.empty() ? std::string() : fmt::format("{}", fmt::join(conf.problems, "; "));
  for (auto key : kKeys) {
    std::string fact = fmt::format("slurm.conf.{}", key);
    auto found = entries_named(conf, key);
    if (found.empty() && key == "SlurmctldHost") found = entries_named(conf, "ControlMachine");
    if (!found.empty()) {
      // Later lines override earlier ones, except SlurmctldHost: each line adds a (backup) controller.
      if (key == "SlurmctldHost") {
        std::vector<std::string> hosts;
        for (const auto* e : found) hosts.push_back(e->value);
        facts.present(fact, fmt::format("{}", fmt::join(hosts, ", ")), found.front()->source,
                      found.front()->key == "SlurmctldHost" ? "" : "from the legacy ControlMachine key");
      } else {
        facts.present(fact, found.back()->value, found.back()->source);
      }
    } else if (!incomplete.empty()) {
      facts.error(fact, path, fmt::format("{} is not set in the files read, but {}", key, incomplete));
    } else {
      facts.absent(fact, path, fmt::format("{} is not set in {}", key, path));
    }
  }
  if (!conf.problems.empty())
    facts.error("slurm.conf.includes", path, incomplete);
  else if (conf.included.empty())
    facts.absent("slurm.conf.includes", path, "no Include lines");
  else
    facts.present("slurm.conf.includes", fmt::format("{}", fmt::join(conf.included, " ")), path);
}

// Whether the configured HealthCheckProgram exists here; slurmd runs it by absolute path.
void record_healthcheck_installed(const CollectContext& ctx, Facts& facts) {
  const Fact* program = facts.find("slurm.conf.HealthCheckProgram");
  if (!program || program->status != FactStatus::present) return;
  const std::string& p = program->value;
  constexpr std::string_view kKey = "slurm.healthcheck_program.installed";
  if (p.empty() || p.front() != '/')
    facts.absent(std::string(kKey), program->source,
                 fmt::format("HealthCheckProgram '{}' is not an absolute path, which slurmd requires", p));
  else if (ctx.host.exists(p))
    facts.present(std::string(kKey), p, p);
  else
    facts.absent(std::string(kKey), p, fmt::format("{} does not exist on this host", p));
}

// What the HealthCheckProgram does to the node when it is a script: drains it, resumes it
// (audit/parse/health_check.h). Absent for a program that is not a script or is not here.
void record_healthcheck_actions(const CollectContext& ctx, Facts& facts) {
  constexpr std::string_view kKey = "slurm.healthcheck_program.actions";
  const Fact* installed = facts.find("slurm.healthcheck_program.installed");
  if (!installed || installed->status != FactStatus::present) return;
  const std::string& p = installed->value;
  std::string err;
  auto text = read_optional(ctx, p, &err, kMaxConfBytes);
  if (!text) {
    if (err.empty()) facts.absent(std::string(kKey), p, fmt::format("{} could not be read", p));
    else facts.error(std::string(kKey), p, err);
    return;
  }
  auto actions = classify_health_script(*text);
  if (!actions) {
    facts.absent(std::string(kKey), p, fmt::format("{} is not a script; what it does to the node is not read", p));
    return;
  }
  std::string value = actions->drains && actions->resumes ? "drains resumes"
                      : actions->drains                   ? "drains"
                      : actions->resumes                  ? "resumes"
                                                          : "none";
  if (actions->skips_drained) value += " skips-drained";
  std::string detail;
  if (actions->drains) detail = fmt::format("drains or downs the node at line {}", actions->drain_line);
  if (actions->resumes)
    detail += fmt::format("{}resumes it at line {}", detail.empty() ? "" : "; ", actions->resume_line);
  if (actions->skips_drained)
    detail += fmt::format(", but exits first when the node is drained (line {})", actions->skip_line);
  if (detail.empty()) detail = "neither drains nor resumes the node (scontrol, node-mark-offline/online)";
  facts.present(std::string(kKey), value, p, detail);
}

// The topology kinds ("block", "tree", "flat") that a topology.yaml defines.
std::string yaml_topology_kinds(std::string_view text) {
  std::set<std::string> kinds;
  for (auto line : core::split_lines(text)) {
    auto t = core::trim(strip_comment(line));
    if (t.starts_with("- ")) t = core::trim(t.substr(2));
    for (std::string_view k : {"block", "tree", "flat"})
      if (t.starts_with(k) && t.substr(k.size()).starts_with(":")) kinds.insert(std::string(k));
  }
  return kinds.empty() ? std::string("none") : fmt::format("{}", fmt::join(kinds, " "));
}

void collect_topology(const CollectContext& ctx, const std::string& dir, Facts& facts) {
  // Slurm 25.05+ reads topology.yaml first and then ignores topology.conf.
  std::string yaml = core::join_path(dir, "topology.yaml");
  std::string err;
  if (auto text = read_optional(ctx, yaml, &err, kMaxConfBytes))
    facts.present("slurm.topology_yaml", yaml_topology_kinds(*text), yaml, "topology kinds defined");
  else if (!err.empty())
    facts.error("slurm.topology_yaml", yaml, err);
  else
    facts.absent("slurm.topology_yaml", yaml, fmt::format("no {}", yaml));

  std::string conf = core::join_path(dir, "topology.conf");
  err.clear();
  auto text = read_optional(ctx, conf, &err, kMaxConfBytes);
  if (!text) {
    for (std::string_view key : {"slurm.topology_conf", "slurm.topology_conf.switches", "slurm.topology_conf.blocks"}) {
      if (err.empty())
        facts.absent(std::string(key), conf, fmt::format("no {}", conf));
      else
        facts.error(std::string(key), conf, err);
    }
    return;
  }
  int switches = 0, blocks = 0;
  for (const auto& e : parse_kv_conf(*text)) {
    std::string k = core::to_lower(e.key);
    if (k == "switchname") ++switches;
    if (k == "blockname") ++blocks;
  }
  facts.present("slurm.topology_conf", conf, conf, fmt::format("{} SwitchName, {} BlockName lines", switches, blocks));
  facts.present("slurm.topology_conf.switches", std::to_string(switches), conf, "SwitchName lines");
  facts.present("slurm.topology_conf.blocks", std::to_string(blocks), conf, "BlockName lines");
}

void collect_cgroup(const CollectContext& ctx, const std::string& dir, Facts& facts) {
  std::string path = core::join_path(dir, "cgroup.conf");
  constexpr std::string_view kKey = "slurm.cgroup.ConstrainDevices";
  std::string err;
  auto text = read_optional(ctx, path, &err, kMaxConfBytes);
  if (!text) {
    if (err.empty())
      facts.absent(std::string(kKey), path, fmt::format("no {} (ConstrainDevices defaults to no)", path));
    else
      facts.error(std::string(kKey), path, err);
    return;
  }
  auto entries = parse_kv_conf(*text);
  if (const KvEntry* e = find_kv(entries, "ConstrainDevices"))
    facts.present(std::string(kKey), e->value, fmt::format("{}:{}", path, e->line));
  else
    facts.absent(std::string(kKey), path, fmt::format("ConstrainDevices is not set in {} (defaults to no)", path));
}

// GPU entries of gres.conf: "AutoDetect=nvml" (or nvidia) anywhere, and lines with Name=gpu.
std::string gres_gpu_summary(std::string_view text) {
  std::string autodetect;
  int gpu_lines = 0;
  for (auto line : core::split_lines(text)) {
    bool gpu = false;
    for (auto token : core::split_any(strip_comment(line), " \t")) {
      auto kv = core::parse_key_value(token);
      if (!kv) continue;
      std::string key = core::to_lower(kv->key), value = core::to_lower(core::unquote(kv->value));
      if (key == "autodetect" && (value == "nvml" || value == "nvidia")) autodetect = "AutoDetect=" + value;
      if (key == "name" && value == "gpu") gpu = true;
    }
    if (gpu) ++gpu_lines;
  }
  std::vector<std::string> parts;
  if (!autodetect.empty()) parts.push_back(autodetect);
  if (gpu_lines > 0) parts.push_back(fmt::format("{} Name=gpu line{}", gpu_lines, gpu_lines == 1 ? "" : "s"));
  return fmt::format("{}", fmt::join(parts, ", "));
}

void collect_gres(const CollectContext& ctx, const std::string& dir, Facts& facts) {
  std::string path = core::join_path(dir, "gres.conf");
  std::string err;
  auto text = read_optional(ctx, path, &err, kMaxConfBytes);
  if (!text) {
    for (std::string_view key : {"slurm.gres_conf", "slurm.gres_conf.gpus"}) {
      if (err.empty())
        facts.absent(std::string(key), path, fmt::format("no {}", path));
      else
        facts.error(std::string(key), path, err);
    }
    return;
  }
  std::string gpus = gres_gpu_summary(*text);
  facts.present("slurm.gres_conf", path, path, gpus.empty() ? "no GPU entries" : gpus);
  if (gpus.empty())
    facts.absent("slurm.gres_conf.gpus", path, fmt::format("{} has no AutoDetect=nvml and no Name=gpu line", path));
  else
    facts.present("slurm.gres_conf.gpus", gpus, path);
}

// Shell-style match of one file name: '*' and '?' only; a leading '.' is never matched by them.
bool wildcard_match(std::string_view pattern, std::string_view name) {
  if (!name.empty() && name.front() == '.' && (pattern.empty() || pattern.front() != '.')) return false;
  std::size_t p = 0, i = 0, star = std::string_view::npos, mark = 0;
  while (i < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[i])) {
      ++p;
      ++i;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = i;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      i = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

struct SpankScan {
  std::string pyxis;  // "required /usr/lib/.../spank_pyxis.so", empty when none
  int pyxis_line = 0;
  std::vector<std::string> includes;
};

// plugstack.conf lines: "required|optional <plugin.so> [args]" and "include <pattern>".
SpankScan scan_plugstack(std::string_view text) {
  SpankScan out;
  int n = 0;
  for (auto line : core::split_lines(text)) {
    ++n;
    auto words = core::split_any(strip_comment(line), " \t");
    if (words.size() < 2) continue;
    std::string verb = core::to_lower(words[0]);
    std::string plugin = core::to_lower(base_of(words[1]));
    if ((verb == "required" || verb == "optional") && out.pyxis.empty() && plugin.find("pyxis") != std::string::npos &&
        plugin.ends_with(".so")) {
      out.pyxis = fmt::format("{} {}", words[0], words[1]);
      out.pyxis_line = n;
    }
    if (verb == "include") out.includes.emplace_back(words[1]);
  }
  return out;
}

// The files an include pattern of plugstack.conf names (glob in the last component only).
std::vector<std::string> expand_include(const CollectContext& ctx, std::string_view pattern, const std::string& base,
                                        std::vector<std::string>& problems) {
  std::string full = pattern.front() == '/' ? std::string(pattern) : core::join_path(base, pattern);
  std::string dir = dir_of(full);
  std::string name(base_of(full));
  if (!is_simple_path(dir)) {
    problems.push_back(fmt::format("include {} not followed (pattern in a directory name)", pattern));
    return {};
  }
  if (name.find_first_of("*?") == std::string::npos) return {full};
  auto entries = ctx.host.list_dir(dir);
  if (!entries) {
    if (ctx.host.exists(dir)) problems.push_back(entries.error().message);
    return {};
  }
  std::vector<std::string> out;
  for (const auto& e : *entries)
    if (!e.is_dir && wildcard_match(name, e.name)) out.push_back(core::join_path(dir, e.name));
  return out;
}

// The pyxis lines of plugstack.conf.d/*.conf that no include reached, for the reason of an absence.
std::string orphan_pyxis(const CollectContext& ctx, const std::string& dir, const std::set<std::string>& read) {
  std::string d = core::join_path(dir, "plugstack.conf.d");
  auto entries = ctx.host.list_dir(d);
  if (!entries) return {};
  for (const auto& e : *entries) {
    std::string path = core::join_path(d, e.name);
    if (e.is_dir || !e.name.ends_with(".conf") || read.count(path)) continue;
    if (auto text = read_optional(ctx, path, nullptr, kMaxConfBytes); text && !scan_plugstack(*text).pyxis.empty())
      return fmt::format("; {} loads pyxis, but nothing includes it", path);
  }
  return {};
}

void collect_pyxis(const CollectContext& ctx, const std::string& dir, Facts& out) {
  constexpr std::string_view kKey = "slurm.pyxis";
  // PlugStackConfig moves plugstack.conf; by default it sits beside slurm.conf.
  std::string path = core::join_path(dir, "plugstack.conf");
  if (auto custom = out.value_or("slurm.conf.PlugStackConfig"); !custom.empty())
    path = custom.front() == '/' ? std::string(custom) : core::join_path(dir, custom);
  std::string err;
  auto text = read_optional(ctx, path, &err, kMaxConfBytes);
  std::set<std::string> read{path};
  if (!text) {
    if (!err.empty())
      out.error(std::string(kKey), path, err);
    else
      out.absent(std::string(kKey), path,
                 fmt::format("no {}: no SPANK plugin is configured{}", path, orphan_pyxis(ctx, dir, read)));
    return;
  }
  SpankScan top = scan_plugstack(*text);
  if (!top.pyxis.empty()) {
    out.present(std::string(kKey), top.pyxis, fmt::format("{}:{}", path, top.pyxis_line));
    return;
  }
  std::vector<std::string> problems;
  for (const auto& pattern : top.includes) {
    for (const auto& file : expand_include(ctx, pattern, dir_of(path), problems)) {
      read.insert(file);
      std::string e;
      auto inc = read_optional(ctx, file, &e, kMaxConfBytes);
      if (!inc) {
        if (!e.empty()) problems.push_back(e);
        continue;
      }
      SpankScan s = scan_plugstack(*inc);
      if (!s.pyxis.empty()) {
        out.present(std::string(kKey), s.pyxis, fmt::format("{}:{}", file, s.pyxis_line),
                    fmt::format("included from {}", path));
        return;
      }
    }
  }
  if (!problems.empty())
    out.error(std::string(kKey), path,
              fmt::format("no pyxis line in the files read, but {}", fmt::join(problems, "; ")));
  else
    out.absent(
        std::string(kKey), path,
        fmt::format("no spank_pyxis.so line in {} or the files it includes{}", path, orphan_pyxis(ctx, dir, read)));
}

void collect_client_tools(const CollectContext& ctx, Facts& facts) {
  for (auto tool : kClientTools) {
    std::string key = fmt::format("slurm.tool.{}", tool);
    if (auto path = find_tool(ctx, tool))
      facts.present(key, *path, *path);
    else
      facts.absent(key, "PATH", fmt::format("no {} on PATH", tool));
  }
}

struct Candidate {
  std::string path;
  std::string how;
};

std::vector<Candidate> conf_candidates(const CollectContext& ctx) {
  std::vector<Candidate> out;
  // Slurm's own commands honour $SLURM_CONF first; a host root has no environment of its own.
  if (ctx.host.is_live())
    if (const char* env = std::getenv("SLURM_CONF"); env && *env == '/') out.push_back({env, "from $SLURM_CONF"});
  for (auto p : kConfPaths) out.push_back({std::string(p), {}});
  return out;
}

}  // namespace

void collect_slurm(const CollectContext& ctx, Facts& facts) {
  collect_client_tools(ctx, facts);
  auto candidates = conf_candidates(ctx);
  const Candidate* found = nullptr;
  for (const auto& c : candidates)
    if (ctx.host.exists(c.path)) {
      found = &c;
      break;
    }
  if (!found) {
    std::vector<std::string> paths;
    for (const auto& c : candidates) paths.push_back(c.path);
    std::string list = fmt::format("{}", fmt::join(paths, ", "));
    facts.absent("slurm.conf.path", list, fmt::format("no slurm.conf at {}", list));
    return;
  }
  std::string err;
  auto text = read_optional(ctx, found->path, &err, kMaxConfBytes);
  if (!text) {
    facts.error("slurm.conf.path", found->path,
                err.empty() ? fmt::format("{} vanished while being read", found->path) : err);
    return;
  }
  facts.present("slurm.conf.path", found->path, found->path, found->how);
  std::string dir = dir_of(found->path);
  LoadedConf conf;
  parse_conf_into(ctx, *text, found->path, dir, 0, conf);
  record_keys(conf, found->path, facts);
  // PlugStackConfig is read only to find plugstack.conf; it is not one of the recorded keys.
  if (auto e = entries_named(conf, "PlugStackConfig"); !e.empty())
    facts.present("slurm.conf.PlugStackConfig", e.back()->value, e.back()->source);
  record_healthcheck_installed(ctx, facts);
  record_healthcheck_actions(ctx, facts);
  collect_topology(ctx, dir, facts);
  collect_cgroup(ctx, dir, facts);
  collect_gres(ctx, dir, facts);
  collect_pyxis(ctx, dir, facts);
}

}  // namespace cmax::audit
