/*
 * contract.c: the C API's boundary contract, checked for every export the header declares.
 *
 * The calls come from contract_exports.h, which tests/c_suite.rs (test `contract`) generates from
 * include/broadcast.h each time it runs (testkit/src/contract.rs): one function per export that
 * builds each argument from its parameter's type and name, and a table of what each parameter is.
 * A new export is therefore checked without anyone writing its test. For every export, with valid
 * arguments in every other position:
 *
 *  - NULL in each pointer position (and in each element of an array of pointers):
 *    BC_ERR_NULL_ARG, recorded as the last error (kind BC_ERROR_KIND_NULL_ARG) with a message that
 *    names the argument. Where the header documents NULL as valid there ("may be NULL", "either
 *    bound NULL for none"), the generator marks the position optional and the call must give what
 *    it gives with the argument present.
 *  - In each tensor-handle position (and each element of an array of handles): a freed handle, a
 *    handle freed twice, a forged one (the address of memory that never came from the library)
 *    and a stale one (freed, its registry slot since reused by a live tensor):
 *    BC_ERR_INVALID_HANDLE, recorded, naming the argument.
 *  - In each position the call writes into (in place, `out`): a read-only tensor (imported through
 *    DLPack with DLPACK_FLAG_BITMASK_READ_ONLY): BC_ERR_READ_ONLY.
 *
 * After each of those failures: every out-handle is NULL, every other byte of caller memory is as
 * it was, every tensor passed (and the one living in a stale handle's slot) is live and holds what
 * it held, the read-only tensor's memory and the forged memory are untouched, no release callback
 * or DLPack deleter has run, and once the harness frees what it made, no handle is left live.
 *
 * Each export is also called once with every argument valid (its "baseline"): that call must get
 * past the boundary (no NULL_ARG, INVALID_HANDLE, READ_ONLY or INTERNAL), which shows the valid
 * arguments are valid, so each failure above comes from the one bad argument.
 */
#include "check.h"

/* ------------------------------------------------------------------------------------------------
 * What the generated table says about each export
 * --------------------------------------------------------------------------------------------- */

/* What a parameter is, which decides the cases it gets. */
enum contract_role {
    ROLE_VALUE,                /* not a pointer: a fixed valid value, no case */
    ROLE_TENSOR,               /* const bc_tensor *: NULL and the four bad handles */
    ROLE_TENSOR_WRITTEN,       /* bc_tensor * written in place or as `out`: those, and read-only */
    ROLE_TENSOR_FREED,         /* bc_tensor * the call frees: NULL and the bad handles */
    ROLE_TENSOR_ARRAY,         /* `count` handles: NULL and bad handles in each element */
    ROLE_POINTER_ARRAY,        /* `count` pointers (to shapes): NULL in each element */
    ROLE_OUT_HANDLES,          /* `count` out-handle slots: NULL; NULL in every slot after a failure */
    ROLE_OUT_DLPACK,           /* an unversioned DLPack out-slot: as ROLE_OUT_HANDLES */
    ROLE_OUT_DLPACK_VERSIONED, /* a DLPack 1.x out-slot: as ROLE_OUT_HANDLES */
    ROLE_MEMORY                /* any other pointer (caller memory, a DLPack struct, a callback): NULL */
};

/* How a call reports its outcome. */
enum contract_result {
    RESULT_STATUS,     /* returns its status */
    RESULT_VOID,       /* returns nothing: its status is the recorded last error (bc_tensor_free) */
    RESULT_LIVE_QUERY, /* answers whether a handle is live: false for NULL and every bad handle */
    RESULT_VALUE       /* returns a value that must not depend on an optional pointer */
};

#define CONTRACT_MAX_PARAMS 12

typedef struct {
    const char *name;
    int role;
    size_t count;  /* elements of an array or slots of an out-handle array (1 for one slot) */
    bool optional; /* the header documents NULL as valid here */
    bool written_on_failure; /* the header documents a write here even when the call fails */
} contract_param;

