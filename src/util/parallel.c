/* parallel.c — the CPU thread pool behind qs_parallel_for (see parallel.h). Workers sleep on a
 * condition variable; a job is one range split into one chunk per thread. One job runs at a time
 * (a mutex serialises callers from different threads), which suits the single engine thread. */
#include "util/parallel.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#define QS_MAX_THREADS 64

static struct {
    pthread_once_t once;
    pthread_mutex_t job_lock;   /* one job at a time */
    pthread_mutex_t mu;
    pthread_cond_t start, done;
    int n_threads;
    int requested;
    uint64_t generation;
    int pending;
    qs_range_fn fn;
    void *ctx;
    int64_t n, chunk;
} pool = {
    .once = PTHREAD_ONCE_INIT,
    .job_lock = PTHREAD_MUTEX_INITIALIZER,
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .start = PTHREAD_COND_INITIALIZER,
    .done = PTHREAD_COND_INITIALIZER,
};

static _Thread_local bool in_worker;

static void run_chunk(int index)
{
    int64_t begin = (int64_t)index * pool.chunk;
    int64_t end = begin + pool.chunk;
    if (end > pool.n)
        end = pool.n;
    if (begin < end)
        pool.fn(pool.ctx, begin, end);
}

static void *worker(void *arg)
{
    int index = (int)(intptr_t)arg;
    in_worker = true;
    uint64_t seen = 0;
    for (;;) {
        pthread_mutex_lock(&pool.mu);
        while (pool.generation == seen)
            pthread_cond_wait(&pool.start, &pool.mu);
        seen = pool.generation;
        pthread_mutex_unlock(&pool.mu);
        run_chunk(index);
        pthread_mutex_lock(&pool.mu);
        if (--pool.pending == 0)
            pthread_cond_signal(&pool.done);
        pthread_mutex_unlock(&pool.mu);
    }
    return NULL;
}

static void pool_init(void)
{
    int n = pool.requested;
    if (n <= 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        n = cores > 0 ? (int)cores : 1;
    }
    if (n > QS_MAX_THREADS)
        n = QS_MAX_THREADS;
    pool.n_threads = n;
    for (int i = 1; i < n; i++) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &attr, worker, (void *)(intptr_t)i) != 0)
            pool.n_threads = i; /* run with the threads we got */
        pthread_attr_destroy(&attr);
        if (pool.n_threads == i)
            break;
    }
}

void qs_parallel_set_threads(int n) { pool.requested = n; }

int qs_parallel_threads(void)
{
    pthread_once(&pool.once, pool_init);
    return pool.n_threads;
}

void qs_parallel_for(int64_t n, int64_t min_chunk, qs_range_fn fn, void *ctx)
{
    if (n <= 0)
        return;
    if (min_chunk < 1)
        min_chunk = 1;
    int threads = qs_parallel_threads();
    if (in_worker || threads == 1 || n <= min_chunk) {
        fn(ctx, 0, n);
        return;
    }
    pthread_mutex_lock(&pool.job_lock);
    int64_t chunk = (n + threads - 1) / threads;
    if (chunk < min_chunk)
        chunk = min_chunk;
    int used = (int)((n + chunk - 1) / chunk);
    pthread_mutex_lock(&pool.mu);
    pool.fn = fn;
    pool.ctx = ctx;
    pool.n = n;
    pool.chunk = chunk;
    pool.pending = threads - 1;
    pool.generation++;
    pthread_cond_broadcast(&pool.start);
    pthread_mutex_unlock(&pool.mu);
    (void)used;
    in_worker = true;
    run_chunk(0);
    in_worker = false;
    pthread_mutex_lock(&pool.mu);
    while (pool.pending > 0)
        pthread_cond_wait(&pool.done, &pool.mu);
    pthread_mutex_unlock(&pool.mu);
    pthread_mutex_unlock(&pool.job_lock);
}
