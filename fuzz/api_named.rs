//! The named forms of the generic calls (`bc_sqrt`, `bc_sqrt_inplace`, `bc_sqrt_out`, `bc_eq`,
//! `bc_mul_scalar`, `bc_sum`, ...), each placed at its code, so that the families that draw the
//! generic calls can make the same call through its named form instead (the header: each is the
//! generic call with its code). The model's expectation is the same either way.
use super::*;

type UnaryNew = unsafe extern "C" fn(*const bc_tensor, *mut *mut bc_tensor) -> i32;
type UnaryInplace = extern "C" fn(*mut bc_tensor) -> i32;
type UnaryOut = extern "C" fn(*const bc_tensor, *mut bc_tensor) -> i32;
type Unary = (UnaryNew, Option<UnaryInplace>, UnaryOut);
type BinaryNew =
    unsafe extern "C" fn(*const bc_tensor, *const bc_tensor, *mut *mut bc_tensor) -> i32;
type BinaryInplace = extern "C" fn(*mut bc_tensor, *const bc_tensor) -> i32;
type BinaryOut = extern "C" fn(*const bc_tensor, *const bc_tensor, *mut bc_tensor) -> i32;
type Binary = (BinaryNew, BinaryInplace, BinaryOut);
type Reduce =
    unsafe extern "C" fn(*const bc_tensor, *const i64, usize, bool, *mut *mut bc_tensor) -> i32;
type ScalarNew = unsafe extern "C" fn(*const bc_tensor, bc_scalar, *mut *mut bc_tensor) -> i32;
type ScalarReversed = unsafe extern "C" fn(bc_scalar, *const bc_tensor, *mut *mut bc_tensor) -> i32;
type ScalarInplace = extern "C" fn(*mut bc_tensor, bc_scalar) -> i32;

