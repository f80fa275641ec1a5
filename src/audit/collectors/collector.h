#pragma once
// Collectors gather facts from a host. Each is a function in its own file, listed in the table in
// collectors.cpp; they run concurrently, each into its own Facts, and the results are merged.

#include <chrono>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "audit/facts.h"
#include "core/result.h"
#include "core/host.h"

namespace cmax::audit {

struct CollectContext {
  const core::HostRoot& host;
  std::chrono::milliseconds command_timeout{3000};
  std::optional<std::string> path_env;  ///< PATH for finding tools; nullopt = this process's PATH
  std::optional<std::string> enroot_import_image;  ///< `enroot import` this image as a probe (pulls it)
  std::chrono::milliseconds enroot_import_timeout{300000};
};

using CollectFn = void (*)(const CollectContext&, Facts&);

struct Collector {
  std::string_view name;
  CollectFn fn;
};

/// The collector table, in a fixed order.
std::span<const Collector> all_collectors();

/// Runs every collector (concurrently) and merges their facts.
Facts collect_all(const CollectContext& ctx, std::span<const Collector> collectors);

void collect_os(const CollectContext& ctx, Facts& facts);
void collect_sysctl(const CollectContext& ctx, Facts& facts);
void collect_gpu(const CollectContext& ctx, Facts& facts);
void collect_tools(const CollectContext& ctx, Facts& facts);
void collect_slurm(const CollectContext& ctx, Facts& facts);
void collect_network(const CollectContext& ctx, Facts& facts);
void collect_kernel_log(const CollectContext& ctx, Facts& facts);
void collect_platform(const CollectContext& ctx, Facts& facts);
void collect_software(const CollectContext& ctx, Facts& facts);

// Shared helpers for collectors.

/// Reads a file into `key`: present with the trimmed content, absent when there is no such file,
/// error with the reason when it exists but cannot be read (or is larger than `max_bytes`).
/// Returns the content when present.
std::optional<std::string> read_fact(const CollectContext& ctx, Facts& facts, std::string key,
                                     std::string_view path, std::size_t max_bytes = 1u << 20);

/// Reads a file without recording a fact: nullopt when missing; `error` set when unreadable.
std::optional<std::string> read_optional(const CollectContext& ctx, std::string_view path,
                                         std::string* error = nullptr, std::size_t max_bytes = 1u << 20);

/// Finds a program on PATH inside the host root (live: the real PATH; image: the same dirs
/// under the root). Returns the host path.
std::optional<std::string> find_tool(const CollectContext& ctx, std::string_view name);

/// Records `key` = version of the first of `programs` found, from `<program> <args>` output
/// (first version token, after `after_word` when given). Only on the live host; otherwise, or when
/// none is installed, falls back to the first installed dpkg package of `packages` (looked up as
/// the facts "pkg.<name>" in `pkgs`). Absent when neither.
void tool_version_fact(const CollectContext& ctx, const Facts& pkgs, Facts& facts, std::string key,
                       std::initializer_list<std::string_view> programs,
                       std::initializer_list<std::string_view> args,
                       std::initializer_list<std::string_view> packages, std::string_view after_word = {});

/// What a command printed: `command` as run, its exit code, stdout and stderr.
struct ToolRun {
  std::string command;
  int exit_code = -1;
  std::string out, err;
};
/// Runs `program` (found as find_tool finds it) with `args` on the live host, bounded by the
/// command timeout. nullopt when the program is not installed or the host is not live (a host
/// root's programs are never run); an error when it could not start or timed out.
std::optional<Result<ToolRun>> run_tool(const CollectContext& ctx, std::string_view program,
                                        std::initializer_list<std::string_view> args);

/// The first line of `text` that holds `needle` (for evidence), clipped.
std::string line_with(std::string_view text, std::string_view needle);

}  // namespace cmax::audit
