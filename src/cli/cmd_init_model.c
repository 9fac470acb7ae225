/* cmd_init_model.c — `qserve init-model OUT_DIR --shape NAME [--seed S] [--dtype bf16|f32]
 * [--shard-size GB] [--config-only]`: writes a random-initialised checkpoint of a real model shape
 * (or a tiny test shape) with config.json, a byte-level tokenizer and generation_config.json.
 * When the weights do not fit on the disk it writes the config and tokenizer only and says so. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/init_model.h"
#include "util/log.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: qserve init-model OUT_DIR --shape NAME [--seed S] [--dtype bf16|f32]\n"
                 "                          [--shard-size GB] [--config-only]\n"
                 "  --shape        %s\n"
                 "  --seed         random seed (default 0); the same seed gives the same weights\n"
                 "  --dtype        bf16 (default) or f32\n"
                 "  --shard-size   largest shard in GB (default 2); bigger checkpoints get an index.json\n"
                 "  --config-only  write config.json, tokenizer and generation config without weights\n",
            qs_init_shape_names());
}

int qs_cmd_init_model(int argc, char **argv)
{
    const char *out_dir = NULL, *shape_name = NULL, *v;
    long seed = 0;
    double shard_gb = 2.0;
    qs_dtype dtype = QS_DT_BF16;
    bool config_only = false;
    for (int i = 1; i < argc; i++) {
        int r;
        if (qs_arg_is(argv[i], "--help") || qs_arg_is(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if ((r = qs_arg_value(argc, argv, &i, "--shape", &shape_name)) != 0) {
            if (r < 0)
                return 2;
        } else if ((r = qs_arg_value(argc, argv, &i, "--seed", &v)) != 0) {
            if (r < 0 || qs_arg_int("--seed", v, &seed))
                return 2;
        } else if ((r = qs_arg_value(argc, argv, &i, "--shard-size", &v)) != 0) {
            if (r < 0 || qs_arg_shard_size(v, &shard_gb))
                return 2;
        } else if ((r = qs_arg_value(argc, argv, &i, "--dtype", &v)) != 0) {
            if (r < 0)
                return 2;
            if (!strcmp(v, "bf16") || !strcmp(v, "bfloat16"))
                dtype = QS_DT_BF16;
            else if (!strcmp(v, "f32") || !strcmp(v, "float32"))
                dtype = QS_DT_F32;
            else {
                fprintf(stderr, "error: --dtype '%s' is not supported (supported: bf16, f32)\n", v);
                return 2;
            }
        } else if (qs_arg_is(argv[i], "--config-only")) {
            config_only = true;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "error: unknown option '%s' for init-model\n", argv[i]);
            usage(stderr);
            return 2;
        } else if (!out_dir) {
            out_dir = argv[i];
        } else {
            fprintf(stderr, "error: unexpected argument '%s' (OUT_DIR is already '%s')\n", argv[i], out_dir);
            return 2;
        }
    }
    if (!out_dir || !shape_name) {
        fprintf(stderr, "error: init-model needs OUT_DIR and --shape\n");
        usage(stderr);
        return 2;
    }
    const qs_init_shape *s = qs_init_shape_find(shape_name);
    if (!s) {
        fprintf(stderr, "error: --shape '%s' is not known (known: %s)\n", shape_name, qs_init_shape_names());
        return 2;
    }
    if (mkdir(out_dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "error: cannot create %s: %s\n", out_dir, strerror(errno));
        return 1;
    }
    qs_err err;
    if (qs_init_write_config(out_dir, s, dtype, &err) || qs_init_write_tokenizer(out_dir, s, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    if (config_only) {
        printf("wrote %s config and tokenizer to %s (no weights: --config-only)\n", s->name, out_dir);
        return 0;
    }
    /* A shape too large for the disk (Mixtral-8x7B is 93 GB) gets its config and tokenizer only. */
    uint64_t need = qs_init_weight_bytes(s, dtype);
    struct statvfs vfs;
    if (statvfs(out_dir, &vfs) == 0 && need + (need >> 6) > (uint64_t)vfs.f_bavail * vfs.f_frsize) {
        printf("wrote %s config and tokenizer to %s; NOT the weights: they need %.1f GB and %s has %.1f GB free\n",
               s->name, out_dir, need / 1e9, out_dir, (double)vfs.f_bavail * vfs.f_frsize / 1e9);
        return 0;
    }
    if (qs_init_write_weights(out_dir, s, (uint64_t)seed, dtype, (size_t)(shard_gb * 1e9), &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    printf("wrote %s (%.3f GB of %s weights, seed %ld) to %s\n", s->name,
           (double)qs_init_weight_bytes(s, dtype) / 1e9, dtype == QS_DT_F32 ? "f32" : "bf16", seed, out_dir);
    return 0;
}
