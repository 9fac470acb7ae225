/* test_safetensors.c — the safetensors reader against hand-built files (one per validation rule,
 * each asserting that the message names the file and the tensor), sharded checkpoints, the
 * headers-only mode, the writer (round trips, single and sharded, validation), and the dtype
 * conversions (bf16 / f16 round to nearest even, subnormals, inf, NaN). Files are written into a
 * mkdtemp folder that is removed afterwards. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/safetensors.h"
#include "io/safetensors_writer.h"
#include "util/fileio.h"

static char g_dir[64];

static int setup(void **state)
{
    strcpy(g_dir, "/tmp/qs_test_st_XXXXXX");
    return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static const char *path_in(char *buf, const char *sub)
{
    snprintf(buf, 512, "%s/%s", g_dir, sub);
    return buf;
}

/* Writes an 8-byte length (hlen_override when non-zero), the header text, then data_len bytes
 * (byte i = i & 0xff). */
static void write_st(const char *path, const char *header, uint64_t hlen_override, size_t data_len)
{
    size_t hn = strlen(header);
    uint64_t hlen = hlen_override ? hlen_override : hn;
    uint8_t *buf = malloc(8 + hn + data_len + 1);
    for (int i = 0; i < 8; i++)
        buf[i] = (uint8_t)(hlen >> (8 * i));
    memcpy(buf + 8, header, hn);
    for (size_t i = 0; i < data_len; i++)
        buf[8 + hn + i] = (uint8_t)i;
    qs_err e;
    assert_int_equal(qs_write_file(path, buf, 8 + hn + data_len, &e), 0);
    free(buf);
}

/* Opening must fail with a message naming the file, `tensor` (when given, quoted) and `what`. */
static void open_fails(const char *path, const char *tensor, const char *what)
{
    qs_safetensors_file *f = (void *)1;
    qs_err e = {{0}};
    assert_int_equal(qs_safetensors_open(path, &f, &e), -1);
    assert_null(f);
    char quoted[256];
    snprintf(quoted, sizeof quoted, "'%s'", tensor ? tensor : "");
    if (!strstr(e.msg, path) || (tensor && !strstr(e.msg, quoted)) || !strstr(e.msg, what))
        fail_msg("message \"%s\" should name %s, %s and say \"%s\"", e.msg, path, tensor ? quoted : "-", what);
    /* The headers-only reader applies exactly the same rules. */
    qs_err e2 = {{0}};
    assert_int_equal(qs_safetensors_open_headers(path, &f, &e2), -1);
    assert_string_equal(e.msg, e2.msg);
}

static void bad_file(const char *header, size_t data_len, const char *tensor, const char *what)
{
    char p[512];
    path_in(p, "bad.safetensors");
    write_st(p, header, 0, data_len);
    open_fails(p, tensor, what);
}

/* ---- reader ----------------------------------------------------------------------------------- */

#define VALID_HEADER                                                                                   \
    "{\"__metadata__\":{\"format\":\"pt\",\"note\":\"h\\u00e9\"},"                                   \
    "\"b.weight\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[24,32]},"                        \
    "\"a.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"                        \
    "\"empty\":{\"dtype\":\"I64\",\"shape\":[0,5],\"data_offsets\":[32,32]},"                          \
    "\"scalar\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[32,33]}}   "

static void check_valid(qs_safetensors_file *f, const uint8_t *data)
{
    assert_int_equal(qs_safetensors_count(f), 4);
    /* listed in data-offset order */
    const qs_tensor *a = qs_safetensors_tensor(f, 0);
    assert_string_equal(a->name, "a.weight");
    assert_int_equal(a->dtype, QS_DT_F32);
    assert_int_equal(a->ndim, 2);
    assert_int_equal(a->shape[0], 2);
    assert_int_equal(a->shape[1], 3);
    assert_int_equal(a->numel, 6);
    assert_int_equal(a->nbytes, 24);
    const qs_tensor *b = qs_safetensors_find(f, "b.weight");
    assert_non_null(b);
    assert_ptr_equal(b, qs_safetensors_tensor(f, 1));
    assert_int_equal(b->dtype, QS_DT_BF16);
    assert_int_equal(b->numel, 4);
    const qs_tensor *em = qs_safetensors_find(f, "empty");
    assert_int_equal(em->numel, 0);
    assert_int_equal(em->nbytes, 0);
    const qs_tensor *s = qs_safetensors_find(f, "scalar");
    assert_int_equal(s->ndim, 0);
    assert_int_equal(s->numel, 1);
    assert_int_equal(s->nbytes, 1);
    assert_null(qs_safetensors_find(f, "missing"));
    assert_string_equal(qs_safetensors_metadata(f, "format"), "pt");
    assert_string_equal(qs_safetensors_metadata(f, "note"), "h\xc3\xa9");
    assert_null(qs_safetensors_metadata(f, "other"));
    assert_int_equal(qs_safetensors_metadata_count(f), 2);
    if (data) {
        assert_ptr_equal(a->data, data);
        assert_ptr_equal(b->data, data + 24);
        assert_ptr_equal(s->data, data + 32);
        assert_int_equal(((const uint8_t *)s->data)[0], 32);
        uint8_t want[4] = {24, 25, 26, 27};
        assert_memory_equal(b->data, want, 4);
        float x;
        memcpy(&x, data + 4, 4);
        assert_true(qs_tensor_get_f32(a, 1) == x || (isnan(x) && isnan(qs_tensor_get_f32(a, 1))));
        assert_float_equal(qs_tensor_get_f32(s, 0), 32.0f, 0);
    } else {
        assert_null(a->data);
        assert_null(b->data);
        assert_true(isnan(qs_tensor_get_f32(a, 0)));
    }
}

