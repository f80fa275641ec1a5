# Sourced by the scripts that build a test tool from the Go module proxy (tests/kube/build_*.sh,
# tests/fleetview/build_alertmanager.sh). Each builds once into OUTDIR, keyed by a stamp (the hash of
# what it was built from: a second call returns at once), and when it cannot build here it writes
# one line saying why into an "unavailable" file and exits 0: its tests then skip with that line,
# never pass silently. Go's own caches (GOMODCACHE, GOCACHE) keep a rebuild to seconds.
#
#   go_tool_setup NAME OUTDIR STAMPFILE UNAVAILABLEFILE "WHO SKIPS" STAMP_INPUT...
#       sets out (OUTDIR, absolute), stamp (of the inputs and this file), stamp_file, log
#       (OUTDIR/NAME-build.log)
#   go_tool_cached OUTPUT...      true when every OUTPUT exists and the stamp is the one recorded
#   unavailable "WHY"             writes why, says it, exits 0
#   go_tool_find_go MINOR WHAT    after a miss: forgets the last outcome, sets go to Go 1.MINOR or
#                                 newer ($GO, PATH, /usr/local/go, /usr/lib/go) and the build
#                                 environment; unavailable otherwise
#   go_tool_building WHAT         prints what is built with which Go, starts the clock
#   go_tool_done "VERSION LINE"   records the stamp and prints the build's time

go_tool_setup() {
  go_tool_name=$1
  mkdir -p "$2"
  out=$(cd "$2" && pwd)
  stamp_file="$out/$3"
  go_tool_unavailable_file="$out/$4"
  go_tool_skips=$5
  shift 5
  stamp=$(cat "$@" "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)
  log="$out/$go_tool_name-build.log"
}

go_tool_cached() {
  local f
  for f in "$@"; do [[ -x "$f" || -s "$f" ]] || return 1; done
  [[ "$(cat "$stamp_file" 2>/dev/null)" == "$stamp" ]] || return 1
  return 0
}

unavailable() {
  echo "build_$go_tool_name: $1; $go_tool_skips will skip" >&2
  echo "$1" >"$go_tool_unavailable_file"
  exit 0
}

go_tool_find_go() {
  local want=$1 what=$2 g v major minor
  rm -f "$go_tool_unavailable_file" "$stamp_file"
  go=""
  for g in "${GO:-}" "$(command -v go 2>/dev/null)" /usr/local/go/bin/go /usr/lib/go/bin/go; do
    [[ -n "$g" && -x "$g" ]] || continue
    v=$("$g" env GOVERSION 2>/dev/null | sed -n 's/^go\([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
    read -r major minor <<<"$v"
    if [[ -n "${major:-}" ]] && (( major > 1 || (major == 1 && minor >= want) )); then
      go=$g
      break
    fi
  done
  [[ -n "$go" ]] || unavailable "no Go 1.$want or newer found (PATH, /usr/local/go); install it from go.dev/dl to build $what"
  export CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOTOOLCHAIN=local
}

go_tool_building() {
  : >"$log"
  echo "build_$go_tool_name: building $1 with $("$go" env GOVERSION) (first build: minutes; log $log)" >&2
  go_tool_start=$(date +%s)
}

go_tool_done() {
  echo "$stamp" >"$stamp_file"
  echo "build_$go_tool_name: built in $(( $(date +%s) - go_tool_start )) s: $1" >&2
}
