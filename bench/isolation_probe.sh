#!/usr/bin/env bash
# cmax audit isolation (issue 11): a /24 with 12 service ports, inside network namespaces this
# script builds (as tests/integration/test_audit_isolation.cpp does: a tenant namespace, a services
# namespace owning all of 10.203.X.0/24 and 169.254.169.254, one veth pair, nothing routed out),
# with real listeners (tests/support/iso_http: an open Grafana, a Grafana behind a login, a
# Jupyter with a token, an open Ray, a Slurm daemon, an anonymous kubelet over TLS, a metadata
# endpoint that wants a token) and one address:port that drops its packets. Alternating, REPS
# times each, from the tenant namespace:
#   anchor  nmap -sT (TCP connect scan of the same hosts and ports: connects only, no requests),
#           unbounded and held to cmax's default rate (--max-rate 4000)
#   cmax    cmax audit isolation --scope NET/24 --ports <the 12> --json (connect, then one
#           read-only request per open port; the metadata probe; the host-side checks)
# Prints medians and the ratio. Goal: < 3 s for cmax.
# Usage: bench/isolation_probe.sh [BUILD=build] [REPS=5]   (root; iproute2; nmap for the anchor)
set -euo pipefail
build=${1:-build}
reps=${2:-5}
cmax=$(realpath "$build/apps/cmax/cmax")
server=$(realpath "$build/tests/support/iso_http/iso_http_server")
[[ $(id -u) -eq 0 ]] || { echo "needs root (network namespaces)" >&2; exit 3; }
x=$((100 + $$ % 100))
net=10.203.$x
link=10.204.$x
t=cmaxbench-$$-t
s=cmaxbench-$$-s
veth=cmb$(($$ % 100000))
D=$(mktemp -d /tmp/cmax-bench-iso.XXXXXX)
cleanup() {
  [[ -n "${spid:-}" ]] && kill "$spid" 2>/dev/null || true
  ip netns del "$t" 2>/dev/null || true
  ip netns del "$s" 2>/dev/null || true
  rm -rf "$D"
}
trap cleanup EXIT
ip netns add "$t"
ip netns add "$s"
ip link add "${veth}a" netns "$t" type veth peer name "${veth}b" netns "$s"
ip -n "$t" link set lo up
ip -n "$s" link set lo up
ip -n "$t" addr add "$link.1/30" dev "${veth}a"
ip -n "$s" addr add "$link.2/30" dev "${veth}b"
ip -n "$t" link set "${veth}a" up
ip -n "$s" link set "${veth}b" up
ip -n "$t" route add "$net.0/24" via "$link.2"
ip -n "$t" route add 169.254.169.254/32 via "$link.2"
ip -n "$s" route add local "$net.0/24" dev lo
ip -n "$s" addr add 169.254.169.254/32 dev lo
# $net.9:9090 drops its packets (a policy rule into a blackhole table).
ip -n "$s" rule add pref 10 to "$net.9/32" ipproto tcp dport 9090 table 100 2>/dev/null &&
  ip -n "$s" route add blackhole default table 100 &&
  ip -n "$s" rule add pref 20 table local && ip -n "$s" rule del pref 0 table local || echo "(no drop rule: ip rule lacks dport)"
ip netns exec "$s" "$server" "$D/requests.log" "$net.5:3000:grafana-open" "$net.6:3000:grafana-auth" \
  "$net.7:8888:jupyter-auth" "$net.8:8265:ray-open" "$net.10:6817:accept" "$net.11:10250:tls-kubelet-open" \
  "169.254.169.254:80:metadata-token" >"$D/server.log" 2>&1 &
spid=$!
for _ in $(seq 100); do grep -q ready "$D/requests.log" 2>/dev/null && break; sleep 0.05; done

ports=10250,10255,2379,3000,9090,9400,9100,8888,8265,6817,6818,6819
now() { date +%s.%N; }
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
have_nmap=0
command -v nmap >/dev/null && have_nmap=1
: >"$D/cmax.times"
: >"$D/cmax200.times"
: >"$D/nmap.times"
: >"$D/nmap4000.times"
for r in $(seq "$reps"); do
  t0=$(now)
  ip netns exec "$t" "$cmax" audit isolation --scope "$net.0/24" --ports "$ports" --no-kube --json >"$D/cmax.json" || true
  t1=$(now)
  echo "$t1 - $t0" | bc >>"$D/cmax.times"
  # The same with a 200 ms connect timeout: the dropped port's wait is most of the default run.
  t0=$(now)
  ip netns exec "$t" "$cmax" audit isolation --scope "$net.0/24" --ports "$ports" --no-kube --json --timeout-ms 200 \
    >/dev/null || true
  t1=$(now)
  echo "$t1 - $t0" | bc >>"$D/cmax200.times"
  if [[ $have_nmap -eq 1 ]]; then
    t0=$(now)
    ip netns exec "$t" nmap -sT -n -Pn -p "$ports" --max-retries 0 -T4 "$net.0/24" -oG "$D/nmap.txt" >/dev/null
    t1=$(now)
    echo "$t1 - $t0" | bc >>"$D/nmap.times"
    # nmap held to cmax's default bound of 4,000 connects a second.
    t0=$(now)
    ip netns exec "$t" nmap -sT -n -Pn -p "$ports" --max-retries 0 -T4 --max-rate 4000 "$net.0/24" >/dev/null
    t1=$(now)
    echo "$t1 - $t0" | bc >>"$D/nmap4000.times"
  fi
done
open=$(grep -o '"result": *"[a-z_]*"' "$D/cmax.json" | sort | uniq -c | tr '\n' ' ')
probes=$(sed -n 's/.*"isolation.probes", *"value": *"\([0-9]*\)".*/\1/p' "$D/cmax.json" | head -1)
c=$(median <"$D/cmax.times")
echo "cmax audit isolation: /24 x 12 ports + metadata: median $c s over $reps runs ($(tr '\n' ' ' <"$D/cmax.times")); results: $open"
echo "cmax audit isolation --timeout-ms 200: median $(median <"$D/cmax200.times") s ($(tr '\n' ' ' <"$D/cmax200.times"))"
if [[ $have_nmap -eq 1 ]]; then
  n=$(median <"$D/nmap.times")
  found=$(grep -o '[0-9]*/open' "$D/nmap.txt" | wc -l)
  echo "nmap -sT (connects only): median $n s ($(tr '\n' ' ' <"$D/nmap.times")); $found open ports found"
  n4=$(median <"$D/nmap4000.times")
  echo "nmap -sT --max-rate 4000 (cmax's default connect rate): median $n4 s ($(tr '\n' ' ' <"$D/nmap4000.times"))"
  awk -v c="$c" -v n="$n" -v n4="$n4" 'BEGIN { printf "ratio cmax / nmap: %.2fx; cmax / nmap at the same rate bound: %.2fx\n", c / n, c / n4 }'
else
  echo "nmap not installed: no anchor (apt-get install nmap)"
fi
