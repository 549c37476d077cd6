/*
 * streaming.c: the per-thread streaming policy (bc_set_streaming). Every policy gives the same
 * results; an unknown one is refused and changes nothing; each thread has its own.
 */
#include <pthread.h>
#include <stdlib.h>

#include "check.h"

static void test_the_policy_is_set_and_read_back(void) {
    CHECK_EQ_INT(bc_get_streaming(), BC_STREAMING_AUTO);
    CHECK_OK(bc_set_streaming(BC_STREAMING_NEVER));
    CHECK_EQ_INT(bc_get_streaming(), BC_STREAMING_NEVER);
    CHECK_OK(bc_set_streaming(BC_STREAMING_ALWAYS));
    CHECK_EQ_INT(bc_get_streaming(), BC_STREAMING_ALWAYS);
    /* Refused, and the policy stays. */
    CHECK_STATUS(bc_set_streaming(3), BC_ERR_INVALID_ARG);
    CHECK_LAST_ERROR("mode must be BC_STREAMING_AUTO, BC_STREAMING_ALWAYS or BC_STREAMING_NEVER");
    CHECK_STATUS(bc_set_streaming(-1), BC_ERR_INVALID_ARG);
    CHECK_EQ_INT(bc_get_streaming(), BC_STREAMING_ALWAYS);
    CHECK_OK(bc_set_streaming(BC_STREAMING_AUTO));
    CHECK_EQ_INT(bc_get_streaming(), BC_STREAMING_AUTO);
}

static void *other_thread(void *arg) {
    *(int32_t *)arg = bc_get_streaming();
    return NULL;
}

static void test_each_thread_has_its_own(void) {
    CHECK_OK(bc_set_streaming(BC_STREAMING_NEVER));
    int32_t seen = -1;
    pthread_t t;
    CHECK(pthread_create(&t, NULL, other_thread, &seen) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK_EQ_INT(seen, BC_STREAMING_AUTO);
    CHECK_EQ_INT(bc_get_streaming(), BC_STREAMING_NEVER);
    CHECK_OK(bc_set_streaming(BC_STREAMING_AUTO));
}

/* (rows,1024) + (1024,) into out and allocating, twice per policy (the second call's destination
 * was just written), large enough to be streamed when asked: every element is a[i] + b[j],
 * whatever the policy. On the calling thread alone: the pool's detached workers, alive at exit,
 * leave their TLS blocks "possibly lost" under valgrind (tests/streaming.rs covers the pool). */
static void test_every_policy_gives_the_same_results(void) {
    enum { ROWS = 2048, COLS = 1024 };
    const int64_t sa[] = {ROWS, COLS}, sb[] = {COLS};
    float *va = malloc(sizeof(float) * ROWS * COLS), *vb = malloc(sizeof(float) * COLS);
    float *got = malloc(sizeof(float) * ROWS * COLS);
    CHECK(va && vb && got);
    if (!va || !vb || !got) return;
    for (size_t i = 0; i < (size_t)ROWS * COLS; i++) va[i] = (float)(i % 977) * 0.5f;
    for (size_t j = 0; j < COLS; j++) vb[j] = (float)j * 0.25f + 1.0f;
    bc_tensor *a = NULL, *b = NULL, *out = NULL;
    CHECK_OK(bc_tensor_from_data(BC_DTYPE_FLOAT32, sa, 2, va, sizeof(float) * ROWS * COLS, &a));
    CHECK_OK(bc_tensor_from_data(BC_DTYPE_FLOAT32, sb, 1, vb, sizeof(float) * COLS, &b));
    CHECK_OK(bc_set_num_threads(1));
    CHECK_OK(bc_tensor_zeros(BC_DTYPE_FLOAT32, sa, 2, &out));
    const int32_t modes[] = {BC_STREAMING_ALWAYS, BC_STREAMING_NEVER, BC_STREAMING_AUTO};
    for (size_t m = 0; m < COUNT_OF(modes); m++) {
        CHECK_OK(bc_set_streaming(modes[m]));
        for (int rep = 0; rep < 2; rep++) {
            bc_tensor *r = NULL;
            CHECK_OK(bc_binary(BC_OP_ADD, a, b, &r));
            CHECK_OK(bc_binary_out(BC_OP_ADD, a, b, out));
            bc_tensor *both[] = {r, out};
            for (int k = 0; k < 2; k++) {
                CHECK_OK(bc_tensor_copy_to(both[k], got, sizeof(float) * ROWS * COLS));
                size_t wrong = 0;
                for (size_t i = 0; i < (size_t)ROWS * COLS; i++)
                    wrong += got[i] != va[i] + vb[i % COLS];
                CHECK_EQ_SIZE(wrong, 0);
            }
            bc_tensor_free(r);
        }
    }
    CHECK_OK(bc_set_streaming(BC_STREAMING_AUTO));
    bc_tensor_free(a);
    bc_tensor_free(b);
    bc_tensor_free(out);
    CHECK_OK(bc_set_num_threads(0));
    free(va);
    free(vb);
    free(got);
}

int main(void) {
    RUN_TEST(the_policy_is_set_and_read_back);
    RUN_TEST(each_thread_has_its_own);
    RUN_TEST(every_policy_gives_the_same_results);
    return check_summary();
}