/// By `BC_UNARY_*` code: new tensor, in place (none for the predicates), into `out`.
pub(super) const NAMED_UNARY: [Unary; BC_UNARY_COUNT as usize] = {
    let mut t: [Unary; BC_UNARY_COUNT as usize] =
        [(bc_abs, Some(bc_abs_inplace), bc_abs_out); BC_UNARY_COUNT as usize];
    t[BC_UNARY_ABS as usize] = (bc_abs, Some(bc_abs_inplace), bc_abs_out);
    t[BC_UNARY_NEG as usize] = (bc_neg, Some(bc_neg_inplace), bc_neg_out);
    t[BC_UNARY_SIGN as usize] = (bc_sign, Some(bc_sign_inplace), bc_sign_out);
    t[BC_UNARY_RECIPROCAL as usize] = (
        bc_reciprocal,
        Some(bc_reciprocal_inplace),
        bc_reciprocal_out,
    );
    t[BC_UNARY_SQRT as usize] = (bc_sqrt, Some(bc_sqrt_inplace), bc_sqrt_out);
    t[BC_UNARY_RSQRT as usize] = (bc_rsqrt, Some(bc_rsqrt_inplace), bc_rsqrt_out);
    t[BC_UNARY_SQUARE as usize] = (bc_square, Some(bc_square_inplace), bc_square_out);
    t[BC_UNARY_EXP as usize] = (bc_exp, Some(bc_exp_inplace), bc_exp_out);
    t[BC_UNARY_EXP2 as usize] = (bc_exp2, Some(bc_exp2_inplace), bc_exp2_out);
    t[BC_UNARY_EXPM1 as usize] = (bc_expm1, Some(bc_expm1_inplace), bc_expm1_out);
    t[BC_UNARY_LOG as usize] = (bc_log, Some(bc_log_inplace), bc_log_out);
    t[BC_UNARY_LOG2 as usize] = (bc_log2, Some(bc_log2_inplace), bc_log2_out);
    t[BC_UNARY_LOG10 as usize] = (bc_log10, Some(bc_log10_inplace), bc_log10_out);
    t[BC_UNARY_LOG1P as usize] = (bc_log1p, Some(bc_log1p_inplace), bc_log1p_out);
    t[BC_UNARY_SIN as usize] = (bc_sin, Some(bc_sin_inplace), bc_sin_out);
    t[BC_UNARY_COS as usize] = (bc_cos, Some(bc_cos_inplace), bc_cos_out);
    t[BC_UNARY_TAN as usize] = (bc_tan, Some(bc_tan_inplace), bc_tan_out);
    t[BC_UNARY_ASIN as usize] = (bc_asin, Some(bc_asin_inplace), bc_asin_out);
    t[BC_UNARY_ACOS as usize] = (bc_acos, Some(bc_acos_inplace), bc_acos_out);
    t[BC_UNARY_ATAN as usize] = (bc_atan, Some(bc_atan_inplace), bc_atan_out);
    t[BC_UNARY_SINH as usize] = (bc_sinh, Some(bc_sinh_inplace), bc_sinh_out);
    t[BC_UNARY_COSH as usize] = (bc_cosh, Some(bc_cosh_inplace), bc_cosh_out);
    t[BC_UNARY_TANH as usize] = (bc_tanh, Some(bc_tanh_inplace), bc_tanh_out);
    t[BC_UNARY_ASINH as usize] = (bc_asinh, Some(bc_asinh_inplace), bc_asinh_out);
    t[BC_UNARY_ACOSH as usize] = (bc_acosh, Some(bc_acosh_inplace), bc_acosh_out);
    t[BC_UNARY_ATANH as usize] = (bc_atanh, Some(bc_atanh_inplace), bc_atanh_out);
    t[BC_UNARY_SIGMOID as usize] = (bc_sigmoid, Some(bc_sigmoid_inplace), bc_sigmoid_out);
    t[BC_UNARY_ERF as usize] = (bc_erf, Some(bc_erf_inplace), bc_erf_out);
    t[BC_UNARY_ERFC as usize] = (bc_erfc, Some(bc_erfc_inplace), bc_erfc_out);
    t[BC_UNARY_FLOOR as usize] = (bc_floor, Some(bc_floor_inplace), bc_floor_out);
    t[BC_UNARY_CEIL as usize] = (bc_ceil, Some(bc_ceil_inplace), bc_ceil_out);
    t[BC_UNARY_ROUND as usize] = (bc_round, Some(bc_round_inplace), bc_round_out);
    t[BC_UNARY_TRUNC as usize] = (bc_trunc, Some(bc_trunc_inplace), bc_trunc_out);
    t[BC_UNARY_FRAC as usize] = (bc_frac, Some(bc_frac_inplace), bc_frac_out);
    t[BC_UNARY_ISNAN as usize] = (bc_isnan, None, bc_isnan_out);
    t[BC_UNARY_ISINF as usize] = (bc_isinf, None, bc_isinf_out);
    t[BC_UNARY_ISFINITE as usize] = (bc_isfinite, None, bc_isfinite_out);
    t[BC_UNARY_SIGNBIT as usize] = (bc_signbit, None, bc_signbit_out);
    t[BC_UNARY_LOGICAL_NOT as usize] = (
        bc_logical_not,
        Some(bc_logical_not_inplace),
        bc_logical_not_out,
    );
    t[BC_UNARY_BITWISE_NOT as usize] = (
        bc_bitwise_not,
        Some(bc_bitwise_not_inplace),
        bc_bitwise_not_out,
    );
    t
};

