#!/usr/bin/env python3
"""fake_hub_server.py — a stand-in for the Hugging Face hub in test_hub.sh, on 127.0.0.1 only.

It speaks the two endpoints a downloader uses, as the hub documents them:
  GET  /api/models/ORG/NAME[/revision/REV]  -> {"id", "sha", "siblings": [{"rfilename"}]}
  HEAD/GET /ORG/NAME/resolve/REV/FILE       -> X-Repo-Commit, ETag; for LFS files (safetensors and
       files of --lfs-min-size bytes or more) X-Linked-Etag (the sha256) and X-Linked-Size with a
       302 to /cdn/SHA256 on a second port (an absolute URL to another origin, as the hub's CDN
       redirect), which honours Range.
Errors carry X-Error-Code (RepoNotFound, RevisionNotFound, EntryNotFound, GatedRepo) as the hub's.
For the @huggingface/hub npm client (the peer in test_hub.sh) also GET /api/models/ORG/NAME/tree/REV
and POST /api/models/ORG/NAME/paths-info/REV, and Range: bytes=A-B on files.

--repo ORG/NAME[@REV]=DIR    serve DIR as that repo at REV (default main); the commit is a hash of
                             the files, so the same files give the same commit
--private ORG/NAME           401 RepoNotFound without "Authorization: Bearer <--token>"
--gated ORG/NAME             model info open, files 401 GatedRepo without the token
--cut-once-after N           the first CDN answer longer than N bytes stops after N bytes
--corrupt-once               the first CDN answer has one byte flipped
--huge-size                  X-Linked-Size claims 10^15 bytes (a disk that cannot hold it)
--no-linked-size             no X-Linked-Size (the size of an LFS file is unknown until downloaded)
--log FILE                   one line per request: METHOD PATH range=... auth=yes|no
--port-file FILE             where the chosen port is written; --max-seconds S ends the server
"""
import argparse
import hashlib
import json
import os
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def git_blob_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Repo:
    def __init__(self):
        self.revisions = {}  # rev -> (commit, {name: bytes})


def load_dir(path):
    files = {}
    for root, _, names in os.walk(path):
        for n in names:
            full = os.path.join(root, n)
            rel = os.path.relpath(full, path).replace(os.sep, "/")
            with open(full, "rb") as f:
                files[rel] = f.read()
    listing = "".join(f"{n}:{hashlib.sha256(d).hexdigest()}\n" for n, d in sorted(files.items()))
    return hashlib.sha1(listing.encode()).hexdigest(), files


