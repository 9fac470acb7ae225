/* test_helpers.h — small helpers shared by the cmocka suites. Header-only (static inline), since
 * each suite is one binary built from one .c file. */
#ifndef QS_TEST_HELPERS_H
#define QS_TEST_HELPERS_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "util/fileio.h"

/* Index of the largest of x[0..n-1] (the first one on ties): a greedy pick. */
static inline int qs_test_argmax(const float *x, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b])
            b = i;
    return b;
}

/* Removes the files `qserve init-model` writes into dir (config, tokenizer, weights): between
 * shapes written into one folder, and before the folder itself goes. */
static inline void qs_test_remove_init_model(const char *dir)
{
    const char *names[] = {"config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json",
                           "model.safetensors"};
    char p[1024];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
}

/* The vendored stories260K files (data/stories260K, relative to the repository root the tests run
 * from; $QSERVE_STORIES_DIR names another folder). */
static inline const char *qs_test_stories_dir(void)
{
    const char *s = getenv("QSERVE_STORIES_DIR");
    return (s && *s) ? s : "data/stories260K";
}

/* stories260K (qs_test_stories_dir) converted into a fresh folder under /tmp named after
 * tag, with llama2.c's 200 greedy ids in golden (when golden is not NULL). Returns 1 when ready,
 * 0 when the data is absent (a skip line printed; dir left empty), -1 on failure. */
static inline int qs_test_stories_make(const char *tag, char *dir, size_t dir_cap, int golden[200])
{
    char bin[1024], tok[1024], ids[1024], cmd[4096];
    const char *data = qs_test_stories_dir();
    snprintf(bin, sizeof bin, "%s/stories260K.bin", data);
    snprintf(tok, sizeof tok, "%s/tok512.bin", data);
    snprintf(ids, sizeof ids, "%s/golden_greedy_200_ids.txt", data);
    dir[0] = 0;
    if (!qs_file_exists(bin) || !qs_file_exists(tok) || (golden && !qs_file_exists(ids))) {
        printf("skip: stories260K data not found under %s\n", data);
        return 0;
    }
    if (golden) {
        FILE *f = fopen(ids, "r");
        if (!f)
            return -1;
        for (int i = 0; i < 200; i++)
            if (fscanf(f, "%d", &golden[i]) != 1) {
                fclose(f);
                return -1;
            }
        fclose(f);
    }
    snprintf(dir, dir_cap, "/tmp/qs-%s-XXXXXX", tag);
    if (!mkdtemp(dir)) {
        dir[0] = 0;
        return -1;
    }
    const char *build = getenv("QSERVE_BUILD") ? getenv("QSERVE_BUILD") : "build";
    snprintf(cmd, sizeof cmd, "%s/convert-llama2c %s %s %s >/dev/null", build, bin, tok, dir);
    return system(cmd) == 0 ? 1 : -1;
}

/* Removes what qs_test_stories_make made (nothing when dir is empty). */
static inline int qs_test_stories_remove(const char *dir)
{
    char cmd[512];
    if (!dir[0])
        return 0;
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

#endif
