//! Tensors: a dtype, a shape, strides and an offset (in elements) over shared storage. Views
//! (expand, permute, slice, as_strided) make a new `Tensor` over the same `Shared<Storage>`.
//! Every allocation here is fallible (see `alloc`): a tensor is copied with [`Tensor::try_clone`].
use super::alloc::{
    try_small, try_small_collect, try_small_elem, try_small_with_capacity, try_to_vec, Shared,
};
use super::dtype::DType;
use super::error::{Error, Result};
use super::iter::Iter;
use super::kernels;
use super::parallel;
use super::reshape;
use super::shape::{
    self, checked_nbytes, checked_numel, contiguous_strides, fill_contiguous_strides, Dims, Strides,
};
use super::storage::{ReleaseHook, Storage};
use std::mem::MaybeUninit;
use std::ptr::NonNull;

pub struct Tensor {
    storage: Shared<Storage>,
    dtype: DType,
    /// A number given to an operation in place of a tensor (PyTorch's "wrapped number"): a 0-d
    /// tensor that takes part in type promotion by category only. Never a view's.
    wrapped: bool,
    /// Whether `strides` are exactly row-major ([`shape::is_row_major`]): set where the tensor is
    /// made (shape and strides never change after), so that the fast path tests a flag, not
    /// every stride, on each call (PyTorch's tensors cache their contiguity likewise).
    row_major: bool,
    shape: Dims,
    strides: Strides,
    offset: usize,
}

impl Tensor {
    /// Another tensor over the same storage (no element is copied). Fallible, unlike a `Clone`
    /// (which this type deliberately lacks): more than 5 dimensions put the shape on the heap.
    pub fn try_clone(&self) -> Result<Tensor> {
        Ok(self.view(
            try_small(&self.shape)?,
            try_small(&self.strides)?,
            self.offset,
        ))
    }
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tensor")
            .field("dtype", &self.dtype)
            .field("shape", &self.shape)
            .field("strides", &self.strides)
            .field("offset", &self.offset)
            .finish()
    }
}

/// A number given to an operation in place of a tensor (a Python scalar, in PyTorch's terms).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    Bool(bool),
    Int(i64),
    Float(f64),
}

impl Scalar {
    /// The type it is held in as a wrapped number (see [`Tensor::wrapped_number`]).
    pub fn dtype(self) -> DType {
        match self {
            Scalar::Bool(_) => DType::Bool,
            Scalar::Int(_) => DType::I64,
            Scalar::Float(_) => DType::F64,
        }
    }
}

/// How a new tensor's elements start out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Init {
    Uninit,
    Zeros,
    Fill(f64),
}

impl Tensor {
    /// A new row-major tensor.
    pub fn new(dtype: DType, shape: &[usize], init: Init) -> Result<Tensor> {
        Tensor::build(dtype, shape, None, init)
    }

