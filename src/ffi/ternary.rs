//! Three-operand broadcasting operations: `lerp`, `addcmul`, `addcdiv`, `clamp` (PyTorch's),
//! each out of place, in place and into a caller's `out`.
use super::boundary::call;
use super::handle::{self, bc_tensor, hand_out, out_handle};
use super::scalar::{bc_scalar, number};
use super::status::FfiError;
use crate::engine::tensor::Scalar;
use crate::engine::ternary::{self, Arg, TernaryOp};
use crate::engine::{ops, Tensor};

/// `lerp(input, end, weight)` as a `BC_EXPR_TERNARY` step of a fused expression (as `bc_lerp`,
/// the weight a tensor: a number weight is a `BC_EXPR_CONST`, a 0-d tensor).
pub const BC_TERNARY_LERP: i32 = 0;
/// `addcmul(input, tensor1, tensor2, value)` as a `BC_EXPR_TERNARY` step (as `bc_addcmul`).
pub const BC_TERNARY_ADDCMUL: i32 = 1;
/// `addcdiv(input, tensor1, tensor2, value)` as a `BC_EXPR_TERNARY` step (as `bc_addcdiv`).
pub const BC_TERNARY_ADDCDIV: i32 = 2;
/// `clamp(input, min, max)` with both bounds tensors, as a `BC_EXPR_TERNARY` step (as
/// `bc_clamp`: number bounds are `BC_EXPR_CONST` steps, 0-d tensors).
pub const BC_TERNARY_CLAMP: i32 = 3;
/// How many three-operand operations there are: the codes are 0 to `BC_TERNARY_COUNT - 1`, and a
/// code outside that range is `BC_ERR_INVALID_ARG`. Later versions add codes at the end.
pub const BC_TERNARY_COUNT: i32 = 4;
const _: () = {
    assert!(TernaryOp::ALL.len() == BC_TERNARY_COUNT as usize);
    assert!(matches!(
        TernaryOp::ALL[BC_TERNARY_LERP as usize],
        TernaryOp::Lerp
    ));
    assert!(matches!(
        TernaryOp::ALL[BC_TERNARY_ADDCMUL as usize],
        TernaryOp::Addcmul
    ));
    assert!(matches!(
        TernaryOp::ALL[BC_TERNARY_ADDCDIV as usize],
        TernaryOp::Addcdiv
    ));
    assert!(matches!(
        TernaryOp::ALL[BC_TERNARY_CLAMP as usize],
        TernaryOp::Clamp
    ));
};

/// The operation of a `BC_TERNARY_*` code.
pub(super) fn op_in(code: i32) -> Option<TernaryOp> {
    usize::try_from(code)
        .ok()
        .and_then(|i| TernaryOp::ALL.get(i).copied())
}

/// Where a call writes.
#[derive(Clone, Copy)]
enum To {
    New(*mut *mut bc_tensor),
    InPlace,
    Out(*mut bc_tensor),
}

