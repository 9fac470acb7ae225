/* test_hub_cache.c — src/hub without a network: the cache root's environment order, the
 * models--ORG--NAME layout (refs without newline, relative snapshot symlinks into blobs/),
 * offline resolution and its errors (repo, revision, file named), the checks on repo ids,
 * revisions, file names and ETags, the file selection and sha256. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hub/hub.h"
#include "hub/hub_internal.h"
#include "util/fileio.h"

static char g_root[64];
#define COMMIT "0123456789abcdef0123456789abcdef01234567"
#define COMMIT2 "fedcba9876543210fedcba9876543210fedcba98"

static void sh(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    assert_int_equal(system(cmd), 0);
}

static int setup(void **state)
{
    snprintf(g_root, sizeof g_root, "/tmp/qs_hub_XXXXXX");
    if (!mkdtemp(g_root))
        return -1;
    unsetenv("HF_HUB_CACHE");
    unsetenv("HUGGINGFACE_HUB_CACHE");
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HF_HUB_OFFLINE");
    setenv("HOME", g_root, 1);
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

static void cache_root_follows_huggingface_hub(void **state)
{
    char out[1024], want[1024];
    qs_err err;
    assert_int_equal(qs_hub_cache_root(NULL, out, sizeof out, &err), 0);
    snprintf(want, sizeof want, "%s/hfhome/hub", g_root);
    assert_string_equal(out, want);
    setenv("HF_HUB_CACHE", "/x/hubcache", 1);
    assert_int_equal(qs_hub_cache_root(NULL, out, sizeof out, &err), 0);
    assert_string_equal(out, "/x/hubcache");
    assert_int_equal(qs_hub_cache_root("/y/dl", out, sizeof out, &err), 0); /* --download-dir wins */
    assert_string_equal(out, "/y/dl");
    unsetenv("HF_HUB_CACHE");
    unsetenv("HF_HOME");
    setenv("XDG_CACHE_HOME", "/z/xdg", 1);
    assert_int_equal(qs_hub_cache_root(NULL, out, sizeof out, &err), 0);
    assert_string_equal(out, "/z/xdg/huggingface/hub");
    unsetenv("XDG_CACHE_HOME");
    assert_int_equal(qs_hub_cache_root(NULL, out, sizeof out, &err), 0);
    snprintf(want, sizeof want, "%s/.cache/huggingface/hub", g_root);
    assert_string_equal(out, want);
    snprintf(want, sizeof want, "%s/hfhome", g_root);
    setenv("HF_HOME", want, 1);
}

static void layout_refs_blobs_and_relative_links(void **state)
{
    hub_repo_paths p;
    qs_err err;
    assert_int_equal(hub_repo_paths_init(&p, NULL, "Org/Model.v2", &err), 0);
    assert_string_equal(p.folder, "models--Org--Model.v2");
    sh("mkdir -p '%s/blobs' && printf x > '%s/blobs/abc123'", p.repo, p.repo);
    assert_int_equal(hub_link_snapshot_file(&p, COMMIT, "config.json", "abc123", &err), 0);
    assert_int_equal(hub_link_snapshot_file(&p, COMMIT, "sub/dir/f.json", "abc123", &err), 0);
    char path[2048], target[256];
    snprintf(path, sizeof path, "%s/snapshots/%s/config.json", p.repo, COMMIT);
    ssize_t n = readlink(path, target, sizeof target - 1);
    assert_true(n > 0);
    target[n] = '\0';
    assert_string_equal(target, "../../blobs/abc123");
    assert_true(qs_file_exists(path));
    snprintf(path, sizeof path, "%s/snapshots/%s/sub/dir/f.json", p.repo, COMMIT);
    n = readlink(path, target, sizeof target - 1);
    assert_true(n > 0);
    target[n] = '\0';
    assert_string_equal(target, "../../../../blobs/abc123");
    assert_true(qs_file_exists(path));
    /* refs hold the bare hash; a revision with '/' nests; a commit revision writes no ref */
    assert_int_equal(hub_write_ref(&p, "main", COMMIT, &err), 0);
    assert_int_equal(hub_write_ref(&p, "refs/pr/1", COMMIT2, &err), 0);
    assert_int_equal(hub_write_ref(&p, COMMIT2, COMMIT2, &err), 0);
    char *text;
    size_t len;
    snprintf(path, sizeof path, "%s/refs/main", p.repo);
    assert_int_equal(qs_read_file(path, &text, &len, &err), 0);
    assert_int_equal(len, 40);
    assert_memory_equal(text, COMMIT, 40);
    free(text);
    char commit[64];
    assert_int_equal(hub_read_ref(&p, "refs/pr/1", commit, sizeof commit, &err), 0);
    assert_string_equal(commit, COMMIT2);
    snprintf(path, sizeof path, "%s/refs/%s", p.repo, COMMIT2);
    assert_false(qs_file_exists(path));
    assert_int_equal(hub_read_ref(&p, COMMIT2, commit, sizeof commit, &err), 0);
    assert_int_equal(hub_read_ref(&p, "v1.0", commit, sizeof commit, &err), -1);
    assert_non_null(strstr(err.msg, "refs/v1.0"));
    hub_lock_path(&p, "abc123", path, sizeof path);
    char want[2048];
    snprintf(want, sizeof want, "%s/.locks/models--Org--Model.v2/abc123.lock", p.root);
    assert_string_equal(path, want);
}

