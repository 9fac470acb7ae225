#!/usr/bin/env python3
"""Same-run torch baselines for dev/tools/bench_kernels.c (run on the GPU machine): for the
Llama-3.1-8B linear shapes and M of ../shared/TARGETS.md, times torch.matmul in BF16,
torch._scaled_mm in FP8 (per-tensor and rowwise scales; per-tensor also from BF16 x, its cast to
FP8 included: what a W8A8 layer runs), rotating weight copies past the L2, and
prints the same columns as bench_kernels plus the device-to-device copy bandwidth. Calls are timed
as CUDA-graph replays, as bench_kernels times its kernels back to back without host work in
between. (The read ceiling per shape is bench_kernels' own read-*-bytes rows: a torch.sum over
the bytes, tried in session 11, ran slower than marlin itself and was no ceiling.)"""
import math
import sys

import torch

SHAPES = [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336)]


def median_us(fn, copies, iters=20, reps=7):
    """Median time of one call, from CUDA-graph replays of `iters` calls (cycling the weight
    copies), so Python's per-call dispatch is not timed; eager timing if capture fails."""
    for i in range(3):
        fn(i % copies)
    torch.cuda.synchronize()
    try:
        graph = torch.cuda.CUDAGraph()
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            fn(0)  # warm-up on the capture stream
            stream.synchronize()
            with torch.cuda.graph(graph, stream=stream):
                for i in range(iters):
                    fn(i % copies)
        run = graph.replay
    except RuntimeError:
        def run():
            for i in range(iters):
                fn(i % copies)
    run()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1000 / iters)
    times.sort()
    return times[len(times) // 2]


def copy_bandwidth():
    """Device-to-device copy of 1 GiB, read + write bytes over time, timed eagerly (a graph
    replay of the copy measured 2750 GB/s against 4218 eagerly on the H200: not the ceiling)."""
    a = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    for _ in range(3):
        b.copy_(a)
    torch.cuda.synchronize()
    times = []
    for _ in range(7):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            b.copy_(a)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / 5)
    times.sort()
    return 2 * a.numel() / (times[3] * 1e-3) / 1e9


def main():
    ms = [int(x) for x in sys.argv[1].split(",")] if len(sys.argv) > 1 else [1, 4, 16, 64, 256, 1024, 4096]
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    bw = copy_bandwidth()
    print(f"torch {torch.__version__}; copy bandwidth {bw:.0f} GB/s")
    print(f"{'kernel':22s} {'N':>6s} {'K':>6s} {'M':>5s} {'time_us':>10s} {'TFLOP/s':>9s} {'weight_GB/s':>11s} {'%copy':>8s}")
    for n, k in SHAPES:
        for name in ("torch-bf16", "torch-scaled_mm-fp8", "torch-scaled_mm-fp8+cast", "torch-scaled_mm-fp8-rowwise"):
            wbytes = n * k * (2 if name == "torch-bf16" else 1)
            copies = max(2, min(16, math.ceil(3 * l2 / wbytes)))
            if name == "torch-bf16":
                ws = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.02 for _ in range(copies)]
            else:
                ws = [(torch.randn(n, k, device="cuda") * 0.02).to(torch.float8_e4m3fn) for _ in range(copies)]
            scale = torch.tensor(1.0, device="cuda")
            for m in ms:
                if name == "torch-bf16":
                    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
                    fn = lambda i: torch.matmul(x, ws[i].t())
                elif name == "torch-scaled_mm-fp8":
                    x = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
                    fn = lambda i: torch._scaled_mm(x, ws[i].t(), scale_a=scale, scale_b=scale, out_dtype=torch.bfloat16)
                elif name == "torch-scaled_mm-fp8+cast":
                    # the same GEMM from BF16 x: the cast to FP8 first (one elementwise kernel), the
                    # least a W8A8 layer pays for its input (a static scale folds into that cast)
                    xb = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
                    fn = lambda i: torch._scaled_mm(xb.to(torch.float8_e4m3fn), ws[i].t(), scale_a=scale, scale_b=scale,
                                                    out_dtype=torch.bfloat16)
                else:  # per-token x per-channel scales, what FP8-dynamic checkpoints need
                    x = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
                    sa = torch.ones(m, 1, device="cuda")
                    sb = torch.ones(1, n, device="cuda")
                    fn = lambda i: torch._scaled_mm(x, ws[i].t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
                try:
                    us = median_us(fn, copies)
                except RuntimeError as e:
                    print(f"{name:22s} {n:6d} {k:6d} {m:5d}  failed: {str(e).splitlines()[0]}")
                    continue
                tf = 2 * m * n * k / (us * 1e-6) / 1e12
                gbs = wbytes / (us * 1e-6) / 1e9
                print(f"{name:22s} {n:6d} {k:6d} {m:5d} {us:10.1f} {tf:9.1f} {gbs:11.0f} {100 * gbs / bw:7.0f}%")
            del ws
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
