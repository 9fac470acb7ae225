/* safetensors.c — read-only access to safetensors files and checkpoints (safetensors.h).
 *
 * A file is `u64 N (little-endian) | N bytes of UTF-8 JSON | data`. Nothing in a header is trusted:
 * before any tensor is handed out, the header is checked in full, following the reference reader
 * (huggingface/safetensors tensor.rs, ../shared/reference/checkpoint-formats.md §1):
 *   - 8 <= file size, N <= 100 MB and 8 + N <= file size;
 *   - the header starts with '{', is valid UTF-8 (every string, names included), has no raw
 *     control characters or \u0000 in strings, parses as one JSON object followed only by
 *     whitespace (the writer pads with spaces);
 *   - "__metadata__" (at most once) maps strings to strings; every other key is a tensor name,
 *     non-empty and unique, whose value is {"dtype": one of the 16 supported strings,
 *     "shape": [non-negative integers] (at most QS_MAX_DIMS), "data_offsets": [begin, end]};
 *   - begin <= end <= data size, end - begin = numel * bits / 8 (overflow checked);
 *   - sorted by offset the tensors tile the data buffer exactly: no gap, no overlap, the last one
 *     ends at the end of the file.
 * Every message names the file and, where there is one, the tensor.
 *
 * Files are mmapped read-only (MAP_PRIVATE); tensors point into the mapping. In headers-only mode
 * (for `qserve backends`) only the first 8 + N bytes are read with pread and data pointers stay
 * NULL. A checkpoint is model.safetensors, or the shards named by model.safetensors.index.json;
 * its tensors are found by name through a hash table. */
#include "io/safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unistr.h>

#include "io/safetensors_internal.h"
#include "util/fileio.h"

#define ST_MAX_HEADER 100000000ull  /* MAX_HEADER_SIZE of the reference reader */
#define ST_MAX_INT    (1ull << 53)  /* larger JSON numbers are not exact in cJSON's double */

struct qs_safetensors_file {
    char *path;                 /* for messages and qs_tensor.file */
    const uint8_t *map;         /* the whole file when mmapped by us, else NULL */
    size_t map_len;
    uint64_t header_len, data_len;
    qs_tensor *tensors;         /* sorted by data offset */
    size_t n;
    char **meta_keys, **meta_vals;
    size_t n_meta;
    qs_name_index index;
    bool allow_gaps;            /* record data no tensor claims in gap_note instead of failing */
    char *gap_note;
};

struct qs_checkpoint {
    char *dir;
    qs_safetensors_file **files;
    size_t n_files;
    const qs_tensor **tensors;  /* file order, then offset order within a file */
    size_t n;
    qs_name_index index;
    bool allow_gaps;            /* qs_checkpoint_open_for_model */
};

/* ---- name index ----------------------------------------------------------------------------- */

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h ^ (h >> 29);
}

int qs_name_index_init(qs_name_index *ix, size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n + 2)
        cap *= 2;
    ix->slots = calloc(cap, sizeof *ix->slots);
    ix->cap = ix->slots ? cap : 0;
    ix->n = 0;
    return ix->slots ? 0 : -1;
}

void qs_name_index_free(qs_name_index *ix)
{
    free(ix->slots);
    memset(ix, 0, sizeof *ix);
}

const qs_tensor *qs_name_index_insert(qs_name_index *ix, const qs_tensor *t)
{
    size_t mask = ix->cap - 1;
    for (size_t i = hash_name(t->name) & mask;; i = (i + 1) & mask) {
        if (!ix->slots[i]) {
            ix->slots[i] = t;
            ix->n++;
            return NULL;
        }
        if (!strcmp(ix->slots[i]->name, t->name))
            return ix->slots[i];
    }
}

const qs_tensor *qs_name_index_find(const qs_name_index *ix, const char *name)
{
    if (!ix->cap || !name)
        return NULL;
    size_t mask = ix->cap - 1;
    for (size_t i = hash_name(name) & mask; ix->slots[i]; i = (i + 1) & mask)
        if (!strcmp(ix->slots[i]->name, name))
            return ix->slots[i];
    return NULL;
}

const char *qs_printable(char *buf, size_t cap, const char *s, size_t len)
{
    size_t o = 0;
    for (size_t i = 0; i < len && o + 8 < cap; i++) {
        if (i >= 120) {
            memcpy(buf + o, "...", 3);
            o += 3;
            break;
        }
        uint8_t c = (uint8_t)s[i];
        if (c >= 0x20 && c < 0x7f)
            buf[o++] = (char)c;
        else
            o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", c);
    }
    buf[o < cap ? o : cap - 1] = '\0';
    return buf;
}

