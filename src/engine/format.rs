//! PyTorch's `str(tensor)` under its default print options (precision 4, line width 80, over 1000
//! elements summarised with 3 items at each edge, scientific notation chosen automatically), the
//! way `torch/_tensor_str.py` builds it, step for step: one formatter over the elements shown
//! (integer-valued floats, scientific notation, the widest element), nested brackets with line
//! breaks, then the `dtype=` and `size=` suffixes.
//!
//! Nothing here allocates: elements are read in place, formatted into a buffer on the stack, and
//! the text goes straight to the caller's writer.
//!
//! A text can be far longer than the tensor's memory: every element of a dimension of 6 or less
//! is shown, so a broadcast view of 16 dimensions of 4 (one element of storage) prints 2^32
//! elements, about 44 GB of text. So the text is planned before it is written ([`Text::new`]): the
//! formatter reads each element shown once, a dimension of stride 0 once in all (it repeats the
//! same element), and the length is counted from the text's regular structure without writing
//! it. Writing then stops as soon as the caller's writer refuses more.
use super::dtype::DType;
use super::error::{Error, Result};
use super::tensor::Tensor;
use half::{bf16, f16};
use std::fmt::{self, Write};

const PRECISION: usize = 4;
const THRESHOLD: usize = 1000;
const EDGEITEMS: usize = 3;
const LINEWIDTH: isize = 80;
/// Most elements the formatter reads to choose its width and count the text (the elements shown,
/// a dimension of stride 0 read once). Each is formatted up to three times, about a microsecond
/// in all, so this bounds the time a text takes to plan to about a second; a tensor that needs
/// more is refused. Its text would take at least three bytes per element, over 3 MB.
pub const SCAN_LIMIT: usize = 1 << 20;
/// `tensor(`: the indent of the first element.
const PREFIX: &str = "tensor(";

/// One element, as Python sees it after `.item()` / `.tolist()`.
#[derive(Clone, Copy)]
enum Value {
    Bool(bool),
    Int(i64),
    Float(f64),
}

/// The element `offset` elements (strides included) from `t`'s first.
fn read(t: &Tensor, offset: isize) -> Value {
    let dtype = t.dtype();
    let p = t.data_ptr().wrapping_offset(offset * dtype.size() as isize);
    // SAFETY: callers pass offsets of elements of `t` (indices within its shape times its
    // strides), which lie in its storage, aligned for the dtype.
    unsafe {
        match dtype {
            DType::Bool => Value::Bool(p.read() != 0),
            DType::U8 => Value::Int(p.read() as i64),
            DType::I8 => Value::Int(p.cast::<i8>().read() as i64),
            DType::I16 => Value::Int(p.cast::<i16>().read() as i64),
            DType::I32 => Value::Int(p.cast::<i32>().read() as i64),
            DType::I64 => Value::Int(p.cast::<i64>().read()),
            DType::F16 => Value::Float(f16::from_bits(p.cast::<u16>().read()).to_f64()),
            DType::BF16 => Value::Float(bf16::from_bits(p.cast::<u16>().read()).to_f64()),
            DType::F32 => Value::Float(p.cast::<f32>().read() as f64),
            DType::F64 => Value::Float(p.cast::<f64>().read()),
        }
    }
}

/// The indices shown along a dimension of `n`: all, or 3 at each edge when summarising.
fn shown(n: usize, summarize: bool) -> impl Iterator<Item = usize> {
    let cut = summarize && n > 2 * EDGEITEMS;
    let (head, tail) = if cut {
        (EDGEITEMS, n - EDGEITEMS)
    } else {
        (n, n)
    };
    (0..head).chain(tail..n)
}

/// How many indices [`shown`] gives.
fn shown_count(n: usize, summarize: bool) -> usize {
    if summarize && n > 2 * EDGEITEMS {
        2 * EDGEITEMS
    } else {
        n
    }
}

