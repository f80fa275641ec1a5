# Sourced by the bench scripts that read the tests' "[ measure  ]" lines.
# num REGEX TEXT: the last number in the first match of REGEX in TEXT, or "-" (a field is never
# empty, since `read` splits tab-separated rows on runs of tabs).
num() {
  local v
  v=$(grep -oE "$1" <<<"$2" | head -1 | grep -oE '[0-9]+(\.[0-9]+)?' | tail -1)
  echo "${v:--}"
}