/* ---- header validation ---------------------------------------------------------------------- */

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* Checks the 8-byte length against the file size; *hlen = N. */
static int check_prefix(const uint8_t *first8, uint64_t file_len, const char *fname, uint64_t *hlen, qs_err *err)
{
    if (file_len < 8)
        return qs_errf(err, "%s: file is truncated: %llu bytes, too short for the 8-byte header length", fname,
                       (unsigned long long)file_len);
    uint64_t n = le64(first8);
    if (n > ST_MAX_HEADER)
        return qs_errf(err, "%s: header length %llu is larger than the 100000000-byte limit (corrupt file?)", fname,
                       (unsigned long long)n);
    if (n > file_len - 8)
        return qs_errf(err, "%s: header length %llu runs past the end of the file (%llu bytes): file truncated?",
                       fname, (unsigned long long)n, (unsigned long long)file_len);
    if (n < 2)
        return qs_errf(err, "%s: header length %llu is too short for a JSON object", fname, (unsigned long long)n);
    *hlen = n;
    return 0;
}

/* Scans the raw header before JSON parsing: strings must be valid UTF-8 without raw control
 * characters or \u0000 (which would cut a name short once decoded), and no byte outside a string
 * may be non-ASCII. Top-level object keys are tensor names, and are reported as such. */
static int scan_header_text(const uint8_t *h, size_t n, const char *fname, qs_err *err)
{
    int depth = 0;
    char shown[512];
    for (size_t i = 0; i < n; i++) {
        uint8_t c = h[i];
        if (c == '"') {
            size_t start = ++i;
            bool bad_escape = false, ctrl = false;
            while (i < n && h[i] != '"') {
                if (h[i] == '\\') {
                    if (i + 5 < n && h[i + 1] == 'u' && !memcmp(h + i + 2, "0000", 4))
                        bad_escape = true;
                    i += 2;
                    continue;
                }
                if (h[i] < 0x20)
                    ctrl = true;
                i++;
            }
            if (i >= n)
                return qs_errf(err, "%s: header is not valid JSON: string at byte %zu is not terminated", fname, start + 7);
            size_t k = i + 1;
            while (k < n && (h[k] == ' ' || h[k] == '\t' || h[k] == '\n' || h[k] == '\r'))
                k++;
            const char *what = (k < n && h[k] == ':' && depth == 1) ? "tensor name" : "header string";
            const char *bad = NULL;
            if (u8_check(h + start, i - start))
                bad = "is not valid UTF-8";
            else if (ctrl)
                bad = "contains a raw control character";
            else if (bad_escape)
                bad = "contains \\u0000";
            if (bad)
                return qs_errf(err, "%s: %s \"%s\" (at byte %zu) %s", fname, what,
                               qs_printable(shown, sizeof shown, (const char *)h + start, i - start), start + 8, bad);
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            depth--;
        } else if (c >= 0x80) {
            return qs_errf(err, "%s: header is not valid JSON: byte 0x%02x at %zu is outside any string", fname, c, i + 8);
        }
    }
    return 0;
}

/* A JSON number that is an exact non-negative integer <= 2^53. */
static bool json_uint(const cJSON *v, uint64_t *out)
{
    if (!cJSON_IsNumber(v))
        return false;
    double d = v->valuedouble;
    if (!(d >= 0) || d > (double)ST_MAX_INT || d != (double)(uint64_t)d)
        return false;
    *out = (uint64_t)d;
    return true;
}

static const char *json_type(const cJSON *v)
{
    if (cJSON_IsString(v)) return "a string";
    if (cJSON_IsNumber(v)) return "a number";
    if (cJSON_IsBool(v)) return "a boolean";
    if (cJSON_IsNull(v)) return "null";
    if (cJSON_IsArray(v)) return "an array";
    if (cJSON_IsObject(v)) return "an object";
    return "invalid";
}