/// The second and third operands as given: a tensor handle (NULL: absent, for `clamp`'s bounds),
/// or a number.
#[derive(Clone, Copy)]
enum In {
    Tensor(*const bc_tensor, &'static str),
    Number(Option<Scalar>),
    /// A required tensor given as NULL.
    Missing(&'static str),
}

/// Runs `op` over the live tensors behind the handles, writing as `to` says. A `To::New` pointer
/// must be valid for one write: only the unsafe exports, whose contract says so, pass one.
fn run(op: TernaryOp, input: *const bc_tensor, args: [In; 2], value: Scalar, to: To) -> i32 {
    call(|| {
        // SAFETY: a `To::New` pointer is valid for one write (this function's contract).
        let slot = match to {
            To::New(out) => Some(unsafe { out_handle(out, "out")? }),
            _ => None,
        };
        for a in args {
            if let In::Missing(name) = a {
                return Err(FfiError::NullArg(name));
            }
        }
        let mut handles: [(*const bc_tensor, &'static str); 4] = [(input, "input"); 4];
        let mut n = 1;
        for a in args {
            if let In::Tensor(h, name) = a {
                if !h.is_null() {
                    handles[n] = (h, name);
                    n += 1;
                }
            }
        }
        if let To::Out(out) = to {
            handles[n] = (out, "out");
            n += 1;
        }
        let body = |ts: &[&Tensor]| -> crate::engine::Result<Option<Tensor>> {
            let mut next = 1;
            let mut arg = |a: In| match a {
                In::Tensor(h, _) if h.is_null() => Arg::None,
                In::Tensor(..) => {
                    next += 1;
                    Arg::Tensor(ts[next - 1])
                }
                In::Number(Some(s)) => Arg::Number(s),
                In::Number(None) | In::Missing(_) => Arg::None,
            };
            let args = [arg(args[0]), arg(args[1])];
            match to {
                To::New(_) => ternary::ternary(op, ts[0], args, value).map(Some),
                To::InPlace => ternary::ternary_inplace(op, ts[0], args, value).map(|_| None),
                To::Out(_) => ternary::ternary_out(op, ts[0], args, value, ts[next]).map(|_| None),
            }
        };
        let small = |ts: &[&Tensor]| ops::is_small([ts[ts.len() - 1]]);
        let made = match n {
            1 => handle::with([handles[0]], |t| small(&t), |t| body(&t))?,
            2 => handle::with([handles[0], handles[1]], |t| small(&t), |t| body(&t))?,
            3 => handle::with(
                [handles[0], handles[1], handles[2]],
                |t| small(&t),
                |t| body(&t),
            )?,
            _ => handle::with(handles, |t| small(&t), |t| body(&t))?,
        }?;
        if let (Some(slot), Some(t)) = (slot, made) {
            hand_out(slot, t)?;
        }
        Ok(())
    })
}

fn scalar_or_none(s: *const bc_scalar) -> Result<Option<Scalar>, FfiError> {
    // SAFETY: a non-NULL bound points to a readable bc_scalar (the callers' contract).
    unsafe { s.as_ref() }.map(|s| number(*s)).transpose()
}

/// The body of the number-bound clamps: the bounds read first (each NULL or valid for one read,
/// as the exports' contract says), then as `run`.
fn clamp_numbers(
    input: *const bc_tensor,
    min: *const bc_scalar,
    max: *const bc_scalar,
    to: To,
) -> i32 {
    let bounds = (scalar_or_none(min), scalar_or_none(max));
    match bounds {
        (Ok(lo), Ok(hi)) => run(
            TernaryOp::Clamp,
            input,
            [In::Number(lo), In::Number(hi)],
            Scalar::Int(1),
            to,
        ),
        (Err(e), _) | (_, Err(e)) => refuse(e, to),
    }
}

/// The value of `addcmul`/`addcdiv`, checked; the call's status when it is refused.
fn value_in(value: bc_scalar, to: To) -> Result<Scalar, i32> {
    number(value).map_err(|e| refuse(e, to))
}

/// A refusal of a number (an unknown kind): as every export, a new-tensor call checks its
/// out-pointer first (NULL is `BC_ERR_NULL_ARG`) and leaves NULL there on failure.
fn refuse(e: FfiError, to: To) -> i32 {
    call(|| {
        if let To::New(out) = to {
            // SAFETY: a `To::New` pointer is NULL or valid for one write (the exports'
            // contract); the handle writes NULL there when it is dropped unset.
            unsafe { out_handle(out, "out")? };
        }
        Err::<(), FfiError>(e)
    })
}

/// `*out = lerp(input, end, weight)` in a new tensor (PyTorch's `torch.lerp`): `input + weight *
/// (end - input)`, computed as PyTorch does, `|weight| < 0.5 ? fma(weight, end - input, input) :
/// fma(-(end - input), 1 - weight, end)`, in float32 for float16 and bfloat16, in the type
/// otherwise. The three broadcast together (in that order); there is no promotion: `end`, and
/// `weight` unless it is 0-d, must have `input`'s type (`expected dtype float for `end` but got
/// dtype double`), which must be floating (`"lerp_kernel_tensor" not implemented for 'Int'`). The
/// result is laid out as PyTorch lays it out. On success the caller owns `*out`; on failure
/// `*out` is NULL.
///
/// # Returns
/// `BC_OK`; `BC_ERR_DTYPE`; `BC_ERR_SHAPE` (`The size of tensor a (2) must match the size of
/// tensor b (4) at non-singleton dimension 0`, tensor a being the operands broadcast so far);
/// `BC_ERR_NULL_ARG`; `BC_ERR_INVALID_HANDLE`; `BC_ERR_ALLOC`.
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_lerp(
    input: *const bc_tensor,
    end: *const bc_tensor,
    weight: *const bc_tensor,
    out: *mut *mut bc_tensor,
) -> i32 {
    let args = [In::Tensor(end, "end"), In::Tensor(weight, "weight")];
    let args = nonnull(args);
    run(TernaryOp::Lerp, input, args, Scalar::Int(1), To::New(out))
}

/// Operands that are all required: a NULL one is `BC_ERR_NULL_ARG`, as for every other export.
fn nonnull(args: [In; 2]) -> [In; 2] {
    args.map(|a| match a {
        In::Tensor(h, name) if h.is_null() => In::Missing(name),
        a => a,
    })
}

/// `input = lerp(input, end, weight)` (`input.lerp_(end, weight)`): `input`'s shape must be the
/// broadcast shape (`output with shape [..] doesn't match the broadcast shape [..]`). When the
/// call fails, `input` is unchanged.
///
/// # Returns
/// As `bc_lerp`; also `BC_ERR_OVERLAP`, `BC_ERR_READ_ONLY`.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_lerp_inplace(
    input: *mut bc_tensor,
    end: *const bc_tensor,
    weight: *const bc_tensor,
) -> i32 {
    let args = nonnull([In::Tensor(end, "end"), In::Tensor(weight, "weight")]);
    run(TernaryOp::Lerp, input, args, Scalar::Int(1), To::InPlace)
}

/// `lerp(input, end, weight)` into the caller's `out`, which must have the broadcast shape and a
/// type the result can be cast to. When the call fails, `out` is unchanged.
///
/// # Returns
/// As `bc_lerp_inplace`.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_lerp_out(
    input: *const bc_tensor,
    end: *const bc_tensor,
    weight: *const bc_tensor,
    out: *mut bc_tensor,
) -> i32 {
    let args = nonnull([In::Tensor(end, "end"), In::Tensor(weight, "weight")]);
    run(TernaryOp::Lerp, input, args, Scalar::Int(1), To::Out(out))
}

/// `bc_lerp` with a number `weight` (`torch.lerp(input, end, 0.25)`), read in the computation
/// type (float32 for float16 and bfloat16); a non-floating `input` is refused with
/// `"lerp_kernel_scalar" not implemented for 'Int'`.
///
/// # Returns
/// As `bc_lerp`; `BC_ERR_INVALID_ARG` for an unknown `weight.kind`.
///
/// # Safety
/// As `bc_lerp`.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_lerp_scalar(
    input: *const bc_tensor,
    end: *const bc_tensor,
    weight: bc_scalar,
    out: *mut *mut bc_tensor,
) -> i32 {
    let w = match number(weight) {
        Ok(w) => w,
        Err(e) => return refuse(e, To::New(out)),
    };
    let args = nonnull([In::Tensor(end, "end"), In::Number(Some(w))]);
    run(TernaryOp::Lerp, input, args, Scalar::Int(1), To::New(out))
}

/// `bc_lerp_inplace` with a number `weight`.
///
/// # Returns
/// As `bc_lerp_inplace`; `BC_ERR_INVALID_ARG` for an unknown `weight.kind`.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_lerp_scalar_inplace(
    input: *mut bc_tensor,
    end: *const bc_tensor,
    weight: bc_scalar,
) -> i32 {
    let w = match number(weight) {
        Ok(w) => w,
        Err(e) => return refuse(e, To::InPlace),
    };
    let args = nonnull([In::Tensor(end, "end"), In::Number(Some(w))]);
    run(TernaryOp::Lerp, input, args, Scalar::Int(1), To::InPlace)
}

