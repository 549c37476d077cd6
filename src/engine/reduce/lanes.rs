//! The summation tree: lanes of accumulators that take rows a leaf at a time, leaves into blocks
//! and blocks into a total.

use super::reducer::Reducer;
use crate::engine::elem::Elem;
use std::mem::{size_of, MaybeUninit};

/// Rows per leaf, leaves per block, and most blocks in one range of rows (see the `reduce`
/// module's docs).
pub const LEAF: usize = 16;
pub const BLOCK_LEAVES: usize = 16;
pub const MAX_BLOCKS: usize = 64;

/// Lanes of one output's stream.
pub(super) const STREAM_LANES: usize = 32;

/// How a row's operands are laid out along it: each contiguous or one element repeated (bit `k`
/// of the mask set when operand `k` is contiguous). Rows of other strides have no mode.
#[derive(Clone, Copy)]
pub(super) struct Mode(pub(super) u8);

impl Mode {
    fn of<P: Pack<K>, const K: usize>(es: [isize; K]) -> Option<Mode> {
        let mut mask = 0;
        for (k, (&s, &size)) in es.iter().zip(&P::SIZES).enumerate() {
            match s {
                0 => {}
                s if s == size as isize => mask |= 1 << k,
                _ => return None,
            }
        }
        // Some operand kinds have loops of their own for only some modes (fewer loops
        // compiled); other rows go element by element.
        (P::MODES & (1 << mask) != 0).then_some(Mode(mask))
    }

    /// [`Mode::of`] for elements of `size` bytes.
    pub(super) fn of_size<const K: usize>(size: usize, es: [isize; K]) -> Option<Mode> {
        let size = size as isize;
        let mut mask = 0;
        for (k, &s) in es.iter().enumerate() {
            match s {
                0 => {}
                s if s == size => mask |= 1 << k,
                _ => return None,
            }
        }
        Some(Mode(mask))
    }
}

/// Calls `$call` with the const `M` of a [`Mode`] (two operands, or three: see [`Pack::MODES`]).
macro_rules! with_mode {
    ($mode:expr, $K:expr, $M:ident => $call:expr) => {
        match $mode.0 {
            0 => {
                const $M: u8 = 0;
                $call
            }
            1 => {
                const $M: u8 = 1;
                $call
            }
            2 => {
                const $M: u8 = 2;
                $call
            }
            7 if $K > 2 => {
                const $M: u8 = 7;
                $call
            }
            _ => {
                const $M: u8 = 3;
                $call
            }
        }
    };
}

/// The operands of one element: `K` elements read from `K` rows (each its own type), which a
/// function combines into the element.
pub(super) trait Pack<const K: usize>: Copy {
    /// Bytes of each operand's elements.
    const SIZES: [usize; K];

    /// The [`Mode`]s with loops of their own (bit `m` for the mode whose mask is `m`).
    const MODES: u8 = 0xFF;

    /// Element `i` of rows of mode `M` (operands whose bit is clear are read at `i = 0`).
    ///
    /// # Safety
    /// The elements must be readable.
    unsafe fn load<const M: u8>(p: &[*const u8; K], i: usize) -> Self;

    /// Element `i` of rows of byte strides `es`.
    ///
    /// # Safety
    /// The elements must be readable.
    unsafe fn load_strided(p: &[*const u8; K], es: [isize; K], i: usize) -> Self;
}

impl<X: Elem, const K: usize> Pack<K> for [X; K] {
    const SIZES: [usize; K] = [size_of::<X>(); K];

    #[inline(always)]
    unsafe fn load<const M: u8>(p: &[*const u8; K], i: usize) -> Self {
        // SAFETY: the caller's contract.
        std::array::from_fn(|k| unsafe {
            let p = p[k] as *const X;
            if M & (1 << k) != 0 {
                p.add(i).read()
            } else {
                p.read()
            }
        })
    }

    #[inline(always)]
    unsafe fn load_strided(p: &[*const u8; K], es: [isize; K], i: usize) -> Self {
        // SAFETY: the caller's contract.
        std::array::from_fn(|k| unsafe { (p[k].offset(i as isize * es[k]) as *const X).read() })
    }
}

/// Two operands of one type, with a loop of their own only when both are contiguous.
#[derive(Clone, Copy)]
pub(super) struct Pair<T>(pub(super) T, pub(super) T);

impl<T: Elem> Pack<2> for Pair<T> {
    const SIZES: [usize; 2] = [size_of::<T>(); 2];
    // Both contiguous.
    const MODES: u8 = 1 << 0b11;

    #[inline(always)]
    unsafe fn load<const M: u8>(p: &[*const u8; 2], i: usize) -> Self {
        // SAFETY: forwarded.
        let [x, y] = unsafe { <[T; 2]>::load::<M>(p, i) };
        Pair(x, y)
    }

    #[inline(always)]
    unsafe fn load_strided(p: &[*const u8; 2], es: [isize; 2], i: usize) -> Self {
        // SAFETY: forwarded.
        let [x, y] = unsafe { <[T; 2]>::load_strided(p, es, i) };
        Pair(x, y)
    }
}

