#!/usr/bin/env python3
"""cmax and the ClusterMAX CLI side by side, on the same inputs.

Inputs: this machine (both tools audit it live) and the host scenarios in tests/parity/scenarios/*.kv.
A scenario is the peer's own collector block (the WORKER_* lines its host-check.sh prints) with the
files and head-node facts it stands for (`# file:` / `#|` and `# head:` lines). From it this script
builds one host tree. cmax audits the tree with --host-root; the peer runs its real pipeline
(cluster-audit-standalone.sh, run_checks.py, merge_audit.py, audit_report.evaluate) chrooted into
the same tree in a private mount namespace, with its host probe replaced by the block it printed
and the head node's commands (docker, runc, nvidia-ctk, sudo, pgrep, systemctl) answering as the
scenario says. Neither tool sees this machine's files in a fixture run.

For each of the peer's checks (data/peers/clustermax.json) it compares the peer's result with
cmax's counterparts'. A difference must be explained: by the peer verdict cmax predicts from the
peer's recorded policy (the finding's "peer" field), or by a recorded difference of that check
(or a common one) whose conditions match. It writes docs/parity-clustermax.md and exits 1 when a
peer check has no row in the map or a difference has no recorded reason; 77 (skip) when the peer
is not installed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SKIP = 77
HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


def log(msg: str) -> None:
    print(f"parity: {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- scenarios and host trees

def load_scenario(path: Path) -> dict:
    workers, head, files, meta = {}, {}, {}, {"name": path.stem, "scenario": "", "from": "", "expects": ""}
    current = None
    for raw in path.read_text().splitlines():
        if raw.startswith("#| ") or raw == "#|":
            if current is not None:
                files[current].append(raw[3:] if raw.startswith("#| ") else "")
            continue
        current = None
        if raw.startswith("# file: "):
            name = raw[len("# file: "):].split(" (")[0].strip()
            current = name
            files[name] = []
        elif raw.startswith("# head: "):
            k, _, v = raw[len("# head: "):].partition("=")
            head[k.strip()] = v.strip()
        elif raw.startswith("# scenario: "):
            meta["scenario"] = raw[len("# scenario: "):]
        elif raw.startswith("# from: "):
            meta["from"] = raw[len("# from: "):]
        elif raw.startswith("# peer expects: "):
            meta["expects"] = raw[len("# peer expects: "):]
        elif raw.startswith("WORKER_"):
            k, _, v = raw.partition("=")
            workers[k] = v
    return {"workers": workers, "head": head, "files": {k: "\n".join(v) + "\n" for k, v in files.items()}, **meta}


def write(root: Path, path: str, content: str = "") -> None:
    p = root / path.lstrip("/")
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(content)


def upstream(pkg: str) -> str:
    """The release a package version carries: epoch and Debian revision dropped."""
    v = pkg.split(":", 1)[1] if re.match(r"^\d+:", pkg) else pkg
    return v.rsplit("-", 1)[0] if "-" in v else v


def no_epoch(pkg: str) -> str:
    return pkg.split(":", 1)[1] if re.match(r"^\d+:", pkg) else pkg


def truthy(v: str | None) -> bool:
    return (v or "").strip().lower() in ("true", "yes", "1")


def build_tree(scn: dict, root: Path) -> None:
    """The host as the block describes it, in the files cmax and the peer's head node read."""
    w, head = scn["workers"], scn["head"]
    arch = w.get("WORKER_ARCH", "x86_64")
    write(root, "/etc/hostname", w.get("WORKER_HOSTNAME", "node") + "\n")
    write(root, "/etc/os-release",
          f'PRETTY_NAME="{w.get("WORKER_OS_PRETTY_NAME", "")}"\nID={w.get("WORKER_OS_ID", "ubuntu")}\n'
          f'VERSION_ID="{w.get("WORKER_OS_VERSION_ID", "")}"\n')
    kernel = w.get("WORKER_GUEST_KERNEL_RUNNING") or w.get("WORKER_KERNEL", "")
    if kernel and kernel != "unknown":
        write(root, "/proc/sys/kernel/osrelease", kernel + "\n")
        write(root, "/proc/version", f"Linux version {kernel} (buildd@lcy02-amd64-080) #1 SMP PREEMPT_DYNAMIC\n")
        write(root, f"/lib/modules/{kernel}/modules.dep")
    newest = w.get("WORKER_GUEST_KERNEL_NEWEST_INSTALLED", "unknown")
    dpkg = []
    if newest not in ("", "unknown"):
        write(root, f"/lib/modules/{newest}/modules.dep")
        for k in {kernel, newest}:
            if k:
                m = re.match(r"^(\d+\.\d+\.\d+)-(\d+)-", k)
                ver = f"{m.group(1)}-{m.group(2)}.{m.group(2)}" if m else k
                dpkg.append((f"linux-image-{k}", ver))
    if truthy(w.get("WORKER_GUEST_REBOOT_REQUIRED")):
        write(root, "/var/run/reboot-required", "*** System restart required ***\n")
    # sysctls
    for key, path in (("WORKER_KPTR_RESTRICT", "kptr_restrict"), ("WORKER_PERF_EVENT_PARANOID", "perf_event_paranoid")):
        if w.get(key, "").lstrip("-").isdigit():
            write(root, f"/proc/sys/kernel/{path}", w[key] + "\n")
    # CPU and virtualisation
    flags = ["fpu", "vme", "de", "pse", "tsc", "msr", "pae", "lm"]
    guest = truthy(w.get("WORKER_VIRT_GUEST"))
    if truthy(w.get("WORKER_NESTED_CPU_EXPOSED")):
        flags.append("vmx" if "intel" in w.get("WORKER_NESTED_MODULE", "kvm_intel") or
                     "Intel" in w.get("WORKER_CPU_MODEL", "") else "svm")
    if guest:
        flags.append("hypervisor")
    if arch == "aarch64":
        write(root, "/proc/cpuinfo", "processor\t: 0\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 "
              "sha2 crc32 atomics fphp asimdhp cpuid asimdrdm sve\nCPU implementer\t: 0x41\nCPU architecture: 8\n")
    else:
        write(root, "/proc/cpuinfo", f"processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: "
              f"{w.get('WORKER_CPU_MODEL', 'Intel(R) Xeon(R)')}\nflags\t\t: {' '.join(flags)}\n")
    vt = w.get("WORKER_VIRT_TYPE", "unknown")
    if vt in ("kvm", "qemu"):
        write(root, "/sys/class/dmi/id/sys_vendor", "QEMU\n")
        write(root, "/sys/class/dmi/id/product_name", "Standard PC (Q35 + ICH9, 2009)\n")
    elif vt == "none":
        write(root, "/sys/class/dmi/id/sys_vendor", "Supermicro\n")
    if truthy(w.get("WORKER_KVM_DEVICE")):
        write(root, "/dev/kvm")
    mod = w.get("WORKER_NESTED_MODULE", "none")
    if mod in ("kvm_intel", "kvm_amd") and w.get("WORKER_NESTED_ENABLED") in ("true", "false"):
        write(root, f"/sys/module/{mod}/parameters/nested", "Y\n" if truthy(w["WORKER_NESTED_ENABLED"]) else "N\n")
    # NVIDIA GPUs, driver and modules
    modules = []
    count = int(w.get("WORKER_GPU_COUNT", "0") or 0) if w.get("WORKER_GPU_COUNT", "0").isdigit() else 0
    model = w.get("WORKER_GPU_MODEL", "")
    driver = w.get("WORKER_DRIVER_VERSION", "unknown")
    if count and driver not in ("", "unknown"):
        for i in range(count):
            bdf = f"0000:{0x18 + 0x10 * i:02x}:00.0"
            write(root, f"/sys/bus/pci/devices/{bdf}/vendor", "0x10de\n")
            write(root, f"/sys/bus/pci/devices/{bdf}/class", "0x030200\n")
            write(root, f"/sys/bus/pci/devices/{bdf}/device", "0x2330\n")
            write(root, f"/proc/driver/nvidia/gpus/{bdf}/information",
                  f"Model: \t\t {model.replace('-', ' ')}\nIRQ:   \t\t 180\nVideo BIOS: \t 96.00.99.00.01\nBus Type: \t PCIe\n")
        flavour = "Open Kernel Module for " + arch if truthy(w.get("WORKER_NVIDIA_OPEN")) else arch + " Kernel Module"
        write(root, "/proc/driver/nvidia/version",
              f"NVRM version: NVIDIA UNIX {flavour}  {driver}  Release Build  (dvs-builder@U22-I3-AF03-09-1)  "
              "Wed May 13 01:25:25 UTC 2026\nGCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n")
        modules += ["nvidia", "nvidia_uvm"]
    if truthy(w.get("WORKER_PEERMEM")):
        modules.append("nvidia_peermem")
    if truthy(w.get("WORKER_GDRCOPY_GDRDRV")):
        modules.append("gdrdrv")
    if w.get("WORKER_GDRCOPY_LIB", "not-found") not in ("", "not-found"):
        write(root, w["WORKER_GDRCOPY_LIB"])
    if truthy(w.get("WORKER_GDRCOPY_DEV")):
        write(root, "/dev/gdrdrv")
    if modules:
        write(root, "/proc/modules", "".join(f"{m} 24576 0 - Live 0x0000000000000000 (POE)\n" for m in modules))
    # User software the block names by path
    for key in ("WORKER_NCU_PATH", "WORKER_PERF_PATH", "WORKER_NCCL_LIB", "WORKER_NVCC_PATH"):
        p = w.get(key, "")
        if p.startswith("/"):
            write(root, p, "\x7fELF" if key in ("WORKER_PERF_PATH", "WORKER_NCU_PATH", "WORKER_NVCC_PATH") else "")
    cuda = w.get("WORKER_NVCC_VERSION", "")
    if re.match(r"^\d+\.\d+", cuda):
        write(root, "/usr/local/cuda/version.json", json.dumps({"cuda": {"name": "CUDA SDK", "version": cuda + ".0"}}))
    dcgm = re.search(r"(\d+:)?\d+\.\d+(\.\d+)*\S*", w.get("WORKER_DCGM_VERSION", ""))
    if dcgm:  # "dcgmi  version: 4.5.3" or the package's "1:3.3.9"
        dpkg.append(("datacenter-gpu-manager-4-core", dcgm.group(0)))
    # AMD
    amd = int(w.get("WORKER_AMD_GPU_COUNT", "0")) if w.get("WORKER_AMD_GPU_COUNT", "0").isdigit() else 0
    amd_ids = {"MI300X": "0x74a1", "MI300A": "0x74a0", "MI325X": "0x74a5", "MI250X": "0x7408", "MI210": "0x740f",
               "MI355X": "0x75a3", "MI350X": "0x75a0"}
    for i in range(amd):
        bdf = f"0000:{0x20 + 0x10 * i:02x}:00.0"
        dev = next((v for k, v in amd_ids.items() if k in w.get("WORKER_AMD_GPU_MODEL", "")), "0x74a1")
        write(root, f"/sys/bus/pci/devices/{bdf}/vendor", "0x1002\n")
        write(root, f"/sys/bus/pci/devices/{bdf}/class", "0x120000\n")
        write(root, f"/sys/bus/pci/devices/{bdf}/device", dev + "\n")
    if w.get("WORKER_AMD_DRIVER_VERSION", "unknown") not in ("", "unknown"):
        write(root, "/sys/module/amdgpu/version", w["WORKER_AMD_DRIVER_VERSION"] + "\n")
    if w.get("WORKER_ROCM_VERSION"):
        write(root, "/opt/rocm/.info/version", w["WORKER_ROCM_VERSION"] + "\n")
    # RDMA devices
    for dev in [d for d in w.get("WORKER_IB_DEVICES", "").split(",") if d]:
        base = f"/sys/class/infiniband/{dev}"
        fw = w.get(f"WORKER_IB_FW_VER_{dev}") or w.get(f"WORKER_SECURITY_NIC_FW_VER_{dev}")
        if fw:
            write(root, f"{base}/fw_ver", fw + "\n")
        vendor = w.get(f"WORKER_IB_PCI_VENDOR_{dev}") or w.get(f"WORKER_SECURITY_NIC_PCI_VENDOR_{dev}")
        if vendor:
            write(root, f"{base}/device/vendor", vendor + "\n")
        write(root, f"{base}/ports/1/link_layer", (w.get(f"WORKER_IB_LINK_LAYER_{dev}") or
                                                   w.get("WORKER_RDMA_LINK_LAYERS", "InfiniBand").split(",")[0]) + "\n")
        state = w.get(f"WORKER_IB_STATE_{dev}", "ACTIVE")
        write(root, f"{base}/ports/1/state", ("4: ACTIVE" if state == "ACTIVE" else "1: DOWN") + "\n")
        write(root, f"{base}/ports/1/phys_state", ("5: LinkUp" if state == "ACTIVE" else "3: Disabled") + "\n")
        if w.get(f"WORKER_IB_RATE_{dev}"):
            write(root, f"{base}/ports/1/rate", w[f"WORKER_IB_RATE_{dev}"] + "\n")
    # The head node's facts, as the files a host has
    for key, pkg in (("docker_server_version", "docker-ce"), ("runc_version", "runc"),
                     ("nct_version", "nvidia-container-toolkit")):
        if head.get(key, "") not in ("", "none", "absent"):
            dpkg.append((pkg, head[key]))
    if truthy(head.get("docker_nvidia_runtime")):
        write(root, "/etc/docker/daemon.json",
              json.dumps({"runtimes": {"nvidia": {"args": [], "path": "nvidia-container-runtime"}}}, indent=4))
    if truthy(head.get("sudo")):
        write(root, "/etc/sudoers.d/90-tenant", "tenant ALL=(ALL) NOPASSWD:ALL\n")
    for tool in ("useradd", "groupadd"):
        if truthy(head.get(tool)):
            write(root, f"/usr/sbin/{tool}", "\x7fELF")
    if head.get("external_idp", "none") == "sssd":
        write(root, "/etc/sssd/sssd.conf", "[sssd]\ndomains = example.com\nservices = nss, pam\n\n[domain/example.com]\n"
              "id_provider = ldap\nauth_provider = ldap\nldap_uri = ldap://ldap.example.com\n")
    # The scenario's own files (real formats) last: they win over the ones above.
    for path, content in scn["files"].items():
        if path.startswith("/"):
            write(root, path, content)
    if dpkg:
        write(root, "/var/lib/dpkg/status", "".join(
            f"Package: {p}\nStatus: install ok installed\nArchitecture: amd64\nVersion: {v}\n\n" for p, v in dpkg))