typedef struct {
    const char *name;
    int result;
    bool recorded; /* its failures are recorded as the last error (all but the error getters) */
    size_t nparams;
    contract_param params[CONTRACT_MAX_PARAMS];
    int64_t (*call)(void);
} contract_export;

/* ------------------------------------------------------------------------------------------------
 * Cases
 * --------------------------------------------------------------------------------------------- */

enum case_kind {
    CASE_BASELINE,
    CASE_NULL,
    CASE_FREED,
    CASE_DOUBLE_FREED,
    CASE_FORGED,
    CASE_STALE,
    CASE_READ_ONLY,
    CASE_KINDS
};

static const char *const CASE_NAMES[CASE_KINDS] = {
    "all arguments valid", "NULL", "a freed handle", "a handle freed twice", "a forged handle",
    "a stale handle", "a read-only tensor"};

/* The case being run: what goes wrong, in which parameter, and in which element of an array
 * parameter (-1: the parameter itself). */
static struct {
    int kind;
    int param;
    long element;
} current = {CASE_BASELINE, -1, -1};

static bool targets(int param, long element) {
    return current.kind != CASE_BASELINE && current.param == param && current.element == element;
}

/* Used by the generated calls: whether parameter `param` gets NULL in this case. */
static bool contract_null_at(int param) {
    return current.kind == CASE_NULL && targets(param, -1);
}

/* ------------------------------------------------------------------------------------------------
 * Caller memory: one block per parameter, filled with FILL before each case
 * --------------------------------------------------------------------------------------------- */

#define BLOCK_BYTES 4096
#define FILL 0x5a
static _Alignas(64) unsigned char blocks[CONTRACT_MAX_PARAMS][BLOCK_BYTES];
static unsigned char blocks_before[CONTRACT_MAX_PARAMS][BLOCK_BYTES];

/* The elements every valid tensor holds: float32 (2, 3); bool for a condition, int32 for the
 * operations that take integers only. */
static const float F32_VALUES[6] = {1, 2, 3, 4, 5, 6};
static const bool BOOL_VALUES[6] = {true, false, true, false, true, false};
static const int32_t I32_VALUES[6] = {1, 2, 3, 4, 5, 6};
static const int64_t SHAPE_2_3[2] = {2, 3};

typedef struct {
    const void *values;
    size_t nbytes;
    uint8_t dl_code; /* as DLPack names the type */
    uint8_t dl_bits;
} tensor_kind;

static tensor_kind kind_of(int32_t dtype) {
    if (dtype == BC_DTYPE_BOOL) return (tensor_kind){BOOL_VALUES, sizeof BOOL_VALUES, kDLBool, 8};
    if (dtype == BC_DTYPE_INT32) return (tensor_kind){I32_VALUES, sizeof I32_VALUES, kDLInt, 32};
    return (tensor_kind){F32_VALUES, sizeof F32_VALUES, kDLFloat, 32};
}

/* Memory that never came from the library, passed as a handle. */
static unsigned char forged_memory[64];
#define FORGED_FILL 0xab

/* ------------------------------------------------------------------------------------------------
 * Tensors the harness made for the case (checked unchanged after a failure, freed afterwards)
 * --------------------------------------------------------------------------------------------- */

typedef struct {
    bc_tensor *t;
    size_t nbytes;
    unsigned char bytes[64];
} fixture;

static fixture fixtures[64];
static size_t nfixtures;

static bc_tensor *make_tensor(int32_t dtype) {
    bc_tensor *t = NULL;
    tensor_kind k = kind_of(dtype);
    int32_t s = bc_tensor_from_data(dtype, SHAPE_2_3, 2, k.values, k.nbytes, &t);
    if (s != BC_OK) {
        CHECK_OK(s);
        return NULL;
    }
    return t;
}