/* Fills t from one header entry. begin/end returned for the tiling check. */
static int parse_tensor(const cJSON *e, const char *fname, const char *tname, uint64_t data_len, qs_tensor *t,
                        uint64_t *begin, uint64_t *end, qs_err *err)
{
    char nm[512];
    qs_printable(nm, sizeof nm, tname, strlen(tname));
    if (!cJSON_IsObject(e))
        return qs_errf(err, "%s: tensor '%s': entry must be an object with dtype, shape and data_offsets, got %s",
                       fname, nm, json_type(e));
    const cJSON *dt = NULL, *shape = NULL, *offs = NULL;
    for (const cJSON *c = e->child; c; c = c->next) {
        const cJSON **slot = !strcmp(c->string, "dtype") ? &dt
                             : !strcmp(c->string, "shape") ? &shape
                             : !strcmp(c->string, "data_offsets") ? &offs : NULL;
        if (!slot)
            continue; /* the reference reader ignores unknown keys too */
        if (*slot)
            return qs_errf(err, "%s: tensor '%s': key \"%s\" appears twice", fname, nm, c->string);
        *slot = c;
    }
    if (!dt || !shape || !offs)
        return qs_errf(err, "%s: tensor '%s': missing \"%s\"", fname, nm, !dt ? "dtype" : !shape ? "shape" : "data_offsets");
    if (!cJSON_IsString(dt))
        return qs_errf(err, "%s: tensor '%s': dtype must be a string, got %s", fname, nm, json_type(dt));
    int d = qs_dtype_from_string(dt->valuestring);
    if (d < 0) {
        char shown[128];
        return qs_errf(err, "%s: tensor '%s': unsupported dtype \"%s\" (supported: %s)", fname, nm,
                       qs_printable(shown, sizeof shown, dt->valuestring, strlen(dt->valuestring)), qs_dtype_list());
    }
    if (!cJSON_IsArray(shape))
        return qs_errf(err, "%s: tensor '%s': shape must be an array of integers, got %s", fname, nm, json_type(shape));
    int ndim = cJSON_GetArraySize(shape);
    if (ndim > QS_MAX_DIMS)
        return qs_errf(err, "%s: tensor '%s': shape has %d dimensions, at most %d are supported", fname, nm, ndim, QS_MAX_DIMS);
    memset(t, 0, sizeof *t);
    t->dtype = (qs_dtype)d;
    t->ndim = ndim;
    uint64_t numel = 1;
    bool overflow = false;
    int i = 0;
    for (const cJSON *c = shape->child; c; c = c->next, i++) {
        uint64_t v;
        if (!json_uint(c, &v))
            return qs_errf(err, "%s: tensor '%s': shape[%d] must be a non-negative integer, got %s", fname, nm, i,
                           cJSON_IsNumber(c) ? "a negative, fractional or too large number" : json_type(c));
        t->shape[i] = (int64_t)v;
        if (!overflow && __builtin_mul_overflow(numel, v, &numel))
            overflow = true;
    }
    /* A zero dimension makes the tensor empty whatever the others say. */
    for (i = 0; i < ndim; i++)
        if (t->shape[i] == 0)
            overflow = false, numel = 0;
    uint64_t nbytes = 0;
    int bytes = qs_dtype_bits(t->dtype) / 8;
    if (overflow || numel > (uint64_t)INT64_MAX || __builtin_mul_overflow(numel, (uint64_t)bytes, &nbytes))
        return qs_errf(err, "%s: tensor '%s': shape has too many elements (numel overflows 64 bits)", fname, nm);
    if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2)
        return qs_errf(err, "%s: tensor '%s': data_offsets must be an array [begin, end], got %s", fname, nm,
                       cJSON_IsArray(offs) ? "an array of another length" : json_type(offs));
    if (!json_uint(offs->child, begin) || !json_uint(offs->child->next, end))
        return qs_errf(err, "%s: tensor '%s': data_offsets must hold two non-negative integers", fname, nm);
    if (*begin > *end)
        return qs_errf(err, "%s: tensor '%s': data_offsets [%llu, %llu] end before they begin", fname, nm,
                       (unsigned long long)*begin, (unsigned long long)*end);
    if (*end - *begin != nbytes)
        return qs_errf(err, "%s: tensor '%s': data_offsets [%llu, %llu] hold %llu bytes but %s of %llu elements needs %llu",
                       fname, nm, (unsigned long long)*begin, (unsigned long long)*end,
                       (unsigned long long)(*end - *begin), qs_dtype_name(t->dtype), (unsigned long long)numel,
                       (unsigned long long)nbytes);
    if (*end > data_len)
        return qs_errf(err, "%s: tensor '%s': data_offsets [%llu, %llu] run past the end of the data (%llu bytes): file truncated?",
                       fname, nm, (unsigned long long)*begin, (unsigned long long)*end, (unsigned long long)data_len);
    t->numel = (int64_t)numel;
    t->nbytes = (size_t)nbytes;
    return 0;
}

typedef struct {
    uint64_t begin, end;
    size_t idx;
} span;

