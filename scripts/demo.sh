#!/usr/bin/env bash
# The README's first command ends here: show what qserve can do on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BUILD:-build}/qserve
"$BIN" --help