/// `bc_lerp_out` with a number `weight`.
///
/// # Returns
/// As `bc_lerp_out`; `BC_ERR_INVALID_ARG` for an unknown `weight.kind`.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_lerp_scalar_out(
    input: *const bc_tensor,
    end: *const bc_tensor,
    weight: bc_scalar,
    out: *mut bc_tensor,
) -> i32 {
    let w = match number(weight) {
        Ok(w) => w,
        Err(e) => return refuse(e, To::Out(out)),
    };
    let args = nonnull([In::Tensor(end, "end"), In::Number(Some(w))]);
    run(TernaryOp::Lerp, input, args, Scalar::Int(1), To::Out(out))
}

/// The body of the `addcmul`/`addcdiv` exports: `value` read first, then as `run`.
fn addc(
    op: TernaryOp,
    input: *const bc_tensor,
    t: [*const bc_tensor; 2],
    value: bc_scalar,
    to: To,
) -> i32 {
    let value = match value_in(value, to) {
        Ok(v) => v,
        Err(status) => return status,
    };
    let args = nonnull([In::Tensor(t[0], "tensor1"), In::Tensor(t[1], "tensor2")]);
    run(op, input, args, value, to)
}

/// `*out = addcmul(input, tensor1, tensor2, value)` in a new tensor (PyTorch's `torch.addcmul`):
/// `input + value * tensor1 * tensor2`, as `fma(value * tensor1, tensor2, input)` (integers wrap). The three tensors broadcast together (in that order) and promote together as
/// PyTorch promotes operands (0-d tensors raise only the category); `value` does not take part.
/// Every tensor is cast to the result type first; float16 and bfloat16 compute in float32.
/// An integer result takes `value` truncated toward zero (a negative integer wraps into an unsigned type). Bool is refused (`"addcmul_cpu_out" not implemented for 'Bool'`). On success the caller owns `*out`; on failure `*out` is NULL.
///
/// # Returns
/// `BC_OK`; `BC_ERR_DTYPE`; `BC_ERR_VALUE` (a `value` the result's integer type cannot hold:
/// `value cannot be converted to type uint8_t without overflow`); `BC_ERR_SHAPE`;
/// `BC_ERR_INVALID_ARG` (an unknown `value.kind`); `BC_ERR_NULL_ARG`; `BC_ERR_INVALID_HANDLE`;
/// `BC_ERR_ALLOC`.
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_addcmul(
    input: *const bc_tensor,
    tensor1: *const bc_tensor,
    tensor2: *const bc_tensor,
    value: bc_scalar,
    out: *mut *mut bc_tensor,
) -> i32 {
    addc(
        TernaryOp::Addcmul,
        input,
        [tensor1, tensor2],
        value,
        To::New(out),
    )
}

