/* test_eval_hf_cache.c — model_name lookup in a fake Hugging Face cache: local folders win,
 * refs/main picks the snapshot, else the only or newest one, the cache variables are honoured in
 * order, and a miss lists every place looked. Nothing is downloaded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "eval/hf_cache.h"
#include "util/fileio.h"

static char g_root[64];

static void mkdirs(const char *fmt, const char *a)
{
    char path[1024], cmd[1200];
    snprintf(path, sizeof path, fmt, g_root, a);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", path);
    assert_int_equal(system(cmd), 0);
}

static void set_mtime(const char *rel, long secs)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", g_root, rel);
    struct timeval tv[2] = {{secs, 0}, {secs, 0}};
    assert_int_equal(utimes(path, tv), 0);
}

static int setup(void **state)
{
    snprintf(g_root, sizeof g_root, "/tmp/qs_eval_hf_XXXXXX");
    if (!mkdtemp(g_root))
        return -1;
    unsetenv("HF_HUB_CACHE");
    unsetenv("HUGGINGFACE_HUB_CACHE");
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", g_root, 1); /* ~/.cache/huggingface/hub is then inside the fake root */
    char hf_home[128];
    snprintf(hf_home, sizeof hf_home, "%s/hfhome", g_root);
    setenv("HF_HOME", hf_home, 1);
    return 0;
}

static int teardown(void **state)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_root);
    return system(cmd);
}

static void local_directory_is_used_as_is(void **state)
{
    char out[1024];
    qs_err err;
    assert_int_equal(qs_hf_resolve_model(g_root, out, sizeof out, &err), 0);
    assert_string_equal(out, g_root);
}

static void refs_main_picks_the_snapshot(void **state)
{
    mkdirs("%s/hfhome/hub/models--org--model/snapshots/%s", "aaa111");
    mkdirs("%s/hfhome/hub/models--org--model/snapshots/%s", "bbb222");
    mkdirs("%s/hfhome/hub/models--org--model/%s", "refs");
    char ref[1024];
    snprintf(ref, sizeof ref, "%s/hfhome/hub/models--org--model/refs/main", g_root);
    qs_err err;
    assert_int_equal(qs_write_file(ref, "aaa111\n", 7, &err), 0);
    set_mtime("hfhome/hub/models--org--model/snapshots/aaa111", 1000);
    set_mtime("hfhome/hub/models--org--model/snapshots/bbb222", 2000);
    char out[1024], want[1024];
    assert_int_equal(qs_hf_resolve_model("org/model", out, sizeof out, &err), 0);
    snprintf(want, sizeof want, "%s/hfhome/hub/models--org--model/snapshots/aaa111", g_root);
    assert_string_equal(out, want);
    /* Without refs/main (or with a ref whose snapshot is gone) the newest snapshot wins. */
    assert_int_equal(qs_write_file(ref, "ccc333", 6, &err), 0);
    assert_int_equal(qs_hf_resolve_model("org/model", out, sizeof out, &err), 0);
    snprintf(want, sizeof want, "%s/hfhome/hub/models--org--model/snapshots/bbb222", g_root);
    assert_string_equal(out, want);
    unlink(ref);
    set_mtime("hfhome/hub/models--org--model/snapshots/aaa111", 3000);
    assert_int_equal(qs_hf_resolve_model("org/model", out, sizeof out, &err), 0);
    snprintf(want, sizeof want, "%s/hfhome/hub/models--org--model/snapshots/aaa111", g_root);
    assert_string_equal(out, want);
}

static void hub_cache_variable_comes_first(void **state)
{
    mkdirs("%s/hubcache/models--org--other/snapshots/%s", "only");
    mkdirs("%s/.cache/huggingface/hub/models--org--other/snapshots/%s", "home");
    char hub[128], out[1024], want[1024];
    qs_err err;
    assert_int_equal(qs_hf_resolve_model("org/other", out, sizeof out, &err), 0);
    snprintf(want, sizeof want, "%s/.cache/huggingface/hub/models--org--other/snapshots/home", g_root);
    assert_string_equal(out, want);
    snprintf(hub, sizeof hub, "%s/hubcache", g_root);
    setenv("HF_HUB_CACHE", hub, 1);
    assert_int_equal(qs_hf_resolve_model("org/other", out, sizeof out, &err), 0);
    snprintf(want, sizeof want, "%s/hubcache/models--org--other/snapshots/only", g_root);
    assert_string_equal(out, want);
    unsetenv("HF_HUB_CACHE");
}

static void a_miss_lists_every_place(void **state)
{
    char hub[128], out[1024];
    qs_err err;
    snprintf(hub, sizeof hub, "%s/hubcache", g_root);
    setenv("HF_HUB_CACHE", hub, 1);
    mkdirs("%s/hfhome/hub/models--org--empty/%s", "snapshots");
    assert_int_equal(qs_hf_resolve_model("org/missing", out, sizeof out, &err), -1);
    char want[512];
    snprintf(want, sizeof want, "%s/hubcache/models--org--missing (absent)", g_root);
    assert_non_null(strstr(err.msg, want));
    snprintf(want, sizeof want, "%s/hfhome/hub/models--org--missing (absent)", g_root);
    assert_non_null(strstr(err.msg, want));
    snprintf(want, sizeof want, "%s/.cache/huggingface/hub/models--org--missing (absent)", g_root);
    assert_non_null(strstr(err.msg, want));
    assert_non_null(strstr(err.msg, "nothing is downloaded"));
    assert_int_equal(qs_hf_resolve_model("org/empty", out, sizeof out, &err), -1);
    assert_non_null(strstr(err.msg, "has no snapshot"));
    unsetenv("HF_HUB_CACHE");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(local_directory_is_used_as_is),
        cmocka_unit_test(refs_main_picks_the_snapshot),
        cmocka_unit_test(hub_cache_variable_comes_first),
        cmocka_unit_test(a_miss_lists_every_place),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
