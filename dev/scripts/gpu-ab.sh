#!/usr/bin/env bash
# Runs on the GPU machine (device tool, carry ["out/dev"]): times marlin builds and tuning switches
# side by side in one run, one time column per variant. With AB_LOOPS=1 each distinct binary's
# stream-kernel loop is reported first (dev/scripts/sass_loop_stats.py, into $OUT/ab-loops.txt): a
# build whose loop lost the uniform datapath (R2UR above 0) is slower for reasons other than its
# idea (docs/developing.md). (Opt-in: cuobjdump over a whole bench_kernels has not been timed on
# the GPU machine yet; a cubin of marlin_stream.cu alone takes seconds.) A variant is
# name=binary[:VAR=v,VAR=v], the binary a bench_kernels under $DEST (e.g. the last commit's copy,
# bench_kernels.base, beside the working tree's bench_kernels). Output: $OUT/ab.txt (also printed).
#   AB_VARIANTS="base=bench_kernels.base new=bench_kernels new-l2=bench_kernels:QSERVE_MARLIN_WG_L2AHEAD=4"
#   BENCH_M=1,16,64   AB_KERNELS=marlin-fp8,marlin-nvfp4
set -uo pipefail
cd "$(dirname "$0")/../.."
. scripts/gpu-env.sh out/dev
M=${BENCH_M:-1,8,16,32,64}
K=${AB_KERNELS:-marlin-fp8,marlin-nvfp4}
if [ "${AB_LOOPS:-0}" = 1 ]; then
  bins=$(for v in ${AB_VARIANTS:?set AB_VARIANTS}; do r=${v#*=}; echo "$D/${r%%:*}"; done | sort -u)
  timeout 120 python3 dev/scripts/sass_loop_stats.py $bins >"$OUT/ab-loops.txt" 2>&1; cat "$OUT/ab-loops.txt"
fi
cols=()
header="kernel N K M"
for v in ${AB_VARIANTS:?set AB_VARIANTS}; do
  name=${v%%=*}; rest=${v#*=}; bin=${rest%%:*}; vars=""
  [[ "$rest" == *:* ]] && vars=${rest#*:}
  f="$OUT/ab-$name.txt"
  env ${vars//,/ } timeout 100 "$D/$bin" --kernels "$K" --m "$M" >"$f" 2>&1
  cols+=("$f")
  header="$header $name"
done
{
  echo "$header"
  # rows keyed by "kernel N K M" (a variant whose output differs — a failed shape, a note — must
  # not shift the other columns): the first variant's rows in order, each variant's time or "-"
  awk -v n=${#cols[@]} '
    FNR == 1 { f++ }
    $1 ~ /^marlin|^cublaslt|^emulation/ && $5 ~ /^[0-9.]+$/ {
      key = $1 " " $2 " " $3 " " $4; t[f, key] = $5
      if (f == 1) order[++rows] = key }
    END { for (i = 1; i <= rows; i++) { line = order[i]
            for (j = 1; j <= n; j++) line = line " " ((j, order[i]) in t ? t[j, order[i]] : "-")
            print line } }' "${cols[@]}"
} | { if command -v column >/dev/null; then column -t; else cat; fi; } | tee "$OUT/ab.txt"