/// `input = addcmul(input, tensor1, tensor2, value)` (`input.addcmul_(..)`): `input`'s shape must be
/// the broadcast shape and the result type castable to its type. When the call fails, `input` is
/// unchanged.
///
/// # Returns
/// As `bc_addcmul`; also `BC_ERR_OVERLAP`, `BC_ERR_READ_ONLY`.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_addcmul_inplace(
    input: *mut bc_tensor,
    tensor1: *const bc_tensor,
    tensor2: *const bc_tensor,
    value: bc_scalar,
) -> i32 {
    addc(
        TernaryOp::Addcmul,
        input,
        [tensor1, tensor2],
        value,
        To::InPlace,
    )
}

/// `addcmul(input, tensor1, tensor2, value)` into the caller's `out`, which must have the broadcast
/// shape and a type the result can be cast to. When the call fails, `out` is unchanged.
///
/// # Returns
/// As `bc_addcmul_inplace`.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_addcmul_out(
    input: *const bc_tensor,
    tensor1: *const bc_tensor,
    tensor2: *const bc_tensor,
    value: bc_scalar,
    out: *mut bc_tensor,
) -> i32 {
    addc(
        TernaryOp::Addcmul,
        input,
        [tensor1, tensor2],
        value,
        To::Out(out),
    )
}