static bc_tensor *keep(bc_tensor *t, size_t nbytes) {
    if (t && nfixtures < COUNT_OF(fixtures)) {
        fixtures[nfixtures].t = t;
        fixtures[nfixtures].nbytes = nbytes;
        nfixtures++;
    } else if (t) {
        check_fail_header(__FILE__, __LINE__, "at most 64 tensors per case");
    }
    return t;
}

static bc_tensor *fixture_tensor(int32_t dtype) {
    return keep(make_tensor(dtype), kind_of(dtype).nbytes);
}

/* A read-only tensor: (2, 3) over the caller's memory `ro_data`, imported through DLPack with the
 * read-only flag, of the type a valid tensor has in its position. */
static _Alignas(8) unsigned char ro_data[sizeof F32_VALUES];
static unsigned char ro_expected[sizeof F32_VALUES];
static int64_t ro_shape[2];
static int ro_deleter_calls;

static void ro_deleter(DLManagedTensorVersioned *m) {
    ro_deleter_calls++;
    free(m);
}

static bc_tensor *read_only_tensor(int32_t dtype) {
    tensor_kind k = kind_of(dtype);
    memset(ro_data, 0, sizeof ro_data);
    memcpy(ro_data, k.values, k.nbytes);
    memcpy(ro_expected, ro_data, sizeof ro_data);
    memcpy(ro_shape, SHAPE_2_3, sizeof ro_shape);
    DLManagedTensorVersioned *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->version.major = 1;
    m->deleter = ro_deleter;
    m->flags = DLPACK_FLAG_BITMASK_READ_ONLY;
    m->dl_tensor.data = ro_data;
    m->dl_tensor.device.device_type = kDLCPU;
    m->dl_tensor.ndim = 2;
    m->dl_tensor.dtype.code = k.dl_code;
    m->dl_tensor.dtype.bits = k.dl_bits;
    m->dl_tensor.dtype.lanes = 1;
    m->dl_tensor.shape = ro_shape;
    bc_tensor *t = NULL;
    int32_t s = bc_tensor_from_dlpack_versioned(m, &t);
    if (s != BC_OK) {
        CHECK_OK(s);
        free(m);
        return NULL;
    }
    return keep(t, k.nbytes);
}

/* The low 24 bits of a handle name its registry slot on 64-bit targets (src/ffi/handle.rs,
 * INDEX_BITS; the rest is the slot's generation, and the whole token is XORed with a key whose
 * low bits are 0). Only used to confirm that a stale handle's slot really was reused. */
#define SLOT_BITS 0xFFFFFFu

static bc_tensor *bad_handle(int kind, int32_t dtype) {
    bc_tensor *t = NULL;
    switch (kind) {
    case CASE_FREED:
        t = make_tensor(BC_DTYPE_FLOAT32);
        bc_tensor_free(t);
        return t;
    case CASE_DOUBLE_FREED:
        t = make_tensor(BC_DTYPE_FLOAT32);
        bc_tensor_free(t);
        bc_tensor_free(t);
        return t;
    case CASE_FORGED:
        return (bc_tensor *)(void *)forged_memory;
    case CASE_STALE: {
        /* Freed, and its slot taken by the next tensor this thread makes. */
        t = make_tensor(BC_DTYPE_FLOAT32);
        bc_tensor_free(t);
        bc_tensor *reuser = fixture_tensor(BC_DTYPE_FLOAT32);
        if (sizeof(void *) == 8 && (((uintptr_t)t ^ (uintptr_t)reuser) & SLOT_BITS) != 0) {
            check_fail_header(__FILE__, __LINE__, "the stale handle's slot is reused");
            printf("        freed %p, next tensor %p\n", (void *)t, (void *)reuser);
        }
        return t;
    }
    case CASE_READ_ONLY:
        return read_only_tensor(dtype);
    default:
        return NULL;
    }
}

