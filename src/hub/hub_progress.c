/* hub_progress.c — download progress on stderr, shared by the parallel downloads: on a terminal
 * one line redrawn in place (files, bytes, rate, ETA); otherwise (logs) a line per finished file
 * and a summary line every 10 seconds. */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "hub/hub_internal.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void human(long long b, char *out, size_t cap)
{
    const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    snprintf(out, cap, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

void hub_progress_init(hub_progress *p, int files_total, bool quiet)
{
    pthread_mutex_init(&p->mu, NULL);
    p->tty = isatty(STDERR_FILENO);
    p->quiet = quiet;
    p->files_total = files_total;
    p->files_done = 0;
    p->printed = false;
    p->bytes_total = p->bytes_done = p->bytes_at_start = 0;
    p->start = p->last_print = now_s();
}

/* Caller holds p->mu. */
static void print_line(hub_progress *p, bool final)
{
    char done[32], total[32], rate_s[32];
    double dt = now_s() - p->start;
    double rate = dt > 0 ? (double)(p->bytes_done - p->bytes_at_start) / dt : 0;
    human(p->bytes_done, done, sizeof done);
    human(p->bytes_total, total, sizeof total);
    human((long long)rate, rate_s, sizeof rate_s);
    char eta[32] = "";
    if (!final && rate > 0 && p->bytes_total > p->bytes_done)
        snprintf(eta, sizeof eta, ", ETA %.0f s", (double)(p->bytes_total - p->bytes_done) / rate);
    fprintf(stderr, "%sdownloading: %d/%d files, %s / %s, %s/s%s%s", p->tty ? "\r" : "", p->files_done,
            p->files_total, done, total, rate_s, eta, p->tty ? "\033[K" : "\n");
    if (p->tty && final)
        fputc('\n', stderr);
    fflush(stderr);
    p->last_print = now_s();
    p->printed = true;
}

void hub_progress_add_total(hub_progress *p, long long bytes)
{
    pthread_mutex_lock(&p->mu);
    p->bytes_total += bytes;
    pthread_mutex_unlock(&p->mu);
}

void hub_progress_add_done(hub_progress *p, long long bytes)
{
    pthread_mutex_lock(&p->mu);
    p->bytes_done += bytes;
    if (!p->quiet && now_s() - p->last_print >= (p->tty ? 0.2 : 10.0))
        print_line(p, false);
    pthread_mutex_unlock(&p->mu);
}

void hub_progress_file_done(hub_progress *p, const char *file, long long size)
{
    pthread_mutex_lock(&p->mu);
    p->files_done++;
    if (!p->quiet && !p->tty) {
        char s[32];
        human(size, s, sizeof s);
        fprintf(stderr, "downloaded %s (%s)\n", file, s);
    } else if (!p->quiet) {
        print_line(p, false);
    }
    pthread_mutex_unlock(&p->mu);
}

void hub_progress_finish(hub_progress *p, const char *repo_id, const char *snapshot)
{
    pthread_mutex_lock(&p->mu);
    if (!p->quiet && p->files_done > 0) {
        print_line(p, true);
        fprintf(stderr, "%s: %d file(s) downloaded in %.1f s into %s\n", repo_id, p->files_done, now_s() - p->start,
                snapshot);
    }
    pthread_mutex_unlock(&p->mu);
}

void hub_progress_abort(hub_progress *p)
{
    pthread_mutex_lock(&p->mu);
    if (!p->quiet && p->tty && p->printed)
        fputc('\n', stderr); /* the error message then starts on its own line */
    pthread_mutex_unlock(&p->mu);
}

void hub_progress_destroy(hub_progress *p) { pthread_mutex_destroy(&p->mu); }
