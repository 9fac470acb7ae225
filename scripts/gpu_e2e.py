#!/usr/bin/env python3
"""End-to-end checks and the first figures on the GPU machine (called by scripts/gpu-check.sh,
binaries from scripts/device-bundle.sh under out/device):
  1. the transformers-golden tiny models (tests/data/hf-goldens) and stories260K (F32, BF16,
     FP8 copies): greedy tokens on the GPU equal the CPU's, with --linear-backend cublaslt
     (where it serves the scheme), emulation and auto;
  2. the server on the GPU answers OpenAI-style requests (completions, chat, streaming);
  3. batch-1 decode tok/s of a random-init Llama-3.1-8B-shape FP8 checkpoint (init-model +
     quantize) beside its bandwidth roofline and beside HF transformers on the same BF16 weights.
Prints a summary and ends with "N passed, N failed"."""
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEV = os.path.join(ROOT, os.environ.get("DEST", "out/device"))
QS = os.path.join(DEV, "qserve")
OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/qserve-gpu-out"
WORK = "/tmp/qserve-e2e"
# E2E_GPU_DEVICE=cpu runs the script's own logic on a machine without a GPU (a self-check).
GPU = os.environ.get("E2E_GPU_DEVICE", "cuda")
results = []


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)


def record(name, ok, detail=""):
    results.append((name, ok, detail))
    print(f"{'ok' if ok else 'not ok'} {name}{': ' + detail if detail else ''}", flush=True)


def generate(model, prompt_ids, n, device, backend=None, extra=()):
    args = [QS, "generate", model, "--prompt-ids", ",".join(map(str, prompt_ids)), "--max-tokens", str(n),
            "--temperature", "0", "--ignore-eos", "--json", "--device", device, *extra]
    if backend:
        args += ["--linear-backend", backend, "--moe-backend", backend]
    p = run(args)
    if p.returncode != 0:
        return None, p.stderr.strip().splitlines()[-3:]
    return json.loads(p.stdout)["token_ids"], p.stderr


def common_prefix(a, b):
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def check_model(name, model, prompts, n_tokens, backends, need_exact):
    for prompt in prompts:
        cpu, err = generate(model, prompt, n_tokens, "cpu")
        if cpu is None:
            record(f"{name} cpu", False, " ".join(err))
            return
        for backend in backends:
            gpu, err = generate(model, prompt, n_tokens, GPU, backend if GPU == "cuda" else None)
            if gpu is None:
                record(f"{name} cuda/{backend}", False, " ".join(err))
                continue
            same = common_prefix(cpu, gpu)
            record(f"{name} cuda/{backend} prompt {prompt[:3]}", same >= need_exact,
                   f"{same}/{n_tokens} greedy tokens equal to CPU")


def hf_goldens():
    import shutil

    base = os.path.join(ROOT, "tests", "data", "hf-goldens")
    tok_src = os.path.join(WORK, "stories-f32")  # same 512-token vocabulary; generate wants a tokenizer
    for arch in sorted(os.listdir(base)):
        model = os.path.join(WORK, "hf", arch)
        shutil.copytree(os.path.join(base, arch), model, dirs_exist_ok=True)
        for f in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(os.path.join(tok_src, f), model)
        cfg = json.load(open(os.path.join(model, "config.json")))
        qc = cfg.get("quantization_config") or {}
        text = json.dumps(qc)
        w8a8 = '"num_bits": 8' in text and '"input_activations": {' in text and "nvfp4" not in text
        # auto takes cublaslt first wherever it serves the scheme; emulation is the other path
        backends = ["auto", "emulation"]
        golden = json.load(open(os.path.join(model, "golden.json")))
        prompts = [p["ids"] for p in golden["prompts"][:1]]
        # bf16 activations on the GPU vs f32 on the CPU: tokens agree while margins are clear
        check_model(f"hf:{arch}", model, prompts, 24, backends, need_exact=8)


def stories():
    data = os.path.join(DEV, "data")
    if not os.path.exists(os.path.join(data, "stories260K.bin")):
        record("stories260K", False, "data not bundled")
        return
    f32 = os.path.join(WORK, "stories-f32")
    run([os.path.join(DEV, "convert-llama2c"), f"{data}/stories260K.bin", f"{data}/tok512.bin", f32])
    bf16 = os.path.join(WORK, "stories-bf16")
    run([os.path.join(DEV, "convert-llama2c"), f"{data}/stories260K.bin", f"{data}/tok512.bin", bf16, "--dtype", "bf16"])
    fp8 = os.path.join(WORK, "stories-fp8")
    run([QS, "quantize", bf16, fp8, "--scheme", "fp8-dynamic"])
    golden = [int(x) for x in open(f"{data}/golden_greedy_200_ids.txt").read().split()]
    for name, model, backends in (("f32", f32, ["auto", "emulation"]), ("bf16", bf16, ["auto", "emulation"]),
                                  ("fp8", fp8, ["auto", "cublaslt", "emulation"])):
        cpu, _ = generate(model, [1], 200, "cpu")
        for backend in backends:
            gpu, err = generate(model, [1], 200, GPU, backend if GPU == "cuda" else None)
            if gpu is None:
                record(f"stories260K-{name} cuda/{backend}", False, " ".join(err))
                continue
            record(f"stories260K-{name} cuda/{backend}", common_prefix(cpu or [], gpu) >= 40,
                   f"{common_prefix(cpu or [], gpu)}/200 equal to CPU, {common_prefix(golden, gpu)}/200 equal to the golden")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def post(url, body, stream=False):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return r.read().decode()