/* ------------------------------------------------------------------------------------------------
 * Argument builders, used by the generated calls (contract_exports.h). Each returns a valid
 * argument for parameter `param`, or the bad one when the case targets it (NULL is chosen by the
 * generated call itself, through contract_null_at).
 * --------------------------------------------------------------------------------------------- */

/* A tensor handle. */
static void *arg_tensor(int param, int32_t dtype) {
    if (targets(param, -1)) return bad_handle(current.kind, dtype);
    return fixture_tensor(dtype);
}

/* An array of `n` tensor handles. */
static void *arg_tensor_array(int param, size_t n, int32_t dtype) {
    const bc_tensor **arr = (const bc_tensor **)(void *)blocks[param];
    for (size_t k = 0; k < n; k++) {
        if (!targets(param, (long)k))
            arr[k] = fixture_tensor(dtype);
        else
            arr[k] = current.kind == CASE_NULL ? NULL : bad_handle(current.kind, dtype);
    }
    return arr;
}

/* An array of `n` shapes (2, 3). */
static void *arg_shape_array(int param, size_t n) {
    const int64_t **arr = (const int64_t **)(void *)blocks[param];
    int64_t *dims = (int64_t *)(void *)(blocks[param] + BLOCK_BYTES / 2);
    for (size_t k = 0; k < n; k++) {
        memcpy(dims + 2 * k, SHAPE_2_3, sizeof SHAPE_2_3);
        arr[k] = targets(param, (long)k) ? NULL : dims + 2 * k;
    }
    return arr;
}

/* `n` out-handle slots (DLPack export slots too), holding SENTINEL. */
static void *arg_out_handles(int param, size_t n) {
    void **slots = (void **)(void *)blocks[param];
    for (size_t k = 0; k < n; k++) slots[k] = (void *)SENTINEL;
    return slots;
}

/* Memory the call may write only when it succeeds. */
static void *arg_out(int param) {
    return blocks[param];
}

/* Memory the call reads: `bytes` of `content`. */
static void *arg_in(int param, const void *content, size_t bytes) {
    memcpy(blocks[param], content, bytes);
    return blocks[param];
}

/* A number (a clamp bound), written field by field: its padding keeps the block's fill, so the
 * comparison of the block after the call reads no uninitialised bytes. */
static void *arg_scalar(int param) {
    bc_scalar *s = (bc_scalar *)(void *)blocks[param];
    s->kind = BC_SCALAR_FLOAT;
    s->b = false;
    s->i = 0;
    s->f = 0.5;
    return s;
}

/* Memory holding the float32 (2, 3) elements (data to copy in, or to wrap). */
static void *arg_f32_data(int param) {
    return arg_in(param, F32_VALUES, sizeof F32_VALUES);
}

/* `n` geometries of `dtype` (2, 3), row-major. */
static void *arg_geometries(int param, size_t n, int32_t dtype) {
    bc_geometry *g = (bc_geometry *)(void *)blocks[param];
    int64_t *shape = (int64_t *)(void *)(blocks[param] + BLOCK_BYTES / 2);
    memcpy(shape, SHAPE_2_3, sizeof SHAPE_2_3);
    for (size_t k = 0; k < n; k++) {
        memset(&g[k], 0, sizeof g[k]);
        g[k].dtype = dtype;
        g[k].ndim = 2;
        g[k].shape = shape;
        g[k].strides = NULL;
    }
    return g;
}

/* A DLPack struct handed to the library (it owns it only if the call succeeds). */
static int dl_deleter_calls;
static void *dl_given; /* the struct given in this case, if any */
static bool dl_given_versioned;

static void dl_versioned_deleter(DLManagedTensorVersioned *m) {
    dl_deleter_calls++;
    free(m);
}

static void dl_legacy_deleter(DLManagedTensor *m) {
    dl_deleter_calls++;
    free(m);
}