static int cmp_span(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int parse_metadata(const cJSON *m, qs_safetensors_file *f, qs_err *err)
{
    if (!cJSON_IsObject(m))
        return qs_errf(err, "%s: __metadata__ must be an object of strings, got %s", f->path, json_type(m));
    int n = cJSON_GetArraySize(m);
    f->meta_keys = calloc((size_t)n + 1, sizeof(char *));
    f->meta_vals = calloc((size_t)n + 1, sizeof(char *));
    if (!f->meta_keys || !f->meta_vals)
        return qs_errf(err, "%s: out of memory", f->path);
    for (const cJSON *c = m->child; c; c = c->next) {
        char shown[256];
        if (!cJSON_IsString(c))
            return qs_errf(err, "%s: __metadata__ value for \"%s\" must be a string, got %s", f->path,
                           qs_printable(shown, sizeof shown, c->string, strlen(c->string)), json_type(c));
        for (size_t k = 0; k < f->n_meta; k++)
            if (!strcmp(f->meta_keys[k], c->string))
                return qs_errf(err, "%s: __metadata__ key \"%s\" appears twice", f->path,
                               qs_printable(shown, sizeof shown, c->string, strlen(c->string)));
        f->meta_keys[f->n_meta] = strdup(c->string);
        f->meta_vals[f->n_meta] = strdup(c->valuestring);
        if (!f->meta_keys[f->n_meta] || !f->meta_vals[f->n_meta])
            return qs_errf(err, "%s: out of memory", f->path);
        f->n_meta++;
    }
    return 0;
}

/* Validates header h (n bytes) of a file whose data section has data_len bytes starting at
 * data (NULL in headers-only mode), filling f's tensors and metadata. */
static int parse_header(const uint8_t *h, uint64_t n, uint64_t data_len, const uint8_t *data, qs_safetensors_file *f,
                        qs_err *err)
{
    const char *fname = f->path;
    if (h[0] != '{')
        return qs_errf(err, "%s: header is not a JSON object (first byte is 0x%02x, expected '{')", fname, h[0]);
    if (scan_header_text(h, (size_t)n, fname, err))
        return -1;
    char *text = malloc((size_t)n + 1); /* cJSON gets a NUL-terminated copy: belt and braces */
    if (!text)
        return qs_errf(err, "%s: out of memory for a %llu-byte header", fname, (unsigned long long)n);
    memcpy(text, h, (size_t)n);
    text[n] = '\0';
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, (size_t)n + 1, &end, false);
    if (!root) {
        size_t at = end ? (size_t)(end - text) : 0;
        free(text);
        return qs_errf(err, "%s: header is not valid JSON (error near byte %zu)", fname, at + 8);
    }
    for (const char *p = end; p < text + n; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            size_t at = (size_t)(p - text);
            free(text);
            cJSON_Delete(root);
            return qs_errf(err, "%s: header has trailing bytes after the JSON object (byte %zu)", fname, at + 8);
        }
    free(text);
    int rc = -1;
    span *spans = NULL;
    if (!cJSON_IsObject(root)) {
        qs_errf(err, "%s: header is not a JSON object", fname);
        goto out;
    }
    size_t count = (size_t)cJSON_GetArraySize(root);
    f->tensors = calloc(count + 1, sizeof *f->tensors);
    spans = calloc(count + 1, sizeof *spans);
    if (!f->tensors || !spans || qs_name_index_init(&f->index, count)) {
        qs_errf(err, "%s: out of memory for %zu tensors", fname, count);
        goto out;
    }
    bool have_meta = false;
    size_t nt = 0;
    for (const cJSON *e = root->child; e; e = e->next) {
        if (!strcmp(e->string, "__metadata__")) {
            if (have_meta) {
                qs_errf(err, "%s: __metadata__ appears twice", fname);
                goto out;
            }
            have_meta = true;
            if (parse_metadata(e, f, err))
                goto out;
            continue;
        }
        if (!e->string[0]) {
            qs_errf(err, "%s: tensor '': empty tensor name", fname);
            goto out;
        }
        qs_tensor *t = &f->tensors[nt];
        if (parse_tensor(e, fname, e->string, data_len, t, &spans[nt].begin, &spans[nt].end, err))
            goto out;
        spans[nt].idx = nt;
        t->name = strdup(e->string);
        t->file = f->path;
        if (!t->name) {
            qs_errf(err, "%s: out of memory", fname);
            goto out;
        }
        nt++;
        f->n = nt;
    }
    /* Tiling: sorted by offset, each tensor begins where the previous one ended. */
    qsort(spans, nt, sizeof *spans, cmp_span);
    uint64_t pos = 0;
    char a[512], b[512];
    for (size_t i = 0; i < nt; i++) {
        const qs_tensor *t = &f->tensors[spans[i].idx];
        if (spans[i].begin > pos && f->allow_gaps) {
            if (!f->gap_note && asprintf(&f->gap_note,
                                         "%s: bytes [%llu, %llu) of the data belong to no tensor (before tensor '%s')",
                                         fname, (unsigned long long)pos, (unsigned long long)spans[i].begin,
                                         qs_printable(a, sizeof a, t->name, strlen(t->name))) < 0)
                f->gap_note = NULL;
            pos = spans[i].begin;
        }
        if (spans[i].begin > pos) {
            qs_errf(err, "%s: tensor '%s': data_offsets [%llu, %llu] leave a gap: bytes [%llu, %llu) of the data belong to no tensor",
                    fname, qs_printable(a, sizeof a, t->name, strlen(t->name)), (unsigned long long)spans[i].begin,
                    (unsigned long long)spans[i].end, (unsigned long long)pos, (unsigned long long)spans[i].begin);
            goto out;
        }
        if (spans[i].begin < pos) {
            const qs_tensor *p = &f->tensors[spans[i - 1].idx];
            qs_errf(err, "%s: tensor '%s': data_offsets [%llu, %llu] overlap tensor '%s' [%llu, %llu]", fname,
                    qs_printable(a, sizeof a, t->name, strlen(t->name)), (unsigned long long)spans[i].begin,
                    (unsigned long long)spans[i].end, qs_printable(b, sizeof b, p->name, strlen(p->name)),
                    (unsigned long long)spans[i - 1].begin, (unsigned long long)spans[i - 1].end);
            goto out;
        }
        pos = spans[i].end;
    }
    if (pos < data_len && nt && f->allow_gaps) {
        if (!f->gap_note && asprintf(&f->gap_note, "%s: the last %llu bytes of the data belong to no tensor", fname,
                                     (unsigned long long)(data_len - pos)) < 0)
            f->gap_note = NULL;
        pos = data_len;
    }
    if (pos != data_len) {
        if (nt)
            qs_errf(err, "%s: data section has %llu bytes but the tensors cover only %llu: the last tensor '%s' ends %llu bytes early",
                    fname, (unsigned long long)data_len, (unsigned long long)pos,
                    qs_printable(a, sizeof a, f->tensors[spans[nt - 1].idx].name, strlen(f->tensors[spans[nt - 1].idx].name)),
                    (unsigned long long)(data_len - pos));
        else
            qs_errf(err, "%s: header lists no tensors but %llu data bytes follow it", fname, (unsigned long long)data_len);
        goto out;
    }
    /* Keep the tensors in offset order (sequential reads when loading), then index them. */
    qs_tensor *sorted = calloc(nt + 1, sizeof *sorted);
    if (!sorted) {
        qs_errf(err, "%s: out of memory", fname);
        goto out;
    }
    for (size_t i = 0; i < nt; i++) {
        sorted[i] = f->tensors[spans[i].idx];
        sorted[i].data = data ? data + spans[i].begin : NULL;
    }
    free(f->tensors);
    f->tensors = sorted;
    for (size_t i = 0; i < nt; i++) {
        const qs_tensor *dup = qs_name_index_insert(&f->index, &f->tensors[i]);
        if (dup) {
            qs_errf(err, "%s: tensor '%s' appears twice in the header", fname,
                    qs_printable(a, sizeof a, dup->name, strlen(dup->name)));
            goto out;
        }
    }
    f->header_len = n;
    f->data_len = data_len;
    rc = 0;
out:
    free(spans);
    cJSON_Delete(root);
    return rc;
}