/// Calls `f` on every element shown (PyTorch's `get_summarized_data`), from dimension `dim` on,
/// but once for all the indices of a dimension of stride 0, which read the same element: the
/// formatter depends on which values are shown, not on how often, and each call stands for
/// [`Printer::repeats`] elements of the text.
fn for_each_shown(
    t: &Tensor,
    dim: usize,
    offset: isize,
    summarize: bool,
    f: &mut impl FnMut(Value),
) {
    if dim == t.ndim() {
        return f(read(t, offset));
    }
    if t.strides()[dim] == 0 {
        return for_each_shown(t, dim + 1, offset, summarize, f);
    }
    for i in shown(t.shape()[dim], summarize) {
        let next = offset + i as isize * t.strides()[dim];
        for_each_shown(t, dim + 1, next, summarize, f);
    }
}

/// Text on the stack: an element is at most a few hundred characters (a float64 in fixed notation).
struct Stack {
    buf: [u8; 400],
    len: usize,
}

impl Stack {
    fn new() -> Stack {
        Stack {
            buf: [0; 400],
            len: 0,
        }
    }
    fn as_str(&self) -> &str {
        // Only `write_str` fills the buffer, with whole `str`s.
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

impl Write for Stack {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        self.buf
            .get_mut(self.len..end)
            .ok_or(fmt::Error)?
            .copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// How every element is written: PyTorch's `_Formatter`.
struct Formatter {
    floating: bool,
    int_mode: bool,
    sci_mode: bool,
    max_width: usize,
}

impl Formatter {
    fn new(t: &Tensor, summarize: bool) -> Formatter {
        let mut f = Formatter {
            floating: t.dtype().is_floating(),
            int_mode: true,
            sci_mode: false,
            max_width: 1,
        };
        if !f.floating {
            for_each_shown(t, 0, 0, summarize, &mut |v| {
                f.max_width = f.max_width.max(f.text(v).len);
            });
            return f;
        }
        // Over the non-zero finite elements: whether all are integers, their smallest and
        // largest magnitude (which choose scientific notation), then the widest.
        let (mut any, mut min, mut max) = (false, f64::INFINITY, 0f64);
        for_each_shown(t, 0, 0, summarize, &mut |v| {
            if let Value::Float(x) = v {
                if x.is_finite() && x != 0.0 {
                    any = true;
                    min = min.min(x.abs());
                    max = max.max(x.abs());
                    f.int_mode &= x == x.ceil();
                }
            }
        });
        if !any {
            return f;
        }
        f.sci_mode = max / min > 1000.0 || max > 1.0e8 || min < 1.0e-4;
        // The integer form is measured with the "." it is written with.
        let dot = (f.int_mode && !f.sci_mode) as usize;
        for_each_shown(t, 0, 0, summarize, &mut |v| {
            if let Value::Float(x) = v {
                if x.is_finite() && x != 0.0 {
                    f.max_width = f.max_width.max(f.float_text(x, false).len + dot);
                }
            }
        });
        f
    }

    /// The element's text before padding.
    fn text(&self, v: Value) -> Stack {
        let mut s = Stack::new();
        // Writes to a Stack only fail past its 400 bytes, which no element reaches.
        let _ = match v {
            Value::Bool(b) => s.write_str(if b { "True" } else { "False" }),
            Value::Int(i) => write!(s, "{i}"),
            Value::Float(x) => return self.float_text(x, true),
        };
        s
    }

    /// A float as Python's `"{:.4e}"`, `"{:.0f}"` (+ "." when `dot`) or `"{:.4f}"` writes it.
    fn float_text(&self, x: f64, dot: bool) -> Stack {
        let mut s = Stack::new();
        let _ = if x.is_nan() {
            s.write_str("nan")
        } else if x.is_infinite() {
            s.write_str(if x > 0.0 { "inf" } else { "-inf" })
        } else if self.sci_mode {
            sci(&mut s, x)
        } else if self.int_mode {
            write!(s, "{x:.0}").and_then(|_| if dot { s.write_str(".") } else { Ok(()) })
        } else {
            write!(s, "{x:.PRECISION$}")
        };
        s
    }

    /// The length the element is written with: its text, padded to the common width.
    fn written_len(&self, v: Value) -> usize {
        self.text(v).len.max(self.max_width)
    }

    /// The elements a line of the last dimension holds at `indent` (`_vector_str`).
    fn per_line(&self, indent: usize) -> usize {
        let element_length = self.max_width as isize + 2;
        ((LINEWIDTH - indent as isize).div_euclid(element_length)).max(1) as usize
    }

    /// The element right-aligned in the common width.
    fn write(&self, out: &mut Out<'_>, v: Value) -> fmt::Result {
        let text = self.text(v);
        for _ in text.len..self.max_width {
            out.write_char(' ')?;
        }
        out.write_str(text.as_str())
    }
}

/// Python's `"{:.4e}"`: Rust writes the exponent as `e8` / `e-5`, Python as `e+08` / `e-05`.
fn sci(s: &mut Stack, x: f64) -> fmt::Result {
    let mut m = Stack::new();
    write!(m, "{x:.PRECISION$e}")?;
    let text = m.as_str();
    let (mantissa, exp) = text.split_once('e').ok_or(fmt::Error)?;
    let (sign, digits) = match exp.strip_prefix('-') {
        Some(d) => ('-', d),
        None => ('+', exp),
    };
    write!(s, "{mantissa}e{sign}{digits:0>2}")
}

/// The caller's writer, the column the text has reached (for the suffixes' line breaks) and the
/// bytes written so far.
pub struct Out<'a> {
    w: &'a mut dyn Write,
    column: usize,
    written: usize,
}

impl<'a> Out<'a> {
    fn new(w: &'a mut dyn Write) -> Out<'a> {
        Out {
            w,
            column: 0,
            written: 0,
        }
    }
}

impl Write for Out<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        match s.rfind('\n') {
            Some(i) => self.column = s.len() - i - 1,
            None => self.column += s.len(),
        }
        self.written += s.len();
        self.w.write_str(s)
    }
}

fn spaces(out: &mut Out<'_>, n: usize) -> fmt::Result {
    (0..n).try_for_each(|_| out.write_char(' '))
}

/// What every part of the text shares: the tensor, whether it is summarised, its formatter.
struct Printer<'a> {
    t: &'a Tensor,
    summarize: bool,
    f: Formatter,
}