/// A selection's operands: the condition (one byte, bool or uint8) and the two values.
#[derive(Clone, Copy)]
pub(super) struct Select<T>(pub(super) u8, pub(super) T, pub(super) T);

impl<T: Elem> Pack<3> for Select<T> {
    const SIZES: [usize; 3] = [1, size_of::<T>(), size_of::<T>()];
    // The condition and `a` contiguous, `b` one element (a masked sum).
    const MODES: u8 = 1 << 0b011;

    #[inline(always)]
    unsafe fn load<const M: u8>(p: &[*const u8; 3], i: usize) -> Self {
        let at = |k: usize| if M & (1 << k) != 0 { i } else { 0 };
        // SAFETY: the caller's contract.
        unsafe {
            Select(
                p[0].add(at(0)).read(),
                (p[1] as *const T).add(at(1)).read(),
                (p[2] as *const T).add(at(2)).read(),
            )
        }
    }

    #[inline(always)]
    unsafe fn load_strided(p: &[*const u8; 3], es: [isize; 3], i: usize) -> Self {
        let i = i as isize;
        // SAFETY: the caller's contract.
        unsafe {
            Select(
                p[0].offset(i * es[0]).read(),
                (p[1].offset(i * es[1]) as *const T).read(),
                (p[2].offset(i * es[2]) as *const T).read(),
            )
        }
    }
}

/// Three rows of `w` lanes: leaf, block and total (see the `reduce` module's docs).
pub(super) struct Lanes<'s, R: Reducer> {
    leaf: &'s mut [R::Acc],
    block: &'s mut [R::Acc],
    total: &'s mut [R::Acc],
    pub(super) rows: usize,
    leaves: usize,
}

impl<'s, R: Reducer> Lanes<'s, R> {
    /// Lanes of width `w` in `space` (at least `3 * w` slots), all set to the identity.
    pub(super) fn new(space: &'s mut [MaybeUninit<R::Acc>], w: usize) -> Self {
        let space = &mut space[..3 * w];
        for slot in space.iter_mut() {
            slot.write(R::identity());
        }
        // SAFETY: every slot was just initialised.
        let space = unsafe { &mut *(space as *mut [MaybeUninit<R::Acc>] as *mut [R::Acc]) };
        let (leaf, rest) = space.split_at_mut(w);
        let (block, total) = rest.split_at_mut(w);
        Lanes {
            leaf,
            block,
            total,
            rows: 0,
            leaves: 0,
        }
    }

    /// Lanes `[j0, j0 + n)` of the current row take the `n` elements of the row `p` (byte
    /// strides `es`). One loop for every layout: rows with a [`Mode`] come here only for their
    /// last columns (fewer than [`STREAM_LANES`]), where loops per mode, inlined at every call
    /// site for every reduction, operation and type, cost a third of the reductions' code and
    /// gained nothing measurable.
    ///
    /// # Safety
    /// The elements must be readable.
    #[inline(always)]
    unsafe fn add<P: Pack<K>, const K: usize>(
        &mut self,
        j0: usize,
        p: [*const u8; K],
        es: [isize; K],
        n: usize,
        f: impl Fn(P) -> R::In + Copy,
    ) {
        let leaf = &mut self.leaf[j0..j0 + n];
        for (j, a) in leaf.iter_mut().enumerate() {
            // SAFETY: the caller's contract.
            *a = R::combine(*a, R::lift(unsafe { f(P::load_strided(&p, es, j)) }));
        }
    }

    /// The current row is complete.
    #[inline(always)]
    fn end_row(&mut self) {
        self.end_rows(1);
    }

    /// `k` rows are complete (they did not cross a leaf's end).
    #[inline(always)]
    pub(super) fn end_rows(&mut self, k: usize) {
        self.rows += k;
        if self.rows == LEAF {
            self.flush_leaf();
        }
    }

    /// Lanes `[j0, j0 + n)` take the elements of each row of `rows` in turn, which belong to the
    /// current leaf. Rows with a [`Mode`] go [`STREAM_LANES`] columns at a time through
    /// registers, all rows at once: the same additions in the same order as row after row, with
    /// the leaf read and written once.
    ///
    /// # Safety
    /// As [`Lanes::add`].
    #[inline(always)]
    pub(super) unsafe fn add_tile<P: Pack<K>, const K: usize>(
        &mut self,
        j0: usize,
        rows: &[[*const u8; K]],
        es: [isize; K],
        n: usize,
        f: impl Fn(P) -> R::In + Copy,
    ) {
        let mut j = 0;
        if let Some(mode) = Mode::of::<P, K>(es) {
            with_mode!(mode, K, M => {
                while j + STREAM_LANES <= n {
                    let lanes: &mut [R::Acc; STREAM_LANES] = (&mut self.leaf[j0 + j..]
                        [..STREAM_LANES])
                        .try_into()
                        .expect("a chunk of lanes");
                    let mut acc = *lanes;
                    for row in rows {
                        let p = advance::<K, M>(row, es, j);
                        for (i, a) in acc.iter_mut().enumerate() {
                            // SAFETY: the caller's contract.
                            *a = R::combine(*a, R::lift(unsafe { f(P::load::<M>(&p, i)) }));
                        }
                    }
                    *lanes = acc;
                    j += STREAM_LANES;
                }
            })
        }
        if j < n {
            for row in rows {
                let p = std::array::from_fn(|k| row[k].wrapping_offset(j as isize * es[k]));
                // SAFETY: the caller's contract.
                unsafe { self.add(j0 + j, p, es, n - j, f) };
            }
        }
    }

