/* test_tokenizer.c — tokenizer behaviour beyond the goldens: GSM8K round trips and streaming
 * decode on the real Qwen3 and Llama-3.1 tokenizers (loaded once), UTF-8 and id errors,
 * unsupported components named in errors, tokenizer_config.json handling, Metaspace split and
 * added-token flags on small hand-built tokenizers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <uninorm.h>

#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_internal.h" /* piecewise, to compare pieces with whole words */
#include "encode_compare.h"
#include "util/fileio.h"

static qs_tokenizer *qwen3, *llama3;
static char **questions;
static size_t n_questions;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static qs_tokenizer *load_shared(const char *name)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tokenizers/%s", qs_shared_data_dir(), name);
    if (!qs_file_exists(dir))
        return NULL;
    qs_err err;
    qs_tokenizer *tok;
    double t0 = now_s();
    if (qs_tokenizer_load(dir, &tok, &err)) {
        fprintf(stderr, "load %s: %s\n", dir, err.msg);
        return NULL;
    }
    printf("loaded %s in %.0f ms\n", name, (now_s() - t0) * 1e3);
    return tok;
}

static int setup(void **state)
{
    qwen3 = load_shared("qwen3");
    llama3 = load_shared("llama3_1");
    char path[1024], *text;
    snprintf(path, sizeof path, "%s/gsm8k/test.jsonl", qs_shared_data_dir());
    qs_err err;
    if (qs_read_file(path, &text, NULL, &err) == 0) {
        size_t cap = 2048;
        questions = malloc(cap * sizeof *questions);
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
            cJSON *o = cJSON_Parse(line);
            const cJSON *q = cJSON_GetObjectItem(o, "question");
            if (cJSON_IsString(q) && n_questions < cap)
                questions[n_questions++] = strdup(q->valuestring);
            cJSON_Delete(o);
        }
        free(text);
    }
    return 0;
}

static int teardown(void **state)
{
    qs_tokenizer_free(qwen3);
    qs_tokenizer_free(llama3);
    for (size_t i = 0; i < n_questions; i++)
        free(questions[i]);
    free(questions);
    return 0;
}

static void need_shared(void)
{
    if (!qwen3 || !llama3 || !n_questions) {
        printf("skip: shared tokenizers or GSM8K absent under %s\n", qs_shared_data_dir());
        skip();
    }
}

static void roundtrip_all(qs_tokenizer *tok, const char *name)
{
    qs_err err;
    size_t total_ids = 0;
    for (size_t i = 0; i < n_questions; i++) {
        const char *q = questions[i];
        int32_t *ids;
        size_t n;
        char *back;
        assert_int_equal(qs_tokenizer_encode(tok, q, strlen(q), true, &ids, &n, &err), 0);
        assert_int_equal(qs_tokenizer_decode(tok, ids, n, true, &back, &err), 0);
        if (strcmp(back, q))
            fprintf(stderr, "%s: question %zu does not round-trip:\n  %s\n  %s\n", name, i, q, back);
        assert_string_equal(back, q);
        total_ids += n;
        free(back);
        free(ids);
    }
    printf("%s: %zu GSM8K questions round-trip (%zu tokens)\n", name, n_questions, total_ids);
}

static void gsm8k_roundtrip_qwen3(void **state)
{
    need_shared();
    roundtrip_all(qwen3, "qwen3");
}

static void gsm8k_roundtrip_llama3(void **state)
{
    need_shared();
    roundtrip_all(llama3, "llama3_1");
}

/* Decodes ids one at a time through a stream and checks the concatenation equals the full decode
 * and that no piece ends inside a UTF-8 character. */
static void stream_matches(qs_tokenizer *tok, const int32_t *ids, size_t n, bool skip_special)
{
    qs_err err;
    char *full;
    size_t full_len;
    assert_int_equal(qs_tokenizer_decode_n(tok, ids, n, skip_special, &full, &full_len, &err), 0);
    qs_decode_stream *s = qs_decode_stream_new(tok, skip_special);
    assert_non_null(s);
    size_t cap = full_len + 64, len = 0;
    char *acc = malloc(cap);
    for (size_t i = 0; i <= n; i++) {
        const char *out;
        size_t out_len;
        if (i < n)
            assert_int_equal(qs_decode_stream_push(s, ids[i], &out, &out_len, &err), 0);
        else
            assert_int_equal(qs_decode_stream_flush(s, &out, &out_len), 0);
        if (out_len) { /* a piece must end on a character boundary */
            unsigned char last = (unsigned char)out[out_len - 1];
            assert_true(last < 0x80 || (last & 0xC0) == 0x80);
        }
        assert_true(len + out_len < cap);
        memcpy(acc + len, out, out_len);
        len += out_len;
    }
    assert_int_equal(len, full_len);
    assert_memory_equal(acc, full, len);
    free(acc);
    free(full);
    qs_decode_stream_free(s);
}