static void fill_dl_tensor(DLTensor *d, int param) {
    d->data = arg_f32_data(param);
    int64_t *shape = (int64_t *)(void *)(blocks[param] + BLOCK_BYTES / 2);
    memcpy(shape, SHAPE_2_3, sizeof SHAPE_2_3);
    d->device.device_type = kDLCPU;
    d->ndim = 2;
    d->dtype.code = kDLFloat;
    d->dtype.bits = 32;
    d->dtype.lanes = 1;
    d->shape = shape;
}

static void *arg_dlpack_versioned(int param) {
    DLManagedTensorVersioned *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->version.major = 1;
    m->deleter = dl_versioned_deleter;
    fill_dl_tensor(&m->dl_tensor, param);
    dl_given = m;
    dl_given_versioned = true;
    return m;
}

static void *arg_dlpack(int param) {
    DLManagedTensor *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->deleter = dl_legacy_deleter;
    fill_dl_tensor(&m->dl_tensor, param);
    dl_given = m;
    dl_given_versioned = false;
    return m;
}

/* Callbacks. */
static int release_calls;
static bool release_given;

static void count_release(void *user_data) {
    (void)user_data;
    release_calls++;
}

static bc_release_fn arg_release(int param) {
    (void)param;
    release_given = true;
    return count_release;
}

static void ignore_warning(void *user_data, const char *message) {
    (void)user_data;
    (void)message;
}

static bc_warning_fn arg_warning_handler(int param) {
    (void)param;
    return ignore_warning;
}

/* Opaque caller data passed back to a callback. */
static void *arg_user_data(int param) {
    return blocks[param];
}

/* Called by the generated calls once every argument is built, just before the call. */
static void contract_before_call(void) {
    memcpy(blocks_before, blocks, sizeof blocks);
    for (size_t i = 0; i < nfixtures; i++) {
        fixture *f = &fixtures[i];
        if (bc_tensor_copy_to(f->t, f->bytes, f->nbytes) != BC_OK) {
            check_fail_header(__FILE__, __LINE__, "a tensor the harness made can be read");
        }
    }
    release_calls = 0;
    dl_deleter_calls = 0;
    bc_last_error_clear();
}

#include "contract_exports.h"

/* ------------------------------------------------------------------------------------------------
 * Running a case and judging it
 * --------------------------------------------------------------------------------------------- */

static long cases_run;
static long cases_by_kind[CASE_KINDS];
static long cases_failed;
static long baselines_with_status;
static long baselines_ok;

static void describe(const contract_export *e, char *buf, size_t len) {
    if (current.kind == CASE_BASELINE) {
        snprintf(buf, len, "%s(%s)", e->name, CASE_NAMES[CASE_BASELINE]);
    } else if (current.element >= 0) {
        snprintf(buf, len, "%s(%s[%ld]: %s)", e->name, e->params[current.param].name, current.element,
                 CASE_NAMES[current.kind]);
    } else {
        snprintf(buf, len, "%s(%s: %s)", e->name, e->params[current.param].name, CASE_NAMES[current.kind]);
    }
}

static int case_failures;

static void case_fail(const contract_export *e, const char *what) {
    char name[256];
    describe(e, name, sizeof name);
    if (case_failures == 0) check_fail_header(__FILE__, __LINE__, "the contract holds");
    case_failures++;
    printf("        %s: %s\n", name, what);
}

/* Whether the last error's message names the parameter under test: `name`, or for an element of
 * an array also `name[...]` (the messages name the array, `shapes` or `ins[i]`, not the element). */
static bool message_names_argument(const contract_export *e) {
    const char *msg = check_last_error();
    char want[128];
    snprintf(want, sizeof want, "`%s`", e->params[current.param].name);
    if (strstr(msg, want)) return true;
    snprintf(want, sizeof want, "`%s[", e->params[current.param].name);
    return current.element >= 0 && strstr(msg, want) != NULL;
}