static qs_safetensors_file *file_new(const char *path)
{
    qs_safetensors_file *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->path = strdup(path ? path : "<memory>");
    if (!f->path) {
        free(f);
        return NULL;
    }
    return f;
}

void qs_safetensors_close(qs_safetensors_file *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->n; i++)
        free((char *)f->tensors[i].name);
    free(f->tensors);
    for (size_t i = 0; i < f->n_meta; i++) {
        free(f->meta_keys[i]);
        free(f->meta_vals[i]);
    }
    free(f->meta_keys);
    free(f->meta_vals);
    qs_name_index_free(&f->index);
    free(f->gap_note);
    if (f->map)
        munmap((void *)f->map, f->map_len);
    free(f->path);
    free(f);
}

int qs_safetensors_parse(const uint8_t *buf, size_t len, const char *fname, qs_safetensors_file **out, qs_err *err)
{
    *out = NULL;
    qs_safetensors_file *f = file_new(fname);
    if (!f)
        return qs_errf(err, "%s: out of memory", fname ? fname : "<memory>");
    uint64_t n = 0;
    if (check_prefix(buf, len, f->path, &n, err) ||
        parse_header(buf + 8, n, len - 8 - n, buf + 8 + n, f, err)) {
        qs_safetensors_close(f);
        return -1;
    }
    *out = f;
    return 0;
}

