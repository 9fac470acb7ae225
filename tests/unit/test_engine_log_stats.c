/* test_engine_log_stats.c — the engine's periodic stats line ("engine: prompt ... tok/s,
 * generation ... tok/s, ...") appears while it is busy, and --disable-log-stats
 * (qs_engine_options.disable_log_stats) turns it off. Runs the engine thread over a fake model
 * whose steps take a millisecond, with the line every 10 ms, and reads stderr back from a file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "constant_model.h"
#include "engine/engine.h"
#include "util/fileio.h"

/* Runs one 60-token request through a threaded engine; returns what it wrote to stderr. */
static char *run_engine(bool disable_log_stats)
{
    char path[] = "/tmp/qs_test_log_stats_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    qs_engine_backend be = constant_backend();
    constant_step_ns = 1000000; /* a millisecond a step: the engine stays busy long enough to log */
    static const int32_t eos[] = {0};
    qs_engine_options opt = {.max_num_seqs = 4, .max_num_batched_tokens = 64, .max_num_queued_reqs = 16,
                             .max_model_len = 128, .eos_ids = eos, .n_eos = 1, .start_thread = true,
                             .disable_log_stats = disable_log_stats, .log_stats_interval_s = 0.01};
    qs_engine *e;
    qs_err err;
    assert_int_equal(qs_engine_create(&opt, &be, &e, &err), 0);
    int32_t prompt[4] = {1, 2, 3, 4};
    qs_seq_request r;
    memset(&r, 0, sizeof r);
    r.prompt = prompt;
    r.n_prompt = 4;
    qs_sampling_params_defaults(&r.sampling);
    r.sampling.temperature = 0;
    r.max_tokens = 60;
    qs_event_sink *sink = qs_event_sink_new();
    assert_int_equal(qs_engine_submit(e, &r, 1, sink, &err), QS_SUBMIT_OK);
    bool done = false;
    for (int waited = 0; !done && waited < 5000; waited++) {
        qs_engine_event *list = qs_event_sink_take(sink, 0);
        for (qs_engine_event *ev = list; ev; ev = ev->next)
            done |= ev->finish != QS_FINISH_NONE;
        qs_engine_event_free_list(list);
        nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
    }
    qs_event_sink_release(sink);
    qs_engine_free(e);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(fd);
    assert_true(done);
    char *text = NULL;
    qs_err rerr;
    assert_int_equal(qs_read_file(path, &text, NULL, &rerr), 0);
    unlink(path);
    return text;
}

static void stats_line_while_busy(void **state)
{
    (void)state;
    char *text = run_engine(false);
    assert_non_null(strstr(text, "engine: prompt "));
    assert_non_null(strstr(text, " tok/s, generation "));
    free(text);
}

static void disable_log_stats_silences_it(void **state)
{
    (void)state;
    char *text = run_engine(true);
    if (strstr(text, "engine: prompt "))
        fail_msg("a stats line with disable_log_stats: %s", text);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(stats_line_while_busy),
                                       cmocka_unit_test(disable_log_stats_silences_it)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
