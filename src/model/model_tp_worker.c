/* model_tp_worker.c — a tensor-parallel rank other than 0 (see model_tp.h): it receives every
 * step rank 0 broadcasts (tp_step_wire.h) and runs it through the same forward pass on its shards,
 * until rank 0 stops. It stands above the step (model_step.c), which the collectives of
 * model_tp_step.c serve. */
#include <stdio.h>
#include <stdlib.h>

#include "model/model_internal.h"
#include "model/model_tp.h"
#include "model/tp_step_wire.h"
#include "util/log.h"

int qs_model_tp_worker(qs_model *m, qs_kv_cache *kv, qs_err *err)
{
    if (m->tp.size <= 1 || m->tp.rank == 0)
        return qs_errf(err, "qs_model_tp_worker runs on tensor-parallel ranks other than 0");
    qs_comm *c = m->comm;
    qs_seq_step *seqs = NULL;
    int32_t *p = NULL;
    long steps = 0;
    for (;;) {
        int32_t hdr[HDR_LEN];
        if (c->broadcast(c, hdr, HDR_LEN, QS_COMM_I32, 0, QS_COMM_WAIT_IDLE, err))
            break;
        if (hdr[HDR_CMD] == STEP_STOP) {
            qs_info("tensor parallel: rank 0 stopped after %ld steps", steps);
            qs_tp_log_stats(m);
            free(seqs);
            free(p);
            return 0;
        }
        int n = hdr[HDR_SEQS];
        int64_t len = (int64_t)n * SEQ_LEN + hdr[HDR_TOKENS] + hdr[HDR_BLOCKS];
        qs_seq_step *ns = realloc(seqs, sizeof *seqs * (size_t)(n > 0 ? n : 1));
        int32_t *np = ns ? realloc(p, sizeof(int32_t) * (size_t)(len + 1)) : NULL;
        if (ns)
            seqs = ns;
        if (np)
            p = np;
        if (!ns || !np) {
            qs_errf(err, "out of memory receiving a step of %d sequences", n);
            break;
        }
        if (c->broadcast(c, p, len, QS_COMM_I32, 0, QS_COMM_WAIT_STEP, err))
            break;
        const int32_t *tok = p + (int64_t)n * SEQ_LEN, *blk = tok + hdr[HDR_TOKENS];
        for (int i = 0; i < n; i++) {
            const int32_t *f = p + (int64_t)i * SEQ_LEN;
            seqs[i] = (qs_seq_step){.tokens = tok,
                                    .n_tokens = f[SEQ_TOKENS],
                                    .start_pos = f[SEQ_START],
                                    .block_table = blk,
                                    .n_blocks = f[SEQ_BLOCKS],
                                    .want_logits = f[SEQ_LOGITS] != 0};
            tok += f[SEQ_TOKENS];
            blk += f[SEQ_BLOCKS];
        }
        if (qs_model_forward(m, kv, seqs, n, NULL, err))
            break;
        steps++;
        m->tp_stats.steps++;
    }
    free(seqs);
    free(p);
    /* rank 0 is waiting in this step's collectives: end the job rather than leave it hanging */
    char why[QS_ERR_MSG_MAX + 64];
    snprintf(why, sizeof why, "step %ld failed: %s", steps, err->msg);
    c->abort(c, why);
    return -1;
}
