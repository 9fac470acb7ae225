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
import contextlib
import json
import shutil
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
def work_dir():
    """/dev/shm when it can hold the 8B checkpoints (writing them is much of the e2e time)."""
    try:
        st = os.statvfs("/dev/shm")
        if st.f_bavail * st.f_frsize > 48 << 30:
            return "/dev/shm/qserve-e2e"
    except OSError:
        pass
    return "/tmp/qserve-e2e"


WORK = work_dir()
# E2E_GPU_DEVICE=cpu runs the script's own logic on a machine without a GPU (a self-check).
GPU = os.environ.get("E2E_GPU_DEVICE", "cuda")
results = []
T_START = float(os.environ.get("E2E_T0") or time.time())  # gpu-check.sh start: deadlines count from it


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)


def record(name, ok, detail=""):
    results.append((name, ok, detail))
    print(f"{'ok' if ok else 'not ok'} {name}{': ' + detail if detail else ''}", flush=True)


def generate(model, prompt_ids, n, device, backend=None, extra=(), logprobs=None):
    """Greedy tokens (and, with logprobs=N, each step's top-N [(id, logprob)]) or (None, error)."""
    args = [QS, "generate", model, "--prompt-ids", ",".join(map(str, prompt_ids)), "--max-tokens", str(n),
            "--temperature", "0", "--ignore-eos", "--json", "--device", device, *extra]
    if backend:
        args += ["--linear-backend", backend, "--moe-backend", backend]
    if logprobs:
        args += ["--logprobs", str(logprobs)]
    p = run(args)
    if p.returncode != 0:
        return None, p.stderr.strip().splitlines()[-3:]
    out = json.loads(p.stdout)
    if logprobs:
        tops = [[(t["token_id"], t["logprob"]) for t in lp["top"]] for lp in out["logprobs"]]
        return out["token_ids"], tops
    return out["token_ids"], p.stderr


def common_prefix(a, b):
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def clear_prefix(margins, tau):
    """Steps before the first whose top-1/top-2 margin is below tau: greedy decoding of two
    correct implementations with different rounding must agree on these, and may part after."""
    for i, m in enumerate(margins):
        if m < tau:
            return i
    return len(margins)


def log_softmax(v):
    import math

    mx = max(v)
    lse = mx + math.log(sum(math.exp(x - mx) for x in v))
    return [x - lse for x in v]


def hf_goldens():
    """The transformers goldens (tests/data/hf-goldens): the first step's top-20 log-probs on the
    GPU against transformers' logits (within tol), and greedy tokens equal to transformers' up
    to the first step where transformers' own top-1/top-2 margin is below 0.05; with auto,
    emulation and (except for weight-only checkpoints, which it cannot run) cublaslt."""
    base = os.path.join(ROOT, "tests", "data", "hf-goldens")
    tok_src = os.path.join(WORK, "stories-f32")  # same 512-token vocabulary; generate wants a tokenizer
    for arch in sorted(os.listdir(base)):
        model = os.path.join(WORK, "hf", arch)
        shutil.copytree(os.path.join(base, arch), model, dirs_exist_ok=True)
        for f in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(os.path.join(tok_src, f), model)
        text = json.dumps(json.load(open(os.path.join(model, "config.json"))).get("quantization_config") or {})
        act_quant = '"input_activations": {' in text  # W8A8 / W4A4: activations rounded to 8 or 4 bits
        tol = 0.15 if act_quant else 0.05  # log-prob units; BF16 activations on the GPU
        golden = json.load(open(os.path.join(model, "golden.json")))["prompts"][0]
        want = log_softmax(golden["last_logits"])
        need = clear_prefix([a - b for a, b in zip(golden["top1"], golden["top2"])], 0.05)
        weight_only = text != "{}" and not act_quant  # W8A16 / W4A16: cublaslt has no GEMM for them
        for backend in ("auto", "emulation") + (() if weight_only else ("cublaslt",)):
            toks, tops = generate(model, golden["ids"], 24, GPU, backend if GPU == "cuda" else None, logprobs=20)
            if toks is None:
                record(f"hf:{arch} cuda/{backend}", False, " ".join(tops))
                continue
            err = max(abs(lp - want[i]) for i, lp in tops[0])
            same = common_prefix(golden["greedy"], toks)
            record(f"hf:{arch} cuda/{backend}", err <= tol and same >= need,
                   f"first-step top-20 log-probs within {err:.3f} of transformers (tol {tol}); "
                   f"{same}/24 greedy tokens equal, {need} required by the margins")