    /// [`Tensor::new`], built in `place` (which it initialises exactly when it succeeds), so
    /// that a caller that keeps the tensor there copies nothing.
    pub fn new_in<'a>(
        place: &'a mut MaybeUninit<Tensor>,
        dtype: DType,
        shape: &[usize],
        init: Init,
    ) -> Result<&'a mut Tensor> {
        Tensor::build_in(place, dtype, shape, None, init)
    }

    /// A new tensor laid out densely with `strides`, which must address each of the shape's
    /// elements once within `numel` elements (a permutation of row-major order, as
    /// [`super::layout`] gives).
    pub fn new_dense(
        dtype: DType,
        shape: &[usize],
        strides: Strides,
        init: Init,
    ) -> Result<Tensor> {
        Tensor::build(dtype, shape, Some(strides), init)
    }

    /// [`Tensor::build_in`], returned.
    fn build(
        dtype: DType,
        shape: &[usize],
        strides: Option<Strides>,
        init: Init,
    ) -> Result<Tensor> {
        let mut place = MaybeUninit::uninit();
        Tensor::build_in(&mut place, dtype, shape, strides, init)?;
        // SAFETY: `build_in` succeeded, so it initialised `place`.
        Ok(unsafe { place.assume_init() })
    }

    /// [`Tensor::new_dense`] in `place`, with row-major strides when `strides` is `None`; `place`
    /// is initialised exactly when this succeeds. The tensor is written where it will stay, and
    /// its row-major strides after it: a tensor written field by field and at once copied
    /// elsewhere makes the copy's wide loads wait for the narrow stores (a failed store
    /// forwarding, which took a tenth of a tiny call's time).
    #[inline(always)]
    fn build_in<'a>(
        place: &'a mut MaybeUninit<Tensor>,
        dtype: DType,
        shape: &[usize],
        strides: Option<Strides>,
        init: Init,
    ) -> Result<&'a mut Tensor> {
        let numel = checked_numel(shape)?;
        let nbytes = checked_nbytes(numel, dtype.size())?;
        let fill_strides = strides.is_none();
        let row_major = match &strides {
            Some(strides) => shape::is_row_major(shape, strides),
            None => true,
        };
        let strides = match strides {
            Some(strides) => strides,
            None => try_small_elem(0, shape.len())?,
        };
        let shape = try_small(shape)?;
        let t = place.write(Tensor {
            storage: Storage::alloc_shared(nbytes, init == Init::Zeros)?,
            dtype,
            wrapped: false,
            row_major,
            shape,
            strides,
            offset: 0,
        });
        if fill_strides {
            fill_contiguous_strides(&mut t.strides, &t.shape);
        }
        debug_assert!(
            numel == 0 || {
                let last: isize = t
                    .shape
                    .iter()
                    .zip(&t.strides)
                    .map(|(&n, &s)| (n as isize - 1) * s)
                    .sum();
                last as usize == numel - 1 && t.strides.iter().all(|&s| s >= 0)
            }
        );
        if let Init::Fill(value) = init {
            // SAFETY: fresh dense storage of exactly numel elements.
            unsafe { kernels::fill_run(dtype, value, t.data_ptr(), dtype.size() as isize, numel) };
        }
        Ok(t)
    }

    /// A row-major copy of `bytes` (exactly numel * itemsize of them).
    pub fn from_bytes(dtype: DType, shape: &[usize], bytes: &[u8]) -> Result<Tensor> {
        let numel = checked_numel(shape)?;
        let nbytes = checked_nbytes(numel, dtype.size())?;
        if bytes.len() != nbytes {
            return Err(Error::invalid(format_args!(
                "data holds {} bytes but shape {} of {} needs {nbytes}",
                bytes.len(),
                shape::fmt_list(shape),
                dtype.name()
            )));
        }
        let t = Tensor::new(dtype, shape, Init::Uninit)?;
        // SAFETY: the new storage holds exactly nbytes and cannot overlap the caller's slice.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), t.data_ptr(), nbytes) };
        Ok(t)
    }

    /// A view of foreign memory. Checks that every element lies within `nbytes` and that the
    /// memory is aligned for the dtype; `release` runs when the last view is gone, and is dropped
    /// unrun (the caller keeps ownership) when this returns an error: the storage that would run
    /// it is built last, once everything else is allocated.
    ///
    /// # Safety
    /// `data` must be valid for reads and writes of `nbytes` bytes until `release` runs.
    pub unsafe fn from_foreign(
        dtype: DType,
        data: NonNull<u8>,
        nbytes: usize,
        shape: &[usize],
        strides: Option<&[isize]>,
        offset: usize,
        release: Option<ReleaseHook>,
    ) -> Result<Tensor> {
        // With no bytes nothing is ever read, and NULL/dangling stand-ins need not be aligned.
        if nbytes > 0 && (data.as_ptr() as usize) % dtype.size() != 0 {
            return Err(Error::invalid(format_args!(
                "data pointer is not aligned to the {}-byte elements of {}",
                dtype.size(),
                dtype.name()
            )));
        }
        let strides: Strides = match strides {
            Some(s) => try_small(s)?,
            None => contiguous_strides(shape)?,
        };
        check_view_bounds(dtype, nbytes, shape, &strides, offset)?;
        let shape = try_small(shape)?;
        // SAFETY: the caller's contract.
        let storage = Shared::try_new_with(|| unsafe { Storage::foreign(data, nbytes, release) })?;
        Ok(Tensor {
            storage,
            dtype,
            wrapped: false,
            row_major: shape::is_row_major(&shape, &strides),
            shape,
            strides,
            offset,
        })
    }

    /// A wrapped number (see the field): a 0-d bool, int64 or float64 tensor holding `value`.
    pub fn wrapped_number(value: Scalar) -> Result<Tensor> {
        let bytes = match value {
            Scalar::Bool(v) => [v as u8, 0, 0, 0, 0, 0, 0, 0],
            Scalar::Int(v) => v.to_ne_bytes(),
            Scalar::Float(v) => v.to_ne_bytes(),
        };
        let dtype = value.dtype();
        let mut t = Tensor::from_bytes(dtype, &[], &bytes[..dtype.size()])?;
        t.wrapped = true;
        Ok(t)
    }

    /// Whether this is a wrapped number.
    pub fn is_wrapped_number(&self) -> bool {
        self.wrapped
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }
    pub fn strides(&self) -> &[isize] {
        &self.strides
    }
    pub fn offset(&self) -> usize {
        self.offset
    }
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }
    pub fn numel(&self) -> usize {
        shape::numel(&self.shape)
    }

    /// Whether the strides are exactly row-major, size-1 dimensions included (a test of one
    /// flag).
    pub fn is_row_major(&self) -> bool {
        self.row_major
    }

    /// Row-major with no gaps (size-1 dimensions may have any stride).
    pub fn is_contiguous(&self) -> bool {
        shape::is_contiguous(&self.shape, &self.strides)
    }

    /// This tensor, made read-only: every write to its memory, through any view, is refused.
    /// Only for a tensor just made over foreign memory, before any other view of it exists.
    pub fn into_read_only(mut self) -> Result<Tensor> {
        let storage = Shared::get_mut(&mut self.storage)
            .ok_or_else(|| Error::invalid("only a new tensor's memory can be made read-only"))?;
        storage.set_read_only();
        Ok(self)
    }

    /// Whether the memory was shared read-only: every write to it is refused.
    pub fn is_read_only(&self) -> bool {
        self.storage.is_read_only()
    }

    /// Whether writing through this view is allowed: the memory is not read-only and no two
    /// elements share a location (a broadcast view repeats them). Fails only when the overlap
    /// check cannot get memory.
    pub fn is_writable(&self) -> Result<bool> {
        Ok(!self.is_read_only() && !super::overlap::has_internal_overlap(self)?)
    }

    /// Bytes of storage from the view's first element to the end of the storage: every element
    /// of the view lies in them (strides are never negative).
    pub fn extent_from_data(&self) -> usize {
        self.storage
            .nbytes()
            .saturating_sub(self.offset.saturating_mul(self.dtype.size()))
    }

    /// Pointer to the element at the view's offset.
    pub fn data_ptr(&self) -> *mut u8 {
        self.storage
            .as_ptr()
            .wrapping_add(self.offset.wrapping_mul(self.dtype.size()))
    }

    /// Address range `[lo, hi)` of the whole storage under the view, which holds every element.
    pub fn storage_range(&self) -> (usize, usize) {
        let lo = self.storage.as_ptr() as usize;
        (lo, lo + self.storage.nbytes())
    }

    /// Address range `[lo, hi)` of the bytes the view touches; `None` when it has no elements.
    pub fn byte_range(&self) -> Option<(usize, usize)> {
        // Empty views may have sizes and strides whose products overflow: none is computed.
        if self.shape.contains(&0) {
            return None;
        }
        let mut span = 0isize;
        for (&n, &s) in self.shape.iter().zip(&self.strides) {
            span += (n as isize - 1) * s;
        }
        let lo = self.data_ptr() as usize;
        Some((lo, lo + (span as usize + 1) * self.dtype.size()))
    }

    fn view(&self, shape: Dims, strides: Strides, offset: usize) -> Tensor {
        Tensor {
            storage: Shared::clone(&self.storage),
            dtype: self.dtype,
            wrapped: false,
            row_major: shape::is_row_major(&shape, &strides),
            shape,
            strides,
            offset,
        }
    }

    /// `expand(sizes)`: a view with stride 0 on expanded dimensions; -1 keeps a size.
    pub fn expand(&self, sizes: &[i64]) -> Result<Tensor> {
        let (shape, strides) = shape::expand_geometry(&self.shape, &self.strides, sizes)?;
        Ok(self.view(shape, strides, self.offset))
    }

    /// `expand` to an unsigned shape (broadcast_to, expand_as, broadcast_tensors).
    pub fn expand_to(&self, shape: &[usize]) -> Result<Tensor> {
        let sizes: smallvec::SmallVec<[i64; 6]> =
            try_small_collect(shape.iter().map(|&d| d as i64))?;
        self.expand(&sizes)
    }

    /// Reorders dimensions; `dims` is a permutation (negative entries count from the end).
    pub fn permute(&self, dims: &[i64]) -> Result<Tensor> {
        let nd = self.ndim();
        if dims.len() != nd {
            return Err(Error::invalid(format_args!(
                "permute: number of dims don't match in permute: got {} for a tensor of {} dimensions",
                dims.len(),
                nd
            )));
        }
        let mut seen: smallvec::SmallVec<[bool; 6]> = try_small_elem(false, nd)?;
        let mut shape: Dims = try_small_elem(0, nd)?;
        let mut strides: Strides = try_small_elem(0, nd)?;
        for (i, &d) in dims.iter().enumerate() {
            let d = wrap_dim(d, nd)?;
            if std::mem::replace(&mut seen[d], true) {
                return Err(Error::invalid(format_args!(
                    "permute: dimension {d} appears more than once"
                )));
            }
            shape[i] = self.shape[d];
            strides[i] = self.strides[d];
        }
        Ok(self.view(shape, strides, self.offset))
    }

    pub fn transpose(&self, d0: i64, d1: i64) -> Result<Tensor> {
        let nd = self.ndim();
        // A 0-d tensor takes dims 0 and -1, as PyTorch's scalars do, and stays as it is.
        let (d0, d1) = (wrap_dim(d0, nd.max(1))?, wrap_dim(d1, nd.max(1))?);
        if nd == 0 {
            return self.try_clone();
        }
        let (mut shape, mut strides) = (try_small(&self.shape)?, try_small(&self.strides)?);
        shape.swap(d0, d1);
        strides.swap(d0, d1);
        Ok(self.view(shape, strides, self.offset))
    }

    /// Python-style `t[..., start:stop:step, ...]` along `dim` (bounds clamped, step >= 1).
    pub fn slice(&self, dim: i64, start: i64, stop: i64, step: i64) -> Result<Tensor> {
        if self.ndim() == 0 {
            return Err(Error::invalid(
                "slice() cannot be applied to a 0-dim tensor.",
            ));
        }
        let d = wrap_dim(dim, self.ndim())?;
        if step < 1 {
            return Err(Error::invalid(format_args!(
                "slice: step must be positive, got {step}"
            )));
        }
        let len = self.shape[d] as i64;
        let clamp = |i: i64| if i < 0 { (i + len).max(0) } else { i.min(len) };
        let (start, stop) = (clamp(start), clamp(stop));
        // 0 <= start < stop <= len: no step, however large, can overflow this.
        let count = if stop > start {
            (stop - start - 1) / step + 1
        } else {
            0
        };
        let mut shape: Dims = try_small(&self.shape)?;
        let mut strides: Strides = try_small(&self.strides)?;
        let offset = if count > 0 {
            // Bounded for views with elements; an empty view's offset is not, so check.
            (start as usize)
                .checked_mul(self.strides[d] as usize)
                .and_then(|o| o.checked_add(self.offset))
                .filter(|&o| o <= i64::MAX as usize)
                .ok_or(Error::Overflow {
                    what: "slice offset",
                })?
        } else {
            self.offset
        };
        shape[d] = count as usize;
        // With two or more elements the new stride spans memory the view already covered, so it
        // fits; with fewer it is never used, and the old one is kept.
        if count > 1 {
            strides[d] = self.strides[d]
                .checked_mul(step as isize)
                .ok_or(Error::Overflow {
                    what: "slice stride",
                })?;
        }
        Ok(self.view(shape, strides, offset))
    }

    /// Any view over the same storage; every element must lie inside it.
    pub fn as_strided(&self, shape: &[usize], strides: &[isize], offset: usize) -> Result<Tensor> {
        check_view_bounds(self.dtype, self.storage.nbytes(), shape, strides, offset)?;
        Ok(self.view(try_small(shape)?, try_small(strides)?, offset))
    }

    /// The same elements in a fresh row-major tensor of `dtype` (a copy, converted if needed).
    pub fn to_contiguous(&self, dtype: DType) -> Result<Tensor> {
        let out = Tensor::new(dtype, &self.shape, Init::Uninit)?;
        copy_into(&out, self)?;
        Ok(out)
    }

    /// Copies the elements, row-major, into `buf` (at least numel * itemsize bytes).
    pub fn copy_to_bytes(&self, buf: &mut [u8]) -> Result<()> {
        let needed = checked_nbytes(self.numel(), self.dtype.size())?;
        if buf.len() < needed {
            return Err(Error::BufferTooSmall {
                needed,
                given: buf.len(),
                unit: "bytes",
            });
        }
        let strides = contiguous_strides(&self.shape)?;
        // SAFETY: `buf` holds the `needed` bytes of a row-major copy, and cannot overlap the
        // storage (the caller's slice is borrowed mutably).
        unsafe { copy_to_raw(buf.as_mut_ptr(), self.dtype, &strides, self) }
    }
}

