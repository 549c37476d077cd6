//! How a reduction's work is cut into groups of outputs and ranges of rows and shared among
//! threads: a function of the shapes only, so it fixes the summation order.

use super::lanes::{BLOCK_LEAVES, LEAF, MAX_BLOCKS, STREAM_LANES};
use crate::engine::iter::Iter;
use crate::engine::parallel;

/// Below this many elements per output, an output's stream is too short for lanes to pay: the
/// kept dimension is taken as the lanes instead (when there is one).
const MIN_STREAM: usize = 64;

/// Split the rows of each group into ranges until there are about this many work units, so that
/// a few large outputs still spread over the threads. A function of the shapes only.
const TARGET_UNITS: usize = 16;

/// Most bytes of one accumulator row when a kept dimension gives the lanes: a whole contiguous
/// row of the input, as wide as fits the first-level cache, so the input is read in long runs.
const COLUMN_BYTES: usize = 16384;

/// Most output columns handled together when the kept dimension supplies the lanes, for
/// accumulators of `acc_size` bytes.
const fn column_lanes(acc_size: usize) -> usize {
    COLUMN_BYTES / acc_size
}

/// How the work is cut: `groups` sets of outputs computed together (one output and its stream's
/// lanes, or a block of columns), each with `rows` rows cut into `ranges` ranges of `range_rows`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Cut {
    /// Outputs, and elements each reduces.
    pub(super) m: usize,
    pub(super) n: usize,
    /// The kept dimension giving the lanes (the innermost by the iterator's order), if any; else
    /// each output's own stream does.
    pub(super) col: Option<usize>,
    /// Lanes per group.
    pub(super) w: usize,
    pub(super) groups: usize,
    pub(super) rows: usize,
    pub(super) range_rows: usize,
    pub(super) ranges: usize,
}

impl Cut {
    /// The cut of the reduction iterated by `it` ([`Iter::with_reduced`]), with `stream_w`
    /// lanes for a stream and at most `column_w` for columns.
    pub(super) fn new<const N: usize>(it: &Iter<N>, stream_w: usize, column_w: usize) -> Cut {
        let kept = it.kept_shape();
        let (m, n) = (
            kept.iter().product::<usize>(),
            it.reduced_shape().iter().product::<usize>(),
        );
        let col = it
            .inner_kept()
            .and_then(|(c, stream_inside)| (n < MIN_STREAM || !stream_inside).then_some(c));
        let (w, groups, rows) = match col {
            None => (stream_w, m, n.div_ceil(stream_w)),
            Some(c) => {
                let w = kept[c].min(column_w);
                (w, m / kept[c] * kept[c].div_ceil(w), n)
            }
        };
        let block = LEAF * BLOCK_LEAVES;
        let blocks = rows.div_ceil(block);
        // From the outputs' count only (not from how the kept dimensions merged), so that the
        // fused form cuts its rows as the two calls do.
        let outputs = if col.is_some() {
            m.div_ceil(column_w)
        } else {
            m
        };
        let want = TARGET_UNITS.div_ceil(outputs);
        let per_range = blocks.div_ceil(want).clamp(1, MAX_BLOCKS);
        let range_rows = per_range * block;
        Cut {
            m,
            n,
            col,
            w,
            groups,
            rows,
            range_rows,
            ranges: rows.div_ceil(range_rows),
        }
    }
}

/// How a reduction's work is cut: `units` units of work (of `work` elements in all), shared
/// among `threads` threads.
pub(super) struct Work {
    pub(super) cut: Cut,
    pub(super) units: usize,
    pub(super) work: usize,
    pub(super) threads: usize,
}

/// How the work of the reduction iterated by `it` is cut and shared among threads, for
/// accumulators of `acc_size` bytes.
pub(super) fn work<const N: usize>(it: &Iter<N>, acc_size: usize) -> Work {
    let cut = Cut::new(it, STREAM_LANES, column_lanes(acc_size));
    let (units, work) = (cut.groups * cut.ranges, cut.m.saturating_mul(cut.n));
    Work {
        cut,
        units,
        work,
        threads: parallel::unit_threads(units, work),
    }
}

