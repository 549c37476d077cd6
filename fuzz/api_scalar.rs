//! Numbers as operands: `bc_binary_scalar` (`t op s`), `bc_binary_rscalar` (`s op t`) and
//! `bc_binary_scalar_inplace` (`t op= s`), codes drawn from `BC_OP_COUNT` and numbers of every
//! kind (and kinds that are none). The number is the model's own 0-d operand holding its exact
//! value, given to the binary model (`model_binary`), which promotes it as a number; the order
//! PyTorch runs `s op t` in and the operations that take no number are docs/semantics.md,
//! section 13. Codes the binary model does not compute (other than the refused ones) are drawn
//! and skipped, counted as skipped steps.
use super::*;

/// PyTorch gives these no number form (`fmod` only not as its second operand).
fn takes_no_number(op: i32, number_first: bool) -> bool {
    matches!(
        op,
        BC_OP_MAXIMUM
            | BC_OP_MINIMUM
            | BC_OP_ATAN2
            | BC_OP_HYPOT
            | BC_OP_LOGICAL_AND
            | BC_OP_LOGICAL_OR
            | BC_OP_LOGICAL_XOR
    ) || (number_first && op == BC_OP_FMOD)
}

/// The operations the binary model computes.
fn modelled(op: i32) -> bool {
    matches!(op, BC_OP_ADD | BC_OP_SUB | BC_OP_MUL | BC_OP_DIV)
}