impl Printer<'_> {
    /// `_vector_str`: the last dimension's elements, as many per line as fit in the line width.
    fn vector(&self, offset: isize, indent: usize, out: &mut Out<'_>) -> fmt::Result {
        let (t, f) = (self.t, &self.f);
        let dim = t.ndim() - 1;
        let (n, stride) = (t.shape()[dim], t.strides()[dim]);
        let per_line = f.per_line(indent);
        out.write_char('[')?;
        let cut = self.summarize && n > 2 * EDGEITEMS;
        // The "..." of a summarised row counts as one item, placed between the two edges.
        let items = if cut { 2 * EDGEITEMS + 1 } else { n };
        for item in 0..items {
            if item > 0 {
                if item % per_line == 0 {
                    out.write_str(",\n")?;
                    spaces(out, indent + 1)?;
                } else {
                    out.write_str(", ")?;
                }
            }
            let index = match item {
                _ if !cut => item,
                i if i < EDGEITEMS => i,
                i if i == EDGEITEMS => {
                    out.write_str(" ...")?;
                    continue;
                }
                i => n - (2 * EDGEITEMS + 1 - i),
            };
            f.write(out, read(t, offset + index as isize * stride))?;
        }
        out.write_char(']')
    }

    /// `_tensor_str_with_formatter` from dimension `dim` on. With `spine`, only the last shown
    /// index of each dimension above the last is written in full (the others leave their
    /// separators only): enough to know the column the text ends at, cheaply.
    fn nested(
        &self,
        dim: usize,
        offset: isize,
        indent: usize,
        spine: bool,
        out: &mut Out<'_>,
    ) -> fmt::Result {
        let t = self.t;
        let rest = t.ndim() - dim;
        if rest == 0 {
            return self.f.write(out, read(t, offset));
        }
        if rest == 1 {
            return self.vector(offset, indent, out);
        }
        let (n, stride) = (t.shape()[dim], t.strides()[dim]);
        let cut = self.summarize && n > 2 * EDGEITEMS;
        out.write_char('[')?;
        let mut first = true;
        let mut separator = |out: &mut Out<'_>| -> fmt::Result {
            if !std::mem::replace(&mut first, false) {
                out.write_char(',')?;
                (1..rest).try_for_each(|_| out.write_char('\n'))?;
                spaces(out, indent + 1)?;
            }
            Ok(())
        };
        for i in shown(n, self.summarize) {
            if cut && i == n - EDGEITEMS {
                separator(out)?;
                out.write_str("...")?;
            }
            separator(out)?;
            if !spine || i == n - 1 {
                self.nested(
                    dim + 1,
                    offset + i as isize * stride,
                    indent + 1,
                    spine,
                    out,
                )?;
            }
        }
        out.write_char(']')
    }

    /// How many times each element [`for_each_shown`] visits is written: the product of the
    /// indices shown along the dimensions of stride 0.
    fn repeats(&self) -> Option<usize> {
        let t = self.t;
        (0..t.ndim())
            .filter(|&d| t.strides()[d] == 0)
            .try_fold(1usize, |m, d| {
                m.checked_mul(shown_count(t.shape()[d], self.summarize))
            })
    }

    /// The length of the elements' texts in the whole text.
    fn elements_len(&self) -> Option<usize> {
        let (t, f) = (self.t, &self.f);
        let mut once = 0usize;
        if f.floating {
            // Only a float's text can pass the common width (nan, inf, a negative zero).
            for_each_shown(t, 0, 0, self.summarize, &mut |v| once += f.written_len(v));
        } else {
            for_each_shown(t, 0, 0, self.summarize, &mut |_| once += f.max_width);
        }
        once.checked_mul(self.repeats()?)
    }

    /// The length of everything but the elements' texts from dimension `dim` on (at `indent`):
    /// brackets, separators, line breaks, indents and `...`, the same for every index above.
    fn structure_len(&self, dim: usize, indent: usize) -> Option<usize> {
        let t = self.t;
        let rest = t.ndim() - dim;
        if rest == 0 {
            return Some(0);
        }
        let n = t.shape()[dim];
        let cut = self.summarize && n > 2 * EDGEITEMS;
        if rest == 1 {
            // ", " between items, ",\n" and the indent where a line is full, " ..." when cut.
            let items = if cut { 2 * EDGEITEMS + 1 } else { n };
            let breaks = (items - 1) / self.f.per_line(indent);
            let separators = (items - 1)
                .checked_mul(2)?
                .checked_add(breaks.checked_mul(indent + 1)?)?;
            return separators.checked_add(2 + if cut { 4 } else { 0 });
        }
        // A separator is "," and rest - 1 line breaks then the indent; one more, and "...", when
        // cut.
        let k = shown_count(n, self.summarize);
        let separators = (k - 1 + cut as usize).checked_mul(1 + (rest - 1) + indent + 1)?;
        let children = k.checked_mul(self.structure_len(dim + 1, indent + 1)?)?;
        separators
            .checked_add(children)?
            .checked_add(2 + if cut { 3 } else { 0 })
    }
}

