//! The named forms of the generic calls (`bc_sqrt`, `bc_sqrt_inplace`, `bc_sqrt_out`, `bc_eq`,
//! `bc_mul_scalar`, `bc_sum`, ...), each at its code (the unary and binary ones from the test
//! kit's generated operation table), so that the families that draw the generic calls can make
//! the same call through its named form instead (the header: each is the generic call with its
//! code). The model's expectation is the same either way.
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

/// By `BC_UNARY_*` code: new tensor, in place (none for the predicates), into `out` (the test
/// kit's table, generated from the operation table).
pub(super) fn named_unary(op: i32) -> Unary {
    let u = &testkit::ops_table::NAMED_UNARY[op as usize];
    (u.new, u.inplace.map(|(_, f)| f), u.out)
}

/// By `BC_OP_*` code: new tensor, in place, into `out` (the test kit's generated table).
pub(super) fn named_binary(op: i32) -> Binary {
    let b = &testkit::NAMED_OPS[op as usize];
    (b.new, b.inplace, b.out)
}

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