static void valid_file_reads_back(void **state)
{
    char p[512];
    path_in(p, "model.safetensors");
    write_st(p, VALID_HEADER, 0, 33);
    qs_safetensors_file *f;
    qs_err e = {{0}};
    assert_int_equal(qs_safetensors_open(p, &f, &e), 0);
    size_t hn = strlen(VALID_HEADER);
    /* the data section starts right after the header in the mapping */
    check_valid(f, (const uint8_t *)qs_safetensors_tensor(f, 0)->data);
    assert_string_equal(qs_safetensors_tensor(f, 0)->file, p);
    assert_string_equal(qs_safetensors_path(f), p);
    qs_safetensors_close(f);

    /* in memory */
    char *buf;
    size_t len;
    assert_int_equal(qs_read_file(p, &buf, &len, &e), 0);
    assert_int_equal(len, 8 + hn + 33);
    assert_int_equal(qs_safetensors_parse((const uint8_t *)buf, len, "mem.safetensors", &f, &e), 0);
    check_valid(f, (const uint8_t *)buf + 8 + hn);
    assert_string_equal(qs_safetensors_tensor(f, 0)->file, "mem.safetensors");
    qs_safetensors_close(f);
    free(buf);

    /* headers only: same tensors, no data */
    assert_int_equal(qs_safetensors_open_headers(p, &f, &e), 0);
    check_valid(f, NULL);
    qs_safetensors_close(f);
}

static void empty_header_object_is_valid(void **state)
{
    char p[512];
    path_in(p, "empty.safetensors");
    write_st(p, "{}      ", 0, 0);
    qs_safetensors_file *f;
    qs_err e;
    assert_int_equal(qs_safetensors_open(p, &f, &e), 0);
    assert_int_equal(qs_safetensors_count(f), 0);
    qs_safetensors_close(f);
}

