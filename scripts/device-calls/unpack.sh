# unpack.sh — what every callN.sh here does first, sourced from the repository root on the GPU
# machine: stops (exit 1) where the bundle was not carried, names the commit it was built from,
# unpacks it into out/device and sets up the environment its programs run in (gpu-env.sh: $D, $OUT).
[ -f out/pack/bundle.tar.xz ] || {
  echo "$0: no out/pack/bundle.tar.xz: run scripts/device-calls/pack.sh first, carry [\"out/pack\"]" >&2
  exit 1
}
echo "bundle built from $(cat out/pack/BUILT_FROM 2>/dev/null) + lead0.patch"
mkdir -p out && tar xJf out/pack/bundle.tar.xz -C out
export DEST=out/device
. scripts/gpu-env.sh out/device
