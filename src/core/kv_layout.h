/* kv_layout.h — the paged KV cache's layout, which the engine's block allocator
 * (model/kv_cache.c) and every attention op (src/cpu, cuda/) must agree on: per layer, for K and
 * for V, [block][kv_head][slot][head_dim] with QS_KV_BLOCK_SIZE slots a block (the layout the GPU
 * decode kernel reads best; the CPU uses the same one), elements of type qs_kv_dtype. */
#ifndef QS_CORE_KV_LAYOUT_H
#define QS_CORE_KV_LAYOUT_H

#define QS_KV_BLOCK_SIZE 16

/* What the KV cache stores (the pool itself: src/model/kv_cache.h). QS_KV_ACT: the device's
 * activation format (float32 on CPU, bf16 on CUDA). QS_KV_BF16: bf16 (CUDA: the same as QS_KV_ACT). QS_KV_FP8_E4M3:
 * one byte an element, x / scale rounded to OCP E4M3 (saturating at ±448) on write, code * scale
 * on read, with one scale for K and one for V per layer (vLLM's --kv-cache-dtype fp8). */
typedef enum { QS_KV_ACT = 0, QS_KV_BF16 = 1, QS_KV_FP8_E4M3 = 2 } qs_kv_dtype;

#endif
