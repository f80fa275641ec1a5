#!/usr/bin/env bash
# cmax run across Slurm (issue 9): a four-node Slurm cluster on this machine (slurmctld and four
# slurmd on 127.0.0.1, as tests/support/slurm_cluster does), then, alternating, REPS times each:
#   anchor   srun -N4 --ntasks-per-node=1 true        (the scheduler's own fan-out, nothing run)
#   cmax     cmax run --harness slurm --json          (audit + kernel-log scan on every node, merged)
# and on this node: `cmax collect` (audit + scan, framed) beside `cmax audit --json` (audit alone).
# Then with n1 and n2 in a REPLACE_DOWN reservation, as a trial cluster has it (issue 22):
#   anchor   srun -N2 --reservation=bench true & srun -w n3,n4 true   (the two sruns a plan needs)
#   cmax     cmax run --harness slurm --json          (reservations read, two sruns side by side)
# Prints medians and ratios. Goals: cmax run over four nodes < 5 s; cmax collect < 1 s.
# Usage: bench/cluster_run.sh [BUILD=build] [REPS=7]   (root; slurm-wlm and munge installed)
set -euo pipefail
build=${1:-build}
reps=${2:-7}
cmax=$(realpath "$build/apps/cmax/cmax")
D=$(mktemp -d /tmp/cmax-bench-slurm.XXXXXX)
base=$((20000 + RANDOM % 20000))
cleanup() { for p in "$D"/*.pid; do [[ -f "$p" ]] && kill "$(cat "$p")" 2>/dev/null || true; done; sleep 0.2; rm -rf "$D"; }
trap cleanup EXIT
mkdir -p "$D/state" "$D/log"
for n in n1 n2 n3 n4; do mkdir -p "$D/spool-$n"; done
cat >"$D/slurm.conf" <<CONF
ClusterName=cmaxbench
SlurmctldHost=localhost
SlurmctldPort=$base
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool-%n
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd-%n.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MailProg=/bin/true
NodeName=n[1-4] NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((base + 1))-$((base + 4)) CPUs=2 RealMemory=1000
PartitionName=batch Nodes=n[1-4] Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$D/slurm.conf"
if ! pgrep -x munged >/dev/null; then
  mkdir -p /run/munge && chown munge: /run/munge
  [[ -f /etc/munge/munge.key ]] || mungekey -c
  runuser -u munge -- munged
fi
slurmctld -i
for n in n1 n2 n3 n4; do slurmd -N "$n"; done
for _ in $(seq 100); do
  [[ "$(sinfo -h -o %T | sort -u)" == "idle" ]] && break
  sleep 0.1
done
[[ "$(sinfo -h -o %T | sort -u)" == "idle" ]] || { echo "the bench cluster did not come up" >&2; exit 3; }

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { print b - a }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { print a / b }'; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
: >"$D/anchor" >"$D/run" >"$D/collect" >"$D/audit"
for r in $(seq "$reps"); do
  t=$(now); srun -N4 --ntasks-per-node=1 true; since "$t" >>"$D/anchor"
  t=$(now); "$cmax" run --harness slurm --out "$D/run$r" --json >"$D/run.json" || [[ $? -le 2 ]]
  since "$t" >>"$D/run"
  ok=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(sum(n["status"]=="ok" for n in j["nodes"]))' "$D/run.json")
  [[ "$ok" == 4 ]] || { echo "run $r: only $ok of 4 nodes answered" >&2; exit 1; }
  t=$(now); "$cmax" collect --frame >/dev/null; since "$t" >>"$D/collect"
  t=$(now); "$cmax" audit --json >/dev/null || true; since "$t" >>"$D/audit"
done
scontrol create reservation ReservationName=bench StartTime=now Duration=60 Users=root NodeCnt=2 Flags=REPLACE_DOWN >/dev/null
: >"$D/ranchor" >"$D/rrun"
for r in $(seq "$reps"); do
  t=$(now); srun -N2 --reservation=bench true & srun -N2 -w n3,n4 true; wait; since "$t" >>"$D/ranchor"
  t=$(now); "$cmax" run --harness slurm --out "$D/rrun$r" --json >"$D/run.json" || [[ $? -le 2 ]]
  since "$t" >>"$D/rrun"
  ok=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(sum(n["status"]=="ok" for n in j["nodes"]))' "$D/run.json")
  [[ "$ok" == 4 ]] || { echo "reserved run $r: only $ok of 4 nodes answered" >&2; exit 1; }
done
a=$(median <"$D/anchor"); c=$(median <"$D/run"); k=$(median <"$D/collect"); u=$(median <"$D/audit")
ra=$(median <"$D/ranchor"); rc=$(median <"$D/rrun")
printf "cmax run --harness slurm, 4 nodes: median %.3f s (goal < 5 s) | srun -N4 true: %.3f s | ratio %.1fx\n" "$c" "$a" "$(ratio "$c" "$a")"
printf "cmax collect (audit + scan): median %.3f s (goal < 1 s) | cmax audit --json: %.3f s | ratio %.2fx\n" "$k" "$u" "$(ratio "$k" "$u")"
printf "cmax run, n1-n2 in a reservation: median %.3f s | the two sruns: %.3f s | ratio %.1fx\n" "$rc" "$ra" "$(ratio "$rc" "$ra")"
echo "runs: $reps each; all runs: cmax run $(tr '\n' ' ' <"$D/run"); reserved $(tr '\n' ' ' <"$D/rrun")"