/// By `BC_OP_*` code: new tensor, in place, into `out`.
pub(super) const NAMED_BINARY: [Binary; BC_OP_COUNT as usize] = {
    let mut t: [Binary; BC_OP_COUNT as usize] =
        [(bc_add, bc_add_inplace, bc_add_out); BC_OP_COUNT as usize];
    t[BC_OP_ADD as usize] = (bc_add, bc_add_inplace, bc_add_out);
    t[BC_OP_SUB as usize] = (bc_sub, bc_sub_inplace, bc_sub_out);
    t[BC_OP_MUL as usize] = (bc_mul, bc_mul_inplace, bc_mul_out);
    t[BC_OP_DIV as usize] = (bc_div, bc_div_inplace, bc_div_out);
    t[BC_OP_EQ as usize] = (bc_eq, bc_eq_inplace, bc_eq_out);
    t[BC_OP_NE as usize] = (bc_ne, bc_ne_inplace, bc_ne_out);
    t[BC_OP_LT as usize] = (bc_lt, bc_lt_inplace, bc_lt_out);
    t[BC_OP_LE as usize] = (bc_le, bc_le_inplace, bc_le_out);
    t[BC_OP_GT as usize] = (bc_gt, bc_gt_inplace, bc_gt_out);
    t[BC_OP_GE as usize] = (bc_ge, bc_ge_inplace, bc_ge_out);
    t[BC_OP_MAXIMUM as usize] = (bc_maximum, bc_maximum_inplace, bc_maximum_out);
    t[BC_OP_MINIMUM as usize] = (bc_minimum, bc_minimum_inplace, bc_minimum_out);
    t[BC_OP_POW as usize] = (bc_pow, bc_pow_inplace, bc_pow_out);
    t[BC_OP_REMAINDER as usize] = (bc_remainder, bc_remainder_inplace, bc_remainder_out);
    t[BC_OP_FMOD as usize] = (bc_fmod, bc_fmod_inplace, bc_fmod_out);
    t[BC_OP_FLOOR_DIVIDE as usize] = (
        bc_floor_divide,
        bc_floor_divide_inplace,
        bc_floor_divide_out,
    );
    t[BC_OP_LOGICAL_AND as usize] = (bc_logical_and, bc_logical_and_inplace, bc_logical_and_out);
    t[BC_OP_LOGICAL_OR as usize] = (bc_logical_or, bc_logical_or_inplace, bc_logical_or_out);
    t[BC_OP_LOGICAL_XOR as usize] = (bc_logical_xor, bc_logical_xor_inplace, bc_logical_xor_out);
    t[BC_OP_BITWISE_AND as usize] = (bc_bitwise_and, bc_bitwise_and_inplace, bc_bitwise_and_out);
    t[BC_OP_BITWISE_OR as usize] = (bc_bitwise_or, bc_bitwise_or_inplace, bc_bitwise_or_out);
    t[BC_OP_BITWISE_XOR as usize] = (bc_bitwise_xor, bc_bitwise_xor_inplace, bc_bitwise_xor_out);
    t[BC_OP_BITWISE_LEFT_SHIFT as usize] = (
        bc_bitwise_left_shift,
        bc_bitwise_left_shift_inplace,
        bc_bitwise_left_shift_out,
    );
    t[BC_OP_BITWISE_RIGHT_SHIFT as usize] = (
        bc_bitwise_right_shift,
        bc_bitwise_right_shift_inplace,
        bc_bitwise_right_shift_out,
    );
    t[BC_OP_ATAN2 as usize] = (bc_atan2, bc_atan2_inplace, bc_atan2_out);
    t[BC_OP_HYPOT as usize] = (bc_hypot, bc_hypot_inplace, bc_hypot_out);
    t
};

/// By `BC_REDUCE_*` code.
pub(super) const NAMED_REDUCE: [Reduce; BC_REDUCE_COUNT as usize] = {
    let mut t: [Reduce; BC_REDUCE_COUNT as usize] = [bc_sum; BC_REDUCE_COUNT as usize];
    t[BC_REDUCE_SUM as usize] = bc_sum;
    t[BC_REDUCE_MEAN as usize] = bc_mean;
    t[BC_REDUCE_PROD as usize] = bc_prod;
    t[BC_REDUCE_AMAX as usize] = bc_amax;
    t[BC_REDUCE_AMIN as usize] = bc_amin;
    t
};

/// The named number forms: `t op s`, `t op= s`, and `s op t` where there is one (`rsub`,
/// `rdiv`), for the four arithmetic codes.
pub(super) fn named_scalar(op: i32) -> Option<(ScalarNew, ScalarInplace, Option<ScalarReversed>)> {
    match op {
        BC_OP_ADD => Some((bc_add_scalar, bc_add_scalar_inplace, None)),
        BC_OP_SUB => Some((bc_sub_scalar, bc_sub_scalar_inplace, Some(bc_rsub_scalar))),
        BC_OP_MUL => Some((bc_mul_scalar, bc_mul_scalar_inplace, None)),
        BC_OP_DIV => Some((bc_div_scalar, bc_div_scalar_inplace, Some(bc_rdiv_scalar))),
        _ => None,
    }
}
