/* config.h — everything a user can set: serve flags, backend choices, sampling defaults. One
 * struct qs_config is filled from, in rising priority: built-in defaults, the YAML file named by
 * --config, the command line. Names are normalised (lowercase, '-' -> '_'); an unknown flag, YAML
 * key or value is an error naming it (and, for YAML, the line and file) and listing valid ones. */
#ifndef QS_CONFIG_CONFIG_H
#define QS_CONFIG_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "quant/scheme.h"
#include "util/error.h"

#define QS_NAME_MAX 64
#define QS_MAX_DISABLED 32

typedef struct qs_kernel_config {
    char linear_backend[QS_NAME_MAX];                    /* "auto" or a kernel name */
    char moe_backend[QS_NAME_MAX];
    char linear_backend_per_quant[QS_SCHEME_COUNT][QS_NAME_MAX]; /* "" = not set */
    bool batch_invariant;                                /* --batch-invariant / QSERVE_BATCH_INVARIANT=1 */
    char disabled_kernels[QS_MAX_DISABLED][QS_NAME_MAX]; /* QSERVE_DISABLED_KERNELS=a,b */
    int n_disabled;
} qs_kernel_config;

typedef enum { QS_DEVICE_AUTO, QS_DEVICE_CPU, QS_DEVICE_CUDA } qs_device_choice;

typedef struct qs_config {
    char model_dir[1024];
    char served_model_name[256];   /* default: model_dir as given */
    char host[256];                /* default "0.0.0.0" */
    int port;                      /* default 8000 */
    int max_model_len;             /* 0 = from the model config */
    int max_num_seqs;              /* default 256 (CPU: 16) */
    int max_num_batched_tokens;    /* 0 = auto */
    int max_num_queued_reqs;       /* default 1024 */
    double gpu_memory_utilization; /* default 0.9 */
    size_t kv_cache_memory;        /* bytes; 0 = derive from gpu_memory_utilization / CPU default */
    char api_key[256];             /* --api-key or QSERVE_API_KEY; "" = open */
    long long seed;                /* default 0 */
    qs_device_choice device;
    char quantization[32];         /* "" or "fp8" (online quantization at load) */
    int threads;                   /* CPU threads; 0 = all cores */
    int tensor_parallel_size;      /* only 1 is supported */
    qs_kernel_config kernels;
} qs_config;

void qs_config_defaults(qs_config *cfg);
void qs_kernel_config_defaults(qs_kernel_config *kc);
/* Applies the environment (QSERVE_DISABLED_KERNELS, QSERVE_BATCH_INVARIANT, QSERVE_API_KEY). */
int qs_kernel_config_apply_env(qs_kernel_config *kc, qs_err *err);
/* Parses serve-style argv (argv[0] is the command name and is skipped; the first non-flag
 * argument is MODEL_DIR). --config FILE.yaml is read first, then the CLI overrides it. */
int qs_config_parse_args(int argc, char **argv, qs_config *cfg, qs_err *err);
/* Normalises a name in place: lowercase, '-' -> '_'. */
void qs_normalize_name(char *s);

#endif