/// Writes `src` (same shape) into `dst`, converting dtypes. Overlap is the caller's concern.
pub(crate) fn copy_into(dst: &Tensor, src: &Tensor) -> Result<()> {
    debug_assert_eq!(dst.shape(), src.shape());
    // SAFETY: `dst` is a view within its storage.
    unsafe { copy_to_raw(dst.data_ptr(), dst.dtype, dst.strides(), src) }
}

/// Writes `src` into the elements of type `to` at `dst` with `dst_strides` (in elements, one per
/// dimension of `src`).
///
/// # Safety
/// Every element so addressed must be valid for writes.
unsafe fn copy_to_raw(dst: *mut u8, to: DType, dst_strides: &[isize], src: &Tensor) -> Result<()> {
    if src.numel() == 0 {
        return Ok(()); // nothing to copy; the geometry of an empty view may not even be computable
    }
    let plan = Iter::new(src.shape(), [dst_strides, src.strides()])?;
    let from = src.dtype;
    parallel::run(
        &plan,
        [dst, src.data_ptr()],
        [to.size(), from.size()],
        |ptrs, strides, n| {
            // SAFETY: the plan covers exactly both views: `src` lies within its storage, `dst`
            // is valid by this function's contract.
            unsafe { kernels::cast_run(from, to, ptrs, strides, n) }
        },
    );
    Ok(())
}

