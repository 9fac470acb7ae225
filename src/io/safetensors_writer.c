/* safetensors_writer.c — the safetensors writer (safetensors_writer.h).
 *
 * A file is written as: u64 header length N (little-endian), the JSON header padded with spaces
 * so that N is a multiple of 8, then every tensor's bytes back to back in header order. Tensors are
 * ordered by descending element size, so with an 8-aligned data section each one starts aligned to
 * its element size (as the reference writer does). Data goes straight from the caller's buffers to
 * write(): small tensors are gathered in an 8 MB staging buffer, large ones are written directly.
 * Files are written to NAME.tmp and renamed, so a reader never sees half a checkpoint. */
#include "io/safetensors_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unistr.h>

#include "io/safetensors_internal.h"
#include "util/fileio.h"

#define STAGE_BYTES (8u << 20)

typedef struct {
    qs_tensor t;      /* name owned; data referenced or owned (copy) */
    void *owned;      /* non-NULL for add_copy */
    size_t order;     /* insertion index */
} entry;

struct qs_st_writer {
    entry **e;
    size_t n, cap;
    qs_name_index index;
    char **meta_keys, **meta_vals;
    size_t n_meta;
};

qs_st_writer *qs_st_writer_new(void)
{
    qs_st_writer *w = calloc(1, sizeof *w);
    if (w && qs_name_index_init(&w->index, 64)) {
        free(w);
        return NULL;
    }
    return w;
}

void qs_st_writer_free(qs_st_writer *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->n; i++) {
        free((char *)w->e[i]->t.name);
        free(w->e[i]->owned);
        free(w->e[i]);
    }
    free(w->e);
    qs_name_index_free(&w->index);
    for (size_t i = 0; i < w->n_meta; i++) {
        free(w->meta_keys[i]);
        free(w->meta_vals[i]);
    }
    free(w->meta_keys);
    free(w->meta_vals);
    free(w);
}

size_t qs_st_writer_count(const qs_st_writer *w) { return w ? w->n : 0; }

uint64_t qs_st_writer_total_bytes(const qs_st_writer *w)
{
    uint64_t s = 0;
    for (size_t i = 0; w && i < w->n; i++)
        s += w->e[i]->t.nbytes;
    return s;
}

static bool utf8_ok(const char *s) { return u8_check((const uint8_t *)s, strlen(s)) == NULL; }

static int add(qs_st_writer *w, const char *name, qs_dtype dtype, int ndim, const int64_t *shape, const void *data,
               size_t nbytes, bool copy, qs_err *err)
{
    char nm[512];
    if (!name || !name[0])
        return qs_errf(err, "safetensors writer: empty tensor name");
    qs_printable(nm, sizeof nm, name, strlen(name));
    if (!utf8_ok(name))
        return qs_errf(err, "safetensors writer: tensor '%s': name is not valid UTF-8", nm);
    if (!strcmp(name, "__metadata__"))
        return qs_errf(err, "safetensors writer: tensor '%s': the name is reserved", nm);
    if ((unsigned)dtype >= QS_DT_COUNT)
        return qs_errf(err, "safetensors writer: tensor '%s': invalid dtype %d", nm, (int)dtype);
    if (ndim < 0 || ndim > QS_MAX_DIMS || (ndim > 0 && !shape))
        return qs_errf(err, "safetensors writer: tensor '%s': %d dimensions (0..%d supported)", nm, ndim, QS_MAX_DIMS);
    if (qs_name_index_find(&w->index, name))
        return qs_errf(err, "safetensors writer: tensor '%s' added twice", nm);
    uint64_t numel = 1, need;
    bool overflow = false, zero = false;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return qs_errf(err, "safetensors writer: tensor '%s': shape[%d] = %lld is negative", nm, i, (long long)shape[i]);
        zero |= shape[i] == 0;
        overflow |= __builtin_mul_overflow(numel, (uint64_t)shape[i], &numel);
    }
    if (zero)
        numel = 0, overflow = false;
    if (overflow || numel > (uint64_t)INT64_MAX ||
        __builtin_mul_overflow(numel, (uint64_t)(qs_dtype_bits(dtype) / 8), &need))
        return qs_errf(err, "safetensors writer: tensor '%s': shape has too many elements", nm);
    if (need != (uint64_t)nbytes)
        return qs_errf(err, "safetensors writer: tensor '%s': %zu bytes given but %s of %llu elements needs %llu", nm,
                       nbytes, qs_dtype_name(dtype), (unsigned long long)numel, (unsigned long long)need);
    if (nbytes && !data)
        return qs_errf(err, "safetensors writer: tensor '%s': data is NULL", nm);
    entry *e = calloc(1, sizeof *e);
    char *nm_copy = malloc(strlen(name) + 1);
    void *owned = copy && nbytes ? malloc(nbytes) : NULL;
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 256;
        entry **ne = realloc(w->e, cap * sizeof *ne);
        if (ne) {
            w->e = ne;
            w->cap = cap;
        }
    }
    if (!e || !nm_copy || (copy && nbytes && !owned) || w->n == w->cap) {
        free(e);
        free(nm_copy);
        free(owned);
        return qs_errf(err, "safetensors writer: tensor '%s': out of memory", nm);
    }
    /* Keep the index at most half full: rebuild at twice the size when needed. */
    if (2 * (w->index.n + 1) > w->index.cap) {
        qs_name_index bigger;
        if (qs_name_index_init(&bigger, 2 * w->index.cap)) {
            free(e);
            free(nm_copy);
            free(owned);
            return qs_errf(err, "safetensors writer: tensor '%s': out of memory", nm);
        }
        for (size_t i = 0; i < w->n; i++)
            qs_name_index_insert(&bigger, &w->e[i]->t);
        qs_name_index_free(&w->index);
        w->index = bigger;
    }
    strcpy(nm_copy, name);
    if (owned)
        memcpy(owned, data, nbytes);
    e->t.name = nm_copy;
    e->t.dtype = dtype;
    e->t.ndim = ndim;
    for (int i = 0; i < ndim; i++)
        e->t.shape[i] = shape[i];
    e->t.numel = (int64_t)numel;
    e->t.data = owned ? owned : data;
    e->t.nbytes = nbytes;
    e->owned = owned;
    e->order = w->n;
    w->e[w->n++] = e;
    qs_name_index_insert(&w->index, &e->t);
    return 0;
}

