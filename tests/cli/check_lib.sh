# check_lib.sh — what the shell suites that start no server share (sourced; server suites use
# server_lib.sh): check NAME STATUS [DETAIL] prints "ok NAME" for status 0, else "not ok NAME:
# DETAIL"; skip_all_without CMD NAMES... prints "skip NAME: CMD is needed" for every test and
# exits where CMD is missing; and the suite's scratch folder $TMP, removed on exit.
check() { if [ "$2" = 0 ]; then echo "ok $1"; else echo "not ok $1${3:+: $3}"; fi; }
skip_all_without() {
  local cmd=$1
  shift
  command -v "$cmd" >/dev/null && return 0
  for n in "$@"; do echo "skip $n: $cmd is needed"; done
  exit 0
}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