class Hub:
    def __init__(self, args):
        self.args = args
        self.repos = {}
        self.blobs = {}  # sha256 -> bytes
        self.cut_done, self.corrupt_done = set(), set()
        self.lock = threading.Lock()
        for spec in args.repo:
            name, _, folder = spec.partition("=")
            repo_id, _, rev = name.partition("@")
            commit, files = load_dir(folder)
            self.repos.setdefault(repo_id, Repo()).revisions[rev or "main"] = (commit, files)
            for d in files.values():
                self.blobs[hashlib.sha256(d).hexdigest()] = d

    def find(self, repo_id, rev):
        repo = self.repos.get(repo_id)
        if repo is None:
            return None, None
        if rev in repo.revisions:
            return repo.revisions[rev]
        for commit, files in repo.revisions.values():
            if commit == rev:
                return commit, files
        return "", None

    def is_lfs(self, name, data):
        return name.endswith(".safetensors") or len(data) >= self.args.lfs_min_size


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        pass

    def record(self):
        hub = self.server.hub
        if hub.args.log:
            line = "%s %s range=%s auth=%s\n" % (self.command, self.path, self.headers.get("Range", "-"),
                                                  "yes" if self.headers.get("Authorization") else "no")
            with hub.lock, open(hub.args.log, "a") as f:
                f.write(line)

    def send(self, status, headers=None, body=b""):
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if "Content-Length" not in (headers or {}):
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD" and body:
            self.wfile.write(body)

    def error(self, status, code, message):
        self.send(status, {"X-Error-Code": code, "X-Error-Message": message, "Content-Type": "application/json"},
                  json.dumps({"error": message}).encode())

    def authorized(self):
        return self.headers.get("Authorization") == "Bearer " + self.server.hub.args.token

    def do_HEAD(self):
        self.handle_any()

    def do_GET(self):
        self.handle_any()

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0") or 0)
        self.post_body = self.rfile.read(min(n, 1 << 20)) if n else b""
        self.handle_any()

    def file_entry(self, commit, name, data):
        e = {"type": "file", "path": name, "oid": git_blob_sha1(data), "size": len(data)}
        if self.server.hub.is_lfs(name, data):
            e["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 130}
        e["lastCommit"] = {"id": commit, "title": "stand-in", "date": "2026-01-01T00:00:00.000Z"}
        return e

    def listing(self, repo_id, rev, paths_info):
        if not self.repo_access(repo_id, False):
            return
        commit, files = self.server.hub.find(repo_id, rev)
        if commit is None:
            return self.error(404, "RepoNotFound", "Repository Not Found")
        if files is None:
            return self.error(404, "RevisionNotFound", "Invalid rev id: %s" % rev)
        names = sorted(files)
        if paths_info:
            asked = json.loads(getattr(self, "post_body", b"") or b"{}").get("paths", [])
            names = [n for n in asked if n in files]
        body = json.dumps([self.file_entry(commit, n, files[n]) for n in names]).encode()
        self.send(200, {"Content-Type": "application/json"}, body)

    def send_data(self, data, headers):
        """200 with the bytes, or 206 with the asked range (bytes=A- or bytes=A-B)."""
        rng = self.headers.get("Range", "")
        if not rng.startswith("bytes="):
            return self.send(200, headers, data)
        a, _, b = rng[6:].partition("-")
        start, end = int(a), (int(b) if b else len(data) - 1)
        if start >= len(data):
            return self.send(416, {"Content-Range": "bytes */%d" % len(data)})
        end = min(end, len(data) - 1)
        headers = dict(headers, **{"Content-Range": "bytes %d-%d/%d" % (start, end, len(data))})
        self.send(206, headers, data[start:end + 1])

    def handle_any(self):
        self.record()
        hub = self.server.hub
        path = urllib.parse.urlsplit(self.path).path
        parts = [urllib.parse.unquote(p) for p in path.split("/")[1:]]
        if parts[:1] == ["cdn"] and len(parts) == 2:
            return self.cdn(parts[1])
        if parts[:2] == ["api", "models"] and len(parts) >= 6 and parts[4] in ("tree", "paths-info"):
            return self.listing(parts[2] + "/" + parts[3], parts[5], parts[4] == "paths-info")
        if parts[:2] == ["api", "models"] and len(parts) >= 4:
            repo_id = parts[2] + "/" + parts[3]
            rev = parts[5] if len(parts) >= 6 and parts[4] == "revision" else "main"
            return self.model_info(repo_id, rev)
        if len(parts) >= 5 and parts[2] == "resolve":
            return self.resolve(parts[0] + "/" + parts[1], parts[3], "/".join(parts[4:]))
        self.error(404, "EntryNotFound", "no such endpoint")

    def repo_access(self, repo_id, for_files):
        args = self.server.hub.args
        if repo_id in args.private and not self.authorized():
            self.error(401, "RepoNotFound", "Repository Not Found for url: %s." % self.path)
            return False
        if for_files and repo_id in args.gated and not self.authorized():
            self.error(401, "GatedRepo", "Access to model %s is restricted." % repo_id)
            return False
        return True

    def model_info(self, repo_id, rev):
        if not self.repo_access(repo_id, False):
            return
        commit, files = self.server.hub.find(repo_id, rev)
        if commit is None:
            return self.error(404, "RepoNotFound", "Repository Not Found")
        if files is None:
            return self.error(404, "RevisionNotFound", "Invalid rev id: %s" % rev)
        body = json.dumps({"id": repo_id, "modelId": repo_id, "sha": commit,
                           "siblings": [{"rfilename": n} for n in sorted(files)]}).encode()
        self.send(200, {"Content-Type": "application/json"}, body)

    def resolve(self, repo_id, rev, name):
        if not self.repo_access(repo_id, True):
            return
        hub = self.server.hub
        commit, files = hub.find(repo_id, rev)
        if commit is None:
            return self.error(404, "RepoNotFound", "Repository Not Found")
        if files is None:
            return self.error(404, "RevisionNotFound", "Invalid rev id: %s" % rev)
        if name not in files:
            return self.error(404, "EntryNotFound", "%s does not exist at %s" % (name, rev))
        data = files[name]
        headers = {"X-Repo-Commit": commit, "Accept-Ranges": "bytes"}
        if hub.is_lfs(name, data):
            sha = hashlib.sha256(data).hexdigest()
            size = 10 ** 15 if hub.args.huge_size else len(data)
            headers.update({"X-Linked-Etag": '"%s"' % sha, "X-Linked-Size": str(size), "ETag": '"%s"' % sha,
                            "Location": "http://127.0.0.1:%d/cdn/%s" % (hub.cdn_port, sha)})
            if hub.args.no_linked_size:
                del headers["X-Linked-Size"]
            return self.send(302, headers)
        headers["ETag"] = '"%s"' % git_blob_sha1(data)
        self.send_data(data, headers)

    def cdn(self, sha):
        hub = self.server.hub
        data = hub.blobs.get(sha)
        if data is None:
            return self.send(404)
        start = 0
        rng = self.headers.get("Range", "")
        if rng.startswith("bytes=") and not rng.endswith("-"):
            return self.send_data(data, {"ETag": '"%s"' % sha, "Content-Type": "application/octet-stream"})
        if rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[6:-1])
            if start >= len(data):
                return self.send(416, {"Content-Range": "bytes */%d" % len(data)})
        body = data[start:]
        with hub.lock:
            corrupt = hub.args.corrupt_once and not hub.corrupt_done and len(body) > 0
            if corrupt:
                hub.corrupt_done.add(sha)
            cut = hub.args.cut_once_after and len(body) > hub.args.cut_once_after and not hub.cut_done
            if cut:
                hub.cut_done.add(sha)
        if corrupt:
            body = bytes([body[0] ^ 0xFF]) + body[1:]
        headers = {"Content-Type": "application/octet-stream", "Content-Length": str(len(body)), "ETag": '"%s"' % sha}
        status = 200
        if start:
            status = 206
            headers["Content-Range"] = "bytes %d-%d/%d" % (start, len(data) - 1, len(data))
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        if self.command == "HEAD":
            return
        if cut:
            self.wfile.write(body[:hub.args.cut_once_after])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # a client that gives up mid-transfer (a failed download) is part of the tests
        if not isinstance(sys.exc_info()[1], (ConnectionError, BrokenPipeError)):
            super().handle_error(request, client_address)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", action="append", default=[])
    ap.add_argument("--private", action="append", default=[])
    ap.add_argument("--gated", action="append", default=[])
    ap.add_argument("--token", default="hf_test_token")
    ap.add_argument("--lfs-min-size", type=int, default=10000)
    ap.add_argument("--cut-once-after", type=int, default=0)
    ap.add_argument("--corrupt-once", action="store_true")
    ap.add_argument("--huge-size", action="store_true")
    ap.add_argument("--no-linked-size", action="store_true")
    ap.add_argument("--log")
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--max-seconds", type=float, default=120)
    args = ap.parse_args()
    hub = Hub(args)
    server = Server(("127.0.0.1", 0), Handler)
    # the CDN on another port: another origin, as the hub's CDN is another host
    cdn = Server(("127.0.0.1", 0), Handler)
    server.hub = cdn.hub = hub
    hub.cdn_port = cdn.server_port
    threading.Thread(target=cdn.serve_forever, daemon=True).start()
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(server.server_port))
    os.rename(args.port_file + ".tmp", args.port_file)
    threading.Timer(args.max_seconds, server.shutdown).start()
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
