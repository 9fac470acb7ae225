#!/usr/bin/env bash
# fetch-sass-tools.sh — a disassembler for this machine, whose CUDA toolkit has ptxas but no
# cuobjdump: Debian's CUDA 11.8 toolkit package (bookworm, non-free) is downloaded, not installed,
# and its cuobjdump and nvdisasm extracted into out/sass-tools (ignored by git; nothing else on the
# machine changes but apt's package lists, which gain bookworm's non-free one).
# dev/scripts/sass_loop_stats.py then runs here on cubins built by our nvcc 13: it hands CUDA 11.8's
# cuobjdump a copy with the ELF header in the old ABI (sass_loop_stats.old_abi_copy). Why: a stream
# kernel variant's loop (instructions a stage pair, R2UR) can be checked before device time is spent
# timing it (docs/developing.md, "Machine code").
#
#   dev/scripts/fetch-sass-tools.sh            # ~85 MB download, once
#   python3 dev/scripts/sass_loop_stats.py X.cubin
set -euo pipefail
cd "$(dirname "$0")/../.."
DEST=${DEST:-out/sass-tools}
if [ -x "$DEST/usr/bin/cuobjdump" ]; then
  echo "fetch-sass-tools: $DEST/usr/bin/cuobjdump is already there"
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "deb http://deb.debian.org/debian bookworm non-free" >"$work/non-free.list"
apt_here=(-o Dir::Etc::sourcelist="$work/non-free.list" -o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0)
apt-get "${apt_here[@]}" update >"$work/apt.log" 2>&1 ||
  { echo "fetch-sass-tools: apt-get update of bookworm non-free failed:" >&2; tail -5 "$work/apt.log" >&2; exit 1; }
chmod 777 "$work" # apt downloads as the _apt user where it can
(cd "$work" && apt-get "${apt_here[@]}" download nvidia-cuda-toolkit >>"$work/apt.log" 2>&1) ||
  { echo "fetch-sass-tools: could not download nvidia-cuda-toolkit:" >&2; tail -5 "$work/apt.log" >&2; exit 1; }
mkdir -p "$DEST"
deb=$(ls "$work"/nvidia-cuda-toolkit_*.deb)
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$DEST" ./usr/bin/cuobjdump ./usr/bin/nvdisasm
echo "fetch-sass-tools: $(basename "$deb") -> $DEST/usr/bin/{cuobjdump,nvdisasm}"
