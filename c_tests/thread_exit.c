/*
 * thread_exit.c: calls made while a thread exits. Go and Julia finalizers and
 * C++ destructors run on exiting threads; so do pthread_key destructors, which these tests use. A
 * failing call there must return its status and record its message like anywhere else, not
 * abort because the thread's storage is being torn down.
 */
#include <pthread.h>

#include "check.h"

/* What a destructor saw, for main to check after the join. */
typedef struct {
    int32_t first_free_status;  /* bc_last_error_status() after the first free (BC_OK: no error) */
    int32_t second_free_status; /* bc_last_error_status() after freeing the same handle again */
    char second_free_message[256];
    int32_t add_status; /* a failing operation's own status */
    char add_message[256];
    int32_t make_status; /* making and freeing a tensor there */
    int ran;
} seen_t;

static pthread_key_t key_early, key_late;
static seen_t seen_early, seen_late;

/* The reproducer, then a failing operation, then a tensor made and freed. */
static void at_exit(bc_tensor *t, seen_t *seen) {
    bc_last_error_clear();
    bc_tensor_free(t);
    seen->first_free_status = bc_last_error_status();
    bc_tensor_free(t); /* not live any more: recorded as BC_ERR_INVALID_HANDLE */
    seen->second_free_status = bc_last_error_status();
    bc_last_error_message(seen->second_free_message, sizeof seen->second_free_message);

    const int64_t s2[] = {2}, s3[] = {3};
    bc_tensor *a = NULL, *b = NULL, *c = NULL;
    if (bc_tensor_ones(BC_DTYPE_FLOAT32, s2, 1, &a) == BC_OK &&
        bc_tensor_ones(BC_DTYPE_FLOAT32, s3, 1, &b) == BC_OK) {
        seen->add_status = bc_add(a, b, &c);
        bc_last_error_message(seen->add_message, sizeof seen->add_message);
    }
    bc_tensor_free(a);
    bc_tensor_free(b);
    bc_tensor *d = NULL;
    seen->make_status = bc_tensor_zeros(BC_DTYPE_INT64, s3, 1, &d);
    bc_tensor_free(d);
    seen->ran = 1;
}

static void on_exit_early(void *t) { at_exit((bc_tensor *)t, &seen_early); }
static void on_exit_late(void *t) { at_exit((bc_tensor *)t, &seen_late); }

/* A thread that fails once, then leaves a tensor to each destructor and exits. */
static void *worker(void *arg) {
    (void)arg;
    bc_tensor_free((bc_tensor *)(uintptr_t)0x1234); /* a failure: the error record is in use */
    const int64_t shape[] = {4};
    bc_tensor *t1 = NULL, *t2 = NULL;
    if (bc_tensor_ones(BC_DTYPE_FLOAT64, shape, 1, &t1) != BC_OK ||
        bc_tensor_ones(BC_DTYPE_FLOAT64, shape, 1, &t2) != BC_OK)
        return NULL;
    /* Freed slots this thread keeps for itself, handed back when it exits. */
    for (int i = 0; i < 10; i++) {
        bc_tensor *tmp = NULL;
        if (bc_tensor_zeros(BC_DTYPE_UINT8, shape, 1, &tmp) == BC_OK) bc_tensor_free(tmp);
    }
    pthread_setspecific(key_early, t1);
    pthread_setspecific(key_late, t2);
    return NULL;
}

static void check_seen(const seen_t *s) {
    CHECK(s->ran);
    CHECK_EQ_INT(s->first_free_status, BC_OK);
    CHECK_EQ_INT(s->second_free_status, BC_ERR_INVALID_HANDLE);
    CHECK(strstr(s->second_free_message, "not a live tensor handle") != NULL);
    CHECK_EQ_INT(s->add_status, BC_ERR_SHAPE);
    CHECK_STR_EQ(s->add_message, "The size of tensor a (2) must match the size of tensor b (3) at "
                                 "non-singleton dimension 0");
    CHECK_EQ_INT(s->make_status, BC_OK);
}

/* Destructors that run before and after the library's own thread-exit hook (POSIX runs key
 * destructors in the order of the keys' creation here: glibc walks the key table in order). */
static void test_failing_calls_in_thread_exit_destructors(void) {
    for (int round = 0; round < 20; round++) {
        memset(&seen_early, 0, sizeof seen_early);
        memset(&seen_late, 0, sizeof seen_late);
        pthread_t th;
        CHECK(pthread_create(&th, NULL, worker, NULL) == 0);
        CHECK(pthread_join(th, NULL) == 0);
        check_seen(&seen_early);
        check_seen(&seen_late);
    }
}

int main(void) {
    /* key_early exists before the library makes its own key (at its first free), key_late
     * after: one destructor runs before the library's hook, the other after it. */
    CHECK(pthread_key_create(&key_early, on_exit_early) == 0);
    const int64_t shape[] = {1};
    bc_tensor *t = NULL;
    CHECK_OK(bc_tensor_zeros(BC_DTYPE_FLOAT32, shape, 1, &t));
    bc_tensor_free(t);
    CHECK(pthread_key_create(&key_late, on_exit_late) == 0);
    RUN_TEST(failing_calls_in_thread_exit_destructors);
    return check_summary();
}