/* A cached tokenizer-only snapshot of org/tok at COMMIT, refs/main pointing to it. */
static void make_cached_repo(const char *repo_folder, bool with_weights)
{
    char repo[1024];
    snprintf(repo, sizeof repo, "%s/hfhome/hub/%s", g_root, repo_folder);
    sh("mkdir -p '%s/blobs' '%s/snapshots/%s' '%s/refs' && printf %s > '%s/refs/main'", repo, repo, COMMIT, repo, COMMIT,
       repo);
    sh("printf '{}' > '%s/blobs/aa' && ln -sf ../../blobs/aa '%s/snapshots/%s/config.json'", repo, repo, COMMIT);
    sh("printf '{}' > '%s/blobs/bb' && ln -sf ../../blobs/bb '%s/snapshots/%s/tokenizer.json'", repo, repo, COMMIT);
    if (with_weights) {
        sh("printf '{\"weight_map\": {\"a\": \"model-1.safetensors\", \"b\": \"model-2.safetensors\", \"c\": "
           "\"model-1.safetensors\"}}' > '%s/blobs/cc' && ln -sf ../../blobs/cc "
           "'%s/snapshots/%s/model.safetensors.index.json'",
           repo, repo, COMMIT);
        sh("printf x > '%s/blobs/dd' && ln -sf ../../blobs/dd '%s/snapshots/%s/model-1.safetensors'", repo, repo,
           COMMIT);
    }
}

static void offline_resolution_uses_the_cache_only(void **state)
{
    make_cached_repo("models--org--tok", true);
    qs_hub_options o = {.offline = true, .files = QS_HUB_FILES_TOKENIZER};
    char out[1024], want[1024];
    qs_err err;
    assert_int_equal(qs_hub_resolve("org/tok", &o, out, sizeof out, &err), 0);
    snprintf(want, sizeof want, "%s/hfhome/hub/models--org--tok/snapshots/%s", g_root, COMMIT);
    assert_string_equal(out, want);
    o.revision = COMMIT; /* a commit needs no ref */
    assert_int_equal(qs_hub_resolve("org/tok", &o, out, sizeof out, &err), 0);
    assert_string_equal(out, want);
    /* the weights: the index names model-2.safetensors, which is not cached */
    o.revision = NULL;
    o.files = QS_HUB_FILES_MODEL;
    assert_int_equal(qs_hub_resolve("org/tok", &o, out, sizeof out, &err), -1);
    assert_non_null(strstr(err.msg, "org/tok"));
    assert_non_null(strstr(err.msg, "revision main"));
    assert_non_null(strstr(err.msg, "lacks model-2.safetensors"));
    assert_non_null(strstr(err.msg, "offline mode (--offline)"));
    /* HF_HUB_OFFLINE=1 does the same as --offline */
    o.offline = false;
    setenv("HF_HUB_OFFLINE", "1", 1);
    assert_int_equal(qs_hub_resolve("org/tok", &o, out, sizeof out, &err), -1);
    assert_non_null(strstr(err.msg, "HF_HUB_OFFLINE"));
    o.revision = "v2";
    assert_int_equal(qs_hub_resolve("org/tok", &o, out, sizeof out, &err), -1);
    assert_non_null(strstr(err.msg, "org/tok at revision v2 is not in the cache"));
    assert_int_equal(qs_hub_resolve("org/absent", &o, out, sizeof out, &err), -1);
    assert_non_null(strstr(err.msg, "org/absent at revision v2"));
    unsetenv("HF_HUB_OFFLINE");
    /* --download-dir is another cache root */
    o.offline = true;
    o.revision = NULL;
    o.files = QS_HUB_FILES_TOKENIZER;
    char other[256];
    snprintf(other, sizeof other, "%s/hfhome/hub", g_root);
    setenv("HF_HOME", "/nonexistent", 1);
    o.cache_dir = other;
    assert_int_equal(qs_hub_resolve("org/tok", &o, out, sizeof out, &err), 0);
    assert_string_equal(out, want);
    snprintf(other, sizeof other, "%s/hfhome", g_root);
    setenv("HF_HOME", other, 1);
}

