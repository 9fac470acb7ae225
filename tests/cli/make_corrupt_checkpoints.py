#!/usr/bin/env python3
"""make_corrupt_checkpoints.py GOOD_DIR OUT_DIR — writes one damaged copy of a good checkpoint
per way a checkpoint folder goes wrong (config, safetensors, index, tokenizer files, generation
config), plus copies with each optional file missing, for test_checkpoint_matrix.sh. Prints the
fixture names, one per line, as `NAME KIND` where KIND is `corrupt` (a clean error or success is
fine) or `optional` (the folder is still a usable model: generate and serve must succeed)."""
import json
import os
import shutil
import struct
import sys

good, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
made = []


def fixture(name, kind="corrupt"):
    d = os.path.join(out, name)
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(good, d)
    made.append((name, kind))
    return d


def edit_json(path, fn):
    with open(path) as f:
        obj = json.load(f)
    fn(obj)
    with open(path, "w") as f:
        json.dump(obj, f)


def write(path, data):
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)


def st_files(d):
    return sorted(f for f in os.listdir(d) if f.endswith(".safetensors"))


def read_st(path):
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def write_st(path, header, data):
    h = json.dumps(header).encode()
    write(path, struct.pack("<Q", len(h)) + h + data)


shards = st_files(good)
first = shards[0]

# --- optional files missing: still a model ---
for f in ("generation_config.json", "tokenizer_config.json"):
    if os.path.exists(os.path.join(good, f)):
        os.remove(os.path.join(fixture("missing-" + f.split(".")[0], "optional"), f))

# --- config.json ---
os.remove(os.path.join(fixture("config-missing"), "config.json"))
write(os.path.join(fixture("config-malformed"), "config.json"), "{\"hidden_size\": 64,")
write(os.path.join(fixture("config-not-object"), "config.json"), "[1, 2, 3]")
edit_json(os.path.join(fixture("config-million-layers"), "config.json"), lambda c: c.update(num_hidden_layers=1000000))
edit_json(os.path.join(fixture("config-zero-vocab"), "config.json"), lambda c: c.update(vocab_size=0))
edit_json(os.path.join(fixture("config-huge-vocab"), "config.json"), lambda c: c.update(vocab_size=2**31 - 1))
edit_json(os.path.join(fixture("config-string-hidden"), "config.json"), lambda c: c.update(hidden_size="64"))
edit_json(os.path.join(fixture("config-negative-heads"), "config.json"), lambda c: c.update(num_attention_heads=-8))
edit_json(os.path.join(fixture("config-odd-head-dim"), "config.json"), lambda c: c.update(head_dim=7))
edit_json(os.path.join(fixture("config-huge-context"), "config.json"),
          lambda c: c.update(max_position_embeddings=2**31 - 1))

# --- safetensors ---
d = fixture("st-truncated")
p = os.path.join(d, first)
write(p, open(p, "rb").read()[: os.path.getsize(p) // 2])
d = fixture("st-empty")
write(os.path.join(d, first), b"")
d = fixture("st-header-length-huge")
p = os.path.join(d, first)
raw = open(p, "rb").read()
write(p, struct.pack("<Q", 1 << 62) + raw[8:])
d = fixture("st-header-garbage")
p = os.path.join(d, first)
raw = bytearray(open(p, "rb").read())
n = struct.unpack("<Q", raw[:8])[0]
raw[8:8 + n] = b"\xff" * n
write(p, bytes(raw))
header, data = read_st(os.path.join(good, first))
names = [k for k in header if k != "__metadata__"]
victim = next((k for k in names if "layers.0.mlp" in k), names[0])
d = fixture("st-tensor-dropped")
write_st(os.path.join(d, first), {k: v for k, v in header.items() if k != victim}, data)
d = fixture("st-shape-lies")
h2 = json.loads(json.dumps(header))
h2[victim]["shape"] = [s * 2 for s in h2[victim]["shape"]]
write_st(os.path.join(d, first), h2, data)
d = fixture("st-bad-dtype")
h2 = json.loads(json.dumps(header))
h2[victim]["dtype"] = "Q9"
write_st(os.path.join(d, first), h2, data)
d = fixture("st-offsets-past-end")
h2 = json.loads(json.dumps(header))
h2[victim]["data_offsets"] = [0, len(data) * 4]
write_st(os.path.join(d, first), h2, data)
d = fixture("st-missing")
os.remove(os.path.join(d, first))

# --- the index of a sharded checkpoint ---
if os.path.exists(os.path.join(good, "model.safetensors.index.json")):
    write(os.path.join(fixture("index-malformed"), "model.safetensors.index.json"), "{\"weight_map\": ")
    d = fixture("index-names-missing-shard")
    edit_json(os.path.join(d, "model.safetensors.index.json"),
              lambda ix: ix["weight_map"].update({victim: "model-99999-of-99999.safetensors"}))
    os.remove(os.path.join(fixture("index-shard-missing"), shards[-1]))

# --- tokenizer files ---
os.remove(os.path.join(fixture("tokenizer-missing"), "tokenizer.json"))
write(os.path.join(fixture("tokenizer-malformed"), "tokenizer.json"), "{\"model\": {\"vocab\": ")
edit_json(os.path.join(fixture("tokenizer-empty-vocab"), "tokenizer.json"), lambda t: t["model"].update(vocab={}))
if os.path.exists(os.path.join(good, "tokenizer_config.json")):
    write(os.path.join(fixture("tokenizer-config-malformed"), "tokenizer_config.json"), "not json")
    edit_json(os.path.join(fixture("chat-template-broken"), "tokenizer_config.json"),
              lambda t: t.update(chat_template="{% for m in messages %}{{ m.content "))

# --- generation_config.json ---
write(os.path.join(fixture("generation-config-malformed"), "generation_config.json"), "{\"eos_token_id\": [2,")
edit_json(os.path.join(fixture("generation-config-bad-eos"), "generation_config.json"),
          lambda g: g.update(eos_token_id="two"))

# --- no tokenizer and no end-of-sequence id anywhere (issue 44 item 5's SIGSEGV) ---
d = fixture("no-tokenizer-no-eos")
for f in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
    if os.path.exists(os.path.join(d, f)):
        os.remove(os.path.join(d, f))
edit_json(os.path.join(d, "config.json"), lambda c: [c.pop(k, None) for k in ("eos_token_id", "bos_token_id")])

# --- an empty folder ---
os.makedirs(os.path.join(out, "empty-folder"), exist_ok=True)
made.append(("empty-folder", "corrupt"))

for name, kind in made:
    print(name, kind)
