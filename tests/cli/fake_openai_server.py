#!/usr/bin/env python3
"""fake_openai_server.py — a stand-in for `qserve MODEL_DIR [flags]` in qserve-eval's tests.

It accepts the command line qserve-eval gives a server (MODEL_DIR, server_args, --host, --port,
--seed), listens on 127.0.0.1 only, and answers /health, /v1/completions and /v1/chat/completions.
Everything it receives is recorded so the tests can check the harness byte for byte.

Environment (set through a config's `env:` mapping, which also tests that mapping):
  FAKE_RECORD_DIR   write argv.json, port, and requests.jsonl (one {"path","body","reply"} a line)
  FAKE_GSM8K_TEST   test.jsonl: the question of a prompt is looked up to reply with a known answer
  FAKE_EXIT_CODE    print a few log lines and exit with this code before listening
  FAKE_NEVER_READY  /health answers 503 forever
  FAKE_READY_AFTER  /health answers 503 for this many seconds, then 200
  FAKE_DIE_AFTER    exit with status 1 (a crash) when this many completions have been answered
  FAKE_IGNORE_TERM  ignore SIGTERM (only SIGKILL stops it)
Reply policy for question index i (its line in test.jsonl): i % 4 == 0 the right number written
with thousands separators, 1 the right number plus one, 2 no number at all, 3 an earlier number
and then the right one.
"""
import argparse
import json
import os
import re
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

START = time.monotonic()
LOCK = threading.Lock()


def label_of(answer):
    return int(answer.split("####")[-1].strip().replace(",", ""))


def load_questions(path):
    table = {}
    if path:
        with open(path, encoding="utf-8") as f:
            for i, line in enumerate(f):
                row = json.loads(line)
                table[row["question"]] = (i, label_of(row["answer"]))
    return table


def reply_for(prompt, questions):
    m = re.search(r"Question: (.*)\nAnswer:[^\n]*$", prompt, re.S)
    q = m.group(1) if m else ""
    last = q.split("Question: ")[-1]
    if last not in questions:
        return "unknown question"
    i, label = questions[last]
    kind = i % 4
    if kind == 0:
        return f" She pays ${label:,} in total.\n#### {label:,}"
    if kind == 1:
        return f" The answer is {label + 1}."
    if kind == 2:
        return " I do not know."
    return f" First 12 apples, then {label}."


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--seed", type=int, default=0)
    args, extra = ap.parse_known_args()
    record = os.environ.get("FAKE_RECORD_DIR")
    if record:
        with open(os.path.join(record, "argv.json"), "w") as f:
            json.dump(sys.argv[1:], f)
    code = os.environ.get("FAKE_EXIT_CODE")
    if code:
        print(f"fake server: loading {args.model}", flush=True)
        print("fake server: fatal: weights file is corrupt", file=sys.stderr, flush=True)
        sys.exit(int(code))
    if args.host != "127.0.0.1":
        print(f"fake server: refusing to listen on {args.host}", file=sys.stderr)
        sys.exit(3)
    if os.environ.get("FAKE_IGNORE_TERM"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    questions = load_questions(os.environ.get("FAKE_GSM8K_TEST"))
    never_ready = bool(os.environ.get("FAKE_NEVER_READY"))
    ready_after = float(os.environ.get("FAKE_READY_AFTER", "0"))
    die_after = int(os.environ.get("FAKE_DIE_AFTER", "0"))
    answered = [0]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *a):
            pass

        def send_json(self, status, obj):
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/health":
                ready = not never_ready and time.monotonic() - START >= ready_after
                self.send_json(200 if ready else 503, {} if ready else {"status": "loading"})
            else:
                self.send_json(404, {"error": {"message": "not found"}})

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            try:
                req = json.loads(body)
            except ValueError:
                self.send_json(400, {"error": {"message": "bad json"}})
                return
            if self.path == "/v1/completions":
                text = reply_for(req["prompt"], questions)
                choice = {"index": 0, "text": text, "finish_reason": "stop"}
            elif self.path == "/v1/chat/completions":
                text = reply_for(req["messages"][0]["content"], questions)
                choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            else:
                self.send_json(404, {"error": {"message": "not found"}})
                return
            if record:
                with LOCK, open(os.path.join(record, "requests.jsonl"), "a") as f:
                    f.write(json.dumps({"path": self.path, "body": body.decode(), "reply": text}) + "\n")
            self.send_json(200, {"id": "x", "object": "text_completion", "choices": [choice],
                                 "usage": {"prompt_tokens": 1, "completion_tokens": len(text.split()),
                                           "total_tokens": 1 + len(text.split())}})
            with LOCK:
                answered[0] += 1
                if die_after and answered[0] >= die_after:
                    print(f"fake server: dying after {answered[0]} requests", flush=True)
                    os._exit(1)

    class Server(ThreadingHTTPServer):
        request_queue_size = 256  # the harness opens many connections at once

    server = Server(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    if record:
        with open(os.path.join(record, "port"), "w") as f:
            f.write(str(server.server_address[1]))
    print(f"fake server: listening on 127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