int qs_st_writer_add(qs_st_writer *w, const char *name, qs_dtype dtype, int ndim, const int64_t *shape,
                     const void *data, size_t nbytes, qs_err *err)
{
    return add(w, name, dtype, ndim, shape, data, nbytes, false, err);
}

int qs_st_writer_add_copy(qs_st_writer *w, const char *name, qs_dtype dtype, int ndim, const int64_t *shape,
                          const void *data, size_t nbytes, qs_err *err)
{
    return add(w, name, dtype, ndim, shape, data, nbytes, true, err);
}

int qs_st_writer_set_metadata(qs_st_writer *w, const char *key, const char *value)
{
    if (!w || !key || !value || !utf8_ok(key) || !utf8_ok(value))
        return -1;
    char *v = malloc(strlen(value) + 1);
    if (!v)
        return -1;
    strcpy(v, value);
    for (size_t i = 0; i < w->n_meta; i++)
        if (!strcmp(w->meta_keys[i], key)) {
            free(w->meta_vals[i]);
            w->meta_vals[i] = v;
            return 0;
        }
    char *k = malloc(strlen(key) + 1);
    char **nk = realloc(w->meta_keys, (w->n_meta + 1) * sizeof *nk);
    if (nk)
        w->meta_keys = nk;
    char **nv = realloc(w->meta_vals, (w->n_meta + 1) * sizeof *nv);
    if (nv)
        w->meta_vals = nv;
    if (!k || !nk || !nv) {
        free(k);
        free(v);
        return -1;
    }
    strcpy(k, key);
    w->meta_keys[w->n_meta] = k;
    w->meta_vals[w->n_meta++] = v;
    return 0;
}

/* ---- text building -------------------------------------------------------------------------- */