def make_shims(scn: dict, shims: Path) -> None:
    """Commands the peer's head-node collector runs, answering as the scenario's head facts say."""
    head = scn["head"]
    shims.mkdir(parents=True, exist_ok=True)

    def shim(name: str, body: str) -> None:
        p = shims / name
        p.write_text("#!/bin/bash\n" + body)
        p.chmod(0o755)

    procs = []
    if truthy(head.get("dcgm_exporter_present")):
        procs.append("dcgm-exporter")
    if head.get("external_idp", "none") == "sssd":
        procs.append("sssd")
    plist = " ".join(procs)
    shim("pgrep", f'for a in "$@"; do last="$a"; done\nfor p in {plist}; do [[ "$p" == *"$last"* ]] && '
                  'echo 4242 && exit 0; done\nexit 1\n')
    shim("systemctl", f'[[ "$1" == is-active ]] || exit 3\nfor p in {plist}; do [[ "$2" == "$p"* ]] && '
                      'echo active && exit 0; done\necho inactive; exit 3\n')
    if head.get("docker_server_version", "") not in ("", "none", "absent"):
        v = upstream(head["docker_server_version"])
        rt = "io.containerd.runc.v2 nvidia runc" if truthy(head.get("docker_nvidia_runtime")) else "io.containerd.runc.v2 runc"
        shim("docker", f'case "$1" in\n  --version) echo "Docker version {v}, build 0000000";;\n'
                       f'  version) echo "{v}";;\n  info) printf "Server Version: {v}\\nRuntimes: {rt}\\n";;\n'
                       '  *) exit 1;;\nesac\n')
    if head.get("runc_version", "") not in ("", "none", "absent"):
        shim("runc", f'echo "runc version {no_epoch(head["runc_version"])}"\necho "spec: 1.2.0"\necho "go: go1.22.2"\n')
    if head.get("nct_version", "") not in ("", "none", "absent"):
        v = upstream(head["nct_version"])
        shim("nvidia-ctk", f'echo "NVIDIA Container Toolkit CLI version {v}"\necho "commit: 0000000"\n')
        shim("nvidia-container-cli", f'echo "cli-version: {v}"\necho "lib-version: {v}"\n')
    if truthy(head.get("sudo")):
        shim("sudo", 'while [[ "$1" == -* ]]; do shift; done\nexec "$@"\n')
    else:
        shim("sudo", 'echo "sudo: a password is required" >&2\nexit 1\n')
    for tool in ("useradd", "groupadd"):
        if truthy(head.get(tool)):
            shim(tool, "exit 0\n")
    shim("curl", "exit 7\n")  # the collector asks ipinfo.io; no network in tests


