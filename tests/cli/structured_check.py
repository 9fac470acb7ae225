#!/usr/bin/env python3
"""structured_check.py URL — hundreds of constrained generations against a qserve serving
stories260K (a model that has never seen JSON) at temperature 1 over many seeds, through every
way of asking (response_format, structured_outputs, guided_*), on /v1/completions and
/v1/chat/completions, streaming and not, n > 1, and sent concurrently with free-text requests so
batches mix constrained and free sequences. Every output must finish with "stop" and parse and
validate against its schema / fully match its regex / be one of the choices. Prints `ok NAME` /
`not ok NAME: why` lines (the shell suite's format)."""
import json
import re
import sys
import threading
import urllib.request

URL = sys.argv[1]

SCHEMAS = [
    {"type": "object",
     "properties": {"name": {"type": "string", "maxLength": 8}, "age": {"type": "integer", "minimum": 0, "maximum": 120},
                    "pet": {"enum": ["cat", "dog", None]}},
     "required": ["name", "age"], "additionalProperties": False},
    {"type": "array", "items": {"type": "integer", "minimum": -50, "maximum": 50}, "minItems": 1, "maxItems": 5},
    {"type": "object",
     "properties": {"ok": {"type": "boolean"},
                    "point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                              "required": ["x", "y"]},
                    "tags": {"type": "array", "items": {"type": "string", "maxLength": 4}, "maxItems": 3}},
     "required": ["ok", "point"]},
    {"anyOf": [{"type": "string", "format": "date"}, {"type": "null"}, {"const": {"k": [1, 2]}}]},
    {"$defs": {"t": {"type": "object", "properties": {"v": {"type": "integer", "minimum": 0, "maximum": 9},
                                                      "kid": {"anyOf": [{"$ref": "#/$defs/t"}, {"type": "null"}]}},
                     "required": ["v", "kid"]}},
     "$ref": "#/$defs/t"},
    {"type": "string", "pattern": "^[A-Z][a-z]{1,6}$"},
]
REGEXES = [r"(yes|no), [0-9]{1,3}", r"[a-z]{3,6}-\d{2}", r"\(\d{3}\) \d{3}-\d{4}", r"(ab|c){1,6}x?"]
CHOICES = [["cat", "dog", "bird"], ["Positive", "Negative", "neutral sentiment"]]
GRAMMAR = 'root ::= greeting " " name "!"\ngreeting ::= "Hi" | "Hello"\nname ::= [A-Z] [a-z]{1,5}\n'
GRAMMAR_RE = r"(Hi|Hello) [A-Z][a-z]{1,5}!"

failures = []
counts = {"outputs": 0}
lock = threading.Lock()


def valid(v, s, root):
    if "$ref" in s:
        ref = s["$ref"]
        node = root
        for part in ref.lstrip("#/").split("/"):
            if part:
                node = node[part]
        return valid(v, node, root)
    if "const" in s:
        return v == s["const"]
    if "enum" in s:
        return v in s["enum"]
    if "anyOf" in s:
        return any(valid(v, x, root) for x in s["anyOf"])
    t = s.get("type")
    if t == "object":
        if not isinstance(v, dict):
            return False
        props = s.get("properties", {})
        if any(k not in v for k in s.get("required", [])):
            return False
        return all(k in props and valid(x, props[k], root) for k, x in v.items())
    if t == "array":
        if not isinstance(v, list):
            return False
        if len(v) < s.get("minItems", 0) or len(v) > s.get("maxItems", 10**9):
            return False
        return all(valid(x, s.get("items", {}), root) for x in v)
    if t == "string":
        if not isinstance(v, str) or len(v) > s.get("maxLength", 10**9):
            return False
        if s.get("format") == "date" and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", v):
            return False
        if "pattern" in s and not re.search(s["pattern"], v):
            return False
        return True
    if t == "integer":
        return isinstance(v, int) and not isinstance(v, bool) and s.get("minimum", -10**18) <= v <= s.get("maximum", 10**18)
    if t == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if t == "boolean":
        return isinstance(v, bool)
    if t == "null":
        return v is None
    return True