/// `_add_suffixes`: each suffix after ", ", or on a new line when it would pass the line width.
/// `last` is PyTorch's "last line length" (which starts two above the characters on the line).
fn suffix(out: &mut Out<'_>, last: &mut usize, args: fmt::Arguments<'_>) -> fmt::Result {
    let mut len = Counter(0);
    len.write_fmt(args)?;
    if *last + len.0 + 2 > LINEWIDTH as usize {
        out.write_str(",\n")?;
        spaces(out, PREFIX.len())?;
        *last = PREFIX.len() + len.0;
    } else {
        out.write_str(", ")?;
        *last += len.0 + 2;
    }
    out.write_fmt(args)
}

/// A shape as Python prints a tuple: `(2, 0)`, `(0,)`.
struct Tuple<'a>(&'a [usize]);

impl fmt::Display for Tuple<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_char('(')?;
        for (i, n) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{n}")?;
        }
        if self.0.len() == 1 {
            f.write_char(',')?;
        }
        f.write_char(')')
    }
}

/// Counts what is written.
struct Counter(usize);

impl Write for Counter {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0 += s.len();
        Ok(())
    }
}

/// A tensor's text, planned: its formatter chosen and its full length counted, nothing written.
pub struct Text<'a> {
    t: &'a Tensor,
    /// `None` for an empty tensor.
    printer: Option<Printer<'a>>,
    len: usize,
}

