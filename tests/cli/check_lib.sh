# check_lib.sh — what the shell suites that start no server share (sourced; server suites use
# server_lib.sh): check NAME STATUS [DETAIL] prints "ok NAME" for status 0, else "not ok NAME:
# DETAIL"; skip_all REASON NAMES... prints "skip NAME: REASON" for every test and exits (a suite
# whose tool or data is missing); need_nvcc NAMES... sets $NVCC to the CUDA compiler (the
# environment's NVCC, nvcc on PATH, or the toolkit's) and skips them all where there is none;
# and the suite's scratch folder $TMP, removed on exit.
check() { if [ "$2" = 0 ]; then echo "ok $1"; else echo "not ok $1${3:+: $3}"; fi; }
skip_all() {
  local reason=$1
  shift
  for n in "$@"; do echo "skip $n: $reason"; done
  exit 0
}
need_nvcc() {
  NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
  [ -x "$NVCC" ] || skip_all "no nvcc (the CUDA toolkit)" "$@"
}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
