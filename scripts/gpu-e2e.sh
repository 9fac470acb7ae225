#!/usr/bin/env bash
# Called by scripts/gpu-check.sh on the GPU machine: end-to-end checks and figures (gpu_e2e.py).
cd "$(dirname "$0")/.." && PYTHONUNBUFFERED=1 python3 scripts/gpu_e2e.py "$1" 2>&1 | tee "$1/e2e.log"