def stories():
    """stories260K F32 / BF16 / FP8 / NVFP4 copies: GPU greedy tokens equal the CPU's up to the
    first step where the CPU's top-1/top-2 log-prob margin is below 0.05 (0.15 with quantized
    activations), and at least 40 of 200."""
    data = os.path.join(DEV, "data")
    if not os.path.exists(os.path.join(data, "stories260K.bin")):
        record("stories260K", False, "data not bundled")
        return
    f32 = os.path.join(WORK, "stories-f32")
    run([os.path.join(DEV, "convert-llama2c"), f"{data}/stories260K.bin", f"{data}/tok512.bin", f32])
    bf16 = os.path.join(WORK, "stories-bf16")
    run([os.path.join(DEV, "convert-llama2c"), f"{data}/stories260K.bin", f"{data}/tok512.bin", bf16, "--dtype", "bf16"])
    copies = [("f32", f32, ["auto", "cublaslt", "emulation"], 0.05), ("bf16", bf16, ["auto", "cublaslt", "emulation"], 0.05)]
    # tau: W8A8 rounds activations to FP8 from BF16 on the GPU and from F32 on the CPU, so a step
    # whose CPU margin is under 0.3 may flip (seen: step 20, margin 0.256, with both GPU kernels).
    for name, scheme, tau in (("fp8", "fp8-dynamic", 0.3), ("fp8-static", "fp8-static", 0.3),
                              ("nvfp4a16", "nvfp4-w4a16", 0.05)):
        path = os.path.join(WORK, f"stories-{name}")
        p = run([QS, "quantize", bf16, path, "--scheme", scheme])
        if p.returncode:
            record(f"stories260K-{name} quantize", False, p.stderr[-300:])
            continue
        w8a8 = name.startswith("fp8")  # cublaslt FP8 (its 344x64 gate_up padded to multiples of 16)
        copies.append((name, path, ["auto", "emulation", "marlin"] + (["cublaslt"] if w8a8 else []), tau))
    golden = [int(x) for x in open(f"{data}/golden_greedy_200_ids.txt").read().split()]
    for name, model, backends, tau in copies:
        cpu, tops = generate(model, [1], 200, "cpu", logprobs=2)
        if cpu is None:
            record(f"stories260K-{name} cpu", False, " ".join(tops))
            continue
        need = max(1, clear_prefix([t[0][1] - t[1][1] for t in tops], tau))
        for backend in backends:
            gpu, err = generate(model, [1], 200, GPU, backend if GPU == "cuda" else None)
            if gpu is None:
                record(f"stories260K-{name} cuda/{backend}", False, " ".join(err))
                continue
            same = common_prefix(cpu, gpu)
            record(f"stories260K-{name} cuda/{backend}", same >= need,
                   f"{same}/200 equal to CPU ({need} required by the CPU's margins, tau {tau}), "
                   f"{common_prefix(golden, gpu)}/200 equal to the golden")
    # cublaslt has no weight-only NVFP4 GEMM: forcing it must stop start-up with the reason
    # (BACKENDS.md rule 3), not run something else.
    if GPU == "cuda":
        for name, backend in (("nvfp4a16", "cublaslt"),):
            gpu, err = generate(os.path.join(WORK, f"stories-{name}"), [1], 4, GPU, backend)
            text = " ".join(err) if gpu is None else ""
            refused = gpu is None and ("cannot implement" in text or "does not support" in text)
            record(f"stories260K-{name} --linear-backend {backend} refused", refused,
                   text[-160:])


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