/// Dimension `d` of a tensor of `ndim` dimensions, negative counting from the end.
pub(crate) fn wrap_dim(d: i64, ndim: usize) -> Result<usize> {
    let n = ndim as i64;
    let w = if d < 0 { d + n } else { d };
    if (0..n).contains(&w) {
        Ok(w as usize)
    } else {
        Err(Error::DimOutOfRange { dim: d, ndim })
    }
}

/// Every element of the view must lie within `nbytes` of storage: strides are non-negative and
/// the furthest element ends inside it.
fn check_view_bounds(
    dtype: DType,
    nbytes: usize,
    shape: &[usize],
    strides: &[isize],
    offset: usize,
) -> Result<()> {
    let end = view_end(dtype, shape, strides, offset, false)?;
    if end > nbytes {
        return Err(Error::invalid(format_args!(
            "view reaches byte {end} but the storage holds {nbytes} bytes"
        )));
    }
    Ok(())
}

/// A geometry some view can have (strides in elements): what a tensor made with it would be
/// checked for, but for the size of a storage under it, and for negative strides that address
/// nothing (of a dimension of size 1, or of a geometry with no elements), which views of empty
/// tensors with huge sizes get as PyTorch's wrap. The planner's operands pass this.
pub fn check_geometry(dtype: DType, shape: &[usize], strides: &[isize]) -> Result<()> {
    if view_end(dtype, shape, strides, 0, true)? > isize::MAX as usize {
        return Err(Error::Overflow {
            what: "view extent",
        });
    }
    Ok(())
}