/// The operands' byte strides (elements of `itemsize` bytes) along the rows every tile of `cut`
/// has: the kept dimension's that gives the lanes, or the stream's (the innermost).
pub(super) fn row_strides<const N: usize>(it: &Iter<N>, cut: &Cut, itemsize: usize) -> [isize; N] {
    let d = cut.col.unwrap_or(it.ndim() - 1);
    std::array::from_fn(|k| it.stride(k, d) * itemsize as isize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::iter::broadcast_strides;
    use crate::engine::shape::contiguous_strides;

    /// The iterator of a reduction of a view of these strides.
    fn geometry(shape: &[usize], strides: &[isize], reduced: &[bool]) -> Iter<1> {
        Iter::with_reduced(shape, [strides], strides, reduced).unwrap()
    }

    fn cut(g: &Iter<1>) -> Cut {
        Cut::new(g, STREAM_LANES, column_lanes(4))
    }

    /// Operand `k`'s offsets (in elements) of the elements the first output reduces, in order.
    fn sequence<const N: usize>(it: &Iter<N>, k: usize) -> Vec<isize> {
        let n = it.reduced_shape().iter().product::<usize>();
        let mut seen = Vec::new();
        // SAFETY: the walk only records offsets; no memory is touched.
        unsafe {
            it.for_each_run([std::ptr::null_mut(); N], [1; N], 0, n, &mut |p, s, len| {
                seen.extend((0..len as isize).map(|i| p[k] as isize + i * s[k]))
            })
        };
        seen
    }

    #[test]
    fn rows_and_columns_of_a_matrix() {
        let st = contiguous_strides(&[4096, 4096]).unwrap();
        // Over dim 1: one stream per output, each output a unit of work.
        let c = cut(&geometry(&[4096, 4096], &st, &[false, true]));
        assert_eq!((c.col, c.w, c.groups, c.ranges), (None, 32, 4096, 1));
        // Over dim 0: all 4096 columns as lanes, the rows cut into 16 ranges for the threads.
        let c = cut(&geometry(&[4096, 4096], &st, &[true, false]));
        assert_eq!((c.col, c.w, c.groups, c.ranges), (Some(0), 4096, 1, 16));
        assert_eq!(c.range_rows, 256);
        // Everything: one stream, cut into ranges of at most 64 blocks.
        let c = cut(&geometry(&[4096, 4096], &st, &[true, true]));
        assert_eq!((c.col, c.groups, c.ranges), (None, 1, 32));
        // A short stream takes its lanes from the kept dimension instead.
        let st = contiguous_strides(&[1000, 3]).unwrap();
        let c = cut(&geometry(&[1000, 3], &st, &[false, true]));
        assert_eq!((c.col, c.w, c.groups), (Some(0), 1000, 1));
    }

    /// The fused form orders by a row-major result, whatever its inputs' strides, and cuts its
    /// rows from the number of outputs alone, so it sums in the two calls' order.
    #[test]
    fn fused_order_follows_the_row_major_result() {
        let shape = [2usize, 3, 5];
        let reduced = [true, true, false];
        let a = broadcast_strides(&[2, 1, 1], &[1, 1, 1], &shape).unwrap();
        let b = broadcast_strides(&[3, 5], &[5, 1], &shape).unwrap();
        let order = contiguous_strides(&shape).unwrap();
        // The row-major result as a third operand, to read the order the elements come in.
        let fused =
            Iter::with_reduced(&shape, [&a[..], &b[..], &order[..]], &order, &reduced).unwrap();
        let two = geometry(&shape, &order, &reduced);
        assert_eq!(sequence(&fused, 2), sequence(&two, 0));
        let cf = Cut::new(&fused, STREAM_LANES, column_lanes(4));
        let c2 = cut(&two);
        assert_eq!(
            (cf.col, cf.rows, cf.range_rows),
            (c2.col, c2.rows, c2.range_rows)
        );
    }

    /// The height bound stated in the `reduce` module's docs holds for the cut the code makes.
    #[test]
    fn stated_height_bound_holds() {
        for n in [
            1usize,
            3,
            64,
            1000,
            4096,
            1 << 14,
            100_000,
            1 << 20,
            1 << 24,
            3 << 26,
        ] {
            for m in [1usize, 2, 7, 4096] {
                for column in [false, true] {
                    let (shape, reduced) = if column {
                        ([n, m], [true, false])
                    } else {
                        ([m, n], [false, true])
                    };
                    let g = geometry(&shape, &contiguous_strides(&shape).unwrap(), &reduced);
                    let c = cut(&g);
                    let blocks_per_range = c.range_rows / (LEAF * BLOCK_LEAVES);
                    assert!(blocks_per_range <= MAX_BLOCKS);
                    let lanes = if c.col.is_none() { 5 } else { 0 };
                    let h = LEAF + BLOCK_LEAVES + blocks_per_range + 2 + lanes;
                    let h = h + c.ranges.next_power_of_two().trailing_zeros() as usize;
                    let stated = 106.0 + (n as f64 / 16384.0).max(1.0).log2().ceil();
                    assert!(h as f64 <= stated, "n {n} m {m} column {column}: h {h}");
                }
            }
        }
    }
}