/* The failure was recorded as the thread's last error, with this status and kind. */
static void check_recorded(const contract_export *e, int32_t status, int32_t kind) {
    char what[512];
    if (!e->recorded) {
        if (bc_last_error_status() != BC_OK) {
            snprintf(what, sizeof what, "recorded a last error (%s), which its header says it does not",
                     check_last_error());
            case_fail(e, what);
        }
        return;
    }
    bc_error_info info;
    memset(&info, 0, sizeof info);
    if (bc_last_error_status() != status || bc_last_error_info(&info) != BC_OK || info.kind != kind) {
        snprintf(what, sizeof what, "last error status %d kind %d (\"%s\"), expected status %d kind %d",
                 (int)bc_last_error_status(), (int)info.kind, check_last_error(), (int)status, (int)kind);
        case_fail(e, what);
    }
}

/* After a failure: nothing the caller owns changed, out-handles are NULL, nothing was taken over. */
static void check_nothing_changed(const contract_export *e) {
    char what[512];
    for (size_t p = 0; p < e->nparams; p++) {
        const contract_param *cp = &e->params[p];
        size_t from = 0;
        bool slots_role = cp->role == ROLE_OUT_HANDLES || cp->role == ROLE_OUT_DLPACK ||
                          cp->role == ROLE_OUT_DLPACK_VERSIONED;
        if (slots_role && !contract_null_at((int)p)) {
            void **slots = (void **)(void *)blocks[p];
            for (size_t k = 0; k < cp->count; k++) {
                if (slots[k] != NULL) {
                    snprintf(what, sizeof what, "`%s`[%zu] is not NULL after the failure", cp->name, k);
                    case_fail(e, what);
                }
            }
            from = cp->count * sizeof(void *);
        }
        if (!cp->written_on_failure && memcmp(blocks[p] + from, blocks_before[p] + from, BLOCK_BYTES - from) != 0) {
            snprintf(what, sizeof what, "the memory given as `%s` changed", cp->name);
            case_fail(e, what);
        }
    }
    for (size_t i = 0; i < nfixtures; i++) {
        fixture *f = &fixtures[i];
        unsigned char now[64];
        if (!bc_tensor_is_live(f->t)) {
            case_fail(e, "a tensor the harness made is no longer live");
        } else if (bc_tensor_copy_to(f->t, now, f->nbytes) != BC_OK || memcmp(now, f->bytes, f->nbytes) != 0) {
            case_fail(e, "a tensor the harness made changed");
        }
    }
    if (release_calls != 0) case_fail(e, "the release callback ran although the call failed");
    if (dl_deleter_calls != 0) case_fail(e, "the DLPack deleter ran although the call failed");
}

