// The host isolation checks on fixture trees: every outcome of every check, the three-way rule
// (unreadable evidence is unverified, never a pass), the pure readers, and the shape on the live
// machine.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "isolation/host_isolation.h"
#include "isolation/host_parse.h"
#include "support/temp_host.h"

namespace cmax::isolation {
namespace {

using audit::Finding;
using audit::Outcome;
namespace fs = std::filesystem;

constexpr std::string_view kHostNet = "net:[4026531840]";
constexpr std::string_view kHostPid = "pid:[4026531836]";
constexpr std::string_view kOtherNet = "net:[4026532999]";

bool has(std::string_view hay, std::string_view needle) {
  return hay.find(needle) != std::string_view::npos;
}

Finding pick(const std::vector<Finding>& findings, std::string_view name) {
  const std::string id = "isolation.host." + std::string(name);
  for (const auto& f : findings)
    if (f.check_id == id) return f;
  throw std::runtime_error("no finding " + id);
}

Finding judge_one(const HostIsolationFacts& facts, std::string_view name) {
  return pick(judge_host_isolation(facts), name);
}

Finding run(const test::TempHost& host, const HostIsolationEnv& env, std::string_view name) {
  return judge_one(collect_host_isolation(host.host(), env), name);
}

void chmod(const test::TempHost& host, std::string_view path, fs::perms perms) {
  fs::permissions(host.dir() / fs::path(std::string(path.substr(1))), perms,
                  fs::perm_options::replace);
}

// A process in the fixture's /proc: status with its real uid, and its ns/net link.
void process(test::TempHost& host, int pid, unsigned uid, std::string_view net) {
  host.write(fmt::format("/proc/{}/status", pid),
             fmt::format("Name:\tjob\nState:\tS (sleeping)\nUid:\t{0}\t{0}\t{0}\t{0}\n", uid));
  host.symlink(net, fmt::format("/proc/{}/ns/net", pid));
}

// /proc/self and a host-like PID 1 (systemd, root, in `net` and `pid`).
void namespaces(test::TempHost& host, std::string_view self_net, std::string_view self_pid,
                std::string_view init_net, std::string_view init_pid,
                std::string_view init_comm = "systemd") {
  host.symlink(self_net, "/proc/self/ns/net");
  host.symlink(self_pid, "/proc/self/ns/pid");
  process(host, 1, 0, init_net);
  host.symlink(init_pid, "/proc/1/ns/pid");
  host.write("/proc/1/comm", std::string(init_comm) + "\n");
}

HostIsolationEnv env_uid(unsigned uid) {
  HostIsolationEnv env;
  env.uid = uid;
  return env;
}

void expect_reason_rule(const Finding& f) {
  if (f.outcome == Outcome::not_applicable || f.outcome == Outcome::unverified) {
    EXPECT_FALSE(f.reason.empty()) << f.check_id;
  }
  EXPECT_TRUE(f.check_id.starts_with("isolation.host.")) << f.check_id;
  EXPECT_EQ(f.category, audit::Category::security);
  EXPECT_EQ(f.severity, audit::Severity::config);
  EXPECT_TRUE(f.security);
  EXPECT_EQ(f.criterion, "Security: tenant isolation (host)");
  EXPECT_FALSE(f.title.empty());
  EXPECT_FALSE(f.description.empty());
  EXPECT_FALSE(f.remediation.empty());
  EXPECT_FALSE(f.evidence_source.empty()) << f.check_id;
}

// pure readers

TEST(HostIsolationParse, TomlTopLevelStopsAtTheFirstTable) {
  constexpr std::string_view kConfig = R"(# NVIDIA Container Toolkit
disable-require = false
#accept-nvidia-visible-devices-envvar-when-unprivileged = true
"quoted-key" = "a # not a comment"   # a comment
supported-driver-capabilities = "compat32,compute"
multi = """
[not-a-table]
"""
list = [
  "x",
  [1, 2],
]
accept-nvidia-visible-devices-envvar-when-unprivileged = false # set by the site
not a key line

[nvidia-container-cli]
ldconfig = "@/sbin/ldconfig"
)";
  auto entries = toml_top_level(kConfig);
  ASSERT_EQ(entries.size(), 6u);
  EXPECT_EQ(entries[0].key, "disable-require");
  EXPECT_EQ(entries[0].value, "false");
  EXPECT_EQ(entries[1].key, "quoted-key");
  EXPECT_EQ(entries[1].value, "\"a # not a comment\"");
  EXPECT_EQ(entries[3].key, "multi");
  EXPECT_EQ(entries[4].key, "list");
  EXPECT_EQ(entries[5].key, "accept-nvidia-visible-devices-envvar-when-unprivileged");
  EXPECT_EQ(entries[5].value, "false");
  EXPECT_TRUE(toml_top_level("[table]\nkey = true\n").empty());
  auto one_line = toml_top_level("s = \"\"\"a # b\"\"\" # c\nafter = 1\n");
  ASSERT_EQ(one_line.size(), 2u);
  EXPECT_EQ(one_line[0].value, "\"\"\"a # b\"\"\"");
  EXPECT_TRUE(toml_top_level("").empty());
  EXPECT_EQ(toml_bool("true"), true);
  EXPECT_EQ(toml_bool("false"), false);
  EXPECT_FALSE(toml_bool("\"false\""));
  EXPECT_FALSE(toml_bool("yes"));
}

TEST(HostIsolationParse, ProcStatusMountsAndCgroups) {
  EXPECT_EQ(status_real_uid("Name:\tbash\nUid:\t1001\t0\t0\t0\nGid:\t5\n"), 1001u);
  EXPECT_FALSE(status_real_uid("Name:\tbash\n"));
  EXPECT_FALSE(status_real_uid("Uid:\tx\n"));

  constexpr std::string_view kMounts =
      "sysfs /sys sysfs rw,nosuid 0 0\n"
      "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n"
      "proc /proc proc rw,relatime,hidepid=invisible,gid=27 0 0\n"
      "proc /run/x/proc proc rw 0 0\n";
  auto options = proc_mount_options(kMounts);
  ASSERT_TRUE(options);
  EXPECT_EQ(*options, "rw,relatime,hidepid=invisible,gid=27");
  EXPECT_EQ(hidepid_option(*options), "invisible");
  EXPECT_EQ(hidepid_option("rw,relatime"), "");
  EXPECT_FALSE(proc_mount_options("sysfs /sys sysfs rw 0 0\n"));
  EXPECT_TRUE(hidepid_hides("2"));
  EXPECT_TRUE(hidepid_hides("noaccess"));
  EXPECT_TRUE(hidepid_hides("ptraceable"));
  EXPECT_FALSE(hidepid_hides("0"));
  EXPECT_FALSE(hidepid_hides("off"));
  EXPECT_FALSE(hidepid_hides(""));

  EXPECT_EQ(container_cgroup_marker("0::/kubepods.slice/kubepods-burstable.slice/x.scope\n"),
            "kubepods.slice");
  EXPECT_EQ(container_cgroup_marker("12:cpu:/docker/0123abc\n"), "docker");
  EXPECT_EQ(container_cgroup_marker("0::/machine.slice/libpod-99.scope\n"), "libpod-99.scope");
  EXPECT_FALSE(container_cgroup_marker("0::/system.slice/docker.service\n"));
  EXPECT_FALSE(container_cgroup_marker("0::/user.slice/user-1000.slice/session-3.scope\n"));
  EXPECT_FALSE(container_cgroup_marker("0::/\n"));
}

TEST(HostIsolationParse, SocketTablesInterfacesPasswdAndPkeys) {
  constexpr std::string_view kTcp =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
      "timeout inode\n"
      "   0: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        "
      "0 1234 1 0000000000000000 100 0 0 10 0\n"
      "   1: 0100007F:22B8 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1001        "
      "0 5678 1 0000000000000000 100 0 0 10 0\n"
      "   2: 0100007F:22B9 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1001        "
      "0 5679 1 0000000000000000 100 0 0 10 0\n";
  EXPECT_EQ(socket_table_uids(kTcp), (std::vector<unsigned>{0, 1001}));
  EXPECT_TRUE(socket_table_uids("").empty());

  constexpr std::string_view kNetDev =
      "Inter-|   Receive                            |  Transmit\n"
      " face |bytes    packets errs drop fifo frame compressed multicast|bytes\n"
      "    lo: 100 1 0 0 0 0 0 0 100 1 0 0 0 0 0 0\n"
      "  eth0: 100 1 0 0 0 0 0 0 100 1 0 0 0 0 0 0\n"
      "vethab12: 100 1 0 0 0 0 0 0 100 1 0 0 0 0 0 0\n"
      "  cni0: 100 1 0 0 0 0 0 0 100 1 0 0 0 0 0 0\n";
  EXPECT_EQ(node_side_interfaces(kNetDev), (std::vector<std::string>{"vethab12", "cni0"}));

  constexpr std::string_view kPasswd =
      "root:x:0:0:root:/root:/bin/bash\nmunge::998:995::/nonexistent:/usr/sbin/nologin\n";
  EXPECT_EQ(passwd_uid(kPasswd, "munge"), 998u);
  EXPECT_FALSE(passwd_uid(kPasswd, "slurm"));
  EXPECT_EQ(passwd_name(kPasswd, 0), "root");
  EXPECT_FALSE(passwd_name(kPasswd, 42));

  EXPECT_EQ(parse_pkey("0xffff\n"), 0xffff);
  EXPECT_EQ(parse_pkey("0x8001"), 0x8001);
  EXPECT_FALSE(parse_pkey("ffff"));
  EXPECT_FALSE(parse_pkey("0x10000"));
  EXPECT_FALSE(parse_pkey("0x"));
}

// isolation.host.gpu_devices

void gpu_nodes(test::TempHost& host, int n) {
  host.write("/dev/nvidiactl", "");
  host.write("/dev/nvidia-uvm", "");
  host.write("/dev/nvidia-modeset", "");
  host.mkdir("/dev/nvidia-caps");
  for (int i = 0; i < n; ++i) host.write(fmt::format("/dev/nvidia{}", i), "");
}

// Facts for the GPU judge alone: /dev listed, `env` as given.
HostIsolationFacts gpu_facts(const HostIsolationEnv& env) {
  HostIsolationFacts facts;
  facts.env = env;
  facts.dev.state = ReadState::read;
  return facts;
}

TEST(HostIsolationGpu, NoGpuNodesIsNotApplicable) {
  test::TempHost host;
  gpu_nodes(host, 0);
  HostIsolationEnv env;
  env.slurm_job_id = "7";
  auto f = run(host, env, "gpu_devices");
  EXPECT_EQ(f.outcome, Outcome::not_applicable);
  EXPECT_EQ(f.reason, "no NVIDIA GPU device nodes");
  test::TempHost bare;  // no /dev at all
  EXPECT_EQ(run(bare, env, "gpu_devices").outcome, Outcome::not_applicable);
}

TEST(HostIsolationGpu, NoAllocationIsNotApplicable) {
  test::TempHost host;
  gpu_nodes(host, 2);
  auto f = run(host, HostIsolationEnv{}, "gpu_devices");
  EXPECT_EQ(f.outcome, Outcome::not_applicable);
  EXPECT_TRUE(has(f.reason, "not inside an allocation")) << f.reason;
}

TEST(HostIsolationGpu, OpenableNodesOutsideTheSlurmAllocationFail) {
  test::TempHost host;
  gpu_nodes(host, 4);
  HostIsolationEnv env;
  env.slurm_job_id = "7";
  env.slurm_job_gpus = "0,1,2,3";
  env.slurm_step_gpus = "0,1";  // the step is narrower than the job and wins
  auto f = run(host, env, "gpu_devices");
  EXPECT_EQ(f.outcome, Outcome::fail);
  EXPECT_TRUE(has(f.reason, "can open /dev/nvidia2, /dev/nvidia3 outside the allocation 0,1"))
      << f.reason;
  EXPECT_TRUE(has(f.evidence_value, "/dev/nvidia3=opened")) << f.evidence_value;
  EXPECT_FALSE(has(f.evidence_value, "nvidiactl"));
  expect_reason_rule(f);
}

TEST(HostIsolationGpu, AllocationCoveringEveryOpenableNodePasses) {
  test::TempHost host;
  gpu_nodes(host, 2);
  HostIsolationEnv env;
  env.slurm_job_id = "7";
  env.slurm_job_gpus = "0,1";
  auto f = run(host, env, "gpu_devices");
  EXPECT_EQ(f.outcome, Outcome::pass) << f.reason;
}

TEST(HostIsolationGpu, RefusedNodesOutsideTheAllocationPass) {
  HostIsolationEnv env;
  env.slurm_job_id = "7";
  env.slurm_step_gpus = "0,1";
  HostIsolationFacts facts = gpu_facts(env);
  facts.gpus = {{0, 0, ""},
                {1, 0, ""},
                {2, EACCES, "open /dev/nvidia2: Permission denied"},
                {3, EPERM, "open /dev/nvidia3: Operation not permitted"}};
  auto f = judge_one(facts, "gpu_devices");
  EXPECT_EQ(f.outcome, Outcome::pass) << f.reason;
  EXPECT_TRUE(has(f.observed, "refused: /dev/nvidia2, /dev/nvidia3")) << f.observed;
}

TEST(HostIsolationGpu, OtherOpenErrorsOutsideTheAllocationAreUnverified) {
  test::TempHost host;
  gpu_nodes(host, 2);
  host.mkdir("/dev/nvidia2");                    // EISDIR
  host.symlink("/dev/nowhere", "/dev/nvidia3");  // a link: refused outside the live root
  HostIsolationEnv env;
  env.slurm_job_id = "7";
  env.slurm_step_gpus = "0,1";
  auto f = run(host, env, "gpu_devices");
  EXPECT_EQ(f.outcome, Outcome::unverified);
  EXPECT_TRUE(has(f.reason, "/dev/nvidia2")) << f.reason;
  EXPECT_TRUE(has(f.reason, "/dev/nvidia3")) << f.reason;

  HostIsolationFacts facts;
  facts.env.slurm_job_id = "7";
  facts.env.slurm_step_gpus = "0";
  facts.dev.state = ReadState::read;
  facts.gpus = {{0, ENXIO, "open /dev/nvidia0: No such device or address"}};
  EXPECT_EQ(judge_one(facts, "gpu_devices").outcome, Outcome::pass)
      << "an error on an allocated GPU says nothing about reach beyond the allocation";
  facts.gpus.push_back({1, EIO, "open /dev/nvidia1: Input/output error"});
  EXPECT_EQ(judge_one(facts, "gpu_devices").outcome, Outcome::unverified);
  facts.gpus.push_back({2, 0, ""});
  EXPECT_EQ(judge_one(facts, "gpu_devices").outcome, Outcome::fail) << "a fail is shown anyway";
}

TEST(HostIsolationGpu, UuidAllocationsCompareCounts) {
  test::TempHost host;
  gpu_nodes(host, 2);
  HostIsolationEnv env;
  env.nvidia_visible_devices = "GPU-5f1c2b3a-0000-1111-2222-333344445555";
  auto f = run(host, env, "gpu_devices");
  EXPECT_EQ(f.outcome, Outcome::fail);
  EXPECT_TRUE(has(f.reason, "more than the 1 allocated")) << f.reason;
  EXPECT_TRUE(has(f.reason, "only counts are compared")) << f.reason;
  env.nvidia_visible_devices = "GPU-aaaa,GPU-bbbb";
  EXPECT_EQ(run(host, env, "gpu_devices").outcome, Outcome::pass);

  HostIsolationEnv cuda;
  cuda.cuda_visible_devices = "0";  // CUDA's own numbering: counts only
  EXPECT_EQ(run(host, cuda, "gpu_devices").outcome, Outcome::fail);
  cuda.cuda_visible_devices = "0,1";
  EXPECT_EQ(run(host, cuda, "gpu_devices").outcome, Outcome::pass);
  cuda.cuda_visible_devices = "NoDevFiles";
  EXPECT_EQ(run(host, cuda, "gpu_devices").outcome, Outcome::fail);
}

TEST(HostIsolationGpu, UnreadableAllocationIsUnverified) {
  test::TempHost host;
  gpu_nodes(host, 2);
  HostIsolationEnv env;
  env.cuda_visible_devices = "0,banana";
  auto f = run(host, env, "gpu_devices");
  EXPECT_EQ(f.outcome, Outcome::unverified);
  EXPECT_TRUE(has(f.reason, "banana")) << f.reason;
}

TEST(HostIsolationGpu, NvidiaVisibleDevicesAll) {
  HostIsolationFacts facts;
  facts.dev.state = ReadState::read;
  facts.gpus = {{0, 0, ""}, {1, EACCES, "denied"}, {2, EACCES, "denied"}, {3, EACCES, "denied"}};
  facts.env.nvidia_visible_devices = "all";
  facts.env.slurm_job_id = "9";
  facts.env.slurm_job_gpus = "0";
  auto f = judge_one(facts, "gpu_devices");
  EXPECT_EQ(f.outcome, Outcome::fail);
  EXPECT_TRUE(has(f.reason, "NVIDIA_VISIBLE_DEVICES=all")) << f.reason;

  // A pod: the device plugin writes device IDs, never "all", so "all" there is no allocation.
  HostIsolationFacts pod;
  pod.dev.state = ReadState::read;
  pod.gpus = facts.gpus;
  pod.env.kubernetes_service_host = "10.96.0.1";
  pod.env.nvidia_visible_devices = "all";
  EXPECT_EQ(judge_one(pod, "gpu_devices").outcome, Outcome::fail);

  // Outside any scheduler, "all" is the allocation itself.
  HostIsolationFacts alone;
  alone.dev.state = ReadState::read;
  alone.gpus = facts.gpus;
  alone.env.nvidia_visible_devices = "all";
  for (auto& g : alone.gpus) g.open_errno = 0;
  EXPECT_EQ(judge_one(alone, "gpu_devices").outcome, Outcome::pass);
}

TEST(HostIsolationGpu, SlurmJobWithoutGpusAndPodsWithoutGpus) {
  test::TempHost host;
  gpu_nodes(host, 1);
  HostIsolationEnv env;
  env.slurm_job_id = "12";
  auto f = run(host, env, "gpu_devices");
  EXPECT_EQ(f.outcome, Outcome::fail);
  EXPECT_TRUE(has(f.reason, "/dev/nvidia0 outside the allocation of no GPUs")) << f.reason;
  HostIsolationEnv pod;
  pod.kubernetes_service_host = "10.96.0.1";
  EXPECT_EQ(run(host, pod, "gpu_devices").outcome, Outcome::fail);
  pod.nvidia_visible_devices = "void";
  EXPECT_EQ(run(host, pod, "gpu_devices").outcome, Outcome::fail);
}

TEST(HostIsolationGpu, VolumeMountedDeviceList) {
  test::TempHost host;
  gpu_nodes(host, 2);
  host.write("/var/run/nvidia-container-devices/0", "");
  HostIsolationEnv env;
  env.nvidia_visible_devices = "/var/run/nvidia-container-devices";
  auto f = run(host, env, "gpu_devices");
  EXPECT_EQ(f.outcome, Outcome::fail);
  EXPECT_TRUE(has(f.reason, "can open /dev/nvidia1 outside the allocation 0")) << f.reason;
  host.write("/var/run/nvidia-container-devices/1", "");
  EXPECT_EQ(run(host, env, "gpu_devices").outcome, Outcome::pass);
  fs::remove_all(host.dir() / "var/run/nvidia-container-devices");
  host.write("/var/run/nvidia-container-devices", "a file, not a directory");
  EXPECT_EQ(run(host, env, "gpu_devices").outcome, Outcome::unverified);
}

TEST(HostIsolationGpu, UnlistableDevIsUnverified) {
  test::TempHost host;
  host.write("/dev", "not a directory");
  HostIsolationEnv env;
  env.slurm_job_id = "7";
  auto f = run(host, env, "gpu_devices");
  EXPECT_EQ(f.outcome, Outcome::unverified);
  EXPECT_TRUE(has(f.reason, "cannot list /dev")) << f.reason;
}

// container_toolkit_envvar

constexpr std::string_view kToolkitPath = "/etc/nvidia-container-runtime/config.toml";

TEST(HostIsolationToolkit, AbsentConfigIsNotApplicable) {
  test::TempHost host;
  auto f = run(host, {}, "container_toolkit_envvar");
  EXPECT_EQ(f.outcome, Outcome::not_applicable);
  EXPECT_TRUE(has(f.reason, "no NVIDIA Container Toolkit config")) << f.reason;
}

TEST(HostIsolationToolkit, TrueOrAbsentKeyWarnsFalsePasses) {
  test::TempHost host;
  host.write(kToolkitPath,
             "disable-require = false\n"
             "accept-nvidia-visible-devices-envvar-when-unprivileged = true\n"
             "[nvidia-container-cli]\nldconfig = \"@/sbin/ldconfig\"\n");
  auto f = run(host, {}, "container_toolkit_envvar");
  EXPECT_EQ(f.outcome, Outcome::warn);
  EXPECT_TRUE(has(f.reason, "NVIDIA_VISIBLE_DEVICES=all")) << f.reason;
  EXPECT_EQ(f.evidence_source, kToolkitPath);
  EXPECT_EQ(f.evidence_value, "accept-nvidia-visible-devices-envvar-when-unprivileged = true");
  expect_reason_rule(f);

  // Commented out, or only inside a table: absent at top level, so the default (true) holds.
  host.write(kToolkitPath,
             "#accept-nvidia-visible-devices-envvar-when-unprivileged = false\n"
             "[nvidia-container-runtime]\n"
             "accept-nvidia-visible-devices-envvar-when-unprivileged = false\n");
  f = run(host, {}, "container_toolkit_envvar");
  EXPECT_EQ(f.outcome, Outcome::warn);
  EXPECT_TRUE(has(f.observed, "defaults to true")) << f.observed;

  host.write(kToolkitPath,
             "accept-nvidia-visible-devices-envvar-when-unprivileged = false  # site policy\n"
             "accept-nvidia-visible-devices-as-volume-mounts = true\n");
  f = run(host, {}, "container_toolkit_envvar");
  EXPECT_EQ(f.outcome, Outcome::pass) << f.reason;
  EXPECT_TRUE(has(f.observed, "accept-nvidia-visible-devices-as-volume-mounts is true"))
      << f.observed;
}

TEST(HostIsolationToolkit, MalformedValuesAreUnverified) {
  test::TempHost host;
  host.write(kToolkitPath, "accept-nvidia-visible-devices-envvar-when-unprivileged = \"no\"\n");
  EXPECT_EQ(run(host, {}, "container_toolkit_envvar").outcome, Outcome::unverified);
  host.write(kToolkitPath,
             "accept-nvidia-visible-devices-envvar-when-unprivileged = false\n"
             "accept-nvidia-visible-devices-envvar-when-unprivileged = true\n");
  auto f = run(host, {}, "container_toolkit_envvar");
  EXPECT_EQ(f.outcome, Outcome::unverified);
  EXPECT_TRUE(has(f.reason, "2 times")) << f.reason;
}

TEST(HostIsolationToolkit, UnreadableConfigIsUnverified) {
  test::TempHost host;
  host.mkdir(kToolkitPath);  // a directory where the file belongs
  auto f = run(host, {}, "container_toolkit_envvar");
  EXPECT_EQ(f.outcome, Outcome::unverified);
  EXPECT_TRUE(has(f.reason, "cannot read the toolkit config")) << f.reason;

  test::TempHost dangling;
  dangling.symlink("/etc/nvidia-container-runtime/gone.toml", kToolkitPath);
  EXPECT_EQ(run(dangling, {}, "container_toolkit_envvar").outcome, Outcome::unverified);
}

// isolation.host.ib_pkeys

void ib_port(test::TempHost& host, std::string_view dev, int port, std::string_view layer,
             std::vector<std::string> pkeys) {
  const std::string dir = fmt::format("/sys/class/infiniband/{}/ports/{}", dev, port);
  host.write(dir + "/link_layer", std::string(layer) + "\n");
  for (std::size_t i = 0; i < pkeys.size(); ++i)
    host.write(fmt::format("{}/pkeys/{}", dir, i), pkeys[i] + "\n");
}

TEST(HostIsolationIb, NoInfinibandOrRoceIsNotApplicable) {
  test::TempHost host;
  auto f = run(host, {}, "ib_pkeys");
  EXPECT_EQ(f.outcome, Outcome::not_applicable);
  EXPECT_TRUE(has(f.reason, "no /sys/class/infiniband")) << f.reason;
  ib_port(host, "mlx5_0", 1, "Ethernet", {});
  f = run(host, {}, "ib_pkeys");
  EXPECT_EQ(f.outcome, Outcome::not_applicable);
  EXPECT_EQ(f.reason, "RoCE: partitioning is by VLAN, not visible from the host's pkey table");
}

TEST(HostIsolationIb, FullDefaultMembershipOnlyWarns) {
  test::TempHost host;
  ib_port(host, "mlx5_0", 1, "InfiniBand", {"0xffff", "0x0000", "0x0000"});
  ib_port(host, "mlx5_1", 1, "Ethernet", {});
  auto f = run(host, {}, "ib_pkeys");
  EXPECT_EQ(f.outcome, Outcome::warn);
  EXPECT_TRUE(has(f.observed, "mlx5_0/1: 0xffff (full, default)")) << f.observed;
  EXPECT_TRUE(has(f.observed, "1 RoCE port not judged")) << f.observed;
  EXPECT_TRUE(has(f.reason, "no tenant PKey")) << f.reason;
  expect_reason_rule(f);
}

TEST(HostIsolationIb, TenantPartitionPassesUnlessDefaultIsFull) {
  test::TempHost host;
  ib_port(host, "mlx5_0", 1, "InfiniBand", {"0x7fff", "0x8001", "0x0000"});
  auto f = run(host, {}, "ib_pkeys");
  EXPECT_EQ(f.outcome, Outcome::pass) << f.reason;
  EXPECT_TRUE(has(f.observed, "0x7fff (limited, default), 0x8001 (full, 0x0001)")) << f.observed;

  ib_port(host, "mlx5_1", 1, "InfiniBand", {"0xffff", "0x8002"});
  f = run(host, {}, "ib_pkeys");
  EXPECT_EQ(f.outcome, Outcome::warn);
  EXPECT_TRUE(has(f.observed, "mlx5_1/1: 0xffff (full, default), 0x8002 (full, 0x0002)"))
      << f.observed;
  EXPECT_TRUE(has(f.reason, "mlx5_1/1: has a tenant PKey but is also a full member")) << f.reason;
}

TEST(HostIsolationIb, UnreadableOrOddTablesAreUnverified) {
  test::TempHost host;
  ib_port(host, "mlx5_0", 1, "InfiniBand", {"0x8001"});
  host.mkdir("/sys/class/infiniband/mlx5_0/ports/1/pkeys/1");  // a directory, not an entry
  auto f = run(host, {}, "ib_pkeys");
  EXPECT_EQ(f.outcome, Outcome::unverified);
  EXPECT_TRUE(has(f.reason, "mlx5_0/1")) << f.reason;

  test::TempHost empty;
  ib_port(empty, "mlx5_0", 1, "InfiniBand", {"0x0000", "0x0000"});
  f = run(empty, {}, "ib_pkeys");
  EXPECT_EQ(f.outcome, Outcome::unverified);
  EXPECT_TRUE(has(f.reason, "empty")) << f.reason;

  test::TempHost garbage;
  ib_port(garbage, "mlx5_0", 1, "InfiniBand", {"ffff"});
  EXPECT_EQ(run(garbage, {}, "ib_pkeys").outcome, Outcome::unverified);

  test::TempHost no_layer;
  no_layer.mkdir("/sys/class/infiniband/mlx5_0/ports/1/link_layer");
  EXPECT_EQ(run(no_layer, {}, "ib_pkeys").outcome, Outcome::unverified);

  test::TempHost no_pkeys;
  no_pkeys.write("/sys/class/infiniband/mlx5_0/ports/1/link_layer", "InfiniBand\n");
  EXPECT_EQ(run(no_pkeys, {}, "ib_pkeys").outcome, Outcome::unverified);
}

// isolation.host.netns

TEST(HostIsolationNetns, OtherUsersInOurNamespaceWarn) {
  test::TempHost host;
  namespaces(host, kHostNet, kHostPid, kHostNet, kHostPid);
  process(host, 200, 1001, kHostNet);
  process(host, 201, 1002, kHostNet);
  process(host, 202, 1000, kHostNet);   // ours
  process(host, 203, 0, kHostNet);      // root
  process(host, 204, 1003, kOtherNet);  // elsewhere
  host.write("/etc/passwd", "alice:x:1001:1001::/home/alice:/bin/sh\n");
  auto f = run(host, env_uid(1000), "netns");
  EXPECT_EQ(f.outcome, Outcome::warn);
  EXPECT_TRUE(has(f.reason, "shared with 2 processes of 2 other users (alice, uid 1002)"))
      << f.reason;
  EXPECT_EQ(f.evidence_value, kHostNet);
  expect_reason_rule(f);
}

TEST(HostIsolationNetns, SocketsOfOtherUsersWarn) {
  test::TempHost host;
  namespaces(host, kHostNet, kHostPid, kHostNet, kHostPid);
  host.write("/proc/self/net/tcp",
             "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid\n"
             "   0: 0100007F:22B8 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1005 "
             "0 5678\n");
  auto f = run(host, env_uid(1000), "netns");
  EXPECT_EQ(f.outcome, Outcome::warn);
  EXPECT_TRUE(has(f.observed, "sockets of 1 other user")) << f.observed;
}

TEST(HostIsolationNetns, NobodyElseInOurNamespacePasses) {
  test::TempHost host;
  namespaces(host, kHostNet, kHostPid, kHostNet, kHostPid);
  process(host, 200, 1001, kOtherNet);
  process(host, 202, 1000, kHostNet);
  auto f = run(host, env_uid(1000), "netns");
  EXPECT_EQ(f.outcome, Outcome::pass) << f.reason;
}

TEST(HostIsolationNetns, UnreadableLinksAreUnverified) {
  test::TempHost host;
  host.write("/proc/self/ns/net", "a file, not a link");
  auto f = run(host, env_uid(1000), "netns");
  EXPECT_EQ(f.outcome, Outcome::unverified);
  EXPECT_TRUE(has(f.reason, "cannot read our network namespace")) << f.reason;

  test::TempHost other;
  namespaces(other, kHostNet, kHostPid, kHostNet, kHostPid);
  other.write("/proc/200/status", "Uid:\t1001\t1001\t1001\t1001\n");  // no ns/net link
  f = run(other, env_uid(1000), "netns");
  EXPECT_EQ(f.outcome, Outcome::unverified);
  EXPECT_TRUE(has(f.reason, "network namespace of 1 process of 1 other user")) << f.reason;

  test::TempHost hidden;  // hidepid hides the others from a tenant: no evidence either way
  namespaces(hidden, kHostNet, kHostPid, kHostNet, kHostPid);
  hidden.write("/proc/mounts", "proc /proc proc rw,hidepid=invisible 0 0\n");
  f = run(hidden, env_uid(1000), "netns");
  EXPECT_EQ(f.outcome, Outcome::unverified);
  EXPECT_TRUE(has(f.reason, "hidepid=invisible")) << f.reason;
}

TEST(HostIsolationNetns, ContainerInTheHostNamespaceFails) {
  test::TempHost host;
  host.write("/.dockerenv", "");
  namespaces(host, kHostNet, kHostPid, kHostNet, kHostPid);
  auto f = run(host, env_uid(1000), "netns");
  EXPECT_EQ(f.outcome, Outcome::fail);
  EXPECT_TRUE(has(f.reason, "a container in the host's network namespace (hostNetwork)"))
      << f.reason;
  EXPECT_TRUE(has(f.observed, "/.dockerenv exists")) << f.observed;

  test::TempHost pod;  // own PID namespace, but the node's veths are in ours
  pod.symlink(kHostNet, "/proc/self/ns/net");
  pod.write("/proc/self/net/dev",
            "Inter-| Receive\n face |bytes\n  eth0: 1 2\nveth12ab: 1 2\n  cni0: 1 2\n");
  HostIsolationEnv env = env_uid(1000);
  env.kubernetes_service_host = "10.96.0.1";
  f = run(pod, env, "netns");
  EXPECT_EQ(f.outcome, Outcome::fail);
  EXPECT_TRUE(has(f.reason, "veth12ab, cni0")) << f.reason;
}

TEST(HostIsolationNetns, ContainerOwnNamespaceOrOwnInit) {
  test::TempHost host;  // host PID namespace, own network namespace
  host.write("/run/.containerenv", "");
  namespaces(host, kOtherNet, kHostPid, kHostNet, kHostPid);
  auto f = run(host, env_uid(1000), "netns");
  EXPECT_EQ(f.outcome, Outcome::pass) << f.reason;

  // A container that runs systemd as its own init in its own PID namespace: equality with its
  // PID 1 proves nothing.
  test::TempHost own;
  own.write("/proc/self/cgroup", "0::/kubepods.slice/kubepods-pod1.slice/cri-containerd-1.scope\n");
  namespaces(own, kHostNet, "pid:[4026532500]", kHostNet, "pid:[4026532500]");
  f = run(own, env_uid(1000), "netns");
  EXPECT_EQ(f.outcome, Outcome::unverified);
  EXPECT_TRUE(has(f.observed, "kubepods.slice")) << f.observed;
  EXPECT_TRUE(has(f.reason, "proves nothing")) << f.reason;
}

// proc_visibility

TEST(HostIsolationProc, OtherUsersProcessesVisibleWarn) {
  test::TempHost host;
  process(host, 1, 0, kHostNet);
  process(host, 300, 1001, kHostNet);
  process(host, 301, 1001, kHostNet);
  process(host, 302, 1000, kHostNet);
  host.write("/proc/mounts", "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n");
  auto f = run(host, env_uid(1000), "proc_visibility");
  EXPECT_EQ(f.outcome, Outcome::warn);
  EXPECT_TRUE(has(f.reason, "2 processes of 1 other user are visible")) << f.reason;
  EXPECT_TRUE(has(f.observed, "/proc mounted without hidepid")) << f.observed;
  expect_reason_rule(f);
}

TEST(HostIsolationProc, NoneVisiblePassesAndReportsHidepid) {
  test::TempHost host;
  process(host, 1, 0, kHostNet);
  process(host, 302, 1000, kHostNet);
  host.write("/proc/mounts", "proc /proc proc rw,relatime,hidepid=2 0 0\n");
  auto f = run(host, env_uid(1000), "proc_visibility");
  EXPECT_EQ(f.outcome, Outcome::pass) << f.reason;
  EXPECT_TRUE(has(f.observed, "hidepid=2")) << f.observed;
  EXPECT_EQ(f.evidence_value, "rw,relatime,hidepid=2");
}

TEST(HostIsolationProc, UnreadableOwnersAreUnverifiedWithoutHidepid) {
  test::TempHost host;
  process(host, 1, 0, kHostNet);
  host.mkdir("/proc/300/status");  // owner not readable
  auto f = run(host, env_uid(1000), "proc_visibility");
  EXPECT_EQ(f.outcome, Outcome::unverified);
  EXPECT_TRUE(has(f.reason, "the owner of 1 process is not readable")) << f.reason;
  // hidepid=noaccess is exactly what makes another user's status unreadable.
  host.write("/proc/mounts", "proc /proc proc rw,hidepid=noaccess 0 0\n");
  EXPECT_EQ(run(host, env_uid(1000), "proc_visibility").outcome, Outcome::pass);

  test::TempHost no_proc;
  no_proc.write("/proc", "not a directory");
  f = run(no_proc, env_uid(1000), "proc_visibility");
  EXPECT_EQ(f.outcome, Outcome::unverified);
  EXPECT_TRUE(has(f.reason, "cannot list /proc")) << f.reason;
}

TEST(HostIsolationProc, RootJudgesByTheMountOption) {
  test::TempHost host;
  process(host, 1, 0, kHostNet);
  process(host, 300, 1001, kHostNet);
  host.write("/proc/mounts", "proc /proc proc rw,hidepid=invisible 0 0\n");
  EXPECT_EQ(run(host, env_uid(0), "proc_visibility").outcome, Outcome::pass);
  host.write("/proc/mounts", "proc /proc proc rw 0 0\n");
  auto f = run(host, env_uid(0), "proc_visibility");
  EXPECT_EQ(f.outcome, Outcome::warn);
  EXPECT_TRUE(has(f.reason, "no hidepid")) << f.reason;
  fs::remove(host.dir() / "proc/mounts");
  EXPECT_EQ(run(host, env_uid(0), "proc_visibility").outcome, Outcome::unverified);
}

// munge_key and munge_socket

std::string passwd_with_munge(unsigned munge_uid) {
  return fmt::format("root:x:0:0:root:/root:/bin/bash\nmunge:x:{}:{}::/nonexistent:/bin/false\n",
                     munge_uid, munge_uid);
}

void bind_socket(const test::TempHost& host, std::string_view path) {
  const std::string full = (host.dir() / fs::path(std::string(path.substr(1)))).string();
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(full.size(), sizeof(addr.sun_path));
  std::memcpy(addr.sun_path, full.c_str(), full.size() + 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0)
      << std::strerror(errno);
  ::close(fd);  // the socket file stays
}

TEST(HostIsolationMunge, NotInstalledIsNotApplicable) {
  test::TempHost host;
  auto all = judge_host_isolation(collect_host_isolation(host.host(), {}));
  EXPECT_EQ(pick(all, "munge_key").outcome, Outcome::not_applicable);
  EXPECT_EQ(pick(all, "munge_key").reason,
            "munge not installed (no /etc/munge/munge.key, no /run/munge)");
  EXPECT_EQ(pick(all, "munge_socket").outcome, Outcome::not_applicable);
}

TEST(HostIsolationMunge, ReadableKeyFails) {
  test::TempHost host;
  host.write("/etc/munge/munge.key", "secret");
  host.write("/etc/passwd", passwd_with_munge(::getuid()));
  chmod(host, "/etc/munge/munge.key", fs::perms(0644));
  auto f = run(host, {}, "munge_key");
  EXPECT_EQ(f.outcome, Outcome::fail);
  EXPECT_EQ(f.reason,
            "munge.key is mode 0644: any local user can forge MUNGE credentials and impersonate "
            "any user to Slurm");
  expect_reason_rule(f);
  chmod(host, "/etc/munge/munge.key", fs::perms(0640));
  f = run(host, {}, "munge_key");
  EXPECT_EQ(f.outcome, Outcome::fail);
  EXPECT_TRUE(has(f.reason, "members of its group")) << f.reason;
}

TEST(HostIsolationMunge, KeyOwnerDecidesPassOrWarn) {
  test::TempHost host;
  host.write("/etc/munge/munge.key", "secret");
  chmod(host, "/etc/munge/munge.key", fs::perms(0400));
  host.write("/etc/passwd", passwd_with_munge(::getuid()));
  auto f = run(host, {}, "munge_key");
  EXPECT_EQ(f.outcome, Outcome::pass) << f.reason;
  EXPECT_TRUE(has(f.observed, "mode 0400 owned by")) << f.observed;

  host.write("/etc/passwd", passwd_with_munge(::getuid() + 4242));
  f = run(host, {}, "munge_key");
  EXPECT_EQ(f.outcome, Outcome::warn);
  EXPECT_TRUE(has(f.reason, "not the munge user")) << f.reason;

  host.write("/etc/passwd", "root:x:0:0:root:/root:/bin/bash\n");
  f = run(host, {}, "munge_key");
  EXPECT_EQ(f.outcome, Outcome::unverified);
  EXPECT_TRUE(has(f.reason, "no munge entry")) << f.reason;
}

TEST(HostIsolationMunge, StatErrorsAreUnverified) {
  test::TempHost host;
  host.symlink("munge.key", "/etc/munge/munge.key");  // ELOOP
  auto f = run(host, {}, "munge_key");
  EXPECT_EQ(f.outcome, Outcome::unverified);
  EXPECT_TRUE(has(f.reason, "cannot stat the key")) << f.reason;

  test::TempHost elsewhere;  // munged runs, its key is not here
  elsewhere.mkdir("/run/munge");
  EXPECT_EQ(run(elsewhere, {}, "munge_key").outcome, Outcome::unverified);

  // EACCES (a tenant): a pass only when /etc/munge itself lets nobody else in.
  HostIsolationFacts facts;
  facts.munge_key = {"/etc/munge/munge.key", EACCES,
                     "stat /etc/munge/munge.key: Permission denied"};
  facts.munge_etc = {"/etc/munge", 0, "", S_IFDIR | 0700, 998};
  facts.munge_dir = {"/run/munge", 0, "", S_IFDIR | 0755, 998};
  f = judge_one(facts, "munge_key");
  EXPECT_EQ(f.outcome, Outcome::pass) << f.reason;
  facts.munge_etc.mode = S_IFDIR | 0711;
  EXPECT_EQ(judge_one(facts, "munge_key").outcome, Outcome::unverified);
}

TEST(HostIsolationMunge, SocketDirectory) {
  test::TempHost host;
  host.write("/etc/passwd", passwd_with_munge(::getuid()));
  host.mkdir("/run/munge");
  chmod(host, "/run/munge", fs::perms(0777));
  auto f = run(host, {}, "munge_socket");
  EXPECT_EQ(f.outcome, Outcome::fail);
  EXPECT_TRUE(has(f.reason, "a tenant could replace the socket")) << f.reason;
  expect_reason_rule(f);

  chmod(host, "/run/munge", fs::perms(0755));
  bind_socket(host, "/run/munge/munge.socket.2");
  f = run(host, {}, "munge_socket");
  EXPECT_EQ(f.outcome, Outcome::pass) << f.reason;
  EXPECT_TRUE(has(f.observed, "munge.socket.2 owned by")) << f.observed;

  chmod(host, "/run/munge", fs::perms(01777));  // sticky: others cannot replace munge's socket
  EXPECT_EQ(run(host, {}, "munge_socket").outcome, Outcome::pass);

  host.write("/etc/passwd", passwd_with_munge(::getuid() + 4242));
  f = run(host, {}, "munge_socket");
  if (::getuid() == 0) {
    EXPECT_EQ(f.outcome, Outcome::warn) << f.reason;  // root's directory is fine, the socket not
    EXPECT_TRUE(has(f.reason, "munge.socket.2 is owned by")) << f.reason;
  } else {
    EXPECT_EQ(f.outcome, Outcome::fail) << f.reason;  // the directory's owner is not munge
  }

  fs::remove(host.dir() / "run/munge/munge.socket.2");
  host.write("/run/munge/munge.socket.2", "");
  host.write("/etc/passwd", passwd_with_munge(::getuid()));
  f = run(host, {}, "munge_socket");
  EXPECT_EQ(f.outcome, Outcome::warn);
  EXPECT_TRUE(has(f.reason, "not a socket")) << f.reason;

  test::TempHost looped;
  looped.symlink("munge", "/run/munge");
  f = run(looped, {}, "munge_socket");
  EXPECT_EQ(f.outcome, Outcome::unverified);
  EXPECT_TRUE(has(f.reason, "cannot stat /run/munge")) << f.reason;

  HostIsolationFacts facts;  // a directory owned by a tenant
  facts.munge_key = {"/etc/munge/munge.key", ENOENT, "absent"};
  facts.munge_dir = {"/run/munge", 0, "", S_IFDIR | 0755, 1234};
  facts.munge_socket = {"/run/munge/munge.socket.2", ENOENT, "absent"};
  facts.passwd = {"/etc/passwd", ReadState::read, passwd_with_munge(998)};
  f = judge_one(facts, "munge_socket");
  EXPECT_EQ(f.outcome, Outcome::fail);
  EXPECT_TRUE(has(f.reason, "owned by uid 1234")) << f.reason;
}

// the live machine

TEST(HostIsolationLive, ShapeOnTheLiveRoot) {
  const core::HostRoot root("/");
  const auto facts = collect_host_isolation(root, current_env());
  EXPECT_EQ(facts.env.uid, ::getuid());
  const auto findings = judge_host_isolation(facts);
  ASSERT_EQ(findings.size(), 7u);
  const std::vector<std::string> ids = {"gpu_devices", "container_toolkit_envvar", "ib_pkeys",
                                        "netns",       "proc_visibility",          "munge_key",
                                        "munge_socket"};
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto& f = findings[i];
    EXPECT_EQ(f.check_id, "isolation.host." + ids[i]);
    expect_reason_rule(f);
    if (f.outcome != Outcome::pass) continue;
    // No pass on evidence that could not be read.
    const std::string& id = ids[i];
    const bool read =
        id == "gpu_devices"                ? facts.dev.state == ReadState::read
        : id == "container_toolkit_envvar" ? facts.toolkit_config.state == ReadState::read
        : id == "ib_pkeys"                 ? facts.ib_class.state == ReadState::read
        : id == "netns"                    ? facts.self_net.state == ReadState::read
        : id == "proc_visibility"          ? facts.proc.state == ReadState::read
        : id == "munge_key"
            ? facts.munge_key.error_number == 0 || facts.munge_key.error_number == EACCES
            : facts.munge_dir.error_number == 0;
    EXPECT_TRUE(read) << id << " passed on evidence it could not read: " << f.reason;
  }
  // /proc/self is this test: its namespace links are readable on any Linux.
  EXPECT_EQ(facts.self_net.state, ReadState::read) << facts.self_net.error;
  EXPECT_TRUE(facts.self_net.text.starts_with("net:[")) << facts.self_net.text;
  EXPECT_EQ(facts.proc.state, ReadState::read);
}