static int open_fd(const char *path, int *fd, uint64_t *size, qs_err *err)
{
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0)
        return qs_errf(err, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(*fd, &st) || !S_ISREG(st.st_mode)) {
        close(*fd);
        return qs_errf(err, "%s: not a regular file", path);
    }
    *size = (uint64_t)st.st_size;
    return 0;
}

static int pread_full(int fd, void *buf, size_t n, off_t off)
{
    uint8_t *p = buf;
    while (n) {
        ssize_t r = pread(fd, p, n, off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
        off += r;
    }
    return 0;
}

/* Reads the header with pread (no page faults on a mapping just to parse it); unless headers_only,
 * then maps the whole file read-only for the tensor data. */
static int open_file(const char *path, bool headers_only, bool allow_gaps, qs_safetensors_file **out, qs_err *err)
{
    *out = NULL;
    int fd;
    uint64_t size = 0, n = 0;
    if (open_fd(path, &fd, &size, err))
        return -1;
    qs_safetensors_file *f = file_new(path);
    uint8_t first8[8] = {0};
    uint8_t *hdr = NULL;
    int rc = -1;
    if (!f) {
        qs_errf(err, "%s: out of memory", path);
        goto out;
    }
    f->allow_gaps = allow_gaps;
    if (size >= 8 && pread_full(fd, first8, 8, 0)) {
        qs_errf(err, "%s: read error: %s", path, errno ? strerror(errno) : "short read");
        goto out;
    }
    if (check_prefix(first8, size, path, &n, err))
        goto out;
    hdr = malloc((size_t)n);
    if (!hdr) {
        qs_errf(err, "%s: out of memory for a %llu-byte header", path, (unsigned long long)n);
        goto out;
    }
    if (pread_full(fd, hdr, (size_t)n, 8)) {
        qs_errf(err, "%s: read error: %s", path, errno ? strerror(errno) : "short read");
        goto out;
    }
    const uint8_t *data = NULL;
    if (!headers_only) {
        void *map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            qs_errf(err, "%s: mmap of %llu bytes failed: %s", path, (unsigned long long)size, strerror(errno));
            goto out;
        }
        f->map = map;
        f->map_len = (size_t)size;
        data = f->map + 8 + n;
    }
    if (parse_header(hdr, n, size - 8 - n, data, f, err))
        goto out;
    rc = 0;
out:
    close(fd);
    free(hdr);
    if (rc)
        qs_safetensors_close(f);
    else
        *out = f;
    return rc;
}

int qs_safetensors_open(const char *path, qs_safetensors_file **out, qs_err *err)
{
    return open_file(path, false, false, out, err);
}

int qs_safetensors_open_headers(const char *path, qs_safetensors_file **out, qs_err *err)
{
    return open_file(path, true, false, out, err);
}

size_t qs_safetensors_count(const qs_safetensors_file *f) { return f ? f->n : 0; }

const qs_tensor *qs_safetensors_tensor(const qs_safetensors_file *f, size_t i) { return f && i < f->n ? &f->tensors[i] : NULL; }

const qs_tensor *qs_safetensors_find(const qs_safetensors_file *f, const char *name)
{
    return f ? qs_name_index_find(&f->index, name) : NULL;
}

const char *qs_safetensors_path(const qs_safetensors_file *f) { return f ? f->path : NULL; }

const char *qs_safetensors_metadata(const qs_safetensors_file *f, const char *key)
{
    for (size_t i = 0; f && key && i < f->n_meta; i++)
        if (!strcmp(f->meta_keys[i], key))
            return f->meta_vals[i];
    return NULL;
}

size_t qs_safetensors_metadata_count(const qs_safetensors_file *f) { return f ? f->n_meta : 0; }

int qs_safetensors_metadata_at(const qs_safetensors_file *f, size_t i, const char **key, const char **value)
{
    if (!f || i >= f->n_meta)
        return -1;
    *key = f->meta_keys[i];
    *value = f->meta_vals[i];
    return 0;
}

/* ---- checkpoints ---------------------------------------------------------------------------- */

void qs_checkpoint_close(qs_checkpoint *ck)
{
    if (!ck)
        return;
    for (size_t i = 0; i < ck->n_files; i++)
        qs_safetensors_close(ck->files[i]);
    free(ck->files);
    free(ck->tensors);
    qs_name_index_free(&ck->index);
    free(ck->dir);
    free(ck);
}