/// `*out = addcdiv(input, tensor1, tensor2, value)` in a new tensor (PyTorch's `torch.addcdiv`):
/// `input + (value * tensor1) / tensor2`, each step rounded. The three tensors broadcast together (in that order) and promote together as
/// PyTorch promotes operands (0-d tensors raise only the category); `value` does not take part.
/// Every tensor is cast to the result type first; float16 and bfloat16 compute in float32.
/// `tensor1` and `tensor2` both of integer or bool types are refused with PyTorch's `Integer division with addcdiv is no longer supported, ...`. On success the caller owns `*out`; on failure `*out` is NULL.
///
/// # Returns
/// `BC_OK`; `BC_ERR_DTYPE`; `BC_ERR_VALUE` (a `value` the result's integer type cannot hold:
/// `value cannot be converted to type uint8_t without overflow`); `BC_ERR_SHAPE`;
/// `BC_ERR_INVALID_ARG` (an unknown `value.kind`); `BC_ERR_NULL_ARG`; `BC_ERR_INVALID_HANDLE`;
/// `BC_ERR_ALLOC`.
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_addcdiv(
    input: *const bc_tensor,
    tensor1: *const bc_tensor,
    tensor2: *const bc_tensor,
    value: bc_scalar,
    out: *mut *mut bc_tensor,
) -> i32 {
    addc(
        TernaryOp::Addcdiv,
        input,
        [tensor1, tensor2],
        value,
        To::New(out),
    )
}

/// `input = addcdiv(input, tensor1, tensor2, value)` (`input.addcdiv_(..)`): `input`'s shape must be
/// the broadcast shape and the result type castable to its type. When the call fails, `input` is
/// unchanged.
///
/// # Returns
/// As `bc_addcdiv`; also `BC_ERR_OVERLAP`, `BC_ERR_READ_ONLY`.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_addcdiv_inplace(
    input: *mut bc_tensor,
    tensor1: *const bc_tensor,
    tensor2: *const bc_tensor,
    value: bc_scalar,
) -> i32 {
    addc(
        TernaryOp::Addcdiv,
        input,
        [tensor1, tensor2],
        value,
        To::InPlace,
    )
}

/// `addcdiv(input, tensor1, tensor2, value)` into the caller's `out`, which must have the broadcast
/// shape and a type the result can be cast to. When the call fails, `out` is unchanged.
///
/// # Returns
/// As `bc_addcdiv_inplace`.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_addcdiv_out(
    input: *const bc_tensor,
    tensor1: *const bc_tensor,
    tensor2: *const bc_tensor,
    value: bc_scalar,
    out: *mut bc_tensor,
) -> i32 {
    addc(
        TernaryOp::Addcdiv,
        input,
        [tensor1, tensor2],
        value,
        To::Out(out),
    )
}

/// `*out = clamp(input, min, max)` in a new tensor (PyTorch's `torch.clamp` with tensor bounds):
/// `min(max(input, min), max)`, either bound NULL for none (not both: `torch.clamp: At least one
/// of 'min' or 'max' must not be None`, `BC_ERR_INVALID_ARG`). NaN in `input` or a bound gives
/// NaN; where `min > max` the result is `max`. The tensors broadcast and promote together;
/// bool with both bounds is refused (`"clamp_cpu" not implemented for 'Bool'`). On success the
/// caller owns `*out`; on failure `*out` is NULL.
///
/// # Returns
/// `BC_OK`; `BC_ERR_DTYPE`; `BC_ERR_SHAPE`; `BC_ERR_INVALID_ARG`; `BC_ERR_NULL_ARG`;
/// `BC_ERR_INVALID_HANDLE`; `BC_ERR_ALLOC`.
///
/// # Safety
/// `out` must be valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_clamp(
    input: *const bc_tensor,
    min: *const bc_tensor,
    max: *const bc_tensor,
    out: *mut *mut bc_tensor,
) -> i32 {
    let args = [In::Tensor(min, "min"), In::Tensor(max, "max")];
    run(TernaryOp::Clamp, input, args, Scalar::Int(1), To::New(out))
}

