/* model.h — a loaded model: config, tokenizer-independent weights prepared by the kernels the
 * registry chose, and one forward pass over a batch of sequence slices (prefill chunks and decode
 * tokens mixed) reading and writing a paged KV cache. Written once over the ops interface
 * (src/core/ops.h), so the same code runs on CPU and CUDA. */
#ifndef QS_MODEL_MODEL_H
#define QS_MODEL_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "model/model_config.h"
#include "model/projection_fusion.h"
#include "core/sample.h"
#include "core/kernel.h"
#include "util/error.h"

typedef struct qs_model qs_model;
typedef struct qs_kv_cache qs_kv_cache;

/* Loads MODEL_DIR (cfg->model_dir): config, checkpoint, quantization schemes, kernel selection
 * (logged one line per layer kind and scheme), weight preparation, on the device cfg->device
 * picks. q/k/v and gate/up projections are fused into one layer each where that is exact, unless
 * cfg->no_fuse_projections or QSERVE_NO_FUSE=1 (projection_fusion.h). */
int qs_model_load(const qs_config *cfg, qs_model **out, qs_err *err);
void qs_model_free(qs_model *m);
const qs_model_config *qs_model_get_config(const qs_model *m);
const qs_device_caps *qs_model_device(const qs_model *m);
/* Whether activations are written in the order their linear kernel reads (core/act_order.h):
 * QSERVE_ACT_ORDER, on unless 0 / false. -1 with err naming the variable for any other value. */
int qs_act_orders_from_env(bool *on, qs_err *err);
/* Which q/k/v and gate/up projections were fused into one linear layer at load. */
const qs_fusion_summary *qs_model_fusion(const qs_model *m);

/* One sequence's part of a forward step. The KV cache holds positions [0, start_pos); this step
 * appends tokens at positions [start_pos, start_pos + n_tokens). block_table lists the KV blocks
 * (QS_KV_BLOCK_SIZE positions each) covering [0, start_pos + n_tokens). */
typedef struct qs_seq_step {
    const int32_t *tokens;
    int n_tokens;
    int start_pos;
    const int32_t *block_table;
    int n_blocks;
    bool want_logits;   /* produce logits for the last of these tokens */
} qs_seq_step;

/* Runs the step. logits receives one row of vocab_size floats per sequence with want_logits,
 * in the order of seqs. */
int qs_model_forward(qs_model *m, qs_kv_cache *kv, const qs_seq_step *seqs, int n_seqs, float *logits, qs_err *err);

/* Whether qs_model_forward_sample samples on the device: its ops have the sampling op
 * (core/sample.h) and QSERVE_DEVICE_SAMPLING is not 0 (read at load). */
bool qs_model_samples_on_device(const qs_model *m);
/* The step of qs_model_forward, with the rows that want logits (n_out of them, in the order of
 * seqs) sampled on the device by sample[r] (host memory, n_out rows): tokens[r] receives row r's
 * token, or -1 where sample[r].skip; only the skipped rows' logits come to the host, each at
 * logits + r * vocab_size (the other rows of logits are left as they are). Without device
 * sampling every row is skipped. */
int qs_model_forward_sample(qs_model *m, qs_kv_cache *kv, const qs_seq_step *seqs, int n_seqs,
                            const qs_sample_row *sample, int32_t *tokens, float *logits, qs_err *err);

#endif
