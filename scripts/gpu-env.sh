# gpu-env.sh — sourced from the repository root by the GPU-machine scripts (gpu-check.sh; the lab's
# dev/scripts/gpu-ab.sh, gpu-profile.sh, gpu-marlin-sweep.sh): D, the bundle from scripts/device-bundle.sh
# ($DEST, else the caller's default $1); OUT, where results go ($OUT, else /tmp/qserve-gpu-out);
# the bundle's libraries on the library path; and take_var, for variants written VAR=v,VAR=v.
D=${DEST:-$1}
OUT=${OUT:-/tmp/qserve-gpu-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/$D/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
# The libcurl set (device-bundle.sh's lib-extra) only where the machine lacks it.
if [ -d "$D/lib-extra" ] && [ -x "$D/qserve" ] && ldd "$D/qserve" | grep -q "not found"; then
  export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$PWD/$D/lib-extra"
fi

# take_var NAME "VAR=v,..." — a script's own setting NAME among a variant's variables: sets
# taken (its value, empty when absent) and rest (the other variables, comma-separated).
take_var() {
  taken="" rest=$2
  if [[ ",$2," == *",$1="* ]]; then
    taken=$(sed -E "s/.*,$1=([^,]*),.*/\1/" <<<",$2,")
    rest=$(sed -E "s/,$1=[^,]*,/,/; s/^,//; s/,\$//" <<<",$2,")
  fi
}

# NCCL for tensor parallelism on GPUs (docs/parallel.md): pip's nvidia-nccl-cu12/cu13 wheel when
# the machine has one and QSERVE_NCCL_LIBRARY does not already name a library.
if [ -z "${QSERVE_NCCL_LIBRARY:-}" ]; then
  nccl_dir=$(python3 -c "import nvidia.nccl as n; print(list(n.__path__)[0])" 2>/dev/null)
  if [ -n "$nccl_dir" ] && [ -f "$nccl_dir/lib/libnccl.so.2" ]; then
    export QSERVE_NCCL_LIBRARY="$nccl_dir/lib/libnccl.so.2"
  fi
fi