def post(path, body):
    req = urllib.request.Request(URL + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        if not body.get("stream"):
            return json.load(r)
        # join the SSE deltas per choice
        texts, finish = {}, {}
        for line in r:
            line = line.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            ev = json.loads(line[6:])
            for c in ev["choices"]:
                i = c["index"]
                piece = c.get("text") if "text" in c else (c.get("delta") or {}).get("content")
                texts[i] = texts.get(i, "") + (piece or "")
                if c.get("finish_reason"):
                    finish[i] = c["finish_reason"]
        return {"choices": [{"index": i, "text": texts.get(i, ""), "finish_reason": finish.get(i)} for i in sorted(texts)]}


def outputs(resp):
    for c in resp["choices"]:
        text = c["text"] if "text" in c else c["message"]["content"]
        yield text, c["finish_reason"]


def run(job):
    name, path, body, check = job
    try:
        resp = post(path, body)
    except Exception as e:  # noqa: BLE001 - any failure is reported
        with lock:
            failures.append(f"{name}: request failed: {e}")
        return
    for text, fin in outputs(resp):
        with lock:
            counts["outputs"] += 1
        if check is None:
            continue
        why = None
        if fin != "stop":
            why = f"finish_reason {fin}"
        else:
            why = check(text)
        if why:
            with lock:
                failures.append(f"{name} seed {body.get('seed')}: {why}: {text[:200]!r}")


def schema_check(schema):
    def check(text):
        try:
            v = json.loads(text)
        except ValueError as e:
            return f"not JSON ({e})"
        return None if valid(v, schema, schema) else "does not validate"
    return check


def regex_check(pattern):
    return lambda text: None if re.fullmatch(pattern, text) else "does not match"


def choice_check(choices):
    return lambda text: None if text in choices else "not one of the choices"


def jobs():
    seed = 0
    for si, schema in enumerate(SCHEMAS):
        for k in range(10):
            seed += 1
            way = k % 4
            body = {"max_tokens": 300, "temperature": 1, "seed": seed, "n": 3, "stream": k % 3 == 0}
            if way == 0:
                body["guided_json"] = schema
            elif way == 1:
                body["structured_outputs"] = {"json": json.dumps(schema)}
            elif way == 2:
                body["response_format"] = {"type": "json_schema", "json_schema": {"name": f"s{si}", "schema": schema, "strict": True}}
            else:
                body["structured_outputs"] = {"json": schema}
            if k % 2:
                body["messages"] = [{"role": "user", "content": "Tell me a story."}]
                yield f"schema{si}", "/v1/chat/completions", body, schema_check(schema)
            else:
                body["prompt"] = "Once upon a time"
                yield f"schema{si}", "/v1/completions", body, schema_check(schema)
    for ri, pattern in enumerate(REGEXES):
        for k in range(8):
            seed += 1
            body = {"prompt": "Lily said", "max_tokens": 80, "temperature": 1, "seed": seed, "n": 3, "stream": k % 2 == 0}
            body["guided_regex" if k % 2 else "structured_outputs"] = pattern if k % 2 else {"regex": pattern}
            yield f"regex{ri}", "/v1/completions", body, regex_check(pattern)
    for ci, choices in enumerate(CHOICES):
        for k in range(8):
            seed += 1
            body = {"prompt": "The animal was a", "max_tokens": 20, "temperature": 1, "seed": seed, "n": 3}
            body["guided_choice" if k % 2 else "structured_outputs"] = choices if k % 2 else {"choice": choices}
            yield f"choice{ci}", "/v1/completions", body, choice_check(choices)
    for k in range(8):
        seed += 1
        body = {"prompt": "Tom said", "max_tokens": 40, "temperature": 1, "seed": seed, "n": 2, "stream": k % 2 == 1}
        body["guided_grammar" if k % 2 else "structured_outputs"] = GRAMMAR if k % 2 else {"grammar": GRAMMAR}
        yield "grammar", "/v1/completions", body, regex_check(GRAMMAR_RE)
    for k in range(12):  # free text in the same batches
        seed += 1
        yield "free", "/v1/completions", {"prompt": "Once", "max_tokens": 40, "temperature": 1, "seed": seed}, None


def main():
    todo = list(jobs())
    # interleave so that every batch mixes kinds
    todo = todo[::2] + todo[1::2]
    idx = [0]

    def worker():
        while True:
            with lock:
                if idx[0] >= len(todo):
                    return
                job = todo[idx[0]]
                idx[0] += 1
            run(job)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    n = counts["outputs"]
    if failures:
        print(f"not ok constrained_generations: {len(failures)} of {n} outputs failed; first: {failures[0]}")
        for f in failures[:10]:
            print("#", f)
        return 1
    if n < 300:
        print(f"not ok constrained_generations: only {n} outputs")
        return 1
    print(f"ok constrained_generations ({n} outputs valid)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