    #[inline(always)]
    fn flush_leaf(&mut self) {
        let id = R::identity();
        for (b, l) in self.block.iter_mut().zip(self.leaf.iter_mut()) {
            *b = R::combine(*b, std::mem::replace(l, id));
        }
        self.rows = 0;
        self.leaves += 1;
        if self.leaves == BLOCK_LEAVES {
            for (t, b) in self.total.iter_mut().zip(self.block.iter_mut()) {
                *t = R::combine(*t, std::mem::replace(b, id));
            }
            self.leaves = 0;
        }
    }

    /// Feeds `n` consecutive elements of one output's stream, the next one going to lane `*lane`.
    ///
    /// # Safety
    /// As [`Lanes::add`].
    #[inline(always)]
    pub(super) unsafe fn feed<P: Pack<K>, const K: usize>(
        &mut self,
        lane: &mut usize,
        mut p: [*const u8; K],
        es: [isize; K],
        mut n: usize,
        f: impl Fn(P) -> R::In + Copy,
    ) {
        let w = self.leaf.len();
        if let Some(mode) = Mode::of::<P, K>(es).filter(|_| *lane == 0 && w == STREAM_LANES) {
            let rows = n / w;
            // SAFETY: the caller's contract.
            with_mode!(mode, K, M => unsafe { self.add_rows::<P, K, M>(p, rows, f) });
            p = advance::<K, 0b11>(&p, es, rows * w);
            n -= rows * w;
        }
        while n > 0 {
            let take = n.min(w - *lane);
            // SAFETY: the caller's contract.
            unsafe { self.add(*lane, p, es, take, f) };
            p = advance::<K, 0b11>(&p, es, take);
            n -= take;
            *lane += take;
            if *lane == w {
                self.end_row();
                *lane = 0;
            }
        }
    }

    /// `rows` whole rows of elements at `p` (mode `M`), the leaf held in registers between
    /// flushes (a fixed-size copy the compiler can keep out of memory).
    ///
    /// # Safety
    /// As [`Lanes::add`]; the lanes are [`STREAM_LANES`] wide.
    #[inline(always)]
    unsafe fn add_rows<P: Pack<K>, const K: usize, const M: u8>(
        &mut self,
        mut p: [*const u8; K],
        mut rows: usize,
        f: impl Fn(P) -> R::In + Copy,
    ) {
        let es = P::SIZES.map(|s| s as isize);
        while rows > 0 {
            let take = rows.min(LEAF - self.rows);
            let leaf: &mut [R::Acc; STREAM_LANES] =
                (&mut self.leaf[..]).try_into().expect("stream lanes");
            let mut acc = *leaf;
            for _ in 0..take {
                for (j, a) in acc.iter_mut().enumerate() {
                    // SAFETY: the caller's contract.
                    *a = R::combine(*a, R::lift(unsafe { f(P::load::<M>(&p, j)) }));
                }
                p = advance::<K, M>(&p, es, STREAM_LANES);
            }
            *leaf = acc;
            rows -= take;
            self.rows += take;
            if self.rows == LEAF {
                self.flush_leaf();
            }
        }
    }

    /// The total of every row fed.
    pub(super) fn finish(self) -> &'s mut [R::Acc] {
        for ((t, b), l) in self
            .total
            .iter_mut()
            .zip(self.block.iter())
            .zip(self.leaf.iter())
        {
            *t = R::combine(*t, R::combine(*b, *l));
        }
        self.total
    }
}

/// The operands `i` elements further along their row: contiguous ones (bit set in `M`) move,
/// repeated ones stay. With `M` all ones, every operand moves by its stride.
#[inline(always)]
fn advance<const K: usize, const M: u8>(
    p: &[*const u8; K],
    es: [isize; K],
    i: usize,
) -> [*const u8; K] {
    std::array::from_fn(|k| {
        if M & (1 << k) != 0 {
            p[k].wrapping_offset(i as isize * es[k])
        } else {
            p[k]
        }
    })
}

/// Combines `lanes` pairwise into `lanes[0]` (the length is a power of two).
pub(super) fn fold_lanes<R: Reducer>(lanes: &mut [R::Acc]) -> R::Acc {
    let mut w = lanes.len();
    while w > 1 {
        w /= 2;
        for j in 0..w {
            lanes[j] = R::combine(lanes[j], lanes[j + w]);
        }
    }
    lanes[0]
}
