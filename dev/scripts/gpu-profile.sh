#!/usr/bin/env bash
# Runs on the GPU machine (device tool, carry ["out/dev"]): Nsight Compute on marlin kernels.
#   PROFILE_TIMES="marlin-fp8:4096x4096:32 ..."  per-kernel GPU time of every kernel one call
#                                                launches (gpu__time_duration), printed
#   PROFILE_FULL="marlin-fp8:28672x4096:64"      the full section set of the kernel matching
#                                                PROFILE_KERNEL (regex) in that call: speed of
#                                                light, memory and stall summary printed, the
#                                                report kept as $OUT/<kernel>-<shape>-<m>.ncu-rep;
#                                                the PROFILE_TOP (40) SASS lines with the most
#                                                stall samples (dev/scripts/ncu_sass_top.py) and
#                                                the raw metrics matching PROFILE_METRICS (the
#                                                tensor pipe's and shared memory's use)
set -uo pipefail
cd "$(dirname "$0")/../.."
. scripts/gpu-env.sh out/dev
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
RX=${PROFILE_KERNEL:-marlin}
for c in ${PROFILE_TIMES:-}; do
  IFS=: read -r kern shape m <<<"$c"
  echo "== times: $kern $shape M=$m"
  "$NCU" --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,lts__t_bytes.sum \
    --kernel-name "regex:marlin|permute|pad_rows" --launch-count 8 --csv --page raw \
    "$D/bench_kernels" --kernels "$kern" --shapes "$shape" --m "$m" --iters 1 2>/dev/null |
    awk -v want="Kernel Name,gpu__time_duration.sum,dram__bytes_read.sum,lts__t_bytes.sum" '
      # columns found by their header names (the raw page adds launch__* and other columns
      # around the requested metrics, so positions from the end are not stable)
      { n = split($0, f, "\",\""); f[1] = substr(f[1], 2); f[n] = substr(f[n], 1, length(f[n]) - 1) }
      NR == 1 { k = split(want, w, ","); for (i = 1; i <= k; i++) for (j = 1; j <= n; j++) if (f[j] == w[i]) col[i] = j }
      NR >= 2 { line = ""; for (i = 1; i <= k; i++) line = line (i > 1 ? " | " : "") (col[i] ? f[col[i]] : "?")
                if (NR == 2) line = line "  (units)"; print line }' |
    sed -E 's/\(qs_marlin::Params\)|qs_marlin::|\(anonymous namespace\)::|"//g' | cut -c1-160
done
for c in ${PROFILE_FULL:-}; do
  IFS=: read -r kern shape m <<<"$c"
  rep="$OUT/$kern-$shape-$m"
  echo "== full: $kern $shape M=$m (kernel /$RX/)"
  "$NCU" --clock-control none --kernel-name "regex:$RX" --launch-skip 2 --launch-count 1 --set full \
    --import-source no -o "$rep" -f "$D/bench_kernels" --kernels "$kern" --shapes "$shape" --m "$m" --iters 1 \
    >/dev/null 2>&1
  "$NCU" -i "$rep.ncu-rep" --page details --section SpeedOfLight 2>&1 | grep -E "Duration|Throughput|Cycles" | cut -c1-100
  "$NCU" -i "$rep.ncu-rep" --page raw --metrics \
    "regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio" 2>&1 |
    awk '$NF ~ /^[0-9.]+$/ && $NF > 0.05 { print $1, $NF }' | sort -k2 -nr | head -12
  # the pipes' and shared memory's use (PROFILE_METRICS: a regex over the raw metric names)
  "$NCU" -i "$rep.ncu-rep" --page raw 2>&1 |
    grep -E "${PROFILE_METRICS:-pipe_tensor.*pct_of_peak|mem_shared.*pct|data_pipe_lsu_wavefronts.*pct|sm__throughput.avg.pct}" |
    awk '{ print $1, $NF }' | head -30
  "$NCU" -i "$rep.ncu-rep" --page source --print-source sass --csv >"$rep-sass.csv" 2>/dev/null &&
    python3 dev/scripts/ncu_sass_top.py "$rep-sass.csv" "${PROFILE_TOP:-40}"
  rm -f "$rep-sass.csv"
done