# ---------------------------------------------------------------- running the two tools

def run(cmd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def cmax_findings(cmax: Path, tree: Path | None, harness: str) -> dict:
    cmd = [str(cmax), "audit", "--json", "--harness", harness]
    if tree is not None:
        cmd += ["--host-root", str(tree)]
    r = run(cmd, timeout=120)
    if r.returncode not in (0, 1, 2):
        raise RuntimeError(f"cmax audit failed (exit {r.returncode}): {r.stderr.strip()[:400]}")
    doc = json.loads(r.stdout)
    return {f["id"]: f for f in doc["findings"]}


def peer_package(venv: Path) -> Path | None:
    py = venv / "bin" / "python"
    if not py.exists():
        return None
    r = run([str(py), "-c", "import cmax, os, sys; print(os.path.dirname(cmax.__file__)); print(sys.base_prefix)"])
    if r.returncode != 0:
        return None
    return Path(r.stdout.splitlines()[0])


def peer_version(venv: Path) -> str:
    r = run([str(venv / "bin" / "python"), "-c", "import importlib.metadata as m; print(m.version('clustermax'))"])
    return r.stdout.strip() if r.returncode == 0 else "unknown"


def base_prefix(venv: Path) -> str:
    r = run([str(venv / "bin" / "python"), "-c", "import sys; print(sys.base_prefix)"])
    return r.stdout.strip()


def peer_evaluate(venv: Path, values: Path, runtime_root: Path, harness: str) -> dict:
    code = (
        "import json, sys\nfrom pathlib import Path\nfrom cmax import audit_report\n"
        "values = json.loads(Path(sys.argv[1]).read_text())\n"
        "checks = audit_report.evaluate(values, Path(sys.argv[2]), harness=sys.argv[3])\n"
        "print(json.dumps({c.key: {'status': c.status, 'observed': str(c.observed), 'assessment': str(c.assessment)} "
        "for c in checks}))\n")
    r = run([str(venv / "bin" / "python"), "-c", code, str(values), str(runtime_root), harness], timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"peer evaluate failed: {r.stderr.strip()[-400:]}")
    out = json.loads(r.stdout)
    return {k: {**v, "status": str(v["status"]).upper()} for k, v in out.items()}


def newest_values(home: Path) -> Path | None:
    found = sorted(home.glob(".clustermax/audit/*/audit.values.json"))
    return found[-1] if found else None


def peer_env(home: Path, runtime_root: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLUSTERMAX")}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), CLUSTERMAX_REPO_ROOT=str(runtime_root),
               CLUSTERMAX_MINIMUM_VERSIONS=str(runtime_root / "scripts/1-audit/minimum-versions.json"),
               CLUSTERMAX_MINIMUMS_URL="http://127.0.0.1:9/minimum-versions.json", CLUSTER_SLUG="parity")
    return env


def run_peer_live(venv: Path, pkg: Path, work: Path) -> dict:
    home = work / "live-home"
    home.mkdir(parents=True, exist_ok=True)
    shims = work / "live-shims"
    shims.mkdir(exist_ok=True)
    (shims / "curl").write_text("#!/bin/sh\nexit 7\n")
    (shims / "curl").chmod(0o755)
    env = peer_env(home, pkg)
    env["PATH"] = f"{shims}:{venv / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}"
    r = run([str(venv / "bin" / "cmax"), "audit", "--standalone", "-y"], env=env, timeout=600)
    values = newest_values(home)
    if values is None:
        raise RuntimeError(f"the peer wrote no audit.values.json (exit {r.returncode}): {r.stdout[-600:]}")
    return peer_evaluate(venv, values, pkg, "standalone")


CHROOT_SCRIPT = r"""
set -euo pipefail
R="$PARITY_ROOT"
mount -t tmpfs tmpfs "$R"
mkdir -p "$R"/{usr,etc,var,tmp,proc,sys,dev,root,run,opt,shims,peer,parity-home}
mount --rbind /usr "$R/usr"
for l in bin sbin lib lib32 lib64 libx32; do
  if [ -L "/$l" ]; then ln -s "$(readlink "/$l")" "$R/$l"
  elif [ -d "/$l" ]; then mkdir -p "$R/$l"; mount --rbind "/$l" "$R/$l"; fi
done
for f in passwd group nsswitch.conf ld.so.cache ld.so.conf ld.so.conf.d alternatives hosts localtime ssl ca-certificates; do
  [ -e "/etc/$f" ] && cp -a "/etc/$f" "$R/etc/" || true
done
for d in etc var opt sys; do [ -d "$PARITY_TREE/$d" ] && cp -a "$PARITY_TREE/$d/." "$R/$d/"; done
mount -t proc proc "$R/proc"
if [ -d "$PARITY_TREE/proc/driver" ]; then mount -t tmpfs drv "$R/proc/driver"; cp -a "$PARITY_TREE/proc/driver/." "$R/proc/driver/"; fi
for f in meminfo; do [ -f "$PARITY_TREE/proc/$f" ] && mount --bind "$PARITY_TREE/proc/$f" "$R/proc/$f" || true; done
for n in null zero urandom random tty; do touch "$R/dev/$n"; mount --bind "/dev/$n" "$R/dev/$n"; done
ln -s /proc/self/fd "$R/dev/fd"; ln -s /proc/self/fd/0 "$R/dev/stdin"; ln -s /proc/self/fd/1 "$R/dev/stdout"; ln -s /proc/self/fd/2 "$R/dev/stderr"
[ -d "$PARITY_TREE/dev" ] && cp -a "$PARITY_TREE/dev/." "$R/dev/"
mount -t tmpfs tmp "$R/tmp"
cp "$PARITY_KV" "$R/tmp/scenario.kv"
mkdir -p "$R$PARITY_VENV"; mount --rbind "$PARITY_VENV" "$R$PARITY_VENV"
case "$PARITY_BASE" in /usr|/usr/*) ;; *) mkdir -p "$R$PARITY_BASE"; mount --rbind "$PARITY_BASE" "$R$PARITY_BASE";; esac
mount --rbind "$PARITY_PEER" "$R/peer"
mount --rbind "$PARITY_SHIMS" "$R/shims"
mount --rbind "$PARITY_HOME" "$R/parity-home"
exec chroot "$R" /usr/bin/env -i PATH=/shims:/usr/local/bin:/usr/bin:/bin HOME=/parity-home LANG=C.UTF-8 TERM=dumb \
  XDG_CACHE_HOME=/parity-home/.cache CLUSTERMAX_REPO_ROOT=/peer \
  CLUSTERMAX_MINIMUM_VERSIONS=/peer/scripts/1-audit/minimum-versions.json \
  CLUSTERMAX_MINIMUMS_URL=http://127.0.0.1:9/minimum-versions.json CLUSTER_SLUG=fixture \
  CMAX_PARITY_KV=/tmp/scenario.kv "$PARITY_VENV/bin/cmax" audit --standalone -y
"""


def namespace_command() -> list[str] | None:
    """unshare with a private mount and pid namespace, if this machine allows one."""
    probe = "d=$(mktemp -d) && mount -t tmpfs t \"$d\" && umount \"$d\" && rmdir \"$d\""
    candidates = [["unshare", "--mount", "--pid", "--fork", "--kill-child"],
                  ["unshare", "--user", "--map-root-user", "--mount", "--pid", "--fork", "--kill-child"]]
    if os.geteuid() != 0:
        candidates = candidates[1:]
    for c in candidates:
        if shutil.which("unshare") is None:
            return None
        if run(c + ["bash", "-c", probe], timeout=30).returncode == 0:
            return c
    return None


def shadow_runtime(pkg: Path, work: Path) -> Path:
    """A copy of the peer's runtime whose host probe prints the scenario's block."""
    shadow = work / "peer-runtime"
    if not shadow.exists():
        shutil.copytree(pkg, shadow, ignore=shutil.ignore_patterns("__pycache__"))
        probe = shadow / "scripts/1-audit/host-check.sh"
        probe.write_text("#!/bin/bash\n# parity: the block the scenario's host printed\ngrep '^WORKER_' \"$CMAX_PARITY_KV\"\n")
    return shadow


def run_peer_chroot(venv: Path, shadow: Path, ns: list[str], scn_path: Path, scn: dict, tree: Path, work: Path) -> dict:
    home = work / "home"
    if home.exists():
        shutil.rmtree(home)
    home.mkdir(parents=True)
    shims = work / "shims"
    if shims.exists():
        shutil.rmtree(shims)
    make_shims(scn, shims)
    newroot = work / "newroot"
    newroot.mkdir(exist_ok=True)
    env = dict(os.environ, PARITY_ROOT=str(newroot), PARITY_TREE=str(tree), PARITY_KV=str(scn_path),
               PARITY_VENV=str(venv.resolve()), PARITY_BASE=base_prefix(venv), PARITY_PEER=str(shadow),
               PARITY_SHIMS=str(shims), PARITY_HOME=str(home))
    r = run(ns + ["bash", "-c", CHROOT_SCRIPT], env=env, timeout=600)
    values = newest_values(home)
    if values is None:
        raise RuntimeError(f"the peer wrote no audit.values.json for {scn['name']} (exit {r.returncode}): "
                           f"{(r.stdout + r.stderr)[-800:]}")
    return peer_evaluate(venv, values, shadow, "standalone")


# ---------------------------------------------------------------- comparing

def load_map() -> dict:
    return json.loads((REPO / "data/peers/clustermax.json").read_text())


def mapped(outcome: str, m: dict) -> list[str]:
    v = m["outcomes"].get(outcome, [])
    return v if isinstance(v, list) else [v]


def rule_matches(rule: dict, peer: dict, cmax_f: dict | None) -> bool:
    if rule["peer"] not in ("*", peer["status"]):
        return False
    outcome = cmax_f["result"] if cmax_f else "absent"
    if rule["cmax"] not in ("*", outcome):
        return False
    if rule.get("when"):
        text = f"{cmax_f.get('observed', '')} {cmax_f.get('reason', '')}" if cmax_f else ""
        if not re.search(rule["when"], text):
            return False
    if rule.get("cves"):
        if not cmax_f or not any(re.search(rule["cves"], c) for c in cmax_f.get("cves", [])):
            return False
    if rule.get("peer_says"):
        if not re.search(rule["peer_says"], f"{peer.get('assessment', '')} {peer.get('observed', '')}", re.I):
            return False
    return True


def compare(m: dict, peer: dict, cmax: dict, input_name: str) -> list[dict]:
    rows = []
    for check in m["checks"]:
        key = check["key"]
        p = peer.get(key)
        ours = [cmax[i] for i in check["cmax"] if i in cmax]
        row = {"key": key, "input": input_name, "peer": p["status"] if p else "-",
               "cmax": ", ".join(f"{f['id']}={f['result']}" for f in ours) or "-", "state": "", "why": ""}
        if p is None:
            row["state"], row["why"] = "peer-silent", "the peer reported nothing for this key here"
        elif check["relation"] == "meta":
            row["state"], row["why"] = "meta", check["note"]
        elif not ours:
            row["state"], row["why"] = "other-command", "covered by `cmax audit isolation`, not by the node audit"
        elif any(p["status"] in mapped(f["result"], m) for f in ours):
            row["state"] = "agree"
        else:
            predicted = [f for f in ours if f.get("peer", {}).get("result") == p["status"]]
            if predicted:
                row["state"], row["why"] = "policy", predicted[0]["peer"]["why"]
            else:
                rules = check.get("differences", []) + m.get("common_differences", [])
                hit = next((r for r in rules for f in ours if rule_matches(r, p, f)), None)
                if hit is None and not ours:
                    hit = next((r for r in rules if rule_matches(r, p, None)), None)
                if hit:
                    row["state"] = "explained"
                    row["why"] = hit["reason"] + (f" ({hit['source']})" if hit.get("source") else "")
                else:
                    row["state"] = "UNEXPLAINED"
                    row["why"] = (f"peer {p['status']} ({p.get('assessment', '')[:160]}) vs cmax "
                                  f"{'; '.join(f['result'] + ': ' + (f.get('reason') or f.get('observed', ''))[:160] for f in ours)}")
        rows.append(row)
    return rows


# ---------------------------------------------------------------- the document

ABBR = {"PASS": "P", "WARNING": "W", "FAIL": "F", "SKIPPED": "S", "-": "·"}
CABBR = {"pass": "p", "warn": "w", "fail": "f", "not_applicable": "n", "unverified": "u"}


def cell(row: dict) -> str:
    mark = {"agree": "=", "policy": "≠", "explained": "≠", "UNEXPLAINED": "✗", "meta": "", "other-command": "",
            "peer-silent": ""}[row["state"]]
    ours = "/".join(CABBR.get(part.split("=")[-1], "?") for part in row["cmax"].split(", ")) if row["cmax"] != "-" else "·"
    return f"{ABBR.get(row['peer'], '?')}{ours}{mark}"


def write_doc(path: Path, m: dict, inputs: list[dict], results: dict[str, list[dict]], meta: dict) -> None:
    out = []
    out.append("# cmax beside the ClusterMAX CLI\n")
    out.append(f"Generated by `tests/parity/parity.py` (ctest `parity.clustermax`) on {meta['date']}: ClusterMAX CLI "
               f"{meta['peer_version']} (PyPI `clustermax`, pinned in `tests/parity/setup_peer.sh`) and cmax "
               f"{meta['cmax_version']}, on this machine and on {len(inputs) - 1} host scenarios rebuilt from the "
               "ClusterMAX CLI's own tests. Do not edit: run the test.\n")
    out.append("How the inputs are the same for both tools: a scenario is the peer's own collector block (the "
               "`WORKER_*` lines its `host-check.sh` prints). From it one host tree is built (`/proc/driver/nvidia/*`, "
               "dpkg `status`, `/sys/class/infiniband/*/fw_ver`, NUMA nodes, `/etc/os-release`, sudoers, ...). cmax "
               "audits the tree with `--host-root`; the peer runs its real pipeline chrooted into the same tree in a "
               "private mount namespace, its host probe printing the block, its head-node commands (docker, runc, "
               "nvidia-ctk, sudo, pgrep, systemctl) answering from the tree. Both run with the standalone harness.\n")
    out.append("Results: P W F S = the peer's PASS, WARNING, FAIL, SKIPPED; p w f n u = cmax's pass, warn, fail, "
               "not applicable, unverified (one letter per cmax counterpart); `=` agree, `≠` differ for the reason "
               "listed below, `✗` differ with no recorded reason (the test fails).\n")
    totals = {}
    for rows in results.values():
        for r in rows:
            totals[r["state"]] = totals.get(r["state"], 0) + 1
    out.append("Totals over every input: " + ", ".join(f"{k} {v}" for k, v in sorted(totals.items())) + ".\n")
    out.append("## The inputs\n")
    out.append("| input | what it is | from |\n|---|---|---|")
    for i in inputs:
        out.append(f"| `{i['name']}` | {i['scenario']} | {i['from'][:160]} |")
    out.append("")
    out.append("## Every ClusterMAX check, cmax's counterpart, and both verdicts\n")
    names = [i["name"] for i in inputs]
    short = [n.split("-")[0] for n in names]
    out.append("| # | ClusterMAX check | profile | harness | cmax counterpart | relation | " + " | ".join(short) + " |")
    out.append("|---|---|---|---|---|---|" + "---|" * len(short))
    by_key = {n: {r["key"]: r for r in results[n]} for n in names}
    for idx, c in enumerate(m["checks"], 1):
        cells = [cell(by_key[n][c["key"]]) for n in names]
        pinned = "" if c.get("in_0_2_1", True) else " (not in 0.2.1)"
        out.append(f"| {idx} | `{c['key']}`{pinned} | {c['profile']} | {c['harness']} | "
                   f"{', '.join('`' + x + '`' for x in c['cmax']) or '—'} | {c['relation']} | " + " | ".join(cells) + " |")
    out.append("")
    out.append("## Where they differ, and why\n")
    reasons = {}
    for n in names:
        for r in results[n]:
            if r["state"] in ("policy", "explained", "UNEXPLAINED"):
                reasons.setdefault((r["key"], r["state"], r["why"]), []).append(n.split("-")[0])
    for (key, state, why), where in sorted(reasons.items()):
        flag = "**unexplained**: " if state == "UNEXPLAINED" else ""
        out.append(f"- `{key}` ({', '.join(where)}): {flag}{why}")
    out.append("")
    out.append("## Each check: what it looks at, and how cmax's differs\n")
    for c in m["checks"]:
        out.append(f"- `{c['key']}` → {', '.join('`' + x + '`' for x in c['cmax']) or 'no counterpart'} "
                   f"({c['relation']}): {c['note']}")
    out.append("")
    path.write_text("\n".join(out) + "\n")


# ---------------------------------------------------------------- main

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cmax", required=True, type=Path)
    ap.add_argument("--venv", required=True, type=Path, help="virtual environment holding the pinned clustermax")
    ap.add_argument("--work", required=True, type=Path)
    ap.add_argument("--out", type=Path, default=REPO / "docs/parity-clustermax.md")
    ap.add_argument("--only", nargs="*", default=None, help="scenario name prefixes (default: all)")
    ap.add_argument("--no-live", action="store_true")
    args = ap.parse_args()

    m = load_map()
    pkg = peer_package(args.venv)
    if pkg is None:
        print(f"skip: the ClusterMAX CLI is not installed in {args.venv} (tests/parity/setup_peer.sh could not "
              "install it from PyPI); the fixture expectations in the unit tests still stand")
        return SKIP
    args.work.mkdir(parents=True, exist_ok=True)
    version = peer_version(args.venv)

    # Every check the pinned peer lists must have a row.
    r = run([str(args.venv / "bin/python"), "-c",
             "import sys; sys.path.insert(0, sys.argv[1]); import audit_findings as af\n"
             "from cmax import audit_report as ar\n"
             "print('\\n'.join(sorted({r.key for r in af.RULES} | set(ar._SECURITY_EXTENSION_IDS))))",
             str(pkg / "scripts/1-audit")])
    peer_keys = set(r.stdout.split()) if r.returncode == 0 else set()
    map_keys = {c["key"] for c in m["checks"]}
    missing = sorted(peer_keys - map_keys)
    if not peer_keys:
        log(f"could not list the peer's checks: {r.stderr.strip()[-300:]}")
        return 1
    if missing:
        log(f"no row in data/peers/clustermax.json for: {', '.join(missing)}")

    inputs, results = [], {}
    cmax_version = run([str(args.cmax), "version"]).stdout.strip().split("\n")[0].removeprefix("cmax ")
    if not args.no_live:
        log("this machine: cmax audit and the peer's `cmax audit --standalone`")
        ours = cmax_findings(args.cmax, None, "standalone")
        theirs = run_peer_live(args.venv, pkg, args.work / "live")
        inputs.append({"name": "00-this-machine", "scenario": "this machine, audited live by both tools", "from": "—"})
        results["00-this-machine"] = compare(m, theirs, ours, "00-this-machine")

    ns = namespace_command()
    scenarios = sorted((HERE / "scenarios").glob("*.kv"))
    if args.only:
        scenarios = [s for s in scenarios if any(s.stem.startswith(p) for p in args.only)]
    if ns is None:
        print("skip fixtures: this machine allows no private mount namespace (unshare), so the peer cannot be run "
              "on a host tree without reading this machine's files")
        scenarios = []
    shadow = shadow_runtime(pkg, args.work) if scenarios else None
    for s in scenarios:
        scn = load_scenario(s)
        work = args.work / s.stem
        if work.exists():
            shutil.rmtree(work)
        tree = work / "tree"
        build_tree(scn, tree)
        log(f"{s.stem}: cmax --host-root and the peer chrooted into the tree")
        ours = cmax_findings(args.cmax, tree, "standalone")
        theirs = run_peer_chroot(args.venv, shadow, ns, s, scn, tree, work)
        (work / "cmax.json").write_text(json.dumps(ours, indent=1))
        (work / "peer.json").write_text(json.dumps(theirs, indent=1))
        inputs.append({"name": s.stem, "scenario": scn["scenario"], "from": scn["from"]})
        results[s.stem] = compare(m, theirs, ours, s.stem)

    meta = {"date": dt.date.today().isoformat(), "peer_version": version, "cmax_version": cmax_version}
    write_doc(args.out, m, inputs, results, meta)
    (args.work / "results.json").write_text(json.dumps(results, indent=1))
    unexplained = [r for rows in results.values() for r in rows if r["state"] == "UNEXPLAINED"]
    for r in unexplained:
        log(f"UNEXPLAINED {r['input']} {r['key']}: {r['why']}")
    log(f"{len(inputs)} inputs, {len(m['checks'])} checks each: {len(unexplained)} unexplained difference(s); "
        f"wrote {args.out}")
    return 1 if unexplained or missing else 0


if __name__ == "__main__":
    sys.exit(main())
