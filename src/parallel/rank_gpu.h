/* rank_gpu.h — which GPU a tensor-parallel rank runs on: the rank's place on its host (Open MPI's
 * local rank) modulo the host's GPUs, as vLLM assigns them. The choice is made by narrowing
 * CUDA_VISIBLE_DEVICES to that one GPU before CUDA starts in the process, so every thread of the
 * rank (loader, engine, NCCL) sees it as device 0 and nothing else in qserve needs to know. */
#ifndef QS_PARALLEL_RANK_GPU_H
#define QS_PARALLEL_RANK_GPU_H

#include <stdbool.h>

#include "util/error.h"

/* For rank `local_rank` of the `local_size` ranks on this host: when the build has CUDA and the
 * host has GPUs (CUDA_VISIBLE_DEVICES's list when set, else counted in a child process, since
 * counting in this one would start CUDA before the choice), sets CUDA_VISIBLE_DEVICES to this
 * rank's GPU and returns 1 (*gpu: its index among the visible ones); 0 when there is no GPU (or
 * no CUDA in this build), leaving everything as it was; -1 with err when the host has fewer GPUs
 * than ranks (NCCL runs one rank per GPU). Must run before anything in the process calls CUDA. */
int qs_rank_gpu_select(int local_rank, int local_size, int *gpu, qs_err *err);

#endif
