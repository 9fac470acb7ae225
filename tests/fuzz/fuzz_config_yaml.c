/* fuzz_config_yaml.c — libFuzzer target for the --config YAML loader: arbitrary bytes are
 * written to a private temp file (qs_config_load_yaml takes a path) and loaded over the defaults;
 * a refusal must say why, and an accepted file must leave the strings NUL-terminated. Built only
 * by `make fuzz` (clang -fsanitize=fuzzer -DQS_FUZZING). */
#ifdef QS_FUZZING
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"

static char path[64];

static void remove_temp(void)
{
    if (path[0])
        unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!path[0]) {
        strcpy(path, "/tmp/qs_fuzz_config_XXXXXX");
        int fd = mkstemp(path);
        if (fd < 0)
            abort();
        close(fd);
        atexit(remove_temp);
    }
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    if (size && fwrite(data, 1, size, f) != size)
        abort();
    fclose(f);

    qs_config cfg;
    qs_config_defaults(&cfg);
    qs_err err;
    err.msg[0] = 0;
    if (qs_config_load_yaml(path, &cfg, &err) == 0) {
        if (!memchr(cfg.model_dir, 0, sizeof cfg.model_dir) || !memchr(cfg.host, 0, sizeof cfg.host) ||
            !memchr(cfg.served_model_name, 0, sizeof cfg.served_model_name) ||
            !memchr(cfg.api_key, 0, sizeof cfg.api_key) || !memchr(cfg.quantization, 0, sizeof cfg.quantization))
            abort();
        if (cfg.kernels.n_disabled < 0 || cfg.kernels.n_disabled > QS_MAX_DISABLED)
            abort();
    } else if (!err.msg[0]) {
        abort(); /* a refusal always says why */
    }
    return 0;
}
#endif