/// The byte just past the furthest element of the view (0 when it has none), refusing negative
/// strides (but, when `unaddressed_may_be_negative`, those that address nothing) and products
/// that overflow.
fn view_end(
    dtype: DType,
    shape: &[usize],
    strides: &[isize],
    offset: usize,
    unaddressed_may_be_negative: bool,
) -> Result<usize> {
    if shape.len() != strides.len() {
        return Err(Error::invalid("shape and strides differ in length"));
    }
    let empty = shape.contains(&0);
    let refused = |(&n, &s): (&usize, &isize)| {
        s < 0 && !(unaddressed_may_be_negative && shape::addresses_nothing(n, empty))
    };
    if let Some((_, s)) = shape.iter().zip(strides).find(|&d| refused(d)) {
        return Err(Error::invalid(format_args!(
            "negative strides are not supported (got {s})"
        )));
    }
    let numel = checked_numel(shape)?;
    if numel == 0 {
        return Ok(0);
    }
    let overflow = Error::Overflow {
        what: "view extent",
    };
    let mut last = offset;
    for (&n, &s) in shape.iter().zip(strides) {
        let step = (n - 1).checked_mul(s as usize).ok_or(overflow.clone())?;
        last = last.checked_add(step).ok_or(overflow.clone())?;
    }
    last.checked_add(1)
        .and_then(|e| e.checked_mul(dtype.size()))
        .ok_or(overflow)
}

