# gpu-env.sh — sourced from the repository root by the GPU-machine scripts (gpu-check.sh,
# gpu-ab.sh, gpu-profile.sh, gpu-marlin-sweep.sh): D, the bundle from scripts/device-bundle.sh
# ($DEST, else the caller's default $1); OUT, where results go ($OUT, else /tmp/qserve-gpu-out);
# and the bundle's libraries on the library path.
D=${DEST:-$1}
OUT=${OUT:-/tmp/qserve-gpu-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/$D/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
