#!/usr/bin/env bash
# test_hub.sh — hub names end to end against tests/cli/fake_hub_server.py (loopback, bounded):
# `qserve download` fills huggingface_hub's cache layout (checked file by file), every command
# takes ORG/NAME, a second run and offline runs use the cache only, --revision / --tokenizer /
# --download-dir, an interrupted download resumes with a Range request, a corrupted byte is
# caught by the sha256 check, and 401 / gated / 404 / unreachable / disk space errors name
# their cause. The @huggingface/hub npm client (tests/node) is the peer: qserve serves from a
# cache it wrote, and it reads one qserve wrote without a request. The checkpoint is made by
# `qserve init-model`. Prints ok / not ok / skip.
set -u
BIN=${QSERVE_BIN:-build/qserve}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/check_lib.sh"
PIDS=()
MOUNTED=
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; [ -n "$MOUNTED" ] && umount "$MOUNTED"; rm -rf "$TMP"' EXIT
command -v python3 >/dev/null || skip_all "no python3 for the stand-in hub" download

# The repos: org/tiny (6 safetensors shards + index, plus a .bin copy and a README qserve must not
# fetch), org/tiny@v1 (other weights), org/tok (tokenizer files only), org/private, org/gated.
M=$TMP/src
"$BIN" init-model "$M" --shape tiny-llama --seed 3 --shard-size 0.00005 >/dev/null 2>&1 ||
  { echo "not ok init_model: qserve init-model failed"; exit 1; }
"$BIN" init-model "$TMP/v1" --shape tiny-llama --seed 4 >/dev/null 2>&1 || { echo "not ok init_model_v1"; exit 1; }
echo junk >"$M/pytorch_model.bin"; echo "# tiny" >"$M/README.md"
mkdir -p "$TMP/tok" && cp "$M"/tokenizer*.json "$M/config.json" "$TMP/tok/"

