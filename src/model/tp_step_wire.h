/* tp_step_wire.h — the layout of the step rank 0 broadcasts to the other tensor-parallel ranks:
 * a header, then per sequence its fields, then every sequence's tokens, then its block tables.
 * Written by qs_tp_send_step (model_tp_step.c), read by qs_model_tp_worker (model_tp_worker.c). */
#ifndef QS_MODEL_TP_STEP_WIRE_H
#define QS_MODEL_TP_STEP_WIRE_H

enum { STEP_STOP = 0, STEP_RUN = 1 };
enum { HDR_CMD, HDR_SEQS, HDR_TOKENS, HDR_BLOCKS, HDR_LEN };
enum { SEQ_TOKENS, SEQ_START, SEQ_BLOCKS, SEQ_LOGITS, SEQ_LEN }; /* per-sequence fields of the payload */

#endif
