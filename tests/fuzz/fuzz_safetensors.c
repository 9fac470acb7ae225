/* fuzz_safetensors.c — libFuzzer target for the safetensors header validator: arbitrary bytes go
 * through qs_safetensors_parse as a whole file; whatever it accepts must be safe to use, so every
 * accepted tensor's bytes are read (ASan catches a pointer outside the buffer) and checked against
 * the rules the parser promises (sizes, tiling, lookups by name). Built only by `make fuzz`
 * (clang -fsanitize=fuzzer -DQS_FUZZING); the guard keeps it out of every other build. */
#ifdef QS_FUZZING
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A private copy, so reads past the end land outside a heap block of exactly `size`. */
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    qs_safetensors_file *f = NULL;
    qs_err err;
    if (qs_safetensors_parse(buf, size, "fuzz.safetensors", &f, &err) == 0) {
        size_t covered = 0;
        volatile uint8_t sink = 0;
        for (size_t i = 0; i < qs_safetensors_count(f); i++) {
            const qs_tensor *t = qs_safetensors_tensor(f, i);
            if ((size_t)t->numel * (size_t)(qs_dtype_bits(t->dtype) / 8) != t->nbytes)
                abort();
            if (t->nbytes && ((const uint8_t *)t->data < buf || (const uint8_t *)t->data + t->nbytes > buf + size))
                abort();
            const uint8_t *p = t->data;
            for (size_t k = 0; k < t->nbytes; k += 61)
                sink ^= p[k];
            if (t->nbytes)
                sink ^= p[t->nbytes - 1];
            if (t->numel > 0)
                (void)qs_tensor_get_f32(t, t->numel - 1);
            if (qs_safetensors_find(f, t->name) != t)
                abort();
            covered += t->nbytes;
        }
        /* the tensors tile the data section, which ends the file */
        if (qs_safetensors_count(f)) {
            const qs_tensor *last = qs_safetensors_tensor(f, qs_safetensors_count(f) - 1);
            if (last->nbytes && (const uint8_t *)last->data + last->nbytes != buf + size)
                abort();
        }
        (void)covered;
        (void)qs_safetensors_metadata(f, "format");
        qs_safetensors_close(f);
    }
    free(buf);
    return 0;
}
#endif