@contextlib.contextmanager
def qserve_server(model, log_path, args=(), env=None, wait_s=120):
    """A qserve server on a free local port for the `with` block: yields its base URL once
    /health answers; raises with the log's tail if it exits or is not ready in wait_s."""
    port = free_port()
    log = open(log_path, "w")
    p = subprocess.Popen([QS, model, "--port", str(port), "--host", "127.0.0.1", "--device", GPU, *args],
                         stdout=log, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        t_end = time.time() + wait_s
        while True:
            if p.poll() is not None:
                raise RuntimeError("server exited: " + open(log_path).read()[-400:])
            try:
                urllib.request.urlopen(base + "/health", timeout=2)
                break
            except Exception:
                if time.time() > t_end:
                    raise RuntimeError("server not ready in time: " + open(log_path).read()[-400:])
                time.sleep(0.5)
        yield base
    finally:
        p.terminate()
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
        log.close()


def node_with_openai():
    """The node binary and the `openai` npm client bundled by scripts/device-bundle.sh WITH_NODE=1,
    unpacked here (node into WORK, the client's node_modules into tests/node); None when absent."""
    bundled = os.path.join(DEV, "node", "node.xz")
    if not os.path.exists(bundled):
        return None
    import lzma
    import tarfile

    node = os.path.join(WORK, "node")
    if not os.path.exists(node):
        with lzma.open(bundled) as src, open(node, "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.chmod(node, 0o755)
    modules = os.path.join(ROOT, "tests", "node")
    if not os.path.isdir(os.path.join(modules, "node_modules", "openai")):
        with tarfile.open(os.path.join(DEV, "node", "openai-node_modules.tar.xz")) as t:
            t.extractall(modules, filter="data")
    return node


def server():
    """The server on the GPU: completions, chat and streaming by hand, then the official `openai`
    npm client's checks (tests/node/openai_client.mjs) when node is bundled."""
    model = os.path.join(WORK, "stories-bf16")
    if not os.path.exists(os.path.join(model, "config.json")):
        data = os.path.join(DEV, "data")
        run([os.path.join(DEV, "convert-llama2c"), f"{data}/stories260K.bin", f"{data}/tok512.bin", model, "--dtype",
             "bf16"])
    node = node_with_openai()
    try:
        with qserve_server(model, os.path.join(OUT, "server.log"), ("--served-model-name", "stories")) as base:
            if node:
                r = run([node, os.path.join(ROOT, "tests", "node", "openai_client.mjs"), base, "stories"], timeout=180)
                lines = r.stdout.splitlines()
                bad = [ln for ln in lines if ln.startswith("not ok")]
                record("openai npm client against the GPU server", r.returncode == 0 and not bad and len(lines) > 0,
                       f"{len(lines) - len(bad)}/{len(lines)} checks ok" + (f"; {bad[:3]}" if bad else "") +
                       (f"; rc {r.returncode} {r.stderr[-300:]}" if r.returncode else ""))
            else:
                record("openai npm client against the GPU server", False,
                       "not run: node not bundled (scripts/device-bundle.sh WITH_NODE=1)")
            r = json.loads(post(base + "/v1/completions", {"model": "stories", "prompt": "Once upon a time",
                                                           "max_tokens": 32, "temperature": 0}))
            record("server completions on GPU", bool(r["choices"][0]["text"]), repr(r["choices"][0]["text"][:80]))
            r = json.loads(post(base + "/v1/chat/completions", {"model": "stories", "max_tokens": 16,
                                                                "messages": [{"role": "user", "content": "Hi"}]}))
            record("server chat on GPU", r["choices"][0]["finish_reason"] in ("stop", "length"))
            body = post(base + "/v1/completions", {"model": "stories", "prompt": "Lily", "max_tokens": 16,
                                                   "stream": True})
            record("server streaming on GPU", body.rstrip().endswith("data: [DONE]"))
    except Exception as e:  # noqa: BLE001 — report any failure as a failed check
        record("server on GPU", False, str(e))


def graphs():
    """QSERVE_CUDA_GRAPHS=1 (decode steps captured once per batch-size bucket, then replayed) must
    change no output. stories260K F32 / BF16 / FP8: `qserve generate` gives the same 200 greedy
    tokens with and without it, per backend, and on the GPU its log shows graphs captured and no
    capture refused. The server (BF16 copy, --max-num-seqs 8) gives the same temperature-0 texts
    with and without it for two requests of 8 prompts each, submitted as one group so the batch
    composition is the same in both runs: one stops each sequence at its first "." (the batch
    shrinks 8, 7, ... 1, so padded buckets run), one runs all 8 for 48 tokens. Then bench_serve at
    concurrency 8 must complete on both servers; their output tok/s are printed. On CPU
    (E2E_GPU_DEVICE=cpu) the variable is ignored and the outputs are equal trivially."""
    data = os.path.join(DEV, "data")
    if not os.path.exists(os.path.join(data, "stories260K.bin")):
        return record("graphs", False, "data not bundled")
    f32, bf16, fp8 = (os.path.join(WORK, f"stories-{n}") for n in ("f32", "bf16", "fp8"))
    conv = os.path.join(DEV, "convert-llama2c")
    if not os.path.exists(os.path.join(f32, "config.json")):
        run([conv, f"{data}/stories260K.bin", f"{data}/tok512.bin", f32])
    if not os.path.exists(os.path.join(bf16, "config.json")):
        run([conv, f"{data}/stories260K.bin", f"{data}/tok512.bin", bf16, "--dtype", "bf16"])
    if not os.path.exists(os.path.join(fp8, "config.json")):
        run([QS, "quantize", bf16, fp8, "--scheme", "fp8-dynamic"])
    on_gpu = GPU == "cuda"

    def env_graphs(on):
        env = dict(os.environ)
        env["QSERVE_CUDA_GRAPHS"] = "1" if on else "0"
        return env

    def greedy(model, backend, on):
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(env_graphs(on))  # generate() runs its child with this environment
        try:
            return generate(model, [1], 200, GPU, backend if on_gpu else None)
        finally:
            os.environ.clear()
            os.environ.update(saved)

    def used_graphs(log):
        """On the GPU the log must show captures and no refused one; on CPU, the variable ignored."""
        if on_gpu:
            return "decode graph captured" in log and "could not be captured" not in log
        return "QSERVE_CUDA_GRAPHS=1 ignored" in log

    for name, model, backends in (("f32", f32, ("auto", "emulation")), ("bf16", bf16, ("auto", "cublaslt")),
                                  ("fp8", fp8, ("auto", "marlin"))):
        for backend in backends:
            eager, err1 = greedy(model, backend, False)
            graph, err2 = greedy(model, backend, True)
            label = f"graphs stories260K-{name} {backend}"
            if eager is None or graph is None:
                record(label, False, " ".join(err1 if eager is None else err2))
                continue
            lines = [ln for ln in err2.splitlines() if "graph" in ln]
            record(label, eager == graph and used_graphs(err2),
                   f"{common_prefix(eager, graph)}/200 greedy tokens equal with and without graphs; "
                   f"{' | '.join(ln.split(' ', 3)[-1] for ln in lines[:3])}")

    prompts = ["Once upon a time", "Lily had a", "The little dog", "One day, Tom", "The sun was", "Sam and",
               "There was a big", "A girl named"]
    bodies = ({"prompt": prompts, "max_tokens": 64, "temperature": 0, "stop": ["."]},
              {"prompt": prompts, "max_tokens": 48, "temperature": 0, "ignore_eos": True})

    def serve(on):
        log_path = os.path.join(OUT, f"server-graphs-{'on' if on else 'off'}.log")
        with qserve_server(bf16, log_path, ("--served-model-name", "stories", "--max-num-seqs", "8"),
                           env=env_graphs(on), wait_s=120) as base:
            texts = []
            for body in bodies:
                r = json.loads(post(base + "/v1/completions", dict(body, model="stories")))
                texts.append([c["text"] for c in sorted(r["choices"], key=lambda c: c["index"])])
            b = run([os.path.join(DEV, "bench_serve"), "--url", base, "--model", "stories", "--num-prompts", "32",
                     "--concurrency", "8", "--random-input-len", "16", "--random-output-len", "64",
                     "--vocab-size", "512"], timeout=180)
            tput = re.search(r"Output token throughput \(tok/s\):\s+([0-9.]+)", b.stdout)
            failed = re.search(r"Failed requests:\s+([0-9]+)", b.stdout)
            bench_ok = b.returncode == 0 and tput and failed and int(failed.group(1)) == 0
            return texts, (float(tput.group(1)) if bench_ok else None), b.stdout[-300:] + b.stderr[-300:]

    try:
        eager, eager_tput, eager_bench = serve(False)
        graph, graph_tput, graph_bench = serve(True)
    except Exception as e:  # noqa: BLE001 — report any failure as a failed check
        return record("graphs server", False, f"{type(e).__name__}: {e}")
    log = open(os.path.join(OUT, "server-graphs-on.log")).read()
    for i, what in enumerate(("8 prompts stopping at their first '.'", "8 prompts, 48 tokens each")):
        same = sum(a == b for a, b in zip(eager[i], graph[i]))
        detail = f"{same}/{len(eager[i])} texts equal with and without graphs"
        if same < len(eager[i]):
            k = next(j for j in range(len(eager[i])) if eager[i][j] != graph[i][j])
            detail += f"; first difference in prompt {k}: {eager[i][k][:60]!r} vs {graph[i][k][:60]!r}"
        record(f"graphs server batch: {what}", same == len(eager[i]) and len(eager[i]) == 8 and used_graphs(log),
               detail)
    record("graphs server bench_serve concurrency 8", eager_tput is not None and graph_tput is not None,
           f"output tok/s {eager_tput} eager, {graph_tput} with graphs" if eager_tput and graph_tput else
           f"eager: {eager_bench} graphs: {graph_bench}")


def bytes_per_token(model_dir, weight_bits, n_ctx):
    """Bytes one batch-1 decode step reads: the linear weights (and their scales), the BF16 lm_head,
    one embedding row, the KV cache at the mean context length."""
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    h, L, inter, v = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["intermediate_size"], cfg["vocab_size"]
    kvh, hd = cfg["num_key_value_heads"], cfg.get("head_dim") or h // cfg["num_attention_heads"]
    params = L * (h * (h + 2 * kvh * hd) + h * h + 3 * h * inter)
    linear = params * weight_bits / 8 + (params / 16 if weight_bits == 4 else 0)  # NVFP4: one E4M3 per 16
    kv = L * 2 * kvh * hd * 2 * n_ctx
    return linear + 2 * v * h + 2 * h + kv


def serve_decode(model, backend, seconds_left):
    """Starts the server with --linear-backend BACKEND (a "+graphs" suffix adds
    QSERVE_CUDA_GRAPHS=1, "+eager" sets it to 0; decode graphs are on by default; "+natural" sets
    QSERVE_ACT_ORDER=0: activations in natural order only), then bench_serve at each
    concurrency of E2E_BATCHES (default 1,16), E2E_PROMPTS_PER_SLOT prompts per concurrent slot
    (default 1; more of them average the TPOT over more steady decode steps): returns
    ({concurrency: decode tok/s}, the kernel selection lines) from the mean TPOT."""
    log_path = os.path.join(WORK, f"server-{os.path.basename(model)}-{backend}.log")
    env = dict(os.environ)
    backend, _, mode = backend.partition("+")
    if mode == "graphs":
        env["QSERVE_CUDA_GRAPHS"] = "1"
    elif mode == "eager":
        env["QSERVE_CUDA_GRAPHS"] = "0"
    elif mode == "natural":
        env["QSERVE_ACT_ORDER"] = "0"
    batches = [int(b) for b in os.environ.get("E2E_BATCHES", "1,16").split(",")]
    args = ("--linear-backend", backend, "--served-model-name", "m", "--max-num-seqs", str(max(batches)))
    with qserve_server(model, log_path, args, env=env, wait_s=min(180, seconds_left)) as base:
        vocab = json.load(open(os.path.join(model, "config.json")))["vocab_size"]
        out = {}
        per_slot = int(os.environ.get("E2E_PROMPTS_PER_SLOT", "1"))
        for conc, n in ((b, max(2, b * per_slot)) for b in batches):
            r = run([os.path.join(DEV, "bench_serve"), "--url", base, "--model", "m", "--num-prompts", str(n),
                     "--concurrency", str(conc), "--random-input-len", "32", "--random-output-len", "64",
                     "--vocab-size", str(vocab)], timeout=120)
            m = re.search(r"Mean TPOT \(ms\):\s+([0-9.]+)", r.stdout)
            if not m or float(m.group(1)) <= 0:
                raise RuntimeError(f"bench_serve concurrency {conc}: {r.stdout[-300:]} {r.stderr[-300:]} "
                                   f"server: {open(log_path).read()[-300:]}")
            out[conc] = conc * 1000.0 / float(m.group(1))
        sel = [ln.strip() for ln in open(log_path) if "kernel" in ln and ("linear" in ln or "select" in ln)]
        return out, sel[:4]


def hf_baseline(bf16, figures, deadline):
    """HF transformers (eager, BF16) batch-1 decode of the same random weights."""
    if time.time() > deadline - 60:
        return record("llama-8b hf transformers bf16", False, "not run: out of time")
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(bf16, dtype=torch.bfloat16).cuda().eval()
    ids = torch.tensor([list(range(1000, 1032))], device="cuda")
    n_new = 64
    with torch.no_grad():
        model.generate(ids, max_new_tokens=8, do_sample=False, min_new_tokens=8)
        torch.cuda.synchronize()
        t = time.time()
        model.generate(ids, max_new_tokens=n_new, do_sample=False, min_new_tokens=n_new)
        torch.cuda.synchronize()
        figures["hf_transformers_bf16_batch1_tok_s"] = n_new / (time.time() - t)
    record("llama-8b hf transformers bf16", True, f"{figures['hf_transformers_bf16_batch1_tok_s']:.1f} tok/s")
    del model
    torch.cuda.empty_cache()


def llama8b():
    """Random-init Llama-3.1-8B-shape checkpoints (BF16, FP8 per-channel W8A8, NVFP4 W4A16): decode
    tok/s at the E2E_BATCHES concurrencies (default batch 1 and 16) per linear backend beside the
    roofline, and HF transformers (BF16)."""
    deadline = T_START + float(os.environ.get("E2E_DEADLINE_S", "560"))
    bf16 = os.path.join(WORK, "l8b-bf16")
    ckpts = {"fp8": os.path.join(WORK, "l8b-fp8"), "nvfp4": os.path.join(WORK, "l8b-nvfp4")}
    t0 = time.time()
    p = run([QS, "init-model", bf16, "--shape", "llama-3.1-8b", "--seed", "1"])
    if p.returncode:
        return record("llama-8b init-model", False, p.stderr[-300:])
    print(f"init-model {time.time() - t0:.0f} s", flush=True)
    from bench_torch_kernels import copy_bandwidth  # the same ceiling the kernel tables use

    figures = {"copy_bandwidth_GBps": copy_bandwidth()}
    copy_bw = figures["copy_bandwidth_GBps"] * 1e9
    n_ctx = 32 + 32  # bench prompts of 32 tokens, 64 generated: the mean context
    # E2E_LLAMA="fp8:cublaslt,marlin nvfp4:marlin hf" picks checkpoints, backends and the
    # transformers baseline (default: all of them)
    want = os.environ.get("E2E_LLAMA", "fp8:cublaslt,marlin,emulation,auto nvfp4:marlin,emulation,auto hf").split()
    picks = dict(w.split(":", 1) for w in want if ":" in w)
    plan = [(name, scheme, bits, tuple(picks[name].split(","))) for name, scheme, bits in
            (("fp8", "fp8-dynamic", 8), ("nvfp4", "nvfp4-w4a16", 4)) if name in picks]
    if "hf" in want:
        hf_baseline(bf16, figures, deadline)
    for name, scheme, bits, backends in plan:
        if time.time() > deadline - 60:
            record(f"llama-8b {name}", False, "not run: out of time")
            continue
        t0 = time.time()
        p = run([QS, "quantize", bf16, ckpts[name], "--scheme", scheme])
        if p.returncode:
            record(f"llama-8b quantize {name}", False, p.stderr[-300:])
            continue
        print(f"quantize {name} {time.time() - t0:.0f} s", flush=True)
        per_token = bytes_per_token(bf16, bits, n_ctx)
        figures[f"{name}_bytes_per_token_GB"] = per_token / 1e9
        figures[f"{name}_roofline_tok_s"] = copy_bw / per_token
        for backend in backends:
            left = deadline - time.time()
            if left < 45:
                record(f"llama-8b {name} {backend}", False, "not run: out of time")
                continue
            try:
                rates, sel = serve_decode(ckpts[name], backend, left)
            except Exception as e:  # noqa: BLE001
                record(f"llama-8b {name} {backend}", False, str(e)[-400:])
                continue
            parts = []
            for conc, rate in rates.items():
                figures[f"{name}_{backend}_batch{conc}_tok_s"] = rate
                roof = f" ({rate / figures[f'{name}_roofline_tok_s'] * 100:.0f}% of roofline)" if conc == 1 else ""
                parts.append(f"batch-{conc} {rate:.1f} tok/s{roof}")
            record(f"llama-8b {name} {backend}", True, f"{', '.join(parts)}; {' | '.join(sel)}")
        shutil.rmtree(ckpts[name], ignore_errors=True)
    figures["bf16_roofline_tok_s"] = copy_bw / bytes_per_token(bf16, 16, n_ctx)
    json.dump(figures, open(os.path.join(OUT, "llama8b.json"), "w"), indent=1)
    print(json.dumps(figures, indent=1), flush=True)


def main():
    os.makedirs(OUT, exist_ok=True)
    os.makedirs(WORK, exist_ok=True)
    only = os.environ.get("E2E_ONLY", "stories,hf,server,graphs,llama8b").split(",")
    for name, fn in (("stories", stories), ("hf", hf_goldens), ("server", server), ("graphs", graphs),
                     ("llama8b", llama8b)):
        if name in only:
            try:
                fn()
            except Exception as e:  # noqa: BLE001
                record(name, False, f"{type(e).__name__}: {e}")
    passed = sum(1 for r in results if r[1])
    print(f"e2e: {passed} passed, {len(results) - passed} failed")


if __name__ == "__main__":
    main()