TEST(HostIsolationGpu, AnOpenThatNeverReturnsCostsTheTimeoutNotAHang) {
  // A FIFO opened for reading without O_NONBLOCK blocks until a writer comes: a stand-in for a
  // device whose driver does not answer. A regular file beside it opens at once.
  test::TempHost host;
  host.write("/dev/plain", "x");
  const std::string fifo = (host.dir() / "dev/stuck").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto t0 = std::chrono::steady_clock::now();
  auto errs = open_each({(host.dir() / "dev/plain").string(), fifo, (host.dir() / "dev/missing").string()},
                        O_RDONLY | O_CLOEXEC, std::chrono::milliseconds(300));
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_EQ(errs.size(), 3u);
  EXPECT_EQ(errs[0], 0);
  EXPECT_EQ(errs[1], ETIMEDOUT);
  EXPECT_EQ(errs[2], ETIMEDOUT);  // never reached: the child was stuck on the FIFO
  EXPECT_LT(took, std::chrono::seconds(2));
  auto quick = open_each({(host.dir() / "dev/missing").string()}, O_RDONLY, std::chrono::milliseconds(2000));
  EXPECT_EQ(quick, std::vector<int>{ENOENT});
  EXPECT_TRUE(open_each({}, O_RDONLY, std::chrono::milliseconds(10)).empty());
}

}  // namespace
}  // namespace cmax::isolation
