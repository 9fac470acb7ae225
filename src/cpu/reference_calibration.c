/* reference_calibration.c — the activation-range recorder behind `qserve quantize --scheme
 * fp8-static`: while on, every reference linear apply reports max |x| under its layer name and
 * the table keeps the running maximum. A mutex guards it (applies run on the engine thread, but
 * recording is rare and cheap). */
#include "cpu/reference_kernels.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *name;
    float amax;
} calib_entry;

static struct {
    pthread_mutex_t mu;
    bool active;
    calib_entry *entries;
    int n, cap;
} calib = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void clear_locked(void)
{
    for (int i = 0; i < calib.n; i++)
        free(calib.entries[i].name);
    free(calib.entries);
    calib.entries = NULL;
    calib.n = calib.cap = 0;
}

void qs_reference_calibration_begin(void)
{
    pthread_mutex_lock(&calib.mu);
    clear_locked();
    calib.active = true;
    pthread_mutex_unlock(&calib.mu);
}

void qs_reference_calibration_end(void)
{
    pthread_mutex_lock(&calib.mu);
    calib.active = false;
    pthread_mutex_unlock(&calib.mu);
}

bool qs_reference_calibration_active(void)
{
    pthread_mutex_lock(&calib.mu);
    bool a = calib.active;
    pthread_mutex_unlock(&calib.mu);
    return a;
}

void qs_reference_calibration_clear(void)
{
    pthread_mutex_lock(&calib.mu);
    clear_locked();
    calib.active = false;
    pthread_mutex_unlock(&calib.mu);
}

static calib_entry *find_locked(const char *name)
{
    for (int i = 0; i < calib.n; i++)
        if (!strcmp(calib.entries[i].name, name))
            return &calib.entries[i];
    return NULL;
}

void qs_reference_calibration_record(const char *name, float amax)
{
    pthread_mutex_lock(&calib.mu);
    if (calib.active) {
        calib_entry *e = find_locked(name);
        if (e) {
            if (amax > e->amax)
                e->amax = amax;
        } else {
            if (calib.n == calib.cap) {
                int cap = calib.cap ? calib.cap * 2 : 64;
                calib_entry *ne = realloc(calib.entries, (size_t)cap * sizeof *ne);
                if (!ne)
                    goto out;
                calib.entries = ne;
                calib.cap = cap;
            }
            size_t len = strlen(name) + 1;
            char *copy = malloc(len);
            if (!copy)
                goto out;
            memcpy(copy, name, len);
            calib.entries[calib.n++] = (calib_entry){copy, amax};
        }
    }
out:
    pthread_mutex_unlock(&calib.mu);
}

float qs_reference_calibration_amax(const char *name)
{
    pthread_mutex_lock(&calib.mu);
    calib_entry *e = find_locked(name);
    float v = e ? e->amax : -1.0f;
    pthread_mutex_unlock(&calib.mu);
    return v;
}