/// `input = clamp(input, min, max)` (`input.clamp_(min, max)`), as `bc_clamp`; `input`'s shape
/// must be the broadcast shape and the result type castable to its type. When the call fails,
/// `input` is unchanged.
///
/// # Returns
/// As `bc_clamp`; also `BC_ERR_OVERLAP`, `BC_ERR_READ_ONLY`.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_clamp_inplace(
    input: *mut bc_tensor,
    min: *const bc_tensor,
    max: *const bc_tensor,
) -> i32 {
    let args = [In::Tensor(min, "min"), In::Tensor(max, "max")];
    run(TernaryOp::Clamp, input, args, Scalar::Int(1), To::InPlace)
}

/// `clamp(input, min, max)` into the caller's `out`, which must have the broadcast shape and a
/// type the result can be cast to (`result type Half can't be cast to the desired output type
/// Short`; with number bounds, `bc_clamp_scalar_out`, exactly the result type). When the call
/// fails, `out` is unchanged.
///
/// # Returns
/// As `bc_clamp_inplace`.
#[must_use]
#[no_mangle]
pub extern "C" fn bc_clamp_out(
    input: *const bc_tensor,
    min: *const bc_tensor,
    max: *const bc_tensor,
    out: *mut bc_tensor,
) -> i32 {
    let args = [In::Tensor(min, "min"), In::Tensor(max, "max")];
    run(TernaryOp::Clamp, input, args, Scalar::Int(1), To::Out(out))
}

/// `bc_clamp` with number bounds (`torch.clamp(input, min=0, max=2.5)`), either NULL for none.
/// The numbers promote as Python numbers (by category). On an integer result, a `min` above the
/// type's range or a `max` below it is refused (`Clamp min value 300 is outside the
/// representable range of Byte`, `BC_ERR_VALUE`); on a floating one, a bound the type cannot hold
/// (`value cannot be converted to type c10::Half without overflow`).
///
/// # Returns
/// As `bc_clamp`; `BC_ERR_VALUE`.
///
/// # Safety
/// `min` and `max` must each be NULL or valid for one read; `out` valid for one write.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_clamp_scalar(
    input: *const bc_tensor,
    min: *const bc_scalar,
    max: *const bc_scalar,
    out: *mut *mut bc_tensor,
) -> i32 {
    clamp_numbers(input, min, max, To::New(out))
}

/// `bc_clamp_inplace` with number bounds, as `bc_clamp_scalar` (the cast check names the C++
/// type: `result type Float can't be cast to the desired output type int`).
///
/// # Returns
/// As `bc_clamp_scalar`; also `BC_ERR_OVERLAP`, `BC_ERR_READ_ONLY`.
///
/// # Safety
/// `min` and `max` must each be NULL or valid for one read.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_clamp_scalar_inplace(
    input: *mut bc_tensor,
    min: *const bc_scalar,
    max: *const bc_scalar,
) -> i32 {
    clamp_numbers(input, min, max, To::InPlace)
}

/// `bc_clamp_out` with number bounds, as `bc_clamp_scalar`.
///
/// # Returns
/// As `bc_clamp_scalar_inplace`.
///
/// # Safety
/// `min` and `max` must each be NULL or valid for one read.
#[must_use]
#[no_mangle]
pub unsafe extern "C" fn bc_clamp_scalar_out(
    input: *const bc_tensor,
    min: *const bc_scalar,
    max: *const bc_scalar,
    out: *mut bc_tensor,
) -> i32 {
    clamp_numbers(input, min, max, To::Out(out))
}