/* Frees what the case made; afterwards no handle is left live. */
static void clean_up(const contract_export *e, bool succeeded, size_t live_before) {
    char what[512];
    for (size_t p = 0; p < e->nparams; p++) {
        const contract_param *cp = &e->params[p];
        if (contract_null_at((int)p)) continue;
        if (cp->role == ROLE_OUT_HANDLES) {
            bc_tensor **slots = (bc_tensor **)(void *)blocks[p];
            for (size_t k = 0; k < cp->count; k++)
                if (slots[k] != NULL && slots[k] != SENTINEL) bc_tensor_free(slots[k]);
        } else if (cp->role == ROLE_OUT_DLPACK_VERSIONED) {
            DLManagedTensorVersioned **slot = (DLManagedTensorVersioned **)(void *)blocks[p];
            if (*slot != NULL && *slot != (void *)SENTINEL) (*slot)->deleter(*slot);
        } else if (cp->role == ROLE_OUT_DLPACK) {
            DLManagedTensor **slot = (DLManagedTensor **)(void *)blocks[p];
            if (*slot != NULL && *slot != (void *)SENTINEL) (*slot)->deleter(*slot);
        }
    }
    if (dl_given && !succeeded) {
        /* Still the caller's: hand it back to its producer. */
        if (dl_given_versioned)
            ((DLManagedTensorVersioned *)dl_given)->deleter((DLManagedTensorVersioned *)dl_given);
        else
            ((DLManagedTensor *)dl_given)->deleter((DLManagedTensor *)dl_given);
    }
    for (size_t i = 0; i < nfixtures; i++)
        if (bc_tensor_is_live(fixtures[i].t)) bc_tensor_free(fixtures[i].t);
    check_restore_settings();
    if (dl_given && dl_deleter_calls != 1) {
        snprintf(what, sizeof what, "the DLPack deleter ran %d times, not once", dl_deleter_calls);
        case_fail(e, what);
    }
    int releases_expected = succeeded && release_given ? 1 : 0;
    if (release_calls != releases_expected) {
        snprintf(what, sizeof what, "the release callback ran %d times, expected %d", release_calls,
                 releases_expected);
        case_fail(e, what);
    }
    size_t live_after = bc_tensor_live_count();
    if (live_after != live_before) {
        snprintf(what, sizeof what, "%zu live handles before the case, %zu after freeing what it made",
                 live_before, live_after);
        case_fail(e, what);
    }
    if (current.kind == CASE_READ_ONLY && memcmp(ro_data, ro_expected, sizeof ro_data) != 0)
        case_fail(e, "the read-only tensor's memory changed");
    for (size_t i = 0; i < sizeof forged_memory; i++) {
        if (forged_memory[i] != FORGED_FILL) {
            case_fail(e, "the forged handle's memory changed");
            break;
        }
    }
}

/* Runs one case; returns the call's result (a status, or for queries their value). */
static int64_t run_case(const contract_export *e, int kind, int param, long element, int64_t baseline) {
    char what[768];
    current.kind = kind;
    current.param = param;
    current.element = element;
    case_failures = 0;
    nfixtures = 0;
    dl_given = NULL;
    release_given = false;
    memset(blocks, FILL, sizeof blocks);
    memset(forged_memory, FORGED_FILL, sizeof forged_memory);
    size_t live_before = bc_tensor_live_count();

    int64_t r = e->call();

    bool is_status = e->result == RESULT_STATUS || e->result == RESULT_VOID;
    bool succeeded = is_status && r == BC_OK;
    bool optional = param >= 0 && e->params[param].optional && element < 0;
    if (kind == CASE_BASELINE) {
        if (is_status && (r == BC_ERR_NULL_ARG || r == BC_ERR_INVALID_HANDLE || r == BC_ERR_READ_ONLY ||
                          r == BC_ERR_INTERNAL)) {
            snprintf(what, sizeof what, "status %d (%s) with every argument valid: the harness's arguments "
                     "do not pass the boundary", (int)r, check_last_error());
            case_fail(e, what);
        }
        if (is_status) baselines_with_status++;
        if (succeeded)
            baselines_ok++;
        else if (is_status) /* not a failure: the semantics may still refuse valid arguments */
            printf("  %s, every argument valid: %s (\"%s\")\n", e->name, check_status_name((int32_t)r),
                   check_last_error());
    } else if (e->result == RESULT_LIVE_QUERY) {
        /* A query: false for NULL and for every handle that is not live, and no error recorded. */
        if (r != 0 || bc_last_error_status() != BC_OK) {
            snprintf(what, sizeof what, "returned %lld, last error status %d; expected false and none",
                     (long long)r, (int)bc_last_error_status());
            case_fail(e, what);
        }
    } else if (kind == CASE_NULL && optional) {
        if (r != baseline) {
            snprintf(what, sizeof what, "gave %lld (%s) where the header allows NULL; with the argument "
                     "present it gave %lld", (long long)r, check_last_error(), (long long)baseline);
            case_fail(e, what);
        }
    } else {
        int32_t want = kind == CASE_NULL        ? BC_ERR_NULL_ARG
                       : kind == CASE_READ_ONLY ? BC_ERR_READ_ONLY
                                                : BC_ERR_INVALID_HANDLE;
        int32_t want_kind = kind == CASE_NULL        ? BC_ERROR_KIND_NULL_ARG
                            : kind == CASE_READ_ONLY ? BC_ERROR_KIND_READ_ONLY
                                                     : BC_ERROR_KIND_INVALID_HANDLE;
        if (!is_status) {
            case_fail(e, "has no status to report the failure (the generator should not make this case)");
        } else if (r != want) {
            snprintf(what, sizeof what, "status %d (\"%s\"), expected %s", (int)r, check_last_error(),
                     check_status_name(want));
            case_fail(e, what);
        } else {
            check_recorded(e, want, want_kind);
            if (e->recorded && kind != CASE_READ_ONLY && !message_names_argument(e)) {
                snprintf(what, sizeof what, "the message \"%s\" does not name the argument", check_last_error());
                case_fail(e, what);
            }
            if (e->recorded && kind != CASE_NULL && kind != CASE_READ_ONLY &&
                !strstr(check_last_error(), "not a live tensor handle")) {
                snprintf(what, sizeof what, "the message \"%s\" does not say the handle is not live",
                         check_last_error());
                case_fail(e, what);
            }
        }
        check_nothing_changed(e);
    }
    clean_up(e, succeeded, live_before);
    cases_run++;
    cases_by_kind[kind]++;
    if (case_failures) cases_failed++;
    return r;
}

