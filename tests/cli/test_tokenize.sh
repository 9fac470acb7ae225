#!/usr/bin/env bash
# test_tokenize.sh — `qserve tokenize` / `qserve detokenize` end to end: ids as one JSON line,
# --no-special-tokens, stdin input, round trips, --help, and clear errors with non-zero exits.
set -u
BIN=${QSERVE_BIN:-build/qserve}
DATA=${QSERVE_SHARED_DATA:-../shared/data}
SMALL=tests/data/tokenizer/llama2_style
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

check() { # name, command-status (0 = pass)
  if [ "$2" -eq 0 ]; then echo "ok $1"; else echo "not ok $1"; fi
}

"$BIN" tokenize --help >"$tmp/h" 2>&1; rc=$?
grep -q -- "--no-special-tokens" "$tmp/h"; check tokenize_help $(( rc == 0 ? $? : 1 ))
"$BIN" detokenize --help >"$tmp/h" 2>&1; rc=$?
grep -q -- "--ids" "$tmp/h"; check detokenize_help $(( rc == 0 ? $? : 1 ))

# The committed Llama-2 style tokenizer needs no shared data: BOS 1 comes from TemplateProcessing.
out=$("$BIN" tokenize "$SMALL" --text "Hello World"); rc=$?
[ $rc -eq 0 ] && [ "$out" = "[1, 357, 284, 319, 306, 279, 350]" ]; check small_tokenize $?
out=$("$BIN" tokenize "$SMALL" --text "Hello World" --no-special-tokens)
[ "$out" = "[357, 284, 319, 306, 279, 350]" ]; check small_no_special_tokens $?
# HF keeps the "▁" of the token after <s> as a space: "<s> Hello World".
out=$("$BIN" detokenize "$SMALL" --ids 1,357,284,319,306,279,350)
[ "$out" = "<s> Hello World" ]; check small_detokenize $?
out=$("$BIN" detokenize "$SMALL" --ids 1,357,284,319,306,279,350 --skip-special-tokens)
[ "$out" = "Hello World" ]; check small_detokenize_skip_special $?

# Errors: missing folder, folder without tokenizer.json, bad and unknown ids, no MODEL_DIR.
"$BIN" tokenize "$tmp/nope" --text hi >/dev/null 2>"$tmp/e"; rc=$?
[ $rc -ne 0 ] && grep -q "$tmp/nope" "$tmp/e"; check error_missing_folder $?
"$BIN" tokenize "$tmp" --text hi >/dev/null 2>"$tmp/e"; rc=$?
[ $rc -ne 0 ] && grep -q "tokenizer.json" "$tmp/e"; check error_no_tokenizer_json $?
"$BIN" detokenize "$SMALL" --ids 1,x,3 >/dev/null 2>"$tmp/e"; rc=$?
[ $rc -ne 0 ] && grep -q -- "--ids" "$tmp/e"; check error_bad_ids $?
"$BIN" detokenize "$SMALL" --ids 1,99999 >/dev/null 2>"$tmp/e"; rc=$?
[ $rc -ne 0 ] && grep -q "99999" "$tmp/e"; check error_unknown_id $?
"$BIN" tokenize >/dev/null 2>"$tmp/e"; rc=$?
[ $rc -eq 2 ] && grep -q "MODEL" "$tmp/e"; check error_no_model_dir $?
printf 'ab\xffcd' | "$BIN" tokenize "$SMALL" >/dev/null 2>"$tmp/e"; rc=$?
[ $rc -ne 0 ] && grep -q "offset 2" "$tmp/e"; check error_invalid_utf8_offset $?

# stdin text (trailing newline included) through tokenize | detokenize comes back byte for byte;
# CJK and emoji go through <0xNN> byte fallback in the small tokenizer.
text=$'Janet’s ducks lay 16 eggs 😀 per day.\n  多 spaces\t\n'
printf '%s' "$text" | "$BIN" tokenize "$SMALL" --no-special-tokens >"$tmp/ids" && \
  "$BIN" detokenize "$SMALL" <"$tmp/ids" >"$tmp/back" && printf '%s' "$text" | cmp -s - "$tmp/back"
check stdin_roundtrip_small $?

