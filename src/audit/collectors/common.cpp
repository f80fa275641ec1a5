#include <thread>
#include <vector>

#include <fmt/format.h>

#include "audit/collectors/collector.h"
#include "core/process.h"
#include "core/strings.h"
#include "core/version.h"

namespace cmax::audit {
namespace {

constexpr std::string_view kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

}  // namespace

std::span<const Collector> all_collectors() {
  static const Collector kCollectors[] = {
      {"os", collect_os},           {"sysctl", collect_sysctl},   {"gpu", collect_gpu},
      {"tools", collect_tools},     {"slurm", collect_slurm},     {"network", collect_network},
      {"kernel_log", collect_kernel_log}, {"platform", collect_platform}, {"software", collect_software},
  };
  return kCollectors;
}

Facts collect_all(const CollectContext& ctx, std::span<const Collector> collectors) {
  std::vector<Facts> parts(collectors.size());
  {
    std::vector<std::jthread> threads;
    threads.reserve(collectors.size());
    for (std::size_t i = 0; i < collectors.size(); ++i) {
      threads.emplace_back([&, i] {
        try {
          collectors[i].fn(ctx, parts[i]);
        } catch (const std::exception& e) {
          parts[i].error(fmt::format("collector.{}", collectors[i].name), "cmax",
                         fmt::format("collector failed: {}", e.what()));
        }
      });
    }
  }
  Facts out;
  for (auto& p : parts) out.merge(std::move(p));
  return out;
}

std::optional<std::string> read_optional(const CollectContext& ctx, std::string_view path, std::string* error,
                                         std::size_t max_bytes) {
  if (!ctx.host.exists(path)) return std::nullopt;
  auto data = ctx.host.read_file(path, max_bytes);
  if (!data) {
    if (error) *error = data.error().message;
    return std::nullopt;
  }
  return std::move(*data);
}

std::optional<std::string> read_fact(const CollectContext& ctx, Facts& facts, std::string key, std::string_view path,
                                     std::size_t max_bytes) {
  std::string err;
  auto data = read_optional(ctx, path, &err, max_bytes);
  if (!data) {
    if (err.empty())
      facts.absent(std::move(key), std::string(path), fmt::format("{} does not exist", path));
    else
      facts.error(std::move(key), std::string(path), err);
    return std::nullopt;
  }
  std::string value(core::trim(*data));
  facts.present(std::move(key), value, std::string(path));
  return value;
}

std::optional<std::string> find_tool(const CollectContext& ctx, std::string_view name) {
  std::string_view path = ctx.path_env ? std::string_view(*ctx.path_env) : std::string_view();
  std::string env_path;
  if (!ctx.path_env) {
    const char* p = std::getenv("PATH");
    env_path = p ? p : std::string(kDefaultPath);
    path = env_path;
  }
  if (ctx.host.is_live()) return core::find_program(name, path);
  for (auto dir : core::split_any(kDefaultPath, ":")) {
    std::string candidate = std::string(dir) + "/" + std::string(name);
    if (ctx.host.exists(candidate)) return candidate;
  }
  return std::nullopt;
}

void tool_version_fact(const CollectContext& ctx, const Facts& pkgs, Facts& facts, std::string key,
                       std::initializer_list<std::string_view> programs, std::initializer_list<std::string_view> args,
                       std::initializer_list<std::string_view> packages, std::string_view after_word) {
  std::string found_but_not_run;
  for (auto program : programs) {
    auto path = find_tool(ctx, program);
    if (!path) continue;
    if (!ctx.host.is_live()) {
      found_but_not_run = *path;
      break;
    }
    core::ProcessSpec spec;
    spec.argv.emplace_back(*path);
    for (auto a : args) spec.argv.emplace_back(a);
    spec.timeout = ctx.command_timeout;
    spec.max_output_bytes = 64 * 1024;
    std::string cmd = core::describe_argv(spec.argv);
    auto r = core::run_process(spec);
    if (!r) {
      facts.error(std::move(key), cmd, r.error().message);
      return;
    }
    if (r->timed_out) {
      facts.error(std::move(key), cmd, fmt::format("timed out after {} ms", ctx.command_timeout.count()));
      return;
    }
    std::string text = r->out + "\n" + r->err;
    auto tok = core::find_version_token(text, after_word);
    if (!tok) {
      facts.error(std::move(key), cmd,
                  fmt::format("no version in its output (exit {}): {}", r->exit_code, core::clip(core::trim(text), 120)));
      return;
    }
    facts.present(std::move(key), std::string(*tok), cmd, fmt::format("binary {}", *path));
    return;
  }
  for (auto pkg : packages) {
    std::string pkg_key = fmt::format("pkg.{}", pkg);
    if (const Fact* f = pkgs.find(pkg_key); f && f->status == FactStatus::present) {
      facts.present(std::move(key), f->value, fmt::format("dpkg: {}", pkg), "distro package");
      return;
    }
  }
  std::string names;
  for (auto p : programs) names += (names.empty() ? "" : ", ") + std::string(p);
  if (!found_but_not_run.empty()) {
    facts.error(std::move(key), found_but_not_run,
                "found in the host root, but commands are not run against a host root and no dpkg record names it");
    return;
  }
  facts.absent(std::move(key), fmt::format("PATH: {}", names), fmt::format("not installed (no {} on PATH)", names));
}

std::optional<Result<ToolRun>> run_tool(const CollectContext& ctx, std::string_view program,
                                        std::initializer_list<std::string_view> args) {
  if (!ctx.host.is_live()) return std::nullopt;
  auto path = find_tool(ctx, program);
  if (!path) return std::nullopt;
  core::ProcessSpec spec;
  spec.argv.emplace_back(*path);
  for (auto a : args) spec.argv.emplace_back(a);
  spec.timeout = ctx.command_timeout;
  spec.max_output_bytes = 256 * 1024;
  ToolRun run;
  run.command = core::describe_argv(spec.argv);
  auto r = core::run_process(spec);
  if (!r) return Result<ToolRun>(fail("run {}: {}", run.command, r.error().message));
  if (r->timed_out)
    return Result<ToolRun>(fail("run {}: no answer within {} ms", run.command, ctx.command_timeout.count()));
  run.exit_code = r->exit_code;
  run.out = std::move(r->out);
  run.err = std::move(r->err);
  return Result<ToolRun>(std::move(run));
}

std::string line_with(std::string_view text, std::string_view needle) {
  for (auto line : core::split_lines(text))
    if (line.find(needle) != std::string_view::npos) return core::clip(core::trim(line), 200);
  return {};
}

}  // namespace cmax::audit
