//! The planner's reports: what an elementwise call would do, from its operands' types and geometry
//! alone.

use super::decide::{decide, result_layout, steps, BinaryDecision};
use super::number::{decide_pow_number, python_order, WriteKind};
use super::operand::Geometry;
use super::walk::Walk;
use super::where_::{condition_warnings, decide_where, where_layout};
use super::{Dest, Options, Warnings};
use crate::engine::alloc::try_small;
use crate::engine::binary_ops::BinaryOp;
use crate::engine::dtype::DType;
use crate::engine::error::Result;
use crate::engine::shape::{
    checked_nbytes, checked_numel, contiguous_strides, is_contiguous, numel, Dims, Strides,
};
use crate::engine::tensor::Scalar;

/// What an elementwise call would do, found from its operands' types and geometry alone.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The result type (a new result's type; in place or into `out`, cast to the written
    /// tensor's type).
    pub dtype: DType,
    /// The type computed in.
    pub compute: DType,
    /// The call reads the divisor's elements: an integer division, remainder or fmod refuses a
    /// zero among them (`Error::ZeroDivision`), which only the call can see.
    pub checks_divisor: bool,
    /// The broadcast shape (in place, the written tensor's).
    pub shape: Dims,
    /// The strides of the written tensor: a new result's layout, else the written tensor's own.
    pub strides: Strides,
    pub warnings: Warnings,
    /// The sizes iterated after size-1 dimensions are dropped and mergeable ones merged,
    /// outermost first.
    pub loop_shape: Dims,
    pub loop_kind: LoopKind,
    /// Threads the work is shared among, the calling one included.
    pub threads: usize,
    /// Bytes of element memory the call allocates: the result and every temporary.
    pub alloc_bytes: usize,
}

/// The inner loop a computation runs, from the operands' strides along the innermost iterated
/// dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopKind {
    /// Nothing to compute: the result has no elements.
    None,
    /// Every operand is contiguous (or a single element is computed).
    Contiguous,
    /// Contiguous, with an input repeated (one element for a whole run).
    Broadcast,
    /// An input is strided along the innermost dimension but contiguous along another: walked
    /// in 2-D tiles, so each cache line it brings in serves several runs.
    Tiled,
    /// Any other strides.
    Strided,
}

/// What `a op b` would do (into `dest`) for operands of these types and geometry: the checks and
/// decisions of [`binary`], [`binary_inplace`] and [`binary_out`] themselves, so an error is the
/// one the call would give. Checks that need memory are the call's alone: a read-only written
/// tensor, and one that partly overlaps an input (the planner knows no addresses).
///
/// [`binary`]: super::binary::binary
/// [`binary_inplace`]: super::binary_inplace
/// [`binary_out`]: super::binary_out
pub fn plan_binary(
    op: BinaryOp,
    a: Geometry<'_>,
    b: Geometry<'_>,
    dest: Dest<'_, Geometry<'_>>,
    opts: Options,
) -> Result<Report> {
    let d = decide(op, &a, &b, dest, opts)?;
    report(op, d, a, b, dest, WriteKind::Compute, false)
}

/// What `t op s` for a number `s` would do ([`binary_number`]; `number_first`: `s op t`;
/// `inplace`: [`binary_number_inplace`]), from `t`'s type and geometry: the checks and decisions
/// of those calls.
///
/// [`binary_number_inplace`]: super::binary_number_inplace
/// [`binary_number`]: super::binary_number
pub fn plan_binary_number(
    op: BinaryOp,
    t: Geometry<'_>,
    s: Scalar,
    number_first: bool,
    inplace: bool,
    opts: Options,
) -> Result<Report> {
    let (op, number_first) = python_order(op, s, number_first, inplace)?;
    let n = Geometry {
        dtype: s.dtype(),
        shape: &[],
        strides: &[],
        wrapped: true,
    };
    let dest = if inplace { Dest::InPlace } else { Dest::New };
    let mut r = match (op, number_first) {
        (BinaryOp::Pow, true) => {
            let (d, run) = decide_pow_number(&t, &n, s, true, Dest::New, opts)?;
            report(op, d, n, t, Dest::New, run, true)?
        }
        (BinaryOp::Pow, false) => {
            let (d, run) = decide_pow_number(&t, &n, s, false, dest, opts)?;
            report(op, d, t, n, dest, run, false)?
        }
        (_, true) => plan_binary(op, n, t, Dest::New, opts)?,
        (_, false) => plan_binary(op, t, n, dest, opts)?,
    };
    // The number itself, held in a 0-d tensor.
    r.alloc_bytes += n.dtype.size();
    Ok(r)
}