impl<'a> Text<'a> {
    /// Plans `str(t)` as PyTorch prints it with its default options (for example
    /// `tensor([[1, 2],\n        [3, 4]], dtype=torch.int32)`), in time bounded by
    /// [`SCAN_LIMIT`] elements and the tensor's dimensions, however long the text. Fails with
    /// `FormatTooLarge` when the formatter would read more than [`SCAN_LIMIT`] elements, and with
    /// `Overflow` when the length does not fit in `usize`.
    pub fn new(t: &'a Tensor) -> Result<Text<'a>> {
        let numel = t.numel();
        // Parts are measured by writing them to a counter, which never refuses a write.
        let mut sink = Counter(0);
        let out = &mut Out::new(&mut sink);
        if numel == 0 {
            out.write_str(PREFIX).map_err(|_| text_overflow())?;
            write_rest(t, None, out).map_err(|_| text_overflow())?;
            let len = out.written;
            return Ok(Text {
                t,
                printer: None,
                len,
            });
        }
        let summarize = numel > THRESHOLD;
        let reads = (0..t.ndim())
            .filter(|&d| t.strides()[d] != 0)
            .try_fold(1usize, |m, d| {
                m.checked_mul(shown_count(t.shape()[d], summarize))
            });
        if !matches!(reads, Some(r) if r <= SCAN_LIMIT) {
            let reads = reads.unwrap_or(usize::MAX);
            return Err(Error::FormatTooLarge { reads });
        }
        let printer = Printer {
            t,
            summarize,
            f: Formatter::new(t, summarize),
        };
        let body = printer
            .elements_len()
            .and_then(|e| e.checked_add(printer.structure_len(0, PREFIX.len())?))
            .ok_or_else(text_overflow)?;
        // The suffixes depend on the column the body ends at, which its last line gives.
        out.write_str(PREFIX).map_err(|_| text_overflow())?;
        printer
            .nested(0, 0, PREFIX.len(), true, out)
            .map_err(|_| text_overflow())?;
        let spine = out.written;
        write_rest(t, Some(&printer), out).map_err(|_| text_overflow())?;
        let len = (PREFIX.len() + out.written - spine)
            .checked_add(body)
            .ok_or_else(text_overflow)?;
        Ok(Text {
            t,
            printer: Some(printer),
            len,
        })
    }

    /// The text's length in bytes (ASCII; never empty).
    pub fn byte_len(&self) -> usize {
        self.len
    }

    /// Writes the text to `w`, stopping at the first write `w` refuses.
    pub fn write(&self, w: &mut dyn Write) -> fmt::Result {
        let out = &mut Out::new(w);
        out.write_str(PREFIX)?;
        if let Some(p) = &self.printer {
            p.nested(0, 0, PREFIX.len(), false, out)?;
        }
        write_rest(self.t, self.printer.as_ref(), out)
    }
}

fn text_overflow() -> Error {
    Error::Overflow {
        what: "text length",
    }
}

/// What follows the body: `[]` for an empty tensor (no printer), then the `size=` and `dtype=`
/// suffixes and `)`.
fn write_rest(t: &Tensor, printer: Option<&Printer<'_>>, out: &mut Out<'_>) -> fmt::Result {
    let show_dtype = match printer {
        None => {
            out.write_str("[]")?;
            t.dtype() != DType::F32
        }
        Some(_) => !t.dtype().repr_implied(),
    };
    let mut last = out.column + 2;
    if t.numel() == 0 && t.ndim() != 1 {
        suffix(out, &mut last, format_args!("size={}", Tuple(t.shape())))?;
    }
    if show_dtype {
        suffix(
            out,
            &mut last,
            format_args!("dtype={}", t.dtype().torch_dtype()),
        )?;
    }
    out.write_char(')')
}