static void stream_text(qs_tokenizer *tok, const char *text, bool add_special, bool skip_special)
{
    qs_err err;
    int32_t *ids;
    size_t n;
    assert_int_equal(qs_tokenizer_encode(tok, text, strlen(text), add_special, &ids, &n, &err), 0);
    stream_matches(tok, ids, n, skip_special);
    free(ids);
}

static void stream_decode_equals_full(void **state)
{
    need_shared();
    const char *multi = "emoji 😀👍🏽 👨‍👩‍👧‍👦 日本語のテキスト 中文测试 <|im_start|>x<|im_end|> café";
    qs_tokenizer *toks[2] = {qwen3, llama3};
    for (int t = 0; t < 2; t++) {
        stream_text(toks[t], multi, true, false);
        stream_text(toks[t], multi, true, true);
        for (size_t i = 0; i < n_questions; i += 25)
            stream_text(toks[t], questions[i], true, false);
    }
}

static void stream_holds_back_partial_utf8(void **state)
{
    need_shared();
    /* "😀" is four bytes; byte-level gives one token per byte when split apart. */
    int32_t ids[4];
    const char bytes[4][3] = {"\xC3\xB0", "\xC5\x81", "\xC4\xBA", "\xC4\xA2"}; /* F0 9F 98 80 as byte chars */
    for (int i = 0; i < 4; i++) {
        ids[i] = qs_tokenizer_token_to_id(qwen3, bytes[i]);
        assert_true(ids[i] >= 0);
    }
    qs_err err;
    qs_decode_stream *s = qs_decode_stream_new(qwen3, false);
    const char *out;
    size_t len;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(qs_decode_stream_push(s, ids[i], &out, &len, &err), 0);
        assert_int_equal(len, 0);
    }
    assert_int_equal(qs_decode_stream_push(s, ids[3], &out, &len, &err), 0);
    assert_int_equal(len, 4);
    assert_memory_equal(out, "\xF0\x9F\x98\x80", 4);
    qs_decode_stream_free(s);

    /* An incomplete tail comes out of flush as U+FFFD. */
    s = qs_decode_stream_new(qwen3, false);
    assert_int_equal(qs_decode_stream_push(s, ids[0], &out, &len, &err), 0);
    assert_int_equal(len, 0);
    assert_int_equal(qs_decode_stream_flush(s, &out, &len), 0);
    assert_int_equal(len, 3);
    assert_memory_equal(out, "\xEF\xBF\xBD", 3);
    /* An unknown id is an error naming it. */
    assert_int_equal(qs_decode_stream_push(s, 99999999, &out, &len, &err), -1);
    assert_non_null(strstr(err.msg, "99999999"));
    qs_decode_stream_free(s);
}

static void invalid_utf8_rejected_with_offset(void **state)
{
    need_shared();
    qs_err err;
    int32_t *ids;
    size_t n;
    const char *bad[] = {"ab\xff" "cd", "ab\xc3", "ab\xed\xa0\x80", "ab\xc0\xaf"};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(qs_tokenizer_encode(qwen3, bad[i], strlen(bad[i]), true, &ids, &n, &err), -1);
        assert_non_null(strstr(err.msg, "invalid UTF-8"));
        assert_non_null(strstr(err.msg, "offset 2"));
    }
    /* Embedded NUL is valid UTF-8 and encodes. */
    assert_int_equal(qs_tokenizer_encode(qwen3, "a\0b", 3, false, &ids, &n, &err), 0);
    assert_int_equal(n, 3);
    free(ids);
}

static void unknown_id_rejected(void **state)
{
    need_shared();
    qs_err err;
    char *text;
    int32_t ids[] = {9707, 151669};
    assert_int_equal(qs_tokenizer_decode(qwen3, ids, 2, false, &text, &err), -1);
    assert_non_null(strstr(err.msg, "151669"));
    int32_t neg[] = {-5};
    assert_int_equal(qs_tokenizer_decode(llama3, neg, 1, false, &text, &err), -1);
    assert_non_null(strstr(err.msg, "-5"));
}