# Memory: an 8 MiB prompt that is one word (no spaces; this tokenizer has no pre-tokenizer, so any
# prompt is one word) costs at most 8x its size above a tiny prompt's peak RSS — the ids alone are
# 4 bytes a character here. BPE merges it piece by piece (src/tokenizer/bpe_pieces.c).
python3 -c 'import random, sys; random.seed(5); sys.stdout.write("".join(random.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(8 << 20)))' >"$tmp/word"
peak_kb() { python3 - "$BIN" "${2:-$SMALL}" "$1" <<'PY'
import resource, subprocess, sys
with open(sys.argv[3], "rb") as f:
    rc = subprocess.run([sys.argv[1], "tokenize", sys.argv[2]], stdin=f, stdout=subprocess.DEVNULL).returncode
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss if rc == 0 else -1)
PY
}
printf 'hi' >"$tmp/tiny"
# Under ASan the allocator's redzones and shadow memory count in the peak too, so a sanitized build
# prints the figures and skips the bound (the plain build, which CI also runs, enforces it).
sanitized=0
if ldd "$BIN" 2>/dev/null | grep -q libasan; then
  sanitized=1
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0"
fi
check_bound() { # name status
  if [ "$sanitized" = 1 ]; then echo "skip $1: a sanitized build (ASan's own memory counts in the peak)"; else check "$1" "$2"; fi
}
base=$(peak_kb "$tmp/tiny"); big=$(peak_kb "$tmp/word")
echo "# peak RSS: tiny prompt $base kB, 8 MiB word $big kB ($(awk -v a="$base" -v b="$big" 'BEGIN{printf "%.1f", (b-a)/8192}')x)"
[ "$base" -gt 0 ] && [ "$big" -gt 0 ] && [ $(( big - base )) -le $(( 8 * 8192 )) ]
check_bound one_word_8mib_memory_within_8x $?

# Words with no safe cut merge whole, in bpe_compact.c's small records: a run of one character
# outside this vocabulary (byte fallback: never cut), and with Llama-3.1 runs of one letter and of
# spaces (one pre-token each, and "a a" merges everywhere). Each costs at most 8x as well.
within_8x() { # name, file, [tokenizer]
  local b0 b1
  b0=$(peak_kb "$tmp/tiny" "${3:-}"); b1=$(peak_kb "$2" "${3:-}")
  echo "# peak RSS: $1: $(awk -v a="$b0" -v b="$b1" -v n="$(stat -c %s "$2")" 'BEGIN{printf "%.1f", (b-a)*1024/n}')x"
  [ "$b0" -gt 0 ] && [ "$b1" -gt 0 ] && [ $(( (b1 - b0) * 1024 )) -le $(( 8 * $(stat -c %s "$2") )) ]
  check_bound "$1" $?
}
python3 -c 'import sys; sys.stdout.write("é" * (4 << 20))' >"$tmp/run"
within_8x e_acute_run_8mib_memory_within_8x "$tmp/run"
if [ -f "$DATA/tokenizers/llama3_1/tokenizer.json" ]; then
  python3 -c 'import sys; sys.stdout.write("a" * (8 << 20))' >"$tmp/run"
  within_8x llama3_letter_run_8mib_memory_within_8x "$tmp/run" "$DATA/tokenizers/llama3_1"
  python3 -c 'import sys; sys.stdout.write(" " * (8 << 20))' >"$tmp/run"
  within_8x llama3_space_run_8mib_memory_within_8x "$tmp/run" "$DATA/tokenizers/llama3_1"
fi

# The real tokenizers (their full behaviour is covered by the unit suites; these check the CLI).
if [ ! -f "$DATA/tokenizers/qwen3/tokenizer.json" ]; then
  for t in qwen3_im_tokens llama3_bos; do echo "skip $t: $DATA/tokenizers absent"; done
  exit 0
fi
out=$("$BIN" tokenize "$DATA/tokenizers/qwen3" --text $'<|im_start|>user\nhi<|im_end|>')
[ "$out" = "[151644, 872, 198, 6023, 151645]" ]; check qwen3_im_tokens $?
out=$("$BIN" tokenize "$DATA/tokenizers/llama3_1" --text "Hello World")
[ "$out" = "[128000, 9906, 4435]" ]; check llama3_bos $?
