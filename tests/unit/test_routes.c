/* test_routes.c — the server's route table (src/server/routes.c): every endpoint docs/api.md lists
 * is found with its method and API-key rule, /ping answers as /health does, and a path matches
 * only whole (no prefix, no trailing slash, no query), so anything else is the gate's 404. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "server/routes.h"

static void expect_route(const char *path, const char *method, qs_route_key key)
{
    const qs_route *r = qs_route_find(path);
    if (!r)
        fail_msg("no route for %s", path);
    assert_string_equal(r->path, path);
    assert_string_equal(r->method, method);
    assert_int_equal(r->key, key);
    assert_non_null(r->handle);
}

static void test_every_endpoint(void **state)
{
    (void)state;
    expect_route("/v1/completions", "POST", QS_KEY_REQUIRED);
    expect_route("/v1/chat/completions", "POST", QS_KEY_REQUIRED);
    expect_route("/v1/models", "GET", QS_KEY_REQUIRED);
    expect_route("/tokenize", "POST", QS_KEY_REQUIRED);
    expect_route("/detokenize", "POST", QS_KEY_REQUIRED);
    expect_route("/health", "GET", QS_KEY_NONE);
    expect_route("/ping", "GET", QS_KEY_NONE);
    expect_route("/version", "GET", QS_KEY_NONE);
    expect_route("/metrics", "GET", QS_KEY_WITH_METRICS_FLAG);
}

static void test_ping_is_health(void **state)
{
    (void)state;
    assert_ptr_equal(qs_route_find("/ping")->handle, qs_route_find("/health")->handle);
    assert_ptr_not_equal(qs_route_find("/v1/completions")->handle, qs_route_find("/v1/chat/completions")->handle);
}

static void test_whole_paths_only(void **state)
{
    (void)state;
    const char *misses[] = {"", "/", "/v1", "/v1/", "/v1/models/", "/healthz", "/health/", "/v1/completion",
                            "/v1/chat/completions?x=1", "/V1/models", "v1/models"};
    for (size_t i = 0; i < sizeof misses / sizeof misses[0]; i++)
        if (qs_route_find(misses[i]))
            fail_msg("'%s' found a route", misses[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_endpoint),
        cmocka_unit_test(test_ping_is_health),
        cmocka_unit_test(test_whole_paths_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