static void local_folders_and_bad_names(void **state)
{
    qs_hub_options o = {.offline = true};
    char out[1024], file[256];
    qs_err err;
    assert_int_equal(qs_hub_resolve(g_root, &o, out, sizeof out, &err), 0);
    assert_string_equal(out, g_root);
    o.revision = "main";
    assert_int_equal(qs_hub_resolve(g_root, &o, out, sizeof out, &err), -1);
    assert_non_null(strstr(err.msg, "local folder"));
    o.revision = NULL;
    snprintf(file, sizeof file, "%s/afile", g_root);
    sh("touch '%s'", file);
    assert_int_equal(qs_hub_resolve(file, &o, out, sizeof out, &err), -1);
    assert_non_null(strstr(err.msg, "is a file"));
    assert_int_equal(qs_hub_resolve("./no/such/dir", &o, out, sizeof out, &err), -1);
    assert_non_null(strstr(err.msg, "model folder './no/such/dir' does not exist"));
    const char *bad[] = {"a/b/c", "org/--x", "org/x..y", "org/-x", "org/x.git", "org/x y", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(qs_hub_resolve(bad[i], &o, out, sizeof out, &err), -1);
        assert_true(strlen(err.msg) > 0);
    }
    assert_int_equal(hub_check_repo_id("Qwen/Qwen3-30B-A3B-FP8", &err), 0);
    assert_int_equal(hub_check_repo_id("gpt2", &err), 0);
    o.revision = "../../etc";
    assert_int_equal(qs_hub_resolve("org/x", &o, out, sizeof out, &err), -1);
    assert_non_null(strstr(err.msg, "--revision '../../etc'"));
    assert_int_equal(hub_check_revision("refs/pr/1", &err), 0);
}

static void names_etags_and_file_selection(void **state)
{
    assert_true(hub_safe_filename("model-00001-of-00002.safetensors"));
    assert_true(hub_safe_filename("sub/tokenizer.json"));
    assert_false(hub_safe_filename("../x"));
    assert_false(hub_safe_filename("a/../x"));
    assert_false(hub_safe_filename("/etc/passwd"));
    assert_false(hub_safe_filename("a//b"));
    assert_false(hub_safe_filename("a/"));
    char e1[] = "\"ABCdef0123\"", e2[] = "W/\"abc\"", e3[] = "\"../x\"", e4[] = "\"\"";
    assert_true(hub_normalize_etag(e1));
    assert_string_equal(e1, "abcdef0123");
    assert_true(hub_normalize_etag(e2));
    assert_string_equal(e2, "abc");
    assert_false(hub_normalize_etag(e3));
    assert_false(hub_normalize_etag(e4));
    assert_true(hub_is_commit_hash(COMMIT));
    assert_false(hub_is_commit_hash("main"));
    char url[64];
    assert_int_equal(hub_url_encode("refs/pr/1", false, url, sizeof url), 0);
    assert_string_equal(url, "refs%2Fpr%2F1");
    assert_int_equal(hub_url_encode("a b/c.json", true, url, sizeof url), 0);
    assert_string_equal(url, "a%20b/c.json");
    const char *model[] = {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
                           "chat_template.jinja", "hf_quant_config.json", "model.safetensors",
                           "model-00001-of-00002.safetensors", "model.safetensors.index.json"};
    const char *never[] = {"pytorch_model.bin", "consolidated.00.pth", "model.gguf", "original/model.safetensors",
                           "README.md", ".gitattributes", "tokenizer.model"};
    for (size_t i = 0; i < sizeof model / sizeof *model; i++)
        assert_true(hub_file_wanted(model[i], QS_HUB_FILES_MODEL));
    for (size_t i = 0; i < sizeof never / sizeof *never; i++)
        assert_false(hub_file_wanted(never[i], QS_HUB_FILES_MODEL));
    assert_true(hub_file_wanted("tokenizer.json", QS_HUB_FILES_TOKENIZER));
    assert_false(hub_file_wanted("model.safetensors", QS_HUB_FILES_TOKENIZER));
}

static void sha256_known_answer(void **state)
{
    hub_sha256 *h = hub_sha256_new();
    assert_non_null(h);
    char hex[65];
    hub_sha256_update(h, "ab", 2);
    hub_sha256_update(h, "c", 1);
    hub_sha256_hex(h, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    hub_sha256_reset(h);
    char path[256];
    qs_err err;
    snprintf(path, sizeof path, "%s/abcd", g_root);
    assert_int_equal(qs_write_file(path, "abcd", 4, &err), 0);
    assert_int_equal(hub_sha256_file_prefix(h, path, 3, &err), 0); /* a resumed download's first bytes */
    hub_sha256_hex(h, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    hub_sha256_free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cache_root_follows_huggingface_hub),
        cmocka_unit_test(layout_refs_blobs_and_relative_links),
        cmocka_unit_test(offline_resolution_uses_the_cache_only),
        cmocka_unit_test(local_folders_and_bad_names),
        cmocka_unit_test(names_etags_and_file_selection),
        cmocka_unit_test(sha256_known_answer),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
