//! PyTorch's `str(tensor)` under its default print options (precision 4, line width 80, over 1000
//! elements summarised with 3 items at each edge, scientific notation chosen automatically), the
//! way `torch/_tensor_str.py` builds it, step for step: one formatter over the elements shown
//! (integer-valued floats, scientific notation, the widest element), nested brackets with line
//! breaks, then the `dtype=` and `size=` suffixes.
//!
//! Nothing here allocates: elements are read in place, formatted into a buffer on the stack, and
//! the text goes straight to the caller's writer.
use super::dtype::DType;
use super::tensor::Tensor;
use half::{bf16, f16};
use std::fmt::{self, Write};

const PRECISION: usize = 4;
const THRESHOLD: usize = 1000;
const EDGEITEMS: usize = 3;
const LINEWIDTH: isize = 80;
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

/// Calls `f` on every element shown (PyTorch's `get_summarized_data`), from dimension `dim` on.
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

/// The caller's writer, and the column the text has reached (for the suffixes' line breaks).
pub struct Out<'a> {
    w: &'a mut dyn Write,
    column: usize,
}

impl Write for Out<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        match s.rfind('\n') {
            Some(i) => self.column = s.len() - i - 1,
            None => self.column += s.len(),
        }
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
        let element_length = f.max_width as isize + 2;
        let per_line = ((LINEWIDTH - indent as isize).div_euclid(element_length)).max(1) as usize;
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

    /// `_tensor_str_with_formatter` from dimension `dim` on.
    fn nested(&self, dim: usize, offset: isize, indent: usize, out: &mut Out<'_>) -> fmt::Result {
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
            self.nested(dim + 1, offset + i as isize * stride, indent + 1, out)?;
        }
        out.write_char(']')
    }
}

/// PyTorch's name of a dtype in the `dtype=` suffix.
fn torch_dtype(d: DType) -> &'static str {
    match d {
        DType::Bool => "torch.bool",
        DType::U8 => "torch.uint8",
        DType::I8 => "torch.int8",
        DType::I16 => "torch.int16",
        DType::I32 => "torch.int32",
        DType::I64 => "torch.int64",
        DType::F16 => "torch.float16",
        DType::BF16 => "torch.bfloat16",
        DType::F32 => "torch.float32",
        DType::F64 => "torch.float64",
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

/// Writes `str(t)` as PyTorch prints it with its default options (for example
/// `tensor([[1, 2],\n        [3, 4]], dtype=torch.int32)`).
pub fn write_tensor(t: &Tensor, w: &mut dyn Write) -> fmt::Result {
    let out = &mut Out { w, column: 0 };
    out.write_str(PREFIX)?;
    let numel = t.numel();
    let summarize = numel > THRESHOLD;
    let show_dtype = if numel == 0 {
        out.write_str("[]")?;
        t.dtype() != DType::F32
    } else {
        let f = Formatter::new(t, summarize);
        Printer { t, summarize, f }.nested(0, 0, PREFIX.len(), out)?;
        !matches!(t.dtype(), DType::F32 | DType::I64 | DType::Bool)
    };
    let mut last = out.column + 2;
    if numel == 0 && t.ndim() != 1 {
        suffix(out, &mut last, format_args!("size={}", Tuple(t.shape())))?;
    }
    if show_dtype {
        suffix(
            out,
            &mut last,
            format_args!("dtype={}", torch_dtype(t.dtype())),
        )?;
    }
    out.write_char(')')
}