typedef struct {
    char *p;
    size_t len, cap;
    bool oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (b->len + n + 1 > cap)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_fmt(sbuf *b, const char *fmt, unsigned long long v)
{
    char tmp[256];
    int n = snprintf(tmp, sizeof tmp, fmt, v);
    sb_put(b, tmp, n < 0 ? 0 : (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* A JSON string literal: quotes, backslashes and control characters escaped; UTF-8 kept as is. */
static void sb_json_str(sbuf *b, const char *s)
{
    sb_put(b, "\"", 1);
    const char *run = s;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c != '"' && c != '\\' && c >= 0x20)
            continue;
        sb_put(b, run, (size_t)(s - run));
        char esc[8];
        if (c == '"' || c == '\\')
            snprintf(esc, sizeof esc, "\\%c", c);
        else
            snprintf(esc, sizeof esc, "\\u%04x", c);
        sb_str(b, esc);
        run = s + 1;
    }
    sb_put(b, run, (size_t)(s - run));
    sb_put(b, "\"", 1);
}

/* ---- writing -------------------------------------------------------------------------------- */

static int write_all(int fd, const void *p, size_t n)
{
    const uint8_t *c = p;
    while (n) {
        ssize_t r = write(fd, c, n > (1u << 30) ? (1u << 30) : n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

typedef struct {
    int fd;
    uint8_t *stage;
    size_t len;
} bufw;

static int bw_flush(bufw *b)
{
    int rc = write_all(b->fd, b->stage, b->len);
    b->len = 0;
    return rc;
}

static int bw_put(bufw *b, const void *p, size_t n)
{
    if (n == 0)
        return 0;
    if (n >= STAGE_BYTES / 2) {
        if (b->len && bw_flush(b))
            return -1;
        return write_all(b->fd, p, n);
    }
    if (b->len + n > STAGE_BYTES && bw_flush(b))
        return -1;
    memcpy(b->stage + b->len, p, n);
    b->len += n;
    return 0;
}

static int cmp_entry(const void *a, const void *b)
{
    const entry *x = *(entry *const *)a, *y = *(entry *const *)b;
    int sx = qs_dtype_bits(x->t.dtype), sy = qs_dtype_bits(y->t.dtype);
    if (sx != sy)
        return sx > sy ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Writes entries es[0..n) (reordered in place) as one safetensors file at path. */
static int write_file(const qs_st_writer *w, entry **es, size_t n, const char *path, qs_err *err)
{
    qsort(es, n, sizeof *es, cmp_entry);
    sbuf h = {0};
    sb_put(&h, "{", 1);
    if (w->n_meta) {
        sb_str(&h, "\"__metadata__\":{");
        for (size_t i = 0; i < w->n_meta; i++) {
            if (i)
                sb_put(&h, ",", 1);
            sb_json_str(&h, w->meta_keys[i]);
            sb_put(&h, ":", 1);
            sb_json_str(&h, w->meta_vals[i]);
        }
        sb_put(&h, "}", 1);
    }
    uint64_t off = 0;
    for (size_t i = 0; i < n; i++) {
        const qs_tensor *t = &es[i]->t;
        if (i || w->n_meta)
            sb_put(&h, ",", 1);
        sb_json_str(&h, t->name);
        sb_str(&h, ":{\"dtype\":\"");
        sb_str(&h, qs_dtype_name(t->dtype));
        sb_str(&h, "\",\"shape\":[");
        for (int d = 0; d < t->ndim; d++)
            sb_fmt(&h, d ? ",%llu" : "%llu", (unsigned long long)t->shape[d]);
        sb_fmt(&h, "],\"data_offsets\":[%llu,", off);
        off += t->nbytes;
        sb_fmt(&h, "%llu]}", off);
    }
    sb_put(&h, "}", 1);
    while (h.len % 8)
        sb_put(&h, " ", 1);
    if (h.oom) {
        free(h.p);
        return qs_errf(err, "%s: out of memory building the header", path);
    }
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp) {
        free(h.p);
        return qs_errf(err, "%.200s...: path too long", path);
    }
    bufw b = {.fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), .stage = malloc(STAGE_BYTES)};
    if (b.fd < 0 || !b.stage) {
        int e = errno;
        free(h.p);
        free(b.stage);
        if (b.fd >= 0)
            close(b.fd);
        return qs_errf(err, "%s: %s", tmp, b.stage ? strerror(e) : "out of memory");
    }
    uint8_t len8[8];
    for (int i = 0; i < 8; i++)
        len8[i] = (uint8_t)((uint64_t)h.len >> (8 * i));
    int rc = bw_put(&b, len8, 8) || bw_put(&b, h.p, h.len);
    for (size_t i = 0; !rc && i < n; i++)
        rc = bw_put(&b, es[i]->t.data, es[i]->t.nbytes);
    if (!rc)
        rc = bw_flush(&b);
    int e = errno;
    if (close(b.fd) && !rc) {
        rc = -1;
        e = errno;
    }
    free(b.stage);
    free(h.p);
    if (rc) {
        unlink(tmp);
        return qs_errf(err, "%s: write failed: %s", tmp, strerror(e));
    }
    if (rename(tmp, path)) {
        e = errno;
        unlink(tmp);
        return qs_errf(err, "%s: cannot rename %s into place: %s", path, tmp, strerror(e));
    }
    return 0;
}

static entry **entries_copy(const qs_st_writer *w)
{
    entry **es = malloc((w->n + 1) * sizeof *es);
    if (es && w->n)
        memcpy(es, w->e, w->n * sizeof *es);
    return es;
}

int qs_st_writer_write(qs_st_writer *w, const char *path, qs_err *err)
{
    entry **es = entries_copy(w);
    if (!es)
        return qs_errf(err, "%s: out of memory", path);
    int rc = write_file(w, es, w->n, path, err);
    free(es);
    return rc;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp((*(entry *const *)a)->t.name, (*(entry *const *)b)->t.name);
}

static void remove_if_present(const char *dir, const char *name)
{
    char p[4096];
    qs_path_join(p, sizeof p, dir, name);
    unlink(p);
}

int qs_st_writer_write_sharded(qs_st_writer *w, const char *dir, size_t max_shard_bytes, qs_err *err)
{
    if (mkdir(dir, 0755) && errno != EEXIST)
        return qs_errf(err, "%s: cannot create folder: %s", dir, strerror(errno));
    /* Split in insertion order: a new shard starts when the next tensor would overflow this one. */
    size_t *shard_of = calloc(w->n + 1, sizeof *shard_of);
    entry **es = entries_copy(w);
    if (!shard_of || !es) {
        free(shard_of);
        free(es);
        return qs_errf(err, "%s: out of memory", dir);
    }
    size_t n_shards = 1;
    uint64_t cur = 0;
    for (size_t i = 0; i < w->n; i++) {
        uint64_t nb = w->e[i]->t.nbytes;
        if (max_shard_bytes && cur > 0 && cur + nb > max_shard_bytes) {
            n_shards++;
            cur = 0;
        }
        cur += nb;
        shard_of[i] = n_shards - 1;
    }
    char path[4096], name[64];
    int rc = 0;
    if (n_shards == 1) {
        remove_if_present(dir, "model.safetensors.index.json");
        rc = write_file(w, es, w->n, qs_path_join(path, sizeof path, dir, "model.safetensors"), err);
        free(shard_of);
        free(es);
        return rc;
    }
    remove_if_present(dir, "model.safetensors");
    for (size_t s = 0, i = 0; s < n_shards && !rc; s++) {
        size_t first = i;
        while (i < w->n && shard_of[i] == s)
            i++;
        snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", s + 1, n_shards);
        rc = write_file(w, es + first, i - first, qs_path_join(path, sizeof path, dir, name), err);
    }
    if (!rc) {
        /* The index, weight_map sorted by name as transformers writes it. */
        size_t *shard_by_order = shard_of; /* shard_of is indexed by insertion order */
        entry **by_name = entries_copy(w);
        sbuf j = {0};
        if (!by_name) {
            rc = qs_errf(err, "%s: out of memory", dir);
        } else {
            qsort(by_name, w->n, sizeof *by_name, cmp_name);
            sb_fmt(&j, "{\n  \"metadata\": {\n    \"total_size\": %llu\n  },\n  \"weight_map\": {", (unsigned long long)qs_st_writer_total_bytes(w));
            for (size_t i = 0; i < w->n; i++) {
                sb_str(&j, i ? ",\n    " : "\n    ");
                sb_json_str(&j, by_name[i]->t.name);
                snprintf(name, sizeof name, ": \"model-%05zu-of-%05zu.safetensors\"", shard_by_order[by_name[i]->order] + 1, n_shards);
                sb_str(&j, name);
            }
            sb_str(&j, "\n  }\n}\n");
            char tmp[4096];
            qs_path_join(path, sizeof path, dir, "model.safetensors.index.json");
            if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
                rc = qs_errf(err, "%.200s...: path too long", path);
            else if (j.oom)
                rc = qs_errf(err, "%s: out of memory", path);
            else if (qs_write_file(tmp, j.p, j.len, err))
                rc = -1;
            else if (rename(tmp, path))
                rc = qs_errf(err, "%s: cannot rename %s into place: %s", path, tmp, strerror(errno));
        }
        free(by_name);
        free(j.p);
    }
    free(shard_of);
    free(es);
    return rc;
}
