#!/usr/bin/env python3
"""conn_flood.py — the connection attacks of test_server_dos.sh against a running qserve, with a
normal client timed throughout. Prints TAP-ish `ok NAME` / `not ok NAME: why` lines.

  idle crowd   IDLE connections spread over loopback source addresses 127.0.1.x (below the
               per-client cap each), never sending a byte: the server must hold them all (its
               open descriptors pass IDLE: no select()/FD_SETSIZE ceiling, no thread each) and
               close them once --client-timeout passes.
  one address  ONE_ADDR connections from 127.0.2.1: at most the per-client cap stay open.
  slowloris    SLOW connections from 127.0.3.x trickling a header byte every 0.3 s: closed by the
               request deadline although they are never idle.
  normal       a client on 127.0.0.1 asks /health and one completion every 0.1 s throughout; every
               answer must come within a second.
Usage: conn_flood.py PORT SERVER_PID CLIENT_TIMEOUT PER_CLIENT IDLE ONE_ADDR SLOW
"""
import http.client
import json
import os
import resource
import select
import socket
import sys
import threading
import time

port, pid, client_timeout, per_client, n_idle, n_one, n_slow = (int(a) for a in sys.argv[1:8])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def report(name, good, why=""):
    print(("ok " if good else "not ok ") + name + ("" if good else ": " + why), flush=True)


def connect_from(src):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((src, 0))
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    s.setblocking(False)
    return s


def closed_by_peer(sockets):
    """How many of these sockets the server has closed (EOF or reset)."""
    p = select.poll()
    for s in sockets:
        p.register(s, select.POLLIN | select.POLLHUP | select.POLLERR)
    gone = 0
    for fd, ev in p.poll(0):
        if ev & (select.POLLHUP | select.POLLERR):
            gone += 1
            continue
        try:
            s = socket.socket(fileno=os.dup(fd))
            try:
                if s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b"":
                    gone += 1
            finally:
                s.close()
        except (ConnectionResetError, BlockingIOError, OSError):
            gone += 1
    return gone


def server_fds():
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


# --- the normal client, timed throughout ---
latencies, failures = [], []
stop = threading.Event()


def normal_client():
    body = json.dumps({"prompt": "Once upon a time", "max_tokens": 4, "temperature": 0})
    i = 0
    while not stop.is_set():
        t0 = time.monotonic()
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=1.0)
            if i % 2:
                c.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
            else:
                c.request("GET", "/health")
            r = c.getresponse()
            r.read()
            c.close()
            if r.status != 200:
                failures.append(f"status {r.status}")
        except Exception as e:  # timeouts, resets: the lock-out this test is about
            failures.append(f"{type(e).__name__}: {e}")
        latencies.append(time.monotonic() - t0)
        i += 1
        time.sleep(0.1)


client = threading.Thread(target=normal_client, daemon=True)
client.start()

# --- idle crowd from many addresses ---
t0 = time.monotonic()
idle, errors = [], 0
per_addr = max(1, min(per_client - 1, 50))
for k in range(n_idle):
    try:
        idle.append(connect_from(f"127.0.1.{1 + k // per_addr}"))
    except OSError:
        errors += 1
opened = time.monotonic() - t0
time.sleep(0.5)
fds = server_fds()
report("idle_crowd_connected", errors == 0, f"{errors} of {n_idle} connects failed")
report("idle_crowd_held_by_server", fds >= n_idle and closed_by_peer(idle) == 0,
       f"server has {fds} descriptors open for {n_idle} idle connections, {closed_by_peer(idle)} closed")

# --- one address over the per-client cap ---
one = []
for _ in range(n_one):
    try:
        one.append(connect_from("127.0.2.1"))
    except OSError:
        pass
time.sleep(0.5)
open_one = len(one) - closed_by_peer(one)
report("per_client_cap", open_one <= per_client, f"{open_one} connections from one address stay open (cap {per_client})")

# --- slowloris: a header byte every 0.3 s ---
slow = [connect_from(f"127.0.3.{1 + k // per_addr}") for k in range(n_slow)]
request = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 4096
sent, start = 0, time.monotonic()
slow_closed_at = None
while time.monotonic() - start < client_timeout + 4:
    for s in slow:
        try:
            s.send(request[sent:sent + 1])
        except OSError:
            pass
    sent += 1
    time.sleep(0.3)
    if closed_by_peer(slow) == len(slow):
        slow_closed_at = time.monotonic() - start
        break
report("slowloris_closed_by_deadline", slow_closed_at is not None,
       f"{len(slow) - closed_by_peer(slow)} of {len(slow)} trickling connections still open after "
       f"{client_timeout + 4} s")

# --- the idle crowd is gone once the deadline passed ---
deadline = time.monotonic() + client_timeout + 4
while time.monotonic() < deadline and closed_by_peer(idle) < len(idle):
    time.sleep(0.2)
report("idle_crowd_closed_by_deadline", closed_by_peer(idle) == len(idle),
       f"{len(idle) - closed_by_peer(idle)} of {len(idle)} idle connections still open")

stop.set()
client.join()
worst = max(latencies) if latencies else 99
report("normal_client_always_answered", not failures and len(latencies) >= 10 and worst < 1.0,
       f"{len(failures)} failures ({failures[:3]}), {len(latencies)} requests, slowest {worst:.2f} s")
print(f"# {n_idle} idle connections opened in {opened:.1f} s; normal client: {len(latencies)} requests, "
      f"slowest {worst * 1000:.0f} ms; server descriptors at peak {fds}", flush=True)
for s in idle + one + slow:
    s.close()
