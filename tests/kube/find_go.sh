# Sourced by tests/kube/build_*.sh: find_go MINOR prints the first Go 1.MINOR or newer found ($GO,
# PATH, then the usual installs), or nothing.
find_go() {
  local want=$1 g v major minor
  for g in "${GO:-}" "$(command -v go 2>/dev/null)" /usr/local/go/bin/go /usr/lib/go/bin/go; do
    [[ -n "$g" && -x "$g" ]] || continue
    v=$("$g" env GOVERSION 2>/dev/null | sed -n 's/^go\([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
    read -r major minor <<<"$v"
    if [[ -n "${major:-}" ]] && (( major > 1 || (major == 1 && minor >= want) )); then
      echo "$g"
      return
    fi
  done
}