static void truncated_file(void **state)
{
    char p[512];
    path_in(p, "short.safetensors");
    qs_err e;
    assert_int_equal(qs_write_file(p, "\x10\x00\x00", 3, &e), 0);
    open_fails(p, NULL, "truncated");
    assert_int_equal(qs_write_file(p, "", 0, &e), 0);
    open_fails(p, NULL, "truncated");
    /* The data section is cut short: the tensor that runs past the end is named. */
    bad_file("{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 10, "w", "past the end");
}

static void header_length_bounds(void **state)
{
    char p[512];
    path_in(p, "len.safetensors");
    write_st(p, "{}", 200000000ull, 0);
    open_fails(p, NULL, "100000000");
    write_st(p, "{}", 64, 0);
    open_fails(p, NULL, "past the end of the file");
    write_st(p, "{}", 1, 0);
    open_fails(p, NULL, "too short");
}

static void header_not_an_object(void **state)
{
    bad_file("[1, 2, 3]", 0, NULL, "not a JSON object");
    bad_file("\"tensors\"", 0, NULL, "not a JSON object");
    bad_file("{\"a\": {\"dtype\": \"F32\"", 0, NULL, "not valid JSON");
    bad_file("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}} {}", 4, NULL, "trailing");
    bad_file("{\"a\": [1]}", 0, "a", "must be an object");
    bad_file("{\"__metadata__\":{\"format\":1}}", 0, NULL, "must be a string");
    bad_file("{\"__metadata__\":[\"pt\"]}", 0, NULL, "__metadata__");
}

static void offsets_overlap_gap_past_end(void **state)
{
    bad_file("{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
             "\"y\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[12,20]}}", 20, "y", "overlap tensor 'x'");
    bad_file("{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
             "\"y\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[20,28]}}", 28, "y", "gap");
    bad_file("{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[4,20]}}", 20, "x", "gap");
    bad_file("{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
             "\"y\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[16,24]}}", 20, "y", "past the end");
    /* bytes after the last tensor */
    bad_file("{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 24, "x", "8 bytes early");
    bad_file("{\"x\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,0]}}", 8, "x", "end before they begin");
    bad_file("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4, "x", "data_offsets");
    bad_file("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", 4, "x", "non-negative");
    bad_file("{\"x\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "x", "missing \"data_offsets\"");
}

static void bad_dtype(void **state)
{
    bad_file("{\"x\":{\"dtype\":\"F33\",\"shape\":[4],\"data_offsets\":[0,16]}}", 16, "x", "unsupported dtype \"F33\"");
    bad_file("{\"x\":{\"dtype\":\"C64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8, "x", "supported: F64, F32");
    bad_file("{\"x\":{\"dtype\":7,\"shape\":[4],\"data_offsets\":[0,16]}}", 16, "x", "dtype must be a string");
}

static void shape_size_mismatch(void **state)
{
    bad_file("{\"x\":{\"dtype\":\"BF16\",\"shape\":[2,3],\"data_offsets\":[0,16]}}", 16, "x", "needs 12");
    bad_file("{\"x\":{\"dtype\":\"F32\",\"shape\":[2,-3],\"data_offsets\":[0,0]}}", 0, "x", "shape[1]");
    bad_file("{\"x\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,0]}}", 0, "x", "shape[0]");
    bad_file("{\"x\":{\"dtype\":\"F32\",\"shape\":[\"2\"],\"data_offsets\":[0,8]}}", 8, "x", "shape[0]");
    bad_file("{\"x\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4, "x", "9 dimensions");
}

static void numel_overflow(void **state)
{
    bad_file("{\"x\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,0]}}", 0, "x", "overflow");
    bad_file("{\"x\":{\"dtype\":\"F64\",\"shape\":[1125899906842624, 4096],\"data_offsets\":[0,0]}}", 0, "x", "overflow");
    /* a zero dimension makes it empty, whatever the others */
    char p[512];
    path_in(p, "zero.safetensors");
    write_st(p, "{\"x\":{\"dtype\":\"F32\",\"shape\":[0,4294967296,4294967296],\"data_offsets\":[0,0]}}", 0, 0);
    qs_safetensors_file *f;
    qs_err e;
    assert_int_equal(qs_safetensors_open(p, &f, &e), 0);
    assert_int_equal(qs_safetensors_tensor(f, 0)->numel, 0);
    qs_safetensors_close(f);
}

static void duplicate_tensor(void **state)
{
    bad_file("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
             "\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "x", "appears twice");
    bad_file("{\"x\":{\"dtype\":\"F32\",\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "x", "twice");
    bad_file("{\"__metadata__\":{},\"__metadata__\":{}}", 0, NULL, "__metadata__ appears twice");
}

static void non_utf8_name(void **state)
{
    bad_file("{\"bad\xff name\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, NULL,
             "tensor name \"bad\\xff name\"");
    bad_file("{\"over\xc0\xaflong\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, NULL, "not valid UTF-8");
    bad_file("{\"surrogate\xed\xa0\x80\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, NULL, "not valid UTF-8");
    bad_file("{\"cut\\u0000name\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, NULL, "\\u0000");
    bad_file("{\"tab\tname\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, NULL, "control character");
    bad_file("{\"\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "", "empty tensor name");
    /* escaped and raw UTF-8 names are fine */
    char p[512];
    path_in(p, "utf8.safetensors");
    write_st(p, "{\"caf\xc3\xa9\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                "\"\\u00e9t\\u00e9\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}", 0, 2);
    qs_safetensors_file *f;
    qs_err e;
    assert_int_equal(qs_safetensors_open(p, &f, &e), 0);
    assert_non_null(qs_safetensors_find(f, "caf\xc3\xa9"));
    assert_non_null(qs_safetensors_find(f, "\xc3\xa9t\xc3\xa9"));
    qs_safetensors_close(f);
}

/* A file written by safetensors.torch.save_file (tests/data/safetensors/README.md): the values
 * torch printed for it. */
static void reads_torch_written_file(void **state)
{
    const char *p = "tests/data/safetensors/torch_save_file.safetensors";
    qs_safetensors_file *f;
    qs_err e = {{0}};
    if (qs_safetensors_open(p, &f, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(qs_safetensors_count(f), 11);
    assert_string_equal(qs_safetensors_metadata(f, "k"), "v");
    static const struct {
        const char *name;
        qs_dtype dt;
        int64_t numel, i;
        float want;
    } cases[] = {
        {"model.embed_tokens.weight", QS_DT_BF16, 35, 0, -1.125f},
        {"model.embed_tokens.weight", QS_DT_BF16, 35, 34, -1.203125f},
        {"w_f32", QS_DT_F32, 9, 8, 1.717895269393921f},
        {"w_f16", QS_DT_F16, 4, 3, -1.193359375f},
        {"w_e4m3", QS_DT_F8_E4M3, 32, 4, 0.0859375f},
        {"w_e4m3", QS_DT_F8_E4M3, 32, 21, -256.0f},
        {"w_e5m2", QS_DT_F8_E5M2, 6, 1, -96.0f},
        {"scale", QS_DT_F32, 1, 0, 0.5f},
        {"ids", QS_DT_I64, 3, 1, -2.0f},
        {"u8", QS_DT_U8, 4, 3, 250.0f},
        {"mask", QS_DT_BOOL, 2, 0, 1.0f},
        {"i16", QS_DT_I16, 2, 0, -300.0f},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const qs_tensor *t = qs_safetensors_find(f, cases[k].name);
        assert_non_null(t);
        assert_int_equal(t->dtype, cases[k].dt);
        assert_int_equal(t->numel, cases[k].numel);
        assert_float_equal(qs_tensor_get_f32(t, cases[k].i), cases[k].want, 0);
    }
    const qs_tensor *emb = qs_safetensors_find(f, "model.embed_tokens.weight");
    assert_int_equal(emb->ndim, 2);
    assert_int_equal(emb->shape[0], 7);
    assert_int_equal(emb->shape[1], 5);
    assert_int_equal(qs_safetensors_find(f, "scale")->ndim, 0);
    assert_int_equal(qs_safetensors_find(f, "empty")->shape[0], 0);
    qs_safetensors_close(f);
}

/* ---- checkpoints ------------------------------------------------------------------------------ */

static void mkdir_in(char *p, const char *sub)
{
    path_in(p, sub);
    assert_int_equal(mkdir(p, 0755), 0);
}

static void write_text(const char *dir, const char *name, const char *text)
{
    char p[512];
    qs_err e;
    assert_int_equal(qs_write_file(qs_path_join(p, sizeof p, dir, name), text, strlen(text), &e), 0);
}

static void write_shard(const char *dir, const char *name, const char *header, size_t data_len)
{
    char p[512];
    write_st(qs_path_join(p, sizeof p, dir, name), header, 0, data_len);
}

#define SHARD1 "{\"embed\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}"
#define SHARD2 "{\"lm_head\":{\"dtype\":\"BF16\",\"shape\":[2,2],\"data_offsets\":[0,8]}," \
               "\"norm\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}"
#define INDEX "{\"metadata\":{\"total_size\":999},\"weight_map\":{\"embed\":\"model-00001-of-00002.safetensors\"," \
              "\"lm_head\":\"model-00002-of-00002.safetensors\",\"norm\":\"model-00002-of-00002.safetensors\"}}"

static void sharded_checkpoint(void **state)
{
    char d[512];
    mkdir_in(d, "sharded");
    write_shard(d, "model-00001-of-00002.safetensors", SHARD1, 16);
    write_shard(d, "model-00002-of-00002.safetensors", SHARD2, 16);
    write_text(d, "model.safetensors.index.json", INDEX);
    for (int ho = 0; ho < 2; ho++) {
        qs_checkpoint *ck;
        qs_err e = {{0}};
        if (qs_checkpoint_open(d, ho, &ck, &e))
            fail_msg("%s", e.msg);
        assert_int_equal(qs_checkpoint_count(ck), 3);
        assert_int_equal(qs_checkpoint_file_count(ck), 2);
        const qs_tensor *t = qs_checkpoint_find(ck, "norm");
        assert_non_null(t);
        assert_non_null(strstr(t->file, "model-00002-of-00002.safetensors"));
        assert_int_equal(t->numel, 2);
        assert_string_equal(qs_checkpoint_tensor(ck, 0)->name, "embed");
        assert_null(qs_checkpoint_find(ck, "nope"));
        if (ho)
            assert_null(t->data);
        else
            assert_int_equal(((const uint8_t *)t->data)[0], 8);
        qs_checkpoint_close(ck);
    }
}

static void ck_fails(const char *dir, const char *f1, const char *f2, const char *f3)
{
    qs_checkpoint *ck = (void *)1;
    qs_err e = {{0}};
    assert_int_equal(qs_checkpoint_open(dir, false, &ck, &e), -1);
    assert_null(ck);
    if (!strstr(e.msg, f1) || !strstr(e.msg, f2) || (f3 && !strstr(e.msg, f3)))
        fail_msg("message \"%s\" should contain \"%s\", \"%s\", \"%s\"", e.msg, f1, f2, f3 ? f3 : "");
}

static void missing_shard(void **state)
{
    char d[512];
    mkdir_in(d, "missing_shard");
    write_shard(d, "model-00001-of-00002.safetensors", SHARD1, 16);
    write_text(d, "model.safetensors.index.json", INDEX);
    ck_fails(d, "model.safetensors.index.json", "'model-00002-of-00002.safetensors'", "'lm_head'");
}

static void tensor_missing_from_shard(void **state)
{
    char d[512];
    mkdir_in(d, "missing_tensor");
    write_shard(d, "model-00001-of-00002.safetensors", SHARD1, 16);
    write_shard(d, "model-00002-of-00002.safetensors",
                "{\"lm_head\":{\"dtype\":\"BF16\",\"shape\":[2,2],\"data_offsets\":[0,8]}}", 8);
    write_text(d, "model.safetensors.index.json", INDEX);
    ck_fails(d, "'norm'", "model-00002-of-00002.safetensors", "no such tensor");
}

static void shard_errors(void **state)
{
    char d[512];
    mkdir_in(d, "shard_errors");
    write_shard(d, "model-00001-of-00002.safetensors", SHARD1, 16);
    /* a bad shard: its own message, naming the shard file and tensor */
    write_shard(d, "model-00002-of-00002.safetensors",
                "{\"lm_head\":{\"dtype\":\"BF16\",\"shape\":[2,2],\"data_offsets\":[0,6]}}", 8);
    write_text(d, "model.safetensors.index.json", INDEX);
    ck_fails(d, "model-00002-of-00002.safetensors", "'lm_head'", "needs 8");
    /* the same tensor in two shards */
    write_shard(d, "model-00002-of-00002.safetensors",
                "{\"lm_head\":{\"dtype\":\"BF16\",\"shape\":[2,2],\"data_offsets\":[0,8]},"
                "\"norm\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]},"
                "\"embed\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[16,20]}}", 20);
    ck_fails(d, "'embed'", "two shards", NULL);
    /* shard names may not leave the folder */
    write_text(d, "model.safetensors.index.json", "{\"weight_map\":{\"embed\":\"../x.safetensors\"}}");
    ck_fails(d, "'embed'", "../x.safetensors", "not a file name");
    write_text(d, "model.safetensors.index.json", "{\"weight_map\":{\"embed\":3}}");
    ck_fails(d, "model.safetensors.index.json", "'embed'", "string");
    write_text(d, "model.safetensors.index.json", "{\"metadata\":{}}");
    ck_fails(d, "model.safetensors.index.json", "'weight_map'", NULL);
    write_text(d, "model.safetensors.index.json", "{\"weight_map\":");
    ck_fails(d, "model.safetensors.index.json", "not valid JSON", NULL);
    write_text(d, "model.safetensors.index.json",
               "{\"weight_map\":{\"embed\":\"model-00001-of-00002.safetensors\",\"embed\":\"model-00001-of-00002.safetensors\"}}");
    ck_fails(d, "'embed'", "twice", NULL);
}

static void no_checkpoint_files(void **state)
{
    char d[512];
    mkdir_in(d, "nothing");
    ck_fails(d, d, "no model.safetensors", NULL);
    char p[512];
    ck_fails(path_in(p, "does-not-exist"), "does-not-exist", "No such file", NULL);
}

static void single_file_checkpoint(void **state)
{
    char d[512];
    mkdir_in(d, "single");
    write_shard(d, "model.safetensors", VALID_HEADER, 33);
    qs_checkpoint *ck;
    qs_err e;
    assert_int_equal(qs_checkpoint_open(d, false, &ck, &e), 0);
    assert_int_equal(qs_checkpoint_count(ck), 4);
    assert_int_equal(qs_checkpoint_file_count(ck), 1);
    assert_string_equal(qs_safetensors_metadata(qs_checkpoint_file(ck, 0), "format"), "pt");
    assert_int_equal(qs_checkpoint_find(ck, "a.weight")->nbytes, 24);
    qs_checkpoint_close(ck);
    /* a bad single file names itself and the tensor */
    write_shard(d, "model.safetensors", "{\"w\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,16]}}", 16);
    ck_fails(d, "model.safetensors", "'w'", "needs 12");
}

/* ---- writer ----------------------------------------------------------------------------------- */

static uint64_t rd_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* Every tensor of ck matches what was added: data bytes, and start aligned to its element size. */
static void check_roundtrip(qs_checkpoint *ck, int n_small, const uint8_t *big, size_t big_n)
{
    assert_int_equal(qs_checkpoint_count(ck), (size_t)n_small + 3);
    char name[64];
    for (int i = 0; i < n_small; i++) {
        snprintf(name, sizeof name, "model.layers.%d.w", i);
        const qs_tensor *t = qs_checkpoint_find(ck, name);
        assert_non_null(t);
        assert_int_equal(t->dtype, i % 3 == 0 ? QS_DT_F32 : i % 3 == 1 ? QS_DT_BF16 : QS_DT_U8);
        assert_int_equal(t->ndim, 2);
        assert_int_equal(t->shape[0], 1);
        assert_int_equal(t->shape[1], i % 7 + 1);
        int bytes = qs_dtype_bits(t->dtype) / 8;
        assert_int_equal((uintptr_t)t->data % (uintptr_t)bytes, 0);
        for (int k = 0; k < (i % 7 + 1) * bytes; k++)
            assert_int_equal(((const uint8_t *)t->data)[k], (uint8_t)(i * 31 + k));
    }
    const qs_tensor *b = qs_checkpoint_find(ck, "big");
    assert_non_null(b);
    assert_int_equal(b->nbytes, big_n);
    assert_memory_equal(b->data, big, big_n);
    const qs_tensor *s = qs_checkpoint_find(ck, "scale");
    assert_int_equal(s->ndim, 0);
    assert_float_equal(qs_tensor_get_f32(s, 0), 0.125f, 0);
    assert_int_equal(qs_checkpoint_find(ck, "nothing")->nbytes, 0);
    for (size_t i = 0; i < qs_checkpoint_file_count(ck); i++)
        assert_string_equal(qs_safetensors_metadata(qs_checkpoint_file(ck, i), "format"), "pt");
}

static qs_st_writer *build_writer(int n_small, uint8_t **smalls, const uint8_t *big, size_t big_n)
{
    qs_st_writer *w = qs_st_writer_new();
    qs_err e = {{0}};
    assert_non_null(w);
    for (int i = 0; i < n_small; i++) {
        qs_dtype dt = i % 3 == 0 ? QS_DT_F32 : i % 3 == 1 ? QS_DT_BF16 : QS_DT_U8;
        int64_t shape[2] = {1, i % 7 + 1};
        size_t nb = (size_t)shape[1] * (size_t)(qs_dtype_bits(dt) / 8);
        smalls[i] = malloc(nb);
        for (size_t k = 0; k < nb; k++)
            smalls[i][k] = (uint8_t)(i * 31 + (int)k);
        char name[64];
        snprintf(name, sizeof name, "model.layers.%d.w", i);
        if (qs_st_writer_add(w, name, dt, 2, shape, smalls[i], nb, &e))
            fail_msg("%s", e.msg);
    }
    int64_t bshape[1] = {(int64_t)big_n / 2};
    assert_int_equal(qs_st_writer_add(w, "big", QS_DT_F16, 1, bshape, big, big_n, &e), 0);
    float scale = 0.125f;
    assert_int_equal(qs_st_writer_add_copy(w, "scale", QS_DT_F32, 0, NULL, &scale, 4, &e), 0);
    int64_t zshape[2] = {0, 4};
    assert_int_equal(qs_st_writer_add(w, "nothing", QS_DT_F64, 2, zshape, NULL, 0, &e), 0);
    assert_int_equal(qs_st_writer_set_metadata(w, "format", "np"), 0);
    assert_int_equal(qs_st_writer_set_metadata(w, "format", "pt"), 0); /* replaces */
    assert_int_equal(qs_st_writer_count(w), (size_t)n_small + 3);
    return w;
}

static void writer_roundtrip(void **state)
{
    enum { N = 3000 };
    size_t big_n = 6u << 20; /* larger than the staging buffer's direct-write threshold */
    uint8_t *big = malloc(big_n);
    for (size_t i = 0; i < big_n; i++)
        big[i] = (uint8_t)(i * 7 + (i >> 13));
    uint8_t **smalls = calloc(N, sizeof *smalls);
    qs_st_writer *w = build_writer(N, smalls, big, big_n);
    qs_err e = {{0}};

    /* one file */
    char d[512], p[512];
    mkdir_in(d, "w_single");
    qs_path_join(p, sizeof p, d, "model.safetensors");
    if (qs_st_writer_write(w, p, &e))
        fail_msg("%s", e.msg);
    char *raw;
    size_t len;
    assert_int_equal(qs_read_file(p, &raw, &len, &e), 0);
    assert_int_equal(rd_le64((const uint8_t *)raw) % 8, 0); /* header padded to a multiple of 8 */
    free(raw);
    qs_checkpoint *ck;
    if (qs_checkpoint_open(d, false, &ck, &e))
        fail_msg("%s", e.msg);
    check_roundtrip(ck, N, big, big_n);
    qs_checkpoint_close(ck);

    /* shards of at most 1 MB of data: the big tensor gets one of its own, the scale after it
     * another (a new shard starts whenever the next tensor would overflow the current one) */
    mkdir_in(d, "w_sharded");
    write_text(d, "model.safetensors", "stale"); /* would shadow the index: must be removed */
    if (qs_st_writer_write_sharded(w, d, 1u << 20, &e))
        fail_msg("%s", e.msg);
    assert_false(qs_file_exists(qs_path_join(p, sizeof p, d, "model.safetensors")));
    assert_true(qs_file_exists(qs_path_join(p, sizeof p, d, "model.safetensors.index.json")));
    assert_true(qs_file_exists(qs_path_join(p, sizeof p, d, "model-00001-of-00003.safetensors")));
    assert_true(qs_file_exists(qs_path_join(p, sizeof p, d, "model-00003-of-00003.safetensors")));
    if (qs_checkpoint_open(d, false, &ck, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(qs_checkpoint_file_count(ck), 3);
    check_roundtrip(ck, N, big, big_n);
    qs_checkpoint_close(ck);
    char *idx;
    assert_int_equal(qs_read_file(qs_path_join(p, sizeof p, d, "model.safetensors.index.json"), &idx, NULL, &e), 0);
    char want[64];
    snprintf(want, sizeof want, "\"total_size\": %llu", (unsigned long long)qs_st_writer_total_bytes(w));
    assert_non_null(strstr(idx, want));
    assert_non_null(strstr(idx, "\"big\": \"model-00002-of-00003.safetensors\""));
    free(idx);

    /* everything fits: one model.safetensors, and the stale index goes */
    if (qs_st_writer_write_sharded(w, d, 0, &e))
        fail_msg("%s", e.msg);
    assert_true(qs_file_exists(qs_path_join(p, sizeof p, d, "model.safetensors")));
    assert_false(qs_file_exists(qs_path_join(p, sizeof p, d, "model.safetensors.index.json")));
    if (qs_checkpoint_open(d, true, &ck, &e))
        fail_msg("%s", e.msg);
    assert_int_equal(qs_checkpoint_file_count(ck), 1);
    qs_checkpoint_close(ck);

    /* the folder is created when missing; 8 MB holds everything */
    path_in(d, "w_new");
    assert_int_equal(qs_st_writer_write_sharded(w, d, 8u << 20, &e), 0);
    assert_true(qs_file_exists(qs_path_join(p, sizeof p, d, "model.safetensors")));

    qs_st_writer_free(w);
    for (int i = 0; i < N; i++)
        free(smalls[i]);
    free(smalls);
    free(big);
}

static void writer_escapes_names(void **state)
{
    qs_st_writer *w = qs_st_writer_new();
    qs_err e;
    uint8_t v[2] = {1, 2};
    int64_t shape[1] = {1};
    const char *names[] = {"quote\"d", "back\\slash", "new\nline", "caf\xc3\xa9"};
    for (int i = 0; i < 4; i++)
        assert_int_equal(qs_st_writer_add(w, names[i], QS_DT_U8, 1, shape, v + (i & 1), 1, &e), 0);
    char p[512];
    path_in(p, "escaped.safetensors");
    assert_int_equal(qs_st_writer_write(w, p, &e), 0);
    qs_safetensors_file *f;
    assert_int_equal(qs_safetensors_open(p, &f, &e), 0);
    for (int i = 0; i < 4; i++) {
        const qs_tensor *t = qs_safetensors_find(f, names[i]);
        assert_non_null(t);
        assert_int_equal(((const uint8_t *)t->data)[0], v[i & 1]);
    }
    qs_safetensors_close(f);
    qs_st_writer_free(w);
}

static void writer_validates(void **state)
{
    qs_st_writer *w = qs_st_writer_new();
    qs_err e = {{0}};
    float d[6] = {0};
    int64_t shape[2] = {2, 3}, neg[2] = {2, -3}, huge[2] = {INT64_MAX, 4};
    assert_int_equal(qs_st_writer_add(w, "w", QS_DT_F32, 2, shape, d, 24, &e), 0);
    assert_int_equal(qs_st_writer_add(w, "w", QS_DT_F32, 2, shape, d, 24, &e), -1);
    assert_non_null(strstr(e.msg, "'w'"));
    assert_non_null(strstr(e.msg, "twice"));
    assert_int_equal(qs_st_writer_add(w, "x", QS_DT_F32, 2, shape, d, 20, &e), -1);
    assert_non_null(strstr(e.msg, "'x'"));
    assert_non_null(strstr(e.msg, "needs 24"));
    assert_int_equal(qs_st_writer_add(w, "n", QS_DT_F32, 2, neg, d, 24, &e), -1);
    assert_non_null(strstr(e.msg, "negative"));
    assert_int_equal(qs_st_writer_add(w, "h", QS_DT_F32, 2, huge, d, 24, &e), -1);
    assert_non_null(strstr(e.msg, "too many"));
    assert_int_equal(qs_st_writer_add(w, "__metadata__", QS_DT_F32, 2, shape, d, 24, &e), -1);
    assert_int_equal(qs_st_writer_add(w, "", QS_DT_F32, 2, shape, d, 24, &e), -1);
    assert_int_equal(qs_st_writer_add(w, "bad\xff", QS_DT_F32, 2, shape, d, 24, &e), -1);
    assert_non_null(strstr(e.msg, "UTF-8"));
    assert_int_equal(qs_st_writer_add(w, "nine", QS_DT_F32, 9, shape, d, 24, &e), -1);
    assert_int_equal(qs_st_writer_add(w, "null", QS_DT_F32, 2, shape, NULL, 24, &e), -1);
    assert_int_equal(qs_st_writer_set_metadata(w, "k", "bad\xff"), -1);
    assert_int_equal(qs_st_writer_count(w), 1);
    assert_int_equal(qs_st_writer_write(w, "/nonexistent-dir/model.safetensors", &e), -1);
    assert_non_null(strstr(e.msg, "/nonexistent-dir/model.safetensors"));
    qs_st_writer_free(w);
}

/* ---- dtypes ----------------------------------------------------------------------------------- */

static float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void dtype_names(void **state)
{
    for (int i = 0; i < QS_DT_COUNT; i++)
        assert_int_equal(qs_dtype_from_string(qs_dtype_name((qs_dtype)i)), i);
    assert_int_equal(qs_dtype_from_string("F8_E4M3"), QS_DT_F8_E4M3);
    assert_int_equal(qs_dtype_from_string("f32"), -1);
    assert_int_equal(qs_dtype_from_string("F8_E4M3FNUZ"), -1);
    assert_int_equal(qs_dtype_bits(QS_DT_BF16), 16);
    assert_int_equal(qs_dtype_bits(QS_DT_F8_E8M0), 8);
    assert_int_equal(qs_dtype_bits(QS_DT_U64), 64);
    assert_int_equal(qs_dtype_bits(QS_DT_BOOL), 8);
}

static void bf16_round_to_nearest_even(void **state)
{
    assert_int_equal(qs_f32_to_bf16(1.0f), 0x3f80);
    assert_int_equal(qs_f32_to_bf16(u2f(0x3f808000)), 0x3f80); /* tie, even stays */
    assert_int_equal(qs_f32_to_bf16(u2f(0x3f818000)), 0x3f82); /* tie, odd rounds up */
    assert_int_equal(qs_f32_to_bf16(u2f(0x3f808001)), 0x3f81); /* above the tie */
    assert_int_equal(qs_f32_to_bf16(u2f(0x3f807fff)), 0x3f80);
    assert_int_equal(qs_f32_to_bf16(-2.0f), 0xc000);
    assert_int_equal(qs_f32_to_bf16(INFINITY), 0x7f80);
    assert_int_equal(qs_f32_to_bf16(-INFINITY), 0xff80);
    assert_int_equal(qs_f32_to_bf16(u2f(0x7f7fffff)), 0x7f80); /* FLT_MAX rounds to inf */
    assert_int_equal(qs_f32_to_bf16(u2f(0x00000001)), 0x0000); /* tiny subnormal */
    assert_int_equal(qs_f32_to_bf16(u2f(0x00018000)), 0x0002);
    uint16_t n = qs_f32_to_bf16(u2f(0x7f800001)); /* NaN with a low payload must stay NaN */
    assert_true((n & 0x7f80) == 0x7f80 && (n & 0x7f));
    assert_true(isnan(qs_bf16_to_f32(n)));
    assert_float_equal(qs_bf16_to_f32(0x4049), 3.140625f, 0);
    /* every non-NaN bf16 survives the round trip */
    for (uint32_t h = 0; h < 65536; h++) {
        float f = qs_bf16_to_f32((uint16_t)h);
        if (!isnan(f))
            assert_int_equal(qs_f32_to_bf16(f), h);
    }
}

static void f16_conversions(void **state)
{
    assert_int_equal(qs_f32_to_f16(1.0f), 0x3c00);
    assert_int_equal(qs_f32_to_f16(-2.0f), 0xc000);
    assert_int_equal(qs_f32_to_f16(65504.0f), 0x7bff);
    assert_int_equal(qs_f32_to_f16(65519.99f), 0x7bff);
    assert_int_equal(qs_f32_to_f16(65520.0f), 0x7c00); /* tie at the top rounds to inf */
    assert_int_equal(qs_f32_to_f16(1e10f), 0x7c00);
    assert_int_equal(qs_f32_to_f16(-INFINITY), 0xfc00);
    assert_int_equal(qs_f32_to_f16(0x1p-24f), 0x0001);   /* smallest subnormal */
    assert_int_equal(qs_f32_to_f16(0x1p-25f), 0x0000);   /* tie to even: 0 */
    assert_int_equal(qs_f32_to_f16(0x1.8p-24f), 0x0002); /* 1.5 ulp: tie to even 2 */
    assert_int_equal(qs_f32_to_f16(0x1.8p-25f), 0x0001);
    assert_int_equal(qs_f32_to_f16(0x1p-26f), 0x0000);
    assert_int_equal(qs_f32_to_f16(0x1.ff8p-15f), 0x03ff); /* largest subnormal */
    assert_int_equal(qs_f32_to_f16(0x1.ffcp-15f), 0x0400); /* + half ulp, tie to even: smallest normal */
    assert_int_equal(qs_f32_to_f16(0x1p-14f), 0x0400);
    assert_int_equal(qs_f32_to_f16(-0.0f), 0x8000);
    assert_int_equal(qs_f32_to_f16(1.0f + 0x1p-11f), 0x3c00); /* tie, even */
    assert_int_equal(qs_f32_to_f16(1.0f + 0x3p-11f), 0x3c02); /* tie, odd rounds up */
    assert_true(isnan(qs_f16_to_f32(qs_f32_to_f16(NAN))));
    assert_int_equal(qs_f32_to_f16(NAN) & 0x7c00, 0x7c00);
    assert_float_equal(qs_f16_to_f32(0x0001), 0x1p-24f, 0);
    assert_float_equal(qs_f16_to_f32(0x03ff), 0x3ffp-24f, 0);
    assert_float_equal(qs_f16_to_f32(0x8001), -0x1p-24f, 0);
    assert_true(isinf(qs_f16_to_f32(0x7c00)) && qs_f16_to_f32(0x7c00) > 0);
    assert_true(isinf(qs_f16_to_f32(0xfc00)) && qs_f16_to_f32(0xfc00) < 0);
    assert_true(isnan(qs_f16_to_f32(0x7e00)));
    for (uint32_t h = 0; h < 65536; h++) {
        float f = qs_f16_to_f32((uint16_t)h);
        if (!isnan(f))
            assert_int_equal(qs_f32_to_f16(f), h);
    }
    /* midpoints between neighbouring halves round to the even one */
    for (uint32_t h = 0x0000; h < 0x7bff; h += 97) {
        float lo = qs_f16_to_f32((uint16_t)h), hi = qs_f16_to_f32((uint16_t)(h + 1));
        float mid = lo + (hi - lo) / 2; /* exact in f32 */
        assert_int_equal(qs_f32_to_f16(mid), (h & 1) ? h + 1 : h);
    }
}

static void tensor_get_f32_all_dtypes(void **state)
{
    double f64[2] = {1.5, -2.25};
    int32_t i32[2] = {-7, 9};
    uint8_t u8[3] = {0, 200, 1};
    uint8_t e4m3[4] = {0x7e, 0x38, 0xfe, 0x01};  /* 448, 1.0, -448, 2^-9 */
    uint8_t e5m2[2] = {0x3c, 0x7c};              /* 1.0, inf */
    uint8_t e8m0[2] = {127, 130};                /* 1, 8 */
    uint16_t f16[1] = {0x3555};
    qs_tensor t = {.name = "t", .ndim = 1};
#define GET(arr, dt, i) (t.data = (arr), t.dtype = (dt), t.numel = (int64_t)(sizeof(arr) / sizeof((arr)[0])), qs_tensor_get_f32(&t, (i)))
    assert_float_equal(GET(f64, QS_DT_F64, 1), -2.25f, 0);
    assert_float_equal(GET(i32, QS_DT_I32, 0), -7.0f, 0);
    assert_float_equal(GET(u8, QS_DT_U8, 1), 200.0f, 0);
    assert_float_equal(GET(u8, QS_DT_I8, 1), -56.0f, 0);
    assert_float_equal(GET(u8, QS_DT_BOOL, 2), 1.0f, 0);
    assert_float_equal(GET(e4m3, QS_DT_F8_E4M3, 0), 448.0f, 0);
    assert_float_equal(GET(e4m3, QS_DT_F8_E4M3, 1), 1.0f, 0);
    assert_float_equal(GET(e4m3, QS_DT_F8_E4M3, 2), -448.0f, 0);
    assert_float_equal(GET(e4m3, QS_DT_F8_E4M3, 3), 0x1p-9f, 0);
    assert_float_equal(GET(e5m2, QS_DT_F8_E5M2, 0), 1.0f, 0);
    assert_true(isinf(GET(e5m2, QS_DT_F8_E5M2, 1)));
    assert_float_equal(GET(e8m0, QS_DT_F8_E8M0, 1), 8.0f, 0);
    assert_float_equal(GET(f16, QS_DT_F16, 0), qs_f16_to_f32(0x3555), 0);
    assert_true(isnan(GET(f16, QS_DT_F16, 1))); /* out of range */
    float out[3];
    qs_convert_to_f32(QS_DT_U8, u8, out, 3);
    assert_float_equal(out[1], 200.0f, 0);
    uint16_t bf[2];
    float src[2] = {1.0f, -3.0f};
    qs_f32_to_bf16_n(src, bf, 2);
    qs_convert_to_f32(QS_DT_BF16, bf, out, 2);
    assert_float_equal(out[1], -3.0f, 0);
    qs_f32_to_f16_n(src, bf, 2);
    assert_int_equal(bf[0], 0x3c00);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(valid_file_reads_back),
        cmocka_unit_test(empty_header_object_is_valid),
        cmocka_unit_test(truncated_file),
        cmocka_unit_test(header_length_bounds),
        cmocka_unit_test(header_not_an_object),
        cmocka_unit_test(offsets_overlap_gap_past_end),
        cmocka_unit_test(bad_dtype),
        cmocka_unit_test(shape_size_mismatch),
        cmocka_unit_test(numel_overflow),
        cmocka_unit_test(duplicate_tensor),
        cmocka_unit_test(non_utf8_name),
        cmocka_unit_test(reads_torch_written_file),
        cmocka_unit_test(sharded_checkpoint),
        cmocka_unit_test(missing_shard),
        cmocka_unit_test(tensor_missing_from_shard),
        cmocka_unit_test(shard_errors),
        cmocka_unit_test(no_checkpoint_files),
        cmocka_unit_test(single_file_checkpoint),
        cmocka_unit_test(writer_roundtrip),
        cmocka_unit_test(writer_escapes_names),
        cmocka_unit_test(writer_validates),
        cmocka_unit_test(dtype_names),
        cmocka_unit_test(bf16_round_to_nearest_even),
        cmocka_unit_test(f16_conversions),
        cmocka_unit_test(tensor_get_f32_all_dtypes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