static void accessors_match_the_files(void **state)
{
    need_shared();
    assert_int_equal(qs_tokenizer_vocab_size(qwen3), 151669);
    assert_int_equal(qs_tokenizer_vocab_size(llama3), 128256);
    assert_int_equal(qs_tokenizer_eos_id(qwen3), 151645);
    assert_string_equal(qs_tokenizer_eos_token(qwen3), "<|im_end|>");
    assert_int_equal(qs_tokenizer_bos_id(qwen3), -1);
    assert_false(qs_tokenizer_adds_bos(qwen3));
    assert_int_equal(qs_tokenizer_bos_id(llama3), 128000);
    assert_int_equal(qs_tokenizer_eos_id(llama3), 128009);
    assert_true(qs_tokenizer_adds_bos(llama3));
    assert_true(qs_tokenizer_is_special(llama3, 128009));
    assert_false(qs_tokenizer_is_special(llama3, 9906));
    assert_string_equal(qs_tokenizer_id_to_token(llama3, 9906), "Hello");
    assert_int_equal(qs_tokenizer_token_to_id(qwen3, "<think>"), 151667);
    assert_null(qs_tokenizer_id_to_token(qwen3, 151669));
    assert_non_null(strstr(qs_tokenizer_chat_template(qwen3), "enable_thinking"));
    assert_non_null(strstr(qs_tokenizer_chat_template(llama3), "start_header_id"));
}

typedef struct {
    qs_tokenizer *tok;
    int rc;
    size_t total;
} thread_job;

static void *encode_many(void *p)
{
    thread_job *j = p;
    qs_err err;
    for (size_t i = 0; i < n_questions && !j->rc; i += 3) {
        int32_t *ids;
        size_t n;
        j->rc = qs_tokenizer_encode(j->tok, questions[i], strlen(questions[i]), false, &ids, &n, &err);
        if (!j->rc)
            free(ids);
        j->total += n;
    }
    return NULL;
}

static void concurrent_encode_agrees(void **state)
{
    need_shared();
    thread_job a = {llama3, 0, 0}, b = {llama3, 0, 0};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, encode_many, &a);
    pthread_create(&tb, NULL, encode_many, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    assert_int_equal(a.rc, 0);
    assert_int_equal(b.rc, 0);
    assert_int_equal(a.total, b.total);
    assert_true(a.total > 0);
}

/* Random strings from a mixed alphabet (ASCII, Latin-1, combining marks, CJK, emoji, ZWJ, control
 * characters, whitespace runs) must come back from decode(encode(x)): exactly for Llama-3.1 and the
 * Llama-2 style tokenizer, as NFC(x) for Qwen3 whose normalizer is NFC. */
static const char *ALPHABET[] = {"a", "Z", "7", " ", "  ", "\n", "\t", "\r\n", "'", "'s", "!", "{", "\\", "\x01",
                                 "\xc3\xa9", "e\xcc\x81", "\xcc\x88", "\xe4\xb8\xad", "\xe3\x81\x82",
                                 "\xf0\x9f\x98\x80", "\xe2\x80\x8d", "\xf0\x9f\x91\xa9", "\xc2\xa0", "\xe2\x80\xaf",
                                 "\xef\xbf\xbd", "\xf4\x8f\xbf\xbf", "123456", "DON'T", "<|", "|>"};

static void random_text(unsigned *seed, char *out, size_t cap)
{
    size_t len = 0, n = 1 + (size_t)(rand_r(seed) % 40);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        const char *piece = ALPHABET[rand_r(seed) % (sizeof ALPHABET / sizeof *ALPHABET)];
        size_t pl = strlen(piece);
        if (len + pl + 1 >= cap)
            break;
        memcpy(out + len, piece, pl + 1);
        len += pl;
    }
}

static void random_roundtrip(qs_tokenizer *tok, bool nfc, unsigned seed)
{
    qs_err err;
    char text[512];
    for (int i = 0; i < 2000; i++) {
        random_text(&seed, text, sizeof text);
        int32_t *ids;
        size_t n;
        char *back;
        assert_int_equal(qs_tokenizer_encode(tok, text, strlen(text), true, &ids, &n, &err), 0);
        assert_int_equal(qs_tokenizer_decode(tok, ids, n, true, &back, &err), 0);
        char *want = text;
        size_t want_len = strlen(text);
        uint8_t *norm = nfc ? u8_normalize(UNINORM_NFC, (const uint8_t *)text, want_len, NULL, &want_len) : NULL;
        if (norm)
            want = (char *)norm;
        if (strlen(back) != want_len || memcmp(back, want, want_len)) {
            fprintf(stderr, "round trip differs for '%s': '%s'\n", text, back);
            fail();
        }
        free(norm);
        free(back);
        free(ids);
    }
}