# start_hub NAME [server flags]: starts a stand-in hub, sets HUB (its URL) and HUB_LOG.
start_hub() {
  local name=$1; shift
  HUB_LOG=$TMP/$name.log; : >"$HUB_LOG"
  python3 "$HERE/fake_hub_server.py" --repo "org/tiny=$M" --repo "org/tiny@v1=$TMP/v1" --repo "org/tok=$TMP/tok" \
    --repo "org/private=$TMP/tok" --private org/private --repo "org/gated=$TMP/tok" --gated org/gated \
    --token hf_secret --log "$HUB_LOG" --port-file "$TMP/$name.port" --max-seconds 120 "$@" &
  PIDS+=($!)
  for _ in $(seq 1 100); do [ -s "$TMP/$name.port" ] && break; sleep 0.05; done
  HUB=http://127.0.0.1:$(cat "$TMP/$name.port")
}
start_hub main
export HF_ENDPOINT=$HUB HF_HOME=$TMP/hf
unset HF_HUB_CACHE HUGGINGFACE_HUB_CACHE HF_TOKEN HUGGING_FACE_HUB_TOKEN HF_HUB_OFFLINE HF_TOKEN_PATH
CACHE=$HF_HOME/hub
commit_of() { curl -s "$HUB/api/models/org/tiny/revision/$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["sha"])'; }
C_MAIN=$(commit_of main); C_V1=$(commit_of v1)

# --- download into the default cache ($HF_HOME/hub) ---
out=$("$BIN" download org/tiny 2>"$TMP/d.err"); rc=$?
[ $rc -eq 0 ] && [ "$out" = "$CACHE/models--org--tiny/snapshots/$C_MAIN" ] && grep -q "11 file(s) downloaded" "$TMP/d.err"
check download_snapshot_path $? "exit $rc, '$out': $(tail -3 "$TMP/d.err")"

# progress: redrawn in place on a terminal (script(1) gives one), plain lines otherwise (above)
if command -v script >/dev/null; then
  script -qc "'$BIN' download org/tiny --download-dir '$TMP/tty'" /dev/null >"$TMP/tty.out" 2>&1
  grep -q $'\rdownloading: 11/11 files, 289.9 KiB / 289.9 KiB, .*/s\e\[K' "$TMP/tty.out" && ! grep -q "^downloaded " "$TMP/tty.out"
  r1=$?
  grep -q "^downloaded model-00001-of-00006.safetensors (64.1 KiB)" "$TMP/d.err" && ! grep -q $'\r' "$TMP/d.err"
  check progress_tty_and_log $(( r1 | $? )) "$(head -c 300 "$TMP/tty.out" | cat -A)"
else
  echo "skip progress_tty_and_log: no script(1) to give a terminal"
fi

# --- the layout, file by file, as huggingface_hub documents it ---
python3 - "$CACHE/models--org--tiny" "$C_MAIN" "$M" >"$TMP/layout.err" 2>&1 <<'EOF'
import hashlib, os, sys
repo, commit, src = sys.argv[1:]
assert sorted(os.listdir(repo)) == ["blobs", "refs", "snapshots"], os.listdir(repo)
ref = open(os.path.join(repo, "refs", "main"), "rb").read()
assert ref == commit.encode(), ref                       # the bare hash, no newline
snap = os.path.join(repo, "snapshots", commit)
want = sorted(f for f in os.listdir(src) if f not in ("pytorch_model.bin", "README.md"))
assert sorted(os.listdir(snap)) == want, (sorted(os.listdir(snap)), want)
blobs = set()
for f in want:
    link = os.path.join(snap, f)
    assert os.path.islink(link), f
    target = os.readlink(link)
    assert target.startswith("../../blobs/"), target     # relative, into blobs/
    etag = target[len("../../blobs/"):]
    data = open(os.path.join(src, f), "rb").read()
    assert open(link, "rb").read() == data, f
    lfs = f.endswith(".safetensors") or len(data) >= 10000
    expect = hashlib.sha256(data).hexdigest() if lfs else hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    assert etag == expect, (f, etag, expect)             # blobs are named by their ETag
    blobs.add(etag)
assert set(os.listdir(os.path.join(repo, "blobs"))) == blobs   # nothing else, no .incomplete
locks = os.path.join(os.path.dirname(repo), ".locks", os.path.basename(repo))
assert set(os.listdir(locks)) == {b + ".lock" for b in blobs}
EOF
check cache_layout $? "$(tail -3 "$TMP/layout.err")"

# --- every command takes ORG/NAME ---
"$BIN" generate "$M" --prompt "hello" --max-tokens 8 --temperature 0 --json >"$TMP/local.json" 2>/dev/null
"$BIN" generate org/tiny --prompt "hello" --max-tokens 8 --temperature 0 --json >"$TMP/hub.json" 2>"$TMP/g.err"; rc=$?
[ $rc -eq 0 ] && [ -s "$TMP/local.json" ] && cmp -s "$TMP/local.json" "$TMP/hub.json"
check generate_from_hub $? "exit $rc: $(tail -2 "$TMP/g.err")"
# a second run asks the model-info API and downloads nothing
! grep -q "/cdn/\|/resolve/" <(tail -n +$(( $(grep -c . "$HUB_LOG") )) "$HUB_LOG") && tail -1 "$HUB_LOG" | grep -q "GET /api/models/org/tiny/revision/main"
check second_run_downloads_nothing $? "$(tail -2 "$HUB_LOG")"

for mode in env flag; do
  n0=$(grep -c . "$HUB_LOG")
  if [ $mode = env ]; then
    HF_HUB_OFFLINE=1 "$BIN" generate org/tiny --prompt "hello" --max-tokens 8 --temperature 0 --json >"$TMP/off.json" 2>"$TMP/off.err"
  else
    "$BIN" generate org/tiny --offline --prompt "hello" --max-tokens 8 --temperature 0 --json >"$TMP/off.json" 2>"$TMP/off.err"
  fi
  rc=$?
  [ $rc -eq 0 ] && cmp -s "$TMP/local.json" "$TMP/off.json" && [ "$(grep -c . "$HUB_LOG")" = "$n0" ]
  check offline_${mode}_uses_cache_only $? "exit $rc: $(tail -2 "$TMP/off.err")"
done

out_l=$("$BIN" tokenize "$M" --text "hello world"); out_h=$("$BIN" tokenize org/tiny --text "hello world" 2>"$TMP/t.err")
[ -n "$out_l" ] && [ "$out_l" = "$out_h" ]; check tokenize_from_hub $? "$(tail -2 "$TMP/t.err")"
ids=$(echo "$out_l" | tr -d '[] ')
[ "$("$BIN" detokenize "$M" --ids "$ids")" = "$("$BIN" detokenize org/tiny --ids "$ids" 2>/dev/null)" ]
check detokenize_from_hub $?
echo '[{"role": "user", "content": "hi"}]' >"$TMP/msgs.json"
"$BIN" chat-template "$M" --messages "$TMP/msgs.json" >"$TMP/ct.l" 2>&1; rl=$?
"$BIN" chat-template org/tiny --messages "$TMP/msgs.json" >"$TMP/ct.h" 2>&1; rh=$?
[ $rl = $rh ] && cmp -s <(sed "s#$M#X#g" "$TMP/ct.l") <(sed "s#$CACHE/models--org--tiny/snapshots/$C_MAIN#X#g" "$TMP/ct.h")
check chat_template_from_hub $? "$(head -c 300 "$TMP/ct.h")"
"$BIN" backends org/tiny --device cpu >"$TMP/b.out" 2>&1 && grep -q "org/tiny" "$TMP/b.out"
check backends_from_hub $? "$(tail -2 "$TMP/b.out")"
"$BIN" quantize org/tiny "$TMP/q" --scheme fp8-dynamic >"$TMP/q.out" 2>&1 && [ -f "$TMP/q/config.json" ]
check quantize_from_hub $? "$(tail -2 "$TMP/q.out")"

# serve: the served model name is the name as typed, as in vLLM
"$BIN" serve org/tiny --offline --host 127.0.0.1 --port 0 >"$TMP/serve.log" 2>&1 &
SPID=$!; PIDS+=($SPID); ok=1
for _ in $(seq 1 200); do
  port=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$TMP/serve.log" | head -1 | sed 's/.*://')
  if [ -n "$port" ] && [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = 200 ]; then
    curl -s "http://127.0.0.1:$port/v1/models" | grep -q '"id":"org/tiny"\|"id": "org/tiny"' && ok=0; break
  fi
  kill -0 $SPID 2>/dev/null || break; sleep 0.1
done
kill $SPID 2>/dev/null; wait $SPID 2>/dev/null
check serve_from_hub $ok "$(tail -3 "$TMP/serve.log")"

# qserve-eval: model_name ORG/NAME (and the server's --tokenizer, into its --download-dir) go
# through the same resolver; the server gets the id and reads the cache only (HF_HUB_OFFLINE=1),
# so only the eval's two model-info requests reach the hub
EVAL=${QSERVE_BUILD:-$(dirname "$BIN")}/qserve-eval
GSM=${QSERVE_SHARED_DATA:-../shared/data}/gsm8k
if [ -x "$EVAL" ] && [ -f "$GSM/test.jsonl" ]; then
  cat >"$TMP/eval.yaml" <<EOF2
model_name: "org/tiny"
accuracy_threshold: 0.0
tolerance: 0.0
num_questions: 4
num_fewshot: 0
max_tokens: 8
startup_max_wait_seconds: 60
request_timeout_seconds: 60
server_args: "--device cpu --max-model-len 512 --enforce-eager --tokenizer org/tok --download-dir $TMP/evcache"
EOF2
  n0=$(grep -c . "$HUB_LOG")
  "$EVAL" "$TMP/eval.yaml" --server "$BIN" --data-dir "$GSM" --server-log "$TMP/eval-server.log" >"$TMP/eval.out" 2>"$TMP/eval.err"; rc=$?
  new=$(tail -n +$((n0 + 1)) "$HUB_LOG")
  [ $rc -eq 0 ] && grep -q "^PASS: accuracy" "$TMP/eval.out" && grep -q "serving 'org/tiny'" "$TMP/eval-server.log" &&
    [ -f "$TMP/evcache/models--org--tok/refs/main" ] && [ -f "$TMP/evcache/models--org--tiny/refs/main" ] &&
    [ "$(echo "$new" | grep -c "GET /api/models/")" = 2 ]
  check eval_from_hub $? "exit $rc: $(tail -3 "$TMP/eval.err") $(tail -3 "$TMP/eval-server.log")"
else
  echo "skip eval_from_hub: qserve-eval or GSM8K data ($GSM) absent"
fi

# --- the @huggingface/hub npm client on the same cache, both ways ---
NODE_DIR=$HERE/../node
if command -v node >/dev/null && [ -d "$NODE_DIR/node_modules/@huggingface/hub" ]; then
  # (the library logs "Downloading ..." on stdout: the folder is the last line)
  out=$(node "$NODE_DIR/hub_peer.mjs" "$HUB" "$TMP/js" snapshot org/tiny 2>"$TMP/js.err"); rc=$?; out=$(echo "$out" | tail -1)
  HF_HUB_OFFLINE=1 "$BIN" generate org/tiny --download-dir "$TMP/js" --prompt "hello" --max-tokens 8 --temperature 0 --json \
    >"$TMP/js.json" 2>>"$TMP/js.err"
  [ $rc -eq 0 ] && [ "$out" = "$TMP/js/models--org--tiny/snapshots/$C_MAIN" ] && cmp -s "$TMP/js.json" "$TMP/local.json"
  check peer_npm_cache_read_by_qserve $? "exit $rc: $(tail -3 "$TMP/js.err")"
  n0=$(grep -c . "$HUB_LOG")
  node "$NODE_DIR/hub_peer.mjs" "$HUB" "$CACHE" read org/tiny "$C_MAIN" config.json tokenizer.json \
    model-00003-of-00006.safetensors >"$TMP/peer.json" 2>"$TMP/peer.err"; rc=$?
  python3 - "$TMP/peer.json" "$CACHE" "$C_MAIN" "$C_V1" <<'EOF2' >>"$TMP/peer.err" 2>&1
import json, sys
r = json.load(open(sys.argv[1])); cache, main, v1 = sys.argv[2:]
snap = cache + "/models--org--tiny/snapshots/" + main
assert r["paths"] == [snap + "/config.json", snap + "/tokenizer.json", snap + "/model-00003-of-00006.safetensors"], r["paths"]
assert not r["warnings"], r["warnings"]
tiny = [x for x in r["repos"] if x["id"] == "org/tiny"][0]
revs = {v["commit"]: v for v in tiny["revisions"]}
assert revs[main]["refs"] == ["main"] and revs[main]["files"] == 11, revs[main]
assert list(revs) == [main], list(revs)
EOF2
  py=$?
  [ $rc -eq 0 ] && [ $py -eq 0 ] && [ "$(grep -c . "$HUB_LOG")" = "$n0" ]
  check peer_npm_reads_qserve_cache $? "exit $rc: $(tail -3 "$TMP/peer.err")"
else
  echo "skip peer_npm_cache_read_by_qserve: node or tests/node/node_modules/@huggingface/hub absent (scripts/install-deps.sh)"
  echo "skip peer_npm_reads_qserve_cache: node or tests/node/node_modules/@huggingface/hub absent (scripts/install-deps.sh)"
fi

# --- offline with a file missing from the cache: names repo, revision and file ---
cp -a "$HF_HOME" "$TMP/hf2"
rm "$TMP/hf2/hub/models--org--tiny/snapshots/$C_MAIN/model-00004-of-00006.safetensors"
HF_HOME=$TMP/hf2 HF_HUB_OFFLINE=1 "$BIN" generate org/tiny --prompt-ids 1 --max-tokens 2 >/dev/null 2>"$TMP/e"; rc=$?
[ $rc -ne 0 ] && grep -q "org/tiny at revision main" "$TMP/e" && grep -q "lacks model-00004-of-00006.safetensors" "$TMP/e"
check offline_missing_file_named $? "exit $rc: $(cat "$TMP/e")"
HF_HOME=$TMP/hf2 "$BIN" tokenize org/tiny --offline --revision v1 --text hi >/dev/null 2>"$TMP/e"; rc=$?
[ $rc -ne 0 ] && grep -q "org/tiny at revision v1 is not in the cache" "$TMP/e"; check offline_missing_revision_named $? "$(cat "$TMP/e")"

# qserve download --offline checks the cache and asks nothing; YAML keys do what the flags do
n0=$(grep -c . "$HUB_LOG")
out=$("$BIN" download org/tiny --offline 2>"$TMP/e"); rc=$?
"$BIN" download org/tiny --offline --revision v1 >/dev/null 2>>"$TMP/e"; rc2=$?
[ $rc -eq 0 ] && [ "$out" = "$CACHE/models--org--tiny/snapshots/$C_MAIN" ] && [ $rc2 -eq 1 ] &&
  grep -q "org/tiny at revision v1 is not in the cache" "$TMP/e" && [ "$(grep -c . "$HUB_LOG")" = "$n0" ]
check download_offline_checks_cache $? "exit $rc/$rc2: $(cat "$TMP/e")"
printf 'model: org/tiny\noffline: true\ndownload-dir: %s\n' "$CACHE" >"$TMP/serve.yaml"
HF_HOME=$TMP/elsewhere "$BIN" generate --config "$TMP/serve.yaml" --prompt "hello" --max-tokens 8 --temperature 0 --json \
  >"$TMP/y.json" 2>"$TMP/e"; rc=$?
[ $rc -eq 0 ] && cmp -s "$TMP/y.json" "$TMP/local.json" && [ "$(grep -c . "$HUB_LOG")" = "$n0" ]
check yaml_hub_keys $? "exit $rc: $(tail -2 "$TMP/e")"

# --- --download-dir, tokenizer-only commands, --revision, --tokenizer ---
"$BIN" tokenize org/tiny --download-dir "$TMP/dl" --text "hello world" >"$TMP/t.out" 2>"$TMP/t.err"; rc=$?
[ $rc -eq 0 ] && [ "$(cat "$TMP/t.out")" = "$out_l" ] && [ -f "$TMP/dl/models--org--tiny/snapshots/$C_MAIN/tokenizer.json" ] &&
  ! ls "$TMP/dl/models--org--tiny/snapshots/$C_MAIN" | grep -q safetensors
check download_dir_tokenizer_only $? "exit $rc: $(tail -2 "$TMP/t.err")"
out=$("$BIN" download org/tiny --revision v1 --quiet 2>"$TMP/e"); rc=$?
[ $rc -eq 0 ] && [ "$out" = "$CACHE/models--org--tiny/snapshots/$C_V1" ] && [ "$(cat "$CACHE/models--org--tiny/refs/v1")" = "$C_V1" ] &&
  [ ! -s "$TMP/e" ] && [ "$(cat "$CACHE/models--org--tiny/refs/main")" = "$C_MAIN" ]
check revision_tag $? "exit $rc '$out': $(cat "$TMP/e")"
out=$("$BIN" download org/tiny --revision "$C_V1" --quiet 2>"$TMP/e"); rc=$?
[ $rc -eq 0 ] && [ "$out" = "$CACHE/models--org--tiny/snapshots/$C_V1" ] && [ ! -e "$CACHE/models--org--tiny/refs/$C_V1" ]
check revision_commit_writes_no_ref $? "$(cat "$TMP/e")"
"$BIN" generate org/tiny --revision v1 --tokenizer org/tok --prompt "hello" --max-tokens 4 --temperature 0 --json >"$TMP/v1.json" 2>"$TMP/e"; rc=$?
[ $rc -eq 0 ] && ! cmp -s "$TMP/v1.json" "$TMP/local.json" && [ -f "$CACHE/models--org--tok/refs/main" ] &&
  ! ls "$CACHE/models--org--tok/snapshots/"* | grep -q safetensors
check revision_and_tokenizer_flags $? "exit $rc: $(tail -2 "$TMP/e")"
"$BIN" generate "$M" --revision v1 --prompt-ids 1 --max-tokens 1 >/dev/null 2>"$TMP/e"; rc=$?
[ $rc -ne 0 ] && grep -q "is a local folder, which has no revisions" "$TMP/e"; check revision_on_local_folder_refused $? "$(cat "$TMP/e")"

# --- auth: private and gated repos ---
"$BIN" download org/private --tokenizer-only --download-dir "$TMP/a1" >/dev/null 2>"$TMP/e"; rc=$?
[ $rc -eq 1 ] && grep -q "HTTP 401" "$TMP/e" && grep -q "HF_TOKEN" "$TMP/e" && grep -q "org/private" "$TMP/e"
check private_401_names_token $? "$(cat "$TMP/e")"
n0=$(grep -c . "$HUB_LOG")
HF_TOKEN=hf_secret "$BIN" download org/private --tokenizer-only --download-dir "$TMP/a2" >/dev/null 2>"$TMP/e"; rc=$?
new=$(tail -n +$((n0 + 1)) "$HUB_LOG")
# the token goes to the hub, never to the CDN (another origin) its redirect points to
[ $rc -eq 0 ] && echo "$new" | grep -q "^GET /cdn/.* auth=no" && ! echo "$new" | grep -q "/cdn/.* auth=yes" &&
  ! echo "$new" | grep -q "/org/private/.* auth=no"
check private_with_hf_token $? "exit $rc: $(cat "$TMP/e") $new"
mkdir -p "$TMP/tokhome" && printf 'hf_secret\n' >"$TMP/tokhome/token"
HF_HOME=$TMP/tokhome "$BIN" download org/private --tokenizer-only --download-dir "$TMP/a3" >/dev/null 2>"$TMP/e" &&
  grep -q "auth=yes" "$HUB_LOG"
check private_with_token_file $? "$(cat "$TMP/e")"
"$BIN" download org/gated --tokenizer-only --download-dir "$TMP/a4" >/dev/null 2>"$TMP/e"; rc=$?
[ $rc -eq 1 ] && grep -q "gated repo" "$TMP/e" && grep -q "HF_TOKEN" "$TMP/e"; check gated_401 $? "$(cat "$TMP/e")"

# --- 404s, unreachable endpoint, bad names ---
"$BIN" download org/nope --download-dir "$TMP/n" >/dev/null 2>"$TMP/e"; rc=$?
[ $rc -eq 1 ] && grep -q "org/nope (revision main): HTTP 404: no such repo" "$TMP/e"; check repo_404 $? "$(cat "$TMP/e")"
"$BIN" download org/tiny --revision nope --download-dir "$TMP/n" >/dev/null 2>"$TMP/e"; rc=$?
[ $rc -eq 1 ] && grep -q "no such revision 'nope'" "$TMP/e"; check revision_404 $? "$(cat "$TMP/e")"
HF_ENDPOINT=http://127.0.0.1:1 "$BIN" download org/tiny --download-dir "$TMP/n" >/dev/null 2>"$TMP/e"; rc=$?
[ $rc -eq 1 ] && grep -q "cannot reach the Hugging Face endpoint http://127.0.0.1:1" "$TMP/e"; check unreachable_named $? "$(cat "$TMP/e")"
HF_ENDPOINT=http://127.0.0.1:1 "$BIN" generate org/tiny --prompt "hello" --max-tokens 8 --temperature 0 --json >"$TMP/u.json" 2>"$TMP/e"; rc=$?
[ $rc -eq 0 ] && cmp -s "$TMP/u.json" "$TMP/local.json" && grep -q "using the cached snapshot" "$TMP/e"
check unreachable_falls_back_to_cache $? "exit $rc: $(cat "$TMP/e")"
"$BIN" generate org/a/b --prompt-ids 1 >/dev/null 2>"$TMP/e"; rc=$?
[ $rc -ne 0 ] && grep -q "'org/a/b' is neither a local folder nor a Hugging Face repo id" "$TMP/e"; check bad_repo_id $? "$(cat "$TMP/e")"
"$BIN" download >/dev/null 2>&1; r1=$?; "$BIN" download org/tiny --max-workers 0 >/dev/null 2>&1; r2=$?
"$BIN" download "$M" >/dev/null 2>"$TMP/e"; r3=$?
[ $r1 -eq 2 ] && [ $r2 -eq 2 ] && [ $r3 -eq 1 ] && grep -q "is a local path" "$TMP/e"; check download_usage_errors $?

# --- an interrupted download resumes with a Range request ---
start_hub cut --cut-once-after 20000
HF_ENDPOINT=$HUB "$BIN" download org/tiny --download-dir "$TMP/r" --max-workers 1 >/dev/null 2>"$TMP/e"; rc=$?
n_part=$(ls "$TMP/r/models--org--tiny/blobs/"*.incomplete 2>/dev/null | wc -l)
[ $rc -eq 1 ] && grep -q "interrupted" "$TMP/e" && grep -q "the next run resumes there" "$TMP/e" && [ "$n_part" -eq 1 ] &&
  [ "$(stat -c %s "$TMP/r/models--org--tiny/blobs/"*.incomplete)" = 20000 ]
check interrupted_keeps_partial $? "exit $rc, $n_part partial: $(cat "$TMP/e")"
HF_ENDPOINT=$HUB "$BIN" download org/tiny --download-dir "$TMP/r" --max-workers 1 >/dev/null 2>"$TMP/e"; rc=$?
[ $rc -eq 0 ] && grep -q "range=bytes=20000-" "$HUB_LOG" && ! ls "$TMP/r/models--org--tiny/blobs/" | grep -q incomplete &&
  diff -r "$M/model-00001-of-00006.safetensors" "$TMP/r/models--org--tiny/snapshots/$C_MAIN/model-00001-of-00006.safetensors" >/dev/null &&
  HF_HUB_OFFLINE=1 "$BIN" generate org/tiny --download-dir "$TMP/r" --prompt "hello" --max-tokens 8 --temperature 0 --json 2>/dev/null | cmp -s - "$TMP/local.json"
check interrupted_download_resumes $? "exit $rc: $(cat "$TMP/e")"

# --- a corrupted byte: caught by the sha256 check, the partial blob removed ---
start_hub corrupt --corrupt-once
HF_ENDPOINT=$HUB "$BIN" download org/tiny --download-dir "$TMP/c" --max-workers 1 >/dev/null 2>"$TMP/e"; rc=$?
[ $rc -eq 1 ] && grep -q "checksum mismatch" "$TMP/e" && grep -q "was removed" "$TMP/e" &&
  ! ls "$TMP/c/models--org--tiny/blobs/" | grep -q incomplete && [ ! -e "$TMP/c/models--org--tiny/refs/main" ]
check corrupted_byte_caught $? "exit $rc: $(cat "$TMP/e")"
HF_ENDPOINT=$HUB "$BIN" download org/tiny --download-dir "$TMP/c" >/dev/null 2>"$TMP/e"
check corrupted_then_clean_download $? "$(cat "$TMP/e")"

# --- not enough disk space: the file and the bytes needed ---
start_hub huge --huge-size
HF_ENDPOINT=$HUB "$BIN" download org/tiny --download-dir "$TMP/h" >/dev/null 2>"$TMP/e"; rc=$?
[ $rc -eq 1 ] && grep -Eq "^error: [a-z0-9.-]+(json|safetensors): not enough disk space in $TMP/h/models--org--tiny/blobs: 1000000000000000 bytes needed, [0-9]+ free" "$TMP/e"
check disk_space_named $? "exit $rc: $(cat "$TMP/e")"

# --- a disk that fills during a download (a 160 KiB tmpfs; needs the right to mount one) ---
start_hub nosize --no-linked-size
mkdir -p "$TMP/small"
if mount -t tmpfs -o size=160k tmpfs "$TMP/small" 2>/dev/null; then
  MOUNTED=$TMP/small
  HF_ENDPOINT=$HUB "$BIN" download org/tiny --download-dir "$TMP/small" --max-workers 1 >/dev/null 2>"$TMP/e"; rc=$?
  [ $rc -eq 1 ] && grep -Eq "^error: model-[0-9-]+of-00006.safetensors: disk full writing $TMP/small/models--org--tiny/blobs/[0-9a-f]{64}.incomplete after [0-9]+ bytes \(the hub gave no size\), [0-9]+ free in $TMP/small/models--org--tiny/blobs; [0-9]+ bytes are kept" "$TMP/e"
  check disk_full_named $? "exit $rc: $(cat "$TMP/e")"
else
  echo "skip disk_full_named: cannot mount a small tmpfs here (not root, or no CAP_SYS_ADMIN)"
fi
# the same hub without sizes still gives a complete, checked download
HF_ENDPOINT=$HUB "$BIN" download org/tiny --download-dir "$TMP/nosize" >/dev/null 2>"$TMP/e" &&
  cmp -s "$M/model-00006-of-00006.safetensors" "$TMP/nosize/models--org--tiny/snapshots/$C_MAIN/model-00006-of-00006.safetensors"
check download_without_linked_size $? "$(cat "$TMP/e")"
