#!/usr/bin/env python3
"""soak.py — the soak benchmark (not part of CI): starts qserve on a model, runs CLIENTS concurrent
mixed clients for MINUTES (completions, streamed completions, chat, streams cancelled after their
first chunk, invalid requests), and every INTERVAL seconds prints one row: the server's RSS, open
files and threads, the requests finished in the interval, their p50/p99 latency and any failures
(an unexpected status, a stream without [DONE], a connection error). Exits 1 if any request failed
or the server died. The one-hour run of docs/api.md:

  scripts/soak.py --bin build/qserve --model /path/to/model --minutes 60 --clients 32

Short runs (--minutes 1 --interval 10) check the harness itself.
"""
import argparse
import http.client
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--bin", default="build/qserve")
ap.add_argument("--model", required=True)
ap.add_argument("--minutes", type=float, default=60)
ap.add_argument("--clients", type=int, default=32)
ap.add_argument("--interval", type=float, default=60, help="seconds between samples")
ap.add_argument("--max-tokens", type=int, default=64)
ap.add_argument("--seed", type=int, default=0)
ap.add_argument("server_args", nargs="*", help="extra serve flags (after --)")
a = ap.parse_args()

log = tempfile.NamedTemporaryFile(prefix="soak-server-", suffix=".log", delete=False)
srv = subprocess.Popen([a.bin, "serve", a.model, "--host", "127.0.0.1", "--port", "0",
                        "--served-model-name", "soak"] + a.server_args, stdout=log, stderr=subprocess.STDOUT)
port = None
for _ in range(600):
    text = open(log.name, errors="replace").read()
    m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", text)
    if m:
        port = int(m.group(1))
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/health")
            if c.getresponse().status == 200:
                break
        except OSError:
            pass
    if srv.poll() is not None:
        sys.exit(f"soak: the server exited ({srv.returncode}); log: {log.name}")
    time.sleep(0.1)
else:
    srv.kill()
    sys.exit(f"soak: the server did not get ready; log: {log.name}")

HDR = {"Content-Type": "application/json"}
lock = threading.Lock()
lat, fails, done = [], [], {"n": 0}
stop = threading.Event()


def request(method, path, body=None, timeout=300):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.request(method, path, json.dumps(body) if isinstance(body, dict) else body, HDR)
    return c, c.getresponse()


def probe_chat():
    c, r = request("POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1})
    r.read()
    c.close()
    return r.status == 200


has_chat = probe_chat()
PROMPTS = ["Once upon a time", "The little dog", "Lily wanted to", "One day, a boy named Tom"]


def one(rng):
    kind = rng.choices(["complete", "stream", "chat", "cancel", "invalid"], [35, 25, 20, 10, 10])[0]
    prompt = rng.choice(PROMPTS)
    mt = rng.randint(1, a.max_tokens)
    t0 = time.monotonic()
    if kind == "invalid":
        body, want = rng.choice([("{\"prompt\":", 400), ({"prompt": prompt, "temperature": 9}, 400),
                                 ({"prompt": prompt, "logit_bias": {"999999999": 1}}, 400),
                                 ({"prompt": prompt, "n": 100000}, 400)])
        c, r = request("POST", "/v1/completions", body)
        r.read()
        c.close()
        return kind, r.status == want, f"invalid request answered {r.status}", t0
    if kind == "chat" and has_chat:
        c, r = request("POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": prompt}],
                                                        "max_tokens": mt, "stream": rng.random() < 0.5})
        data = r.read()
        c.close()
        return kind, r.status == 200 and (b"[DONE]" in data or data.startswith(b"{")), f"chat {r.status}", t0
    stream = kind in ("stream", "cancel")
    c, r = request("POST", "/v1/completions", {"prompt": prompt, "max_tokens": mt, "stream": stream,
                                               "temperature": rng.choice([0, 0.7, 1.0])})
    if r.status != 200:
        r.read()
        c.close()
        return kind, False, f"{kind} {r.status}", t0
    if kind == "cancel":
        r.readline()  # the first chunk line, then hang up
        c.close()
        return kind, True, "", t0
    data = r.read()
    c.close()
    good = data.rstrip().endswith(b"data: [DONE]") if stream else b'"choices"' in data
    return kind, good, f"{kind}: {data[-120:]!r}", t0


def client(i):
    rng = random.Random(a.seed * 1000 + i)
    while not stop.is_set():
        try:
            kind, good, why, t0 = one(rng)
        except Exception as e:  # a reset or a timeout is a failure too
            kind, good, why, t0 = "error", False, f"{type(e).__name__}: {e}", time.monotonic()
        with lock:
            done["n"] += 1
            if kind != "cancel":
                lat.append(time.monotonic() - t0)
            if not good:
                fails.append(why)


def proc_sample(pid):
    status = open(f"/proc/{pid}/status").read()
    rss = int(re.search(r"VmRSS:\s+(\d+)", status).group(1))
    threads = int(re.search(r"Threads:\s+(\d+)", status).group(1))
    return rss, len(os.listdir(f"/proc/{pid}/fd")), threads


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else 0.0


threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(a.clients)]
for t in threads:
    t.start()
print(f"# soak: {a.clients} clients for {a.minutes} min on {a.model} (chat {'on' if has_chat else 'off: no template'}); "
      f"server log {log.name}")
print(f"{'min':>6} {'RSS MB':>8} {'files':>6} {'threads':>7} {'requests':>8} {'p50 ms':>7} {'p99 ms':>7} {'failed':>6}")
end = time.monotonic() + a.minutes * 60
total_fail, start = 0, time.monotonic()
while time.monotonic() < end and srv.poll() is None:
    time.sleep(min(a.interval, max(0.0, end - time.monotonic())))
    with lock:
        n, ls, fs = done["n"], lat[:], fails[:]
        done["n"], lat[:], fails[:] = 0, [], []
    if srv.poll() is not None:
        break
    rss, files, nthreads = proc_sample(srv.pid)
    total_fail += len(fs)
    print(f"{(time.monotonic() - start) / 60:6.1f} {rss / 1024:8.1f} {files:6d} {nthreads:7d} {n:8d} "
          f"{pct(ls, 0.5) * 1000:7.0f} {pct(ls, 0.99) * 1000:7.0f} {len(fs):6d}", flush=True)
    for why in fs[:3]:
        print(f"#   failed: {why}")
stop.set()
for t in threads:
    t.join(timeout=30)
died = srv.poll() is not None
if not died:
    srv.terminate()
    srv.wait(timeout=60)
print(f"# server {'died' if died else 'exited ' + str(srv.returncode)}; {total_fail} failed requests")
sys.exit(1 if died or total_fail or srv.returncode != 0 else 0)