// ---------------------------------------------------------------------------------------------
// Views that change the shape (PyTorch's view, reshape, unsqueeze, squeeze, flatten).

impl Tensor {
    /// PyTorch's `view(sizes)`: the same elements with a new shape (one -1 is inferred), without
    /// copying; refused when the strides do not allow it.
    pub fn view_sizes(&self, sizes: &[i64]) -> Result<Tensor> {
        let shape = reshape::infer_size(sizes, self.numel())?;
        match reshape::view_strides(&self.shape, &self.strides, &shape)? {
            Some(strides) => Ok(self.view(shape, strides, self.offset)),
            None => Err(Error::or_alloc(|| {
                Ok(Error::ViewStrides {
                    shape: try_to_vec(&self.shape)?,
                    sizes: try_to_vec(&shape)?,
                })
            })),
        }
    }

    /// PyTorch's `reshape(sizes)`: a view when the strides allow one, else a row-major copy.
    /// Also says whether it copied.
    pub fn reshape(&self, sizes: &[i64]) -> Result<(Tensor, bool)> {
        let shape = reshape::infer_size(sizes, self.numel())?;
        if let Some(strides) = reshape::view_strides(&self.shape, &self.strides, &shape)? {
            return Ok((self.view(shape, strides, self.offset), false));
        }
        let copy = self.to_contiguous(self.dtype)?;
        let strides = contiguous_strides(&shape)?;
        Ok((copy.view(shape, strides, 0), true))
    }

    /// PyTorch's `unsqueeze(dim)`: a size-1 dimension inserted at `dim` (from -(ndim+1) to ndim).
    pub fn unsqueeze(&self, dim: i64) -> Result<Tensor> {
        let d = wrap_dim(dim, self.ndim() + 1)?;
        // PyTorch's stride for the new dimension: what steps over the dimension it precedes.
        let stride = match self.shape.get(d) {
            Some(&n) => (n as isize).wrapping_mul(self.strides[d]),
            None => 1,
        };
        // Room for the new dimension first: the inserts then never allocate.
        let mut shape: Dims = try_small_with_capacity(self.ndim() + 1)?;
        let mut strides: Strides = try_small_with_capacity(self.ndim() + 1)?;
        shape.extend_from_slice(&self.shape);
        strides.extend_from_slice(&self.strides);
        shape.insert(d, 1);
        strides.insert(d, stride);
        Ok(self.view(shape, strides, self.offset))
    }

