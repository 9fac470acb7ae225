/* step_graph.h — decode steps recorded once per batch-size bucket and replayed (see
 * step_graph.c); on by default (QSERVE_CUDA_GRAPHS=0 turns them off), on devices whose ops
 * have graph support. */
#ifndef QS_MODEL_STEP_GRAPH_H
#define QS_MODEL_STEP_GRAPH_H

#include "config/config.h"
#include "model/model_internal.h"

/* Reads QSERVE_CUDA_GRAPHS (1/0, true/false, yes/no, on/off; unset = on). When on and the device
 * can record graphs, gives the model its own stream (m->stream) and its graph state (m->graphs);
 * otherwise leaves both NULL and says why in one log line. -1 with err on a malformed value. */
int qs_step_graphs_init(qs_model *m, const qs_config *cfg, qs_err *err);
void qs_step_graphs_free(qs_model *m);

/* Runs a step through its bucket's graph when the step is a decode step the graphs serve, with
 * outputs as qs_model_forward (sample NULL) or qs_model_forward_sample (sample: the rows' host
 * parameters, tokens) give them (the step has passed its checks). Returns 1 when it did, 0 when
 * the caller must run the step eagerly, -1 on an error. */
int qs_step_graphs_forward(qs_model *m, qs_kv_cache *kv, const qs_seq_step *seqs, int n_seqs,
                           const qs_sample_row *sample, int32_t *tokens, float *logits, qs_err *err);

#endif