/// What `where(cond, a, b)` ([`where_`], or [`where_out`] into `out`) would do, from the operands'
/// types and geometry: the call's checks and decisions. The uint8 condition's warning is
/// foreseen as the call would give it now (only the first time in the process).
///
/// [`where_`]: super::where_::where_
/// [`where_out`]: super::where_out
pub fn plan_where(
    cond: Geometry<'_>,
    a: Geometry<'_>,
    b: Geometry<'_>,
    out: Option<Geometry<'_>>,
) -> Result<Report> {
    let (dtype, shape) = decide_where(&cond, &a, &b, out.as_ref())?;
    // A broadcast shape's elements may not fit (the call refuses its result the same way).
    let elements = |g: Geometry<'_>| checked_nbytes(checked_numel(g.shape)?, dtype.size());
    let mut alloc_bytes = 0;
    let new_strides;
    let written = match out {
        Some(out) => out,
        None => {
            new_strides = where_layout(&shape, dtype, [cond, a, b])?;
            let g = Geometry {
                dtype,
                shape: &shape,
                strides: &new_strides,
                wrapped: false,
            };
            alloc_bytes += elements(g)?;
            g
        }
    };
    let (loop_shape, loop_kind, threads) = if numel(&shape) == 0 {
        (Dims::new(), LoopKind::None, 1)
    } else {
        // `a` and `b` of another type are read from row-major copies (see `compute_where`).
        let mut row_major: [Strides; 2] = Default::default();
        let inputs = [a, b];
        for k in (0..2).filter(|&k| inputs[k].dtype != dtype) {
            alloc_bytes += elements(inputs[k])?;
            row_major[k] = contiguous_strides(inputs[k].shape)?;
        }
        let [a, b] = std::array::from_fn(|k| match inputs[k].dtype == dtype {
            true => inputs[k],
            false => Geometry {
                dtype,
                strides: &row_major[k],
                ..inputs[k]
            },
        });
        Walk::new(&shape, [written, cond, a, b])?.describe()?
    };
    Ok(Report {
        dtype,
        compute: dtype,
        checks_divisor: false,
        shape: try_small(&shape)?,
        strides: try_small(written.strides)?,
        warnings: condition_warnings(cond.dtype, false),
        loop_shape,
        loop_kind,
        threads,
        alloc_bytes,
    })
}