static void random_strings_roundtrip(void **state)
{
    qs_err err;
    qs_tokenizer *small;
    assert_int_equal(qs_tokenizer_load("tests/data/tokenizer/llama2_style", &small, &err), 0);
    random_roundtrip(small, false, 1);
    qs_tokenizer_free(small);
    need_shared();
    random_roundtrip(llama3, false, 2);
    random_roundtrip(qwen3, true, 3);
}

/* ---- long words merged piece by piece (bpe_pieces.c) give the whole word's ids ---- */

/* the whole word in one merge loop, as HF tokenizers runs it */
static void pieces_equal_whole(qs_tokenizer *tok, const char *text, size_t len)
{
    qs_test_encode_same_without(tok, &tok->piecewise, text, len);
}

static void long_words_in_pieces_equal_whole(void **state)
{
    enum { N = 60000 };
    char *text = malloc(N + 1);
    assert_non_null(text);
    /* the GSM8K questions as they are (one word for a tokenizer without a pre-tokenizer), without
     * their spaces, and random text with characters outside the vocabulary (byte fallback) */
    size_t n = 0, k = 0;
    for (size_t q = 0; q < n_questions && n < N; q++)
        for (const char *c = questions[q]; *c && n < N; c++)
            text[n++] = *c;
    for (size_t i = 0; i < n; i++)
        if (text[i] != ' ')
            text[k++] = text[i];
    qs_err err;
    qs_tokenizer *small;
    assert_int_equal(qs_tokenizer_load("tests/data/tokenizer/llama2_style", &small, &err), 0);
    unsigned seed = 7;
    char piece[256];
    for (n = 0; n < N - 256;) {
        random_text(&seed, piece, sizeof piece);
        memcpy(text + n, piece, strlen(piece));
        n += strlen(piece);
    }
    pieces_equal_whole(small, text, n);
    need_shared();
    n = 0;
    for (size_t q = 0; q < n_questions && n < N; q++)
        for (const char *c = questions[q]; *c && n < N; c++)
            text[n++] = *c;
    pieces_equal_whole(small, text, n);
    for (size_t i = k = 0; i < n; i++)
        if (text[i] != ' ' && text[i] != '\n')
            text[k++] = text[i];
    pieces_equal_whole(small, text, k);
    for (size_t i = k = 0; i < n; i++) /* letters only: one pre-token of tens of kilobytes */
        if ((text[i] | 0x20) >= 'a' && (text[i] | 0x20) <= 'z')
            text[k++] = text[i];
    pieces_equal_whole(llama3, text, k);
    pieces_equal_whole(qwen3, text, k);
    qs_tokenizer_free(small);
    free(text);
}

/* ---- small hand-built tokenizers ---- */

static char tmpdir[64];