impl Runner<'_> {
    /// A code drawn from `BC_OP_COUNT`, or (rarely) one that names no operation.
    pub(super) fn any_op_code(&mut self) -> i32 {
        self.any_op_code_named().0
    }

    /// `any_op_code`, and whether to make the call through its named form where there is one
    /// (decided by the same byte, so that programs decode as before).
    fn any_op_code_named(&mut self) -> (i32, bool) {
        let b = self.inp.u8();
        let named = b < 250 && (b as i32 / BC_OP_COUNT) % 2 == 1;
        (Self::op_code_of(b), named)
    }

    fn op_code_of(b: u8) -> i32 {
        if b < 250 {
            b as i32 % BC_OP_COUNT
        } else {
            [BC_OP_COUNT, -1, 100, i32::MIN, i32::MAX, BC_OP_COUNT + 1][(b - 250) as usize]
        }
    }

    /// A number of each kind, or (rarely) of a kind that is none.
    pub(super) fn number(&mut self) -> bc_scalar {
        let k = self.inp.u8();
        let kind = if k < 252 {
            [BC_SCALAR_BOOL, BC_SCALAR_INT, BC_SCALAR_FLOAT][k as usize % 3]
        } else {
            [3, -1, 100, i32::MIN][(k - 252) as usize]
        };
        bc_scalar {
            kind,
            b: self.inp.flag(),
            i: self.inp.int(),
            f: self.inp.value(),
        }
    }

    /// The number as the model's 0-d operand, in its own storage (so it overlaps nothing).
    fn number_operand(&mut self, s: &bc_scalar) -> TM {
        let v = match s.kind {
            BC_SCALAR_BOOL => Num::B(s.b),
            BC_SCALAR_INT => Num::I64(s.i),
            _ => Num::D(s.f),
        };
        self.new_tensor(v.dtype(), &[], Some(vec![Some(v)]))
    }

    fn describe_number(s: &bc_scalar) -> String {
        match s.kind {
            BC_SCALAR_BOOL => format!("{}", s.b),
            BC_SCALAR_INT => format!("{}i", s.i),
            BC_SCALAR_FLOAT => format!("{:?}f", s.f),
            k => format!("kind {k}"),
        }
    }

    /// The refusals made before the tensor is looked at: the code, the number's kind.
    fn number_refusal(op: i32, s: &bc_scalar) -> Option<i32> {
        let valid_kind = matches!(s.kind, BC_SCALAR_BOOL | BC_SCALAR_INT | BC_SCALAR_FLOAT);
        if !(0..BC_OP_COUNT).contains(&op) || !valid_kind {
            return Some(BC_ERR_INVALID_ARG);
        }
        None
    }

    /// `bc_binary_scalar` or `bc_binary_rscalar`: a new tensor.
    pub(super) fn op_scalar(&mut self) -> Result<Result<(), Skip>, String> {
        let (op, named) = self.any_op_code_named();
        let number_first = self.inp.flag();
        let s = self.number();
        let a = self.arg();
        let dst = self.inp.below(NSLOTS);
        let null_out = self.out_flag();
        let n = self.number_operand(&s);
        let mut warnings = [0; 3];
        let expected: Expect<TM> = match (|| -> Result<Expect<_>, Skip> {
            if null_out {
                return Ok(Err(BC_ERR_NULL_ARG));
            }
            if let Some(st) = Self::number_refusal(op, &s) {
                return Ok(Err(st));
            }
            let t = match self.resolve(a) {
                Ok(t) => t,
                Err(s) => return Ok(Err(s)),
            };
            // Refused once the tensor is known to be one.
            if takes_no_number(op, number_first) {
                return Ok(Err(BC_ERR_INVALID_ARG));
            }
            if !modelled(op) {
                return Err(Skip);
            }
            // `s + t` and `s * t` run as `t + s`, `t * s`; `s - t` and `s / t` as they read.
            let (x, y, which) = if number_first && matches!(op, BC_OP_SUB | BC_OP_DIV) {
                (n.clone(), t, 0)
            } else {
                (t, n.clone(), 1)
            };
            Ok(self
                .model_binary(op, &x, &y, None, Some(which))?
                .map(|r| (x, y, r)))
        })() {
            Err(Skip) => return Ok(Err(Skip)),
            Ok(Err(s)) => Err(s),
            Ok(Ok((x, y, (shape, ct, values, w)))) => {
                warnings = w;
                let strides = result_layout(
                    &shape,
                    &[
                        (x.shape.clone(), x.strides.clone(), x.dtype != ct),
                        (y.shape.clone(), y.strides.clone(), y.dtype != ct),
                    ],
                );
                let rt = binary_result(op, ct);
                Ok(self.new_tensor_strided(rt, &shape, strides, Some(values)))
            }
        };
        let name = if number_first {
            "binary_rscalar"
        } else {
            "binary_scalar"
        };
        self.note(format!(
            "{name}(op {op}, {}, {}) -> #{dst}",
            self.describe(a),
            Self::describe_number(&s)
        ));
        let h = self.raw(a);
        let ok = expected.is_ok();
        // SAFETY: out NULL or valid.
        let forms = named.then(|| super::named::named_scalar(op)).flatten();
        let r = self.call_new(name, null_out, dst, expected, |o| unsafe {
            match (number_first, forms) {
                (true, Some((_, _, Some(reversed)))) => reversed(s, h, o),
                (true, _) => bc_binary_rscalar(op, s, h, o),
                (false, Some((new, _, _))) => new(h, s, o),
                (false, None) => bc_binary_scalar(op, h, s, o),
            }
        });
        if ok {
            for (e, w) in self.expected_warnings.iter_mut().zip(warnings) {
                *e += w;
            }
        }
        r
    }

    /// `bc_binary_scalar_inplace`.
    pub(super) fn op_scalar_inplace(&mut self) -> Result<Result<(), Skip>, String> {
        let (op, named) = self.any_op_code_named();
        let s = self.number();
        let a = self.arg();
        let n = self.number_operand(&s);
        let expected = match (|| -> Result<Expect<_>, Skip> {
            if let Some(st) = Self::number_refusal(op, &s) {
                return Ok(Err(st));
            }
            let t = match self.resolve(a) {
                Ok(t) => t,
                Err(s) => return Ok(Err(s)),
            };
            if takes_no_number(op, false) {
                return Ok(Err(BC_ERR_INVALID_ARG));
            }
            if !modelled(op) {
                return Err(Skip);
            }
            Ok(self
                .model_binary(op, &t, &n, Some((&t, true)), Some(1))?
                .map(|r| (t, r)))
        })() {
            Err(Skip) => return Ok(Err(Skip)),
            Ok(e) => e,
        };
        self.note(format!(
            "binary_scalar_inplace(op {op}, {}, {})",
            self.describe(a),
            Self::describe_number(&s)
        ));
        let st = match named.then(|| super::named::named_scalar(op)).flatten() {
            Some((_, inplace, _)) => inplace(self.raw(a), s),
            None => bc_binary_scalar_inplace(op, self.raw(a), s),
        };
        let exp_st = expected.as_ref().map_or_else(|&s| s, |_| BC_OK);
        self.check_status("binary_scalar_inplace", st, exp_st)?;
        if let Ok((t, (_, _, values, w))) = expected {
            for (e, w) in self.expected_warnings.iter_mut().zip(w) {
                *e += w;
            }
            for (i, v) in values.into_iter().enumerate() {
                self.write_at(&t, i, v);
            }
        }
        Ok(Ok(()))
    }
}
