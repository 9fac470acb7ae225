#!/usr/bin/env bash
# test_bench_torch_kernels.sh — dev/scripts/bench_torch_kernels.py (the torch baselines, run on the GPU
# machine) through every row's Python here, on a stand-in `torch` module that times each call as 1 µs
# (this machine has no torch): the header with the copy bandwidth, one line per kernel, shape and M
# in bench_kernels' columns — the BF16 GEMM, `_scaled_mm` per-tensor, per-tensor from BF16 x
# (+cast) and rowwise — and no row failed; and that the +cast row's timed call casts BF16 x itself
# (the stand-in counts `_scaled_mm` calls on FP8 made from BF16 within the call). Catches a Python
# error before device time is spent on it. Prints ok / not ok / skip.
set -u
names="rows_and_columns cast_timed"
. "$(dirname "$0")/../../../tests/cli/check_lib.sh"
command -v python3 >/dev/null || skip_all "python3 is needed" $names

mkdir -p "$TMP/stub/torch"
cat >"$TMP/stub/torch/__init__.py" <<'PY'
"""A stand-in for the parts of torch that bench_torch_kernels.py calls: tensors carry only their
shape, every timed stretch takes 1 ms, graphs replay nothing. At exit it writes to $STUB_LOG how
many `_scaled_mm` calls took an FP8 operand cast from BF16 since the previous call (the cast timed
with the GEMM) and how many took one made earlier."""
import atexit
import contextlib
import os

_calls = {"cast_in_call": 0, "cast_before": 0}
_fresh = set()  # ids of FP8 tensors cast from BF16 since the last _scaled_mm
atexit.register(lambda: open(os.environ["STUB_LOG"], "w").write(
    f"cast_in_call {_calls['cast_in_call']} cast_before {_calls['cast_before']}\n"))

__version__ = "stub"
bfloat16, float8_e4m3fn, uint8, float32 = "bfloat16", "float8_e4m3fn", "uint8", "float32"


class Tensor:
    def __init__(self, *shape, dtype=float32):
        self.shape, self.dtype = shape, dtype

    def numel(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __mul__(self, other):
        return Tensor(*self.shape, dtype=self.dtype)

    def to(self, dtype):
        out = Tensor(*self.shape, dtype=dtype)
        if self.dtype == bfloat16 and dtype == float8_e4m3fn:
            _fresh.add(id(out))
        return out

    def t(self):
        return Tensor(*reversed(self.shape), dtype=self.dtype)

    def copy_(self, other):
        return self


def _shape(args):
    return args[0] if len(args) == 1 and isinstance(args[0], tuple) else args


def randn(*shape, device=None, dtype=float32):
    return Tensor(*_shape(shape), dtype=dtype)


def empty(*shape, dtype=float32, device=None):
    return Tensor(*_shape(shape), dtype=dtype)


def empty_like(t):
    return Tensor(*t.shape, dtype=t.dtype)


def ones(*shape, device=None, dtype=float32):
    return Tensor(*_shape(shape), dtype=dtype)


def tensor(value, device=None, dtype=float32):
    return Tensor(dtype=dtype)


def matmul(a, b):
    assert a.shape[1] == b.shape[0], (a.shape, b.shape)
    return Tensor(a.shape[0], b.shape[1], dtype=a.dtype)


def _scaled_mm(a, b, scale_a, scale_b, out_dtype):
    assert a.dtype == float8_e4m3fn and b.dtype == float8_e4m3fn, (a.dtype, b.dtype)
    assert a.shape[1] == b.shape[0], (a.shape, b.shape)
    _calls["cast_in_call" if id(a) in _fresh else "cast_before"] += 1
    _fresh.clear()
    return Tensor(a.shape[0], b.shape[1], dtype=out_dtype)


class _Props:
    L2_cache_size = 60 * 1024 * 1024


class _Event:
    def __init__(self, enable_timing=False):
        pass

    def record(self):
        pass

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return 1.0


class _Graph:
    def replay(self):
        pass


class _Stream:
    def synchronize(self):
        pass


class cuda:
    Event, CUDAGraph, Stream = _Event, _Graph, _Stream

    @staticmethod
    def get_device_properties(i):
        return _Props()

    @staticmethod
    def synchronize():
        pass

    @staticmethod
    def empty_cache():
        pass

    @staticmethod
    @contextlib.contextmanager
    def stream(s):
        yield

    @staticmethod
    @contextlib.contextmanager
    def graph(g, stream=None):
        yield
PY

STUB_LOG="$TMP/calls.txt" PYTHONPATH="$TMP/stub" python3 dev/scripts/bench_torch_kernels.py 1,64 >"$TMP/out.txt" 2>&1
rc=$?
rows=$(awk 'NF == 8 && $2 ~ /^[0-9]+$/ && $4 ~ /^[0-9]+$/' "$TMP/out.txt" | wc -l)
# 4 shapes x 4 kernels x 2 M; the stand-in's time: 20 calls in 1 ms, 50 us each
[[ $rc == 0 && $rows == 32 ]] && ! grep -q failed "$TMP/out.txt" &&
  grep -q '^torch stub; copy bandwidth' "$TMP/out.txt" &&
  grep -Eq '^torch-scaled_mm-fp8\+cast +28672 +4096 +64 +50\.0 ' "$TMP/out.txt" &&
  grep -Eq '^torch-bf16 +4096 +14336 +1 +50\.0 ' "$TMP/out.txt"
check rows_and_columns $? "rc $rc, $rows rows: $(head -c 800 "$TMP/out.txt")"

# every +cast call (4 shapes x 2 M, 3 warm-up + 1 capture warm-up + 20 captured calls each) casts
# its own x; the other FP8 rows' x was made once, before timing
read -r _ in_call _ before <"$TMP/calls.txt" 2>/dev/null
[[ "${in_call:-0}" == $((4 * 2 * 24)) && "${before:-0}" -gt 0 ]]
check cast_timed $? "calls: $(cat "$TMP/calls.txt" 2>&1)"