static void write_dir(const char *tokenizer_json, const char *config_json, const char *jinja)
{
    char path[256];
    strcpy(tmpdir, "/tmp/qs_tok_XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    qs_err err;
    snprintf(path, sizeof path, "%s/tokenizer.json", tmpdir);
    assert_int_equal(qs_write_file(path, tokenizer_json, strlen(tokenizer_json), &err), 0);
    if (config_json) {
        snprintf(path, sizeof path, "%s/tokenizer_config.json", tmpdir);
        assert_int_equal(qs_write_file(path, config_json, strlen(config_json), &err), 0);
    }
    if (jinja) {
        snprintf(path, sizeof path, "%s/chat_template.jinja", tmpdir);
        assert_int_equal(qs_write_file(path, jinja, strlen(jinja), &err), 0);
    }
}

static void remove_dir(void)
{
    char path[256];
    const char *names[] = {"tokenizer.json", "tokenizer_config.json", "chat_template.jinja"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", tmpdir, names[i]);
        unlink(path);
    }
    rmdir(tmpdir);
}

/* vocab: <unk> ▁ a b ▁a ▁▁ ▁b <x> bb; merges ▁+a, ▁+▁, ▁+b */
#define SMALL_MODEL                                                                                                    \
    "\"model\": {\"type\": \"BPE\", \"unk_token\": \"<unk>\", \"vocab\": {\"<unk>\": 0, \"\xe2\x96\x81\": 1, \"a\": 2, "  \
    "\"b\": 3, \"\xe2\x96\x81" "a\": 4, \"\xe2\x96\x81\xe2\x96\x81\": 5, \"\xe2\x96\x81" "b\": 6}, \"merges\": "         \
    "[\"\xe2\x96\x81 a\", [\"\xe2\x96\x81\", \"\xe2\x96\x81\"], \"\xe2\x96\x81 b\"]}"

static const char *metaspace_json(const char *pre)
{
    static char buf[4096];
    snprintf(buf, sizeof buf,
             "{\"added_tokens\": [{\"id\": 7, \"content\": \"<x>\", \"special\": true, \"lstrip\": true, \"rstrip\": true, "
             "\"normalized\": false}, {\"id\": 8, \"content\": \"bb\", \"special\": false, \"single_word\": true, "
             "\"normalized\": false}], \"normalizer\": null, \"pre_tokenizer\": %s, \"post_processor\": null, "
             "\"decoder\": {\"type\": \"Metaspace\", \"replacement\": \"\xe2\x96\x81\", \"prepend_scheme\": \"always\"}, "
             SMALL_MODEL "}",
             pre);
    return buf;
}

static void expect_ids(qs_tokenizer *tok, const char *text, const int32_t *want, size_t n_want)
{
    qs_err err;
    int32_t *ids;
    size_t n;
    assert_int_equal(qs_tokenizer_encode(tok, text, strlen(text), true, &ids, &n, &err), 0);
    if (n != n_want || memcmp(ids, want, n * sizeof *ids)) {
        fprintf(stderr, "'%s':", text);
        for (size_t i = 0; i < n; i++)
            fprintf(stderr, " %d", ids[i]);
        fprintf(stderr, "\n");
    }
    assert_int_equal(n, n_want);
    assert_memory_equal(ids, want, n * sizeof *ids);
    free(ids);
}

static void metaspace_split_and_added_token_flags(void **state)
{
    qs_err err;
    qs_tokenizer *tok;
    /* split true: "a  b" -> ▁a ▁ ▁b */
    write_dir(metaspace_json("{\"type\": \"Metaspace\", \"replacement\": \"\xe2\x96\x81\", \"prepend_scheme\": \"always\", "
                             "\"split\": true}"),
              NULL, NULL);
    assert_int_equal(qs_tokenizer_load(tmpdir, &tok, &err), 0);
    remove_dir();
    expect_ids(tok, "a  b", (int32_t[]){4, 1, 6}, 3);
    /* lstrip/rstrip: the spaces around <x> go with it, each side gets its own ▁ */
    expect_ids(tok, "a <x> b", (int32_t[]){4, 7, 6}, 3);
    /* single_word: "bb" only between non-word characters */
    expect_ids(tok, "a bb", (int32_t[]){4, 1, 8}, 3);
    expect_ids(tok, "abb", (int32_t[]){4, 3, 3}, 3);
    char *text;
    assert_int_equal(qs_tokenizer_decode(tok, (int32_t[]){4, 1, 6}, 3, false, &text, &err), 0);
    assert_string_equal(text, "a  b"); /* Metaspace decoder drops the first token's ▁ */
    free(text);
    qs_tokenizer_free(tok);

    /* split false: "a  b" -> ▁a ▁▁ b; legacy add_prefix_space means "always" */
    write_dir(metaspace_json("{\"type\": \"Metaspace\", \"replacement\": \"\xe2\x96\x81\", \"add_prefix_space\": true, "
                             "\"split\": false}"),
              NULL, NULL);
    assert_int_equal(qs_tokenizer_load(tmpdir, &tok, &err), 0);
    remove_dir();
    expect_ids(tok, "a  b", (int32_t[]){4, 5, 3}, 3);
    qs_tokenizer_free(tok);

    /* prepend_scheme first: only the piece at the start of the input gets ▁ */
    write_dir(metaspace_json("{\"type\": \"Metaspace\", \"replacement\": \"\xe2\x96\x81\", \"prepend_scheme\": \"first\", "
                             "\"split\": true}"),
              NULL, NULL);
    assert_int_equal(qs_tokenizer_load(tmpdir, &tok, &err), 0);
    remove_dir();
    expect_ids(tok, "a<x>b", (int32_t[]){4, 7, 3}, 3);
    qs_tokenizer_free(tok);
}

static void expect_load_error(const char *json, const char *needle)
{
    qs_err err;
    qs_tokenizer *tok;
    write_dir(json, NULL, NULL);
    int rc = qs_tokenizer_load(tmpdir, &tok, &err);
    remove_dir();
    assert_int_equal(rc, -1);
    if (!strstr(err.msg, needle))
        fprintf(stderr, "error '%s' does not name '%s'\n", err.msg, needle);
    assert_non_null(strstr(err.msg, needle));
}

static void unsupported_components_are_named(void **state)
{
    expect_load_error("{\"model\": {\"type\": \"WordPiece\", \"vocab\": {}}}", "WordPiece");
    expect_load_error("{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}", "Unigram");
    expect_load_error("{\"pre_tokenizer\": {\"type\": \"Whitespace\"}, " SMALL_MODEL "}", "Whitespace");
    expect_load_error("{\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Digits\"}]}, " SMALL_MODEL
                      "}",
                      "Digits");
    expect_load_error("{\"normalizer\": {\"type\": \"BertNormalizer\"}, " SMALL_MODEL "}", "BertNormalizer");
    expect_load_error("{\"decoder\": {\"type\": \"WordPiece\"}, " SMALL_MODEL "}", "WordPiece");
    expect_load_error("{\"post_processor\": {\"type\": \"RobertaProcessing\"}, " SMALL_MODEL "}", "RobertaProcessing");
    expect_load_error("{\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"(a\"}}, " SMALL_MODEL "}", "(a");
    expect_load_error("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [\"a z\"]}}", "merges[0]");
    expect_load_error("{\"model\": ", "not valid JSON");
    qs_err err;
    qs_tokenizer *tok;
    assert_int_equal(qs_tokenizer_load("/nonexistent/model", &tok, &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent/model"));
}

static void config_tokens_and_templates(void **state)
{
    qs_err err;
    qs_tokenizer *tok;
    const char *json = "{\"added_tokens\": [{\"id\": 0, \"content\": \"<unk>\", \"special\": true}], "
                       "\"pre_tokenizer\": {\"type\": \"Metaspace\"}, " SMALL_MODEL "}";
    /* AddedToken objects for bos/eos, a template list, add_bos_token with no TemplateProcessing. */
    write_dir(json,
              "{\"bos_token\": {\"content\": \"\xe2\x96\x81" "a\", \"lstrip\": false}, \"eos_token\": \"b\", "
              "\"add_bos_token\": true, \"chat_template\": [{\"name\": \"tool_use\", \"template\": \"T\"}, "
              "{\"name\": \"default\", \"template\": \"D\"}]}",
              NULL);
    assert_int_equal(qs_tokenizer_load(tmpdir, &tok, &err), 0);
    remove_dir();
    assert_int_equal(qs_tokenizer_bos_id(tok), 4);
    assert_int_equal(qs_tokenizer_eos_id(tok), 3);
    assert_true(qs_tokenizer_adds_bos(tok));
    assert_string_equal(qs_tokenizer_chat_template(tok), "D");
    expect_ids(tok, "b", (int32_t[]){4, 6}, 2);
    qs_tokenizer_free(tok);

    /* chat_template.jinja beside the files wins over the config's. */
    write_dir(json, "{\"chat_template\": \"from config\"}", "from jinja {{ x }}");
    assert_int_equal(qs_tokenizer_load(tmpdir, &tok, &err), 0);
    remove_dir();
    assert_string_equal(qs_tokenizer_chat_template(tok), "from jinja {{ x }}");
    assert_false(qs_tokenizer_adds_bos(tok));
    qs_tokenizer_free(tok);

    /* A bos_token missing from the vocab is an error naming it. */
    write_dir(json, "{\"bos_token\": \"<nope>\"}", NULL);
    assert_int_equal(qs_tokenizer_load(tmpdir, &tok, &err), -1);
    remove_dir();
    assert_non_null(strstr(err.msg, "<nope>"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gsm8k_roundtrip_qwen3),
        cmocka_unit_test(long_words_in_pieces_equal_whole),
        cmocka_unit_test(gsm8k_roundtrip_llama3),
        cmocka_unit_test(stream_decode_equals_full),
        cmocka_unit_test(stream_holds_back_partial_utf8),
        cmocka_unit_test(invalid_utf8_rejected_with_offset),
        cmocka_unit_test(unknown_id_rejected),
        cmocka_unit_test(accessors_match_the_files),
        cmocka_unit_test(concurrent_encode_agrees),
        cmocka_unit_test(random_strings_roundtrip),
        cmocka_unit_test(metaspace_split_and_added_token_flags),
        cmocka_unit_test(unsupported_components_are_named),
        cmocka_unit_test(config_tokens_and_templates),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