/// The report of a call whose checks have passed with decision `d`, writing into `dest` as `run`
/// says; `row_major_result`: a new result is row-major instead of laid out after its operands.
fn report(
    op: BinaryOp,
    d: BinaryDecision<'_>,
    a: Geometry<'_>,
    b: Geometry<'_>,
    dest: Dest<'_, Geometry<'_>>,
    run: WriteKind,
    row_major_result: bool,
) -> Result<Report> {
    // A broadcast shape's elements may not fit (the call refuses its result the same way).
    let elements =
        |g: Geometry<'_>, dtype: DType| checked_nbytes(checked_numel(g.shape)?, dtype.size());
    let mut alloc_bytes = 0;
    // `b` as the computation reads it (see `read_b`).
    let b_row_major;
    let b = match d.fallback {
        false => b,
        true => {
            if !is_contiguous(b.shape, b.strides) {
                alloc_bytes += elements(b, b.dtype)?;
            }
            b_row_major = contiguous_strides(a.shape)?;
            Geometry {
                shape: a.shape,
                strides: &b_row_major,
                ..b
            }
        }
    };
    let result_strides;
    let written = match dest {
        Dest::New => {
            result_strides = match row_major_result {
                true => contiguous_strides(&d.shape)?,
                false => result_layout(&d, a, b)?,
            };
            let g = Geometry {
                dtype: d.types.result,
                shape: &d.shape,
                strides: &result_strides,
                wrapped: false,
            };
            alloc_bytes += elements(g, d.types.result)?;
            g
        }
        Dest::InPlace => a,
        Dest::Out(out) => *out,
    };
    let mut checks_divisor = false;
    let (loop_shape, loop_kind, threads) = match run {
        _ if numel(&d.shape) == 0 => (Dims::new(), LoopKind::None, 1),
        WriteKind::Fill => Walk::new(&d.shape, [written])?.describe()?,
        WriteKind::Copy => Walk::new(&d.shape, [written, a])?.describe()?,
        WriteKind::Compute => {
            // What `write_result` allocates (row-major temporaries), and the operands it walks.
            let steps = steps(op, written, a, b, d.types);
            checks_divisor = steps.divisor;
            let made = [steps.temp, steps.convert[0], steps.convert[1]];
            let given = [written, a, b];
            let mut row_major: [Strides; 3] = Default::default();
            // The temporary for the written tensor has the result type; converted inputs the
            // computation type.
            let made_type = |k: usize| {
                if k == 0 {
                    d.types.result
                } else {
                    d.types.compute
                }
            };
            for k in (0..3).filter(|&k| made[k]) {
                row_major[k] = contiguous_strides(given[k].shape)?;
                alloc_bytes += elements(given[k], made_type(k))?;
            }
            let walked: [Geometry<'_>; 3] = std::array::from_fn(|k| match made[k] {
                false => given[k],
                true => Geometry {
                    dtype: made_type(k),
                    shape: given[k].shape,
                    strides: &row_major[k],
                    wrapped: false,
                },
            });
            if steps.f32_scalar {
                Walk::new(&d.shape, [walked[0], walked[1]])?.describe()?
            } else {
                Walk::new(&d.shape, walked)?.describe()?
            }
        }
    };
    Ok(Report {
        dtype: d.types.result,
        compute: d.types.compute,
        checks_divisor,
        shape: try_small(&d.shape)?,
        strides: try_small(written.strides)?,
        warnings: d.warnings,
        loop_shape,
        loop_kind,
        threads,
        alloc_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::parallel;

    fn g<'a>(dtype: DType, shape: &'a [usize], strides: &'a [isize]) -> Geometry<'a> {
        Geometry {
            dtype,
            shape,
            strides,
            wrapped: false,
        }
    }

    fn plan(a: Geometry<'_>, b: Geometry<'_>) -> Report {
        plan_binary(BinaryOp::Add, a, b, Dest::New, Options::default()).unwrap()
    }

    /// How the suite's cases would run: merged loops, the inner loop's kind, threads.
    #[test]
    fn plans_of_known_cases() {
        let _lock = parallel::tests::SETTINGS.lock().unwrap();
        parallel::set_num_threads(2);
        parallel::set_threshold(parallel::DEFAULT_THRESHOLD);
        let f = DType::F32;
        let (n, rm, t) = ([4096, 4096], [4096, 1], [1, 4096]);
        // S1: one contiguous loop, on both threads.
        let p = plan(g(f, &n, &rm), g(f, &n, &rm));
        assert_eq!(
            (&p.loop_shape[..], p.loop_kind, p.threads),
            (&[1 << 24][..], LoopKind::Contiguous, 2)
        );
        assert_eq!(p.alloc_bytes, 4 << 24);
        // S2: a row repeated down the rows, each contiguous; S3: a column, one value per row.
        let p = plan(g(f, &n, &rm), g(f, &[4096], &[1]));
        assert_eq!(
            (&p.loop_shape[..], p.loop_kind),
            (&n[..], LoopKind::Contiguous)
        );
        let p = plan(g(f, &n, &rm), g(f, &[4096, 1], &[1, 1]));
        assert_eq!(
            (&p.loop_shape[..], p.loop_kind),
            (&n[..], LoopKind::Broadcast)
        );
        // S8: a transposed operand is walked in tiles.
        assert_eq!(plan(g(f, &n, &t), g(f, &n, &rm)).loop_kind, LoopKind::Tiled);
        // The permuted case keeps x's layout, so both stream: (16384, 256), y's row repeated.
        let (xs, xt) = ([256, 64, 256], [1, 65536, 256]);
        let p = plan(g(f, &xs, &xt), g(f, &[256, 1, 1], &[1, 1, 1]));
        assert_eq!(&p.strides[..], &xt);
        assert_eq!(
            (&p.loop_shape[..], p.loop_kind),
            (&[16384, 256][..], LoopKind::Contiguous)
        );
        // L1: a small plan, on the calling thread.
        let p = plan(g(f, &[3, 1], &[1, 1]), g(f, &[1, 3], &[3, 1]));
        assert_eq!(
            (&p.loop_shape[..], p.loop_kind, p.threads),
            (&[3, 3][..], LoopKind::Broadcast, 1)
        );
        // int32 (3,) + float64 0-d computes in float64: the result (24 bytes) and a converted
        // copy of the int32 operand (24 bytes) are allocated.
        let p = plan(g(DType::I32, &[3], &[1]), g(DType::F64, &[], &[]));
        assert_eq!((p.dtype, p.alloc_bytes), (DType::F64, 48));
        // Nothing to compute.
        let p = plan(g(f, &[0, 3], &[3, 1]), g(f, &[3], &[1]));
        assert_eq!((p.loop_kind, p.alloc_bytes), (LoopKind::None, 0));
        parallel::set_num_threads(0);
    }
}