static void run_export(const contract_export *e) {
    int64_t baseline = run_case(e, CASE_BASELINE, -1, -1, 0);
    for (size_t p = 0; p < e->nparams; p++) {
        const contract_param *cp = &e->params[p];
        int param = (int)p;
        if (cp->role == ROLE_VALUE) continue;
        run_case(e, CASE_NULL, param, -1, baseline);
        if (cp->role == ROLE_TENSOR || cp->role == ROLE_TENSOR_WRITTEN || cp->role == ROLE_TENSOR_FREED) {
            for (int k = CASE_FREED; k <= CASE_STALE; k++) run_case(e, k, param, -1, baseline);
        }
        if (cp->role == ROLE_TENSOR_WRITTEN) run_case(e, CASE_READ_ONLY, param, -1, baseline);
        if (cp->role == ROLE_TENSOR_ARRAY || cp->role == ROLE_POINTER_ARRAY) {
            for (size_t k = 0; k < cp->count; k++) {
                run_case(e, CASE_NULL, param, (long)k, baseline);
                if (cp->role == ROLE_TENSOR_ARRAY)
                    for (int kind = CASE_FREED; kind <= CASE_STALE; kind++)
                        run_case(e, kind, param, (long)k, baseline);
            }
        }
    }
}

static void test_every_export_at_its_boundary(void) {
    for (size_t i = 0; i < COUNT_OF(CONTRACT_EXPORTS); i++) run_export(&CONTRACT_EXPORTS[i]);
    printf("contract: %zu exports with pointer parameters, %ld cases (%ld NULL, %ld freed, %ld freed twice, "
           "%ld forged, %ld stale, %ld read-only, %ld with every argument valid: of the %ld of those that "
           "return a status, %ld succeeded); %ld cases failed\n",
           COUNT_OF(CONTRACT_EXPORTS), cases_run, cases_by_kind[CASE_NULL], cases_by_kind[CASE_FREED],
           cases_by_kind[CASE_DOUBLE_FREED], cases_by_kind[CASE_FORGED], cases_by_kind[CASE_STALE],
           cases_by_kind[CASE_READ_ONLY], cases_by_kind[CASE_BASELINE], baselines_with_status, baselines_ok,
           cases_failed);
}

int main(void) {
    RUN_TEST(every_export_at_its_boundary);
    return check_summary();
}