static int open_one(const qs_checkpoint *ck, const char *path, bool headers_only, qs_safetensors_file **f,
                    qs_err *err)
{
    return open_file(path, headers_only, ck->allow_gaps, f, err);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* A shard name from the index must name a file beside it, not a path that leaves the folder. */
static bool shard_name_ok(const char *s)
{
    return s[0] && s[0] != '.' && !strchr(s, '/') && !strchr(s, '\\');
}

/* Builds ck->tensors and ck->index from ck->files; a name held by two files is an error. */
static int index_checkpoint(qs_checkpoint *ck, qs_err *err)
{
    size_t total = 0;
    for (size_t i = 0; i < ck->n_files; i++)
        total += qs_safetensors_count(ck->files[i]);
    ck->tensors = calloc(total + 1, sizeof *ck->tensors);
    if (!ck->tensors || qs_name_index_init(&ck->index, total))
        return qs_errf(err, "%s: out of memory for %zu tensors", ck->dir, total);
    for (size_t i = 0; i < ck->n_files; i++)
        for (size_t j = 0; j < ck->files[i]->n; j++) {
            const qs_tensor *t = &ck->files[i]->tensors[j];
            const qs_tensor *dup = qs_name_index_insert(&ck->index, t);
            if (dup) {
                char a[512];
                return qs_errf(err, "tensor '%s' is in two shards: %s and %s", qs_printable(a, sizeof a, t->name, strlen(t->name)),
                               dup->file, t->file);
            }
            ck->tensors[ck->n++] = t;
        }
    return 0;
}

static int open_sharded(qs_checkpoint *ck, const char *index_path, bool headers_only, qs_err *err)
{
    char *text = NULL;
    cJSON *root = NULL;
    char **shards = NULL;
    size_t n_shards = 0;
    int rc = -1;
    char a[512], b[512];
    if (qs_read_file(index_path, &text, NULL, err))
        return -1;
    root = cJSON_Parse(text);
    if (!root) {
        qs_errf(err, "%s: not valid JSON", index_path);
        goto out;
    }
    const cJSON *wm = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    if (!cJSON_IsObject(root) || !cJSON_IsObject(wm)) {
        qs_errf(err, "%s: field 'weight_map' must be an object mapping tensor names to shard files", index_path);
        goto out;
    }
    size_t n = (size_t)cJSON_GetArraySize(wm);
    if (n == 0) {
        qs_errf(err, "%s: weight_map is empty", index_path);
        goto out;
    }
    shards = calloc(n, sizeof *shards);
    if (!shards) {
        qs_errf(err, "%s: out of memory", index_path);
        goto out;
    }
    for (const cJSON *e = wm->child; e; e = e->next) {
        if (!cJSON_IsString(e)) {
            qs_errf(err, "%s: weight_map entry for tensor '%s' must be a shard file name (a string)", index_path,
                    qs_printable(a, sizeof a, e->string, strlen(e->string)));
            goto out;
        }
        if (!shard_name_ok(e->valuestring)) {
            qs_errf(err, "%s: tensor '%s' maps to '%s', which is not a file name in the model folder", index_path,
                    qs_printable(a, sizeof a, e->string, strlen(e->string)),
                    qs_printable(b, sizeof b, e->valuestring, strlen(e->valuestring)));
            goto out;
        }
        shards[n_shards++] = e->valuestring;
    }
    qsort(shards, n_shards, sizeof *shards, cmp_str);
    size_t u = 0;
    for (size_t i = 0; i < n_shards; i++)
        if (!u || strcmp(shards[u - 1], shards[i]))
            shards[u++] = shards[i];
    n_shards = u;
    ck->files = calloc(n_shards, sizeof *ck->files);
    if (!ck->files) {
        qs_errf(err, "%s: out of memory", index_path);
        goto out;
    }
    for (size_t i = 0; i < n_shards; i++) {
        char path[4096];
        qs_path_join(path, sizeof path, ck->dir, shards[i]);
        if (!qs_file_exists(path)) {
            const char *needer = "";
            for (const cJSON *e = wm->child; e; e = e->next)
                if (!strcmp(e->valuestring, shards[i])) {
                    needer = e->string;
                    break;
                }
            qs_errf(err, "%s: shard '%s' (holding tensor '%s') is missing: %s does not exist", index_path,
                    qs_printable(b, sizeof b, shards[i], strlen(shards[i])), qs_printable(a, sizeof a, needer, strlen(needer)),
                    path);
            goto out;
        }
        if (open_one(ck, path, headers_only, &ck->files[i], err))
            goto out;
        ck->n_files++;
    }
    /* Every tensor the index names must be in the shard it names, and be named once. */
    const char **names = calloc(n, sizeof *names);
    if (!names) {
        qs_errf(err, "%s: out of memory", index_path);
        goto out;
    }
    size_t nn = 0;
    for (const cJSON *e = wm->child; e; e = e->next) {
        char **hit = bsearch(&e->valuestring, shards, n_shards, sizeof *shards, cmp_str);
        qs_safetensors_file *f = ck->files[hit - shards];
        if (!qs_safetensors_find(f, e->string)) {
            qs_errf(err, "%s: tensor '%s' is mapped to shard '%s', but %s has no such tensor", index_path,
                    qs_printable(a, sizeof a, e->string, strlen(e->string)),
                    qs_printable(b, sizeof b, e->valuestring, strlen(e->valuestring)), f->path);
            free(names);
            goto out;
        }
        names[nn++] = e->string;
    }
    qsort(names, nn, sizeof *names, cmp_str);
    for (size_t i = 1; i < nn; i++)
        if (!strcmp(names[i - 1], names[i])) {
            qs_errf(err, "%s: weight_map names tensor '%s' twice", index_path,
                    qs_printable(a, sizeof a, names[i], strlen(names[i])));
            free(names);
            goto out;
        }
    free(names);
    rc = index_checkpoint(ck, err);
    if (rc)
        qs_err_prefix(err, "%s: ", index_path);
out:
    free(shards);
    cJSON_Delete(root);
    free(text);
    return rc;
}

static int checkpoint_open(const char *model_dir, bool headers_only, bool allow_gaps, qs_checkpoint **out,
                           qs_err *err)
{
    *out = NULL;
    struct stat st;
    if (stat(model_dir, &st))
        return qs_errf(err, "%s: %s", model_dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return qs_errf(err, "%s: not a directory (expected a model folder with model.safetensors)", model_dir);
    qs_checkpoint *ck = calloc(1, sizeof *ck);
    if (!ck || !(ck->dir = strdup(model_dir))) {
        free(ck);
        return qs_errf(err, "%s: out of memory", model_dir);
    }
    ck->allow_gaps = allow_gaps;
    char single[4096], index[4096];
    qs_path_join(single, sizeof single, model_dir, "model.safetensors");
    qs_path_join(index, sizeof index, model_dir, "model.safetensors.index.json");
    int rc;
    if (qs_file_exists(single)) {
        ck->files = calloc(1, sizeof *ck->files);
        rc = ck->files ? open_one(ck, single, headers_only, &ck->files[0], err)
                       : qs_errf(err, "%s: out of memory", single);
        if (!rc) {
            ck->n_files = 1;
            rc = index_checkpoint(ck, err);
        }
    } else if (qs_file_exists(index)) {
        rc = open_sharded(ck, index, headers_only, err);
    } else {
        rc = qs_errf(err, "%s: no model.safetensors or model.safetensors.index.json in this folder", model_dir);
    }
    if (rc) {
        qs_checkpoint_close(ck);
        return -1;
    }
    *out = ck;
    return 0;
}

int qs_checkpoint_open(const char *model_dir, bool headers_only, qs_checkpoint **out, qs_err *err)
{
    return checkpoint_open(model_dir, headers_only, false, out, err);
}

int qs_checkpoint_open_for_model(const char *model_dir, qs_checkpoint **out, qs_err *err)
{
    return checkpoint_open(model_dir, false, true, out, err);
}

const char *qs_checkpoint_gap(const qs_checkpoint *ck)
{
    for (size_t i = 0; ck && i < ck->n_files; i++)
        if (ck->files[i]->gap_note)
            return ck->files[i]->gap_note;
    return NULL;
}

const qs_tensor *qs_checkpoint_find(const qs_checkpoint *ck, const char *name)
{
    return ck ? qs_name_index_find(&ck->index, name) : NULL;
}

size_t qs_checkpoint_count(const qs_checkpoint *ck) { return ck ? ck->n : 0; }

const qs_tensor *qs_checkpoint_tensor(const qs_checkpoint *ck, size_t i) { return ck && i < ck->n ? ck->tensors[i] : NULL; }

size_t qs_checkpoint_file_count(const qs_checkpoint *ck) { return ck ? ck->n_files : 0; }

const qs_safetensors_file *qs_checkpoint_file(const qs_checkpoint *ck, size_t i)
{
    return ck && i < ck->n_files ? ck->files[i] : NULL;
}

const char *qs_checkpoint_dir(const qs_checkpoint *ck) { return ck ? ck->dir : NULL; }