    /// PyTorch's `squeeze(dim)` (that dimension, if its size is 1) or `squeeze()` (`None`: every
    /// size-1 dimension). A 0-d tensor accepts dim 0 and -1 and stays as it is.
    pub fn squeeze(&self, dim: Option<i64>) -> Result<Tensor> {
        let only = match dim {
            Some(d) => Some(wrap_dim(d, self.ndim().max(1))?),
            None => None,
        };
        let mut shape: Dims = try_small_with_capacity(self.ndim())?;
        let mut strides: Strides = try_small_with_capacity(self.ndim())?;
        for (i, (&n, &s)) in self.shape.iter().zip(&self.strides).enumerate() {
            if n != 1 || only.is_some_and(|d| d != i) {
                shape.push(n);
                strides.push(s);
            }
        }
        Ok(self.view(shape, strides, self.offset))
    }

    /// PyTorch's `flatten(start, end)`: dimensions `start..=end` merged into one, by `reshape`
    /// (a view when the strides allow one, else a copy; also says whether it copied). A 0-d
    /// tensor becomes 1-d.
    pub fn flatten(&self, start: i64, end: i64) -> Result<(Tensor, bool)> {
        let nd = self.ndim().max(1);
        let (start, end) = (wrap_dim(start, nd)?, wrap_dim(end, nd)?);
        if start > end {
            return Err(Error::invalid(
                "flatten() has invalid args: start_dim cannot come after end_dim",
            ));
        }
        if self.ndim() == 0 {
            return self.reshape(&[1]);
        }
        if start == end {
            return Ok((self.try_clone()?, false));
        }
        // The merged size is the product of the merged sizes, not a -1 to infer: with a 0
        // elsewhere, -1 could be anything. Counted checked: beside a 0 elsewhere the merged sizes
        // can multiply past any size (PyTorch's product wraps).
        let merged = checked_numel(&self.shape[start..=end])?;
        let mut sizes: smallvec::SmallVec<[i64; 6]> =
            try_small_with_capacity(start + 1 + (self.ndim() - end - 1))?;
        sizes.extend(
            self.shape[..start]
                .iter()
                .chain(std::iter::once(&merged))
                .chain(&self.shape[end + 1..])
                .map(|&n| n as i64),
        );
        self.reshape(&sizes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Flattening sizes whose product is too large to count is refused, even when a size 0
    /// elsewhere leaves the tensor empty.
    #[test]
    fn flatten_refuses_a_merged_size_too_large_to_count() {
        let empty = Tensor::new(DType::F32, &[0], Init::Zeros).unwrap();
        let t = empty.expand(&[1 << 40, 1 << 40, 0]).unwrap();
        let err = t.flatten(0, 1).unwrap_err();
        assert!(matches!(err, Error::Overflow { what: "numel" }), "{err:?}");
        let (ok, _) = t.flatten(1, 2).unwrap();
        assert_eq!(ok.shape(), &[1 << 40, 0]);
    }

    /// Every way a tensor is made sets its row-major flag from its own strides: the fast path
    /// trusts the flag instead of reading them.
    #[test]
    fn the_row_major_flag_follows_the_strides() {
        let t = Tensor::new(DType::F32, &[3, 1], Init::Zeros).unwrap();
        assert!(t.is_row_major());
        let flipped = t.transpose(0, 1).unwrap(); // (1,3) with strides (1,1)
        assert!(flipped.is_contiguous() && !flipped.is_row_major());
        assert!(t.unsqueeze(0).unwrap().is_row_major());
        assert!(!t.expand(&[3, 4]).unwrap().is_row_major());
        let wide = Tensor::new(DType::F32, &[4, 5], Init::Zeros).unwrap();
        assert!(wide.slice(0, 1, 3, 1).unwrap().is_row_major());
        assert!(!wide.slice(1, 1, 3, 1).unwrap().is_row_major());
        let dense = Tensor::new_dense(
            DType::F32,
            &[4, 5],
            try_small(&[1, 4]).unwrap(),
            Init::Zeros,
        );
        assert!(!dense.unwrap().is_row_major());
        let mut bytes = [0u8; 80];
        let data = NonNull::new(bytes.as_mut_ptr()).unwrap();
        for (strides, row_major) in [(None, true), (Some(&[1isize, 4][..]), false)] {
            // SAFETY: `bytes` outlives the tensor and holds every element it addresses.
            let foreign =
                unsafe { Tensor::from_foreign(DType::U8, data, 80, &[4, 5], strides, 0, None) };
            assert_eq!(foreign.unwrap().is_row_major(), row_major);
        }
    }
}
