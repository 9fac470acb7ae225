/* step_graph_plan.c — buckets, the fixed index buffer's layout and how a decode step fills it
 * (see step_graph_plan.h). */
#include "model/step_graph_plan.h"

#include <string.h>

#include "model/kv_cache.h"

/* The bucket after `size`: doubling up to 8, then every multiple of 8 (what vLLM captures too):
 * a batch pads by at most 7 rows, so its GEMMs run the kernels' own token tiles (marlin's stream
 * kernel has one for every multiple of 8) instead of the next power of two. */
static int next_bucket(int size) { return size < 8 ? 2 * size : size + 8; }

int qs_graph_plan_init(qs_graph_plan *p, int max_num_seqs, int blocks_per_seq, bool exact, qs_err *err)
{
    memset(p, 0, sizeof *p);
    if (max_num_seqs <= 0 || blocks_per_seq <= 0)
        return qs_errf(err, "decode graphs: max_num_seqs %d and blocks per sequence %d must be positive",
                       max_num_seqs, blocks_per_seq);
    p->max_seqs = max_num_seqs < QS_GRAPH_MAX_SEQS ? max_num_seqs : QS_GRAPH_MAX_SEQS;
    p->stride = blocks_per_seq;
    p->exact = exact;
    if (exact) {
        p->n_buckets = p->max_seqs;
    } else {
        int n = 0;
        for (int b = 1; b < p->max_seqs; b = next_bucket(b))
            n++;
        p->n_buckets = n + 1; /* the buckets below max_seqs, and max_seqs */
    }
    return 0;
}

int qs_graph_bucket(const qs_graph_plan *p, int n, int *size)
{
    if (n < 1 || n > p->max_seqs)
        return -1;
    if (p->exact) {
        *size = n;
        return n - 1;
    }
    int idx = 0, b = 1;
    while (b < n && b < p->max_seqs) {
        b = next_bucket(b);
        idx++;
    }
    *size = b < p->max_seqs ? b : p->max_seqs;
    return idx;
}

void qs_graph_layout_of(const qs_graph_plan *p, qs_graph_layout *l)
{
    int64_t B = p->max_seqs;
    l->ids = 0;
    l->pos = B;
    l->slots = 2 * B;
    l->per_step = 3 * B;
    l->tables = 3 * B;
    l->seq = l->tables + B * p->stride;
    l->out_rows = l->seq + B;
    l->total = l->out_rows + B;
}

bool qs_graph_step_is_decode(const qs_seq_step *seqs, int n)
{
    if (n <= 0 || !seqs)
        return false;
    for (int i = 0; i < n; i++)
        if (seqs[i].n_tokens != 1 || !seqs[i].want_logits)
            return false;
    return true;
}

void qs_graph_fill_constant(const qs_graph_plan *p, int32_t *host)
{
    qs_graph_layout l;
    qs_graph_layout_of(p, &l);
    memset(host, 0, sizeof(int32_t) * (size_t)l.total);
    for (int i = 0; i < p->max_seqs; i++) {
        host[l.seq + i] = i;
        host[l.out_rows + i] = i;
    }
}

int qs_graph_fill_step(const qs_graph_plan *p, const qs_seq_step *seqs, int n, int size, int32_t *host)
{
    if (n < 1 || n > size || size > p->max_seqs || !qs_graph_step_is_decode(seqs, n))
        return -1;
    qs_graph_layout l;
    qs_graph_layout_of(p, &l);
    int width = 0;
    for (int i = 0; i < n; i++) {
        const qs_seq_step *s = &seqs[i];
        int pos = s->start_pos;
        int need = pos / QS_KV_BLOCK_SIZE + 1; /* the blocks holding positions 0..pos */
        if (pos < 0 || need > p->stride || need > s->n_blocks)
            return -1;
        if (need > width)
            width = need;
        host[l.ids + i] = s->tokens[0];
        host[l.pos + i] = pos;
        host[l.slots + i] = s->block_table[pos / QS_KV_BLOCK_SIZE] * QS_KV_BLOCK_SIZE + pos % QS_KV_BLOCK_SIZE;
        memcpy(host + l.tables + (int64_t)i * p->stride, s->block_table, sizeof(int32_t) * (size_t)need);
    }
    for (int i = n; i < size; i++) {
        host[l.ids + i] = 0;
        host[l.pos + i] = 0;
        host[l.slots + i] = -1;
    }
    return width;
}
