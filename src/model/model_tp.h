/* model_tp.h — tensor parallelism inside the model (docs/parallel.md): which heads, MLP columns
 * and vocabulary rows this rank holds, the cutting of its layers at load (quant/linear_shard.h),
 * the collectives the forward pass adds (embedding and o/down all-reduces, the logits all-gather),
 * and the step broadcast: rank 0's engine calls qs_model_forward as always and the model sends the
 * step to the other ranks, which sit in qs_model_tp_worker running the same forward pass. Dense
 * Llama, Mistral, Qwen2 and Qwen3, the MoE models Qwen3-MoE and Mixtral, and Llama 4 (its
 * routed experts like the others', its shared expert always cut like a dense MLP) are sharded in
 * every linear scheme: experts tensor-parallel (each expert's intermediate dimension split) or,
 * with --enable-expert-parallel, whole experts per rank. CPU ranks collect over MPI, CUDA ranks
 * over NCCL (cuda/comm_nccl.h), one GPU each. */
#ifndef QS_MODEL_MODEL_TP_H
#define QS_MODEL_MODEL_TP_H

#include <stdbool.h>
#include <stdint.h>

#include "model/tp_layout.h"
#include "parallel/comm.h"
#include "util/error.h"

/* The communicator of this process for --tensor-parallel-size `size`: the one-rank one for 1,
 * else MPI (initialized on first use, shared by everything in the process). */
qs_comm *qs_tp_comm(int size, qs_err *err);
/* The communicator qs_tp_comm made for several ranks, or NULL when there is none. */
qs_comm *qs_tp_comm_current(void);
/* Finalizes MPI when it was started (at process exit). */
void qs_tp_comm_shutdown(void);

typedef struct qs_model qs_model;
typedef struct qs_kv_cache qs_kv_cache;
/* A worker rank's life: receive every step rank 0 runs and run it, until rank 0 frees its model.
 * Returns 0 then; an error in a step ends the whole job (the other ranks would wait forever). */
int qs_model_tp_worker(qs_model *m, qs_kv_cache *kv, qs_err *err);
/* This model's rank and rank count (0 and 1 without tensor parallelism). */
int qs_model_tp_rank(const qs_model *m);
int qs_model_tp_size(const qs_model *m);

#endif