def server():
    model = os.path.join(WORK, "stories-bf16")
    port = free_port()
    log = open(os.path.join(OUT, "server.log"), "w")
    p = subprocess.Popen([QS, model, "--port", str(port), "--host", "127.0.0.1", "--device", GPU,
                          "--served-model-name", "stories"], stdout=log, stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(120):
            try:
                urllib.request.urlopen(base + "/health", timeout=2)
                break
            except Exception:
                time.sleep(0.5)
        r = json.loads(post(base + "/v1/completions", {"model": "stories", "prompt": "Once upon a time",
                                                       "max_tokens": 32, "temperature": 0}))
        record("server completions on GPU", bool(r["choices"][0]["text"]), repr(r["choices"][0]["text"][:80]))
        r = json.loads(post(base + "/v1/chat/completions", {"model": "stories", "max_tokens": 16,
                                                            "messages": [{"role": "user", "content": "Hi"}]}))
        record("server chat on GPU", r["choices"][0]["finish_reason"] in ("stop", "length"))
        body = post(base + "/v1/completions", {"model": "stories", "prompt": "Lily", "max_tokens": 16, "stream": True})
        record("server streaming on GPU", body.rstrip().endswith("data: [DONE]"))
    except Exception as e:  # noqa: BLE001 — report any failure as a failed check
        record("server on GPU", False, str(e))
    finally:
        p.terminate()
        p.wait(timeout=30)


def llama8b():
    import torch

    bf16 = os.path.join(WORK, "l8b-bf16")
    fp8 = os.path.join(WORK, "l8b-fp8")
    t0 = time.time()
    p = run([QS, "init-model", bf16, "--shape", "llama-3.1-8b", "--seed", "1"])
    if p.returncode:
        return record("llama-8b init-model", False, p.stderr[-300:])
    t1 = time.time()
    p = run([QS, "quantize", bf16, fp8, "--scheme", "fp8-dynamic"])
    if p.returncode:
        return record("llama-8b quantize", False, p.stderr[-300:])
    t2 = time.time()
    print(f"init-model {t1 - t0:.0f} s, quantize {t2 - t1:.0f} s", flush=True)
    a = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    for _ in range(3):
        b.copy_(a)
    torch.cuda.synchronize()
    ts = []
    for _ in range(10):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        b.copy_(a)
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e))
    copy_bw = 2 * (1 << 30) / (sorted(ts)[5] * 1e-3)
    del a, b
    torch.cuda.empty_cache()
    prompt = list(range(1000, 1032))
    n_new = 128
    figures = {"copy_bandwidth_GBps": copy_bw / 1e9}
    for backend in ("cublaslt", "emulation"):
        p = run([QS, "generate", fp8, "--prompt-ids", ",".join(map(str, prompt)), "--max-tokens", str(n_new),
                 "--temperature", "0", "--ignore-eos", "--device", "cuda", "--linear-backend", backend])
        m = re.search(r"generated (\d+) tokens in ([0-9.]+) s \(([0-9.]+) tokens/s\)", p.stderr)
        if not m:
            record(f"llama-8b fp8 {backend}", False, p.stderr[-400:])
            continue
        figures[f"qserve_fp8_{backend}_tok_s"] = float(m.group(3))
        record(f"llama-8b fp8 {backend}", True, f"{m.group(3)} tok/s")
    # bytes per decode step: FP8 linear weights + BF16 lm_head, norms, one embedding row, the KV cache
    cfg = json.load(open(os.path.join(bf16, "config.json")))
    h, L, inter, v = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["intermediate_size"], cfg["vocab_size"]
    kvh, hd = cfg["num_key_value_heads"], cfg.get("head_dim") or h // cfg["num_attention_heads"]
    linear = L * (h * (h + 2 * kvh * hd) + h * h + 3 * h * inter)
    kv = L * 2 * kvh * hd * 2 * (len(prompt) + n_new / 2)
    per_token = linear + 2 * v * h + kv
    figures["bytes_per_token_GB"] = per_token / 1e9
    figures["roofline_tok_s"] = copy_bw / per_token
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(bf16, dtype=torch.bfloat16).cuda().eval()
    ids = torch.tensor([prompt], device="cuda")
    with torch.no_grad():
        model.generate(ids, max_new_tokens=8, do_sample=False, min_new_tokens=8)
        torch.cuda.synchronize()
        t = time.time()
        model.generate(ids, max_new_tokens=n_new, do_sample=False, min_new_tokens=n_new)
        torch.cuda.synchronize()
        figures["hf_transformers_bf16_tok_s"] = n_new / (time.time() - t)
    json.dump(figures, open(os.path.join(OUT, "llama8b.json"), "w"), indent=1)
    print(json.dumps(figures, indent=1), flush=True)


def main():
    os.makedirs(OUT, exist_ok=True)
    os.makedirs(WORK, exist_ok=True)
    only = os.environ.get("E2E_ONLY", "stories,hf,server,llama8b").split(",")
    for name, fn in (("stories", stories), ("hf", hf_goldens), ("server", server), ("llama8b", llama8b)):
        if name in only:
            try:
                fn()
            except Exception as e:  # noqa: BLE001
                record(name, False, f"{type(e).__name__}: {e}")
    passed = sum(1 for r in results if r[1])
    print(f"e2e: {passed} passed, {len(results) - passed} failed")


if __name__ == "__main__":
    main()
