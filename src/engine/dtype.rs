//! Element types and PyTorch 2.x type promotion (docs/semantics.md, section 6).

/// The ten element types. The discriminants are the stable codes of the C API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    Bool = 0,
    U8 = 1,
    I8 = 2,
    I16 = 3,
    I32 = 4,
    I64 = 5,
    F16 = 6,
    BF16 = 7,
    F32 = 8,
    F64 = 9,
}

/// Promotion categories, ordered: a 0-d operand only raises the result's category.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Category {
    Bool,
    Integer,
    Floating,
}

impl DType {
    pub const ALL: [DType; 10] = [
        DType::Bool,
        DType::U8,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
    ];

    pub fn from_code(code: i32) -> Option<DType> {
        usize::try_from(code)
            .ok()
            .and_then(|i| DType::ALL.get(i).copied())
    }

    pub fn code(self) -> i32 {
        self as i32
    }

    pub fn size(self) -> usize {
        match self {
            DType::Bool | DType::U8 | DType::I8 => 1,
            DType::I16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::F32 => 4,
            DType::I64 | DType::F64 => 8,
        }
    }

    /// The library's name, as `bc_dtype_name` returns it.
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "uint8",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }

    /// PyTorch's scalar-type name, used in its messages ("Float", "Int", ...).
    pub fn torch_name(self) -> &'static str {
        match self {
            DType::Bool => "Bool",
            DType::U8 => "Byte",
            DType::I8 => "Char",
            DType::I16 => "Short",
            DType::I32 => "Int",
            DType::I64 => "Long",
            DType::F16 => "Half",
            DType::BF16 => "BFloat16",
            DType::F32 => "Float",
            DType::F64 => "Double",
        }
    }

    pub fn category(self) -> Category {
        match self {
            DType::Bool => Category::Bool,
            DType::F16 | DType::BF16 | DType::F32 | DType::F64 => Category::Floating,
            _ => Category::Integer,
        }
    }

    pub fn is_floating(self) -> bool {
        self.category() == Category::Floating
    }
}

/// PyTorch's `promote_types`: the smallest type that holds both.
pub fn promote_types(a: DType, b: DType) -> DType {
    use DType::*;
    if a == b {
        return a;
    }
    match (a.category(), b.category()) {
        (Category::Bool, _) => b,
        (_, Category::Bool) => a,
        (Category::Integer, Category::Floating) => b,
        (Category::Floating, Category::Integer) => a,
        (Category::Floating, Category::Floating) => match (a, b) {
            (F16, BF16) | (BF16, F16) => F32,
            _ => a.max(b),
        },
        (Category::Integer, Category::Integer) => match (a, b) {
            // uint8 with a signed type needs the next signed width that holds 0..=255.
            (U8, I8) | (I8, U8) => I16,
            (U8, s) | (s, U8) => s,
            _ => a.max(b),
        },
    }
}

/// How an operand takes part in type promotion (PyTorch's `ResultTypeState`): tensors with
/// dimensions, 0-d tensors, and wrapped numbers (a Python scalar given to an operation). A later
/// rank only raises the category of the ones before it; a wrapped float counts as float32 (the
/// default floating type), a wrapped int as int64.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rank {
    Dimensioned,
    ZeroDim,
    Wrapped,
}

impl Rank {
    /// The rank of a tensor operand of `ndim` dimensions.
    pub fn of_tensor(ndim: usize) -> Rank {
        if ndim == 0 {
            Rank::ZeroDim
        } else {
            Rank::Dimensioned
        }
    }
}

/// PyTorch 2.x `result_type` of operands given as (type, rank).
pub fn result_type_ranked<const N: usize>(operands: [(DType, Rank); N]) -> DType {
    let mut tiers: [Option<DType>; 3] = [None; 3];
    for (dtype, rank) in operands {
        let dtype = match rank {
            Rank::Wrapped if dtype.is_floating() => DType::F32,
            _ => dtype,
        };
        let tier = &mut tiers[rank as usize];
        *tier = Some(tier.map_or(dtype, |t| promote_types(t, dtype)));
    }
    combine_categories(tiers[0], combine_categories(tiers[1], tiers[2]))
        .expect("result_type of no operands")
}

/// PyTorch 2.x `result_type` for two tensor operands: 0-d operands only raise the category.
pub fn result_type(a: DType, a_0d: bool, b: DType, b_0d: bool) -> DType {
    let rank = |zero: bool| Rank::of_tensor(!zero as usize);
    result_type_ranked([(a, rank(a_0d)), (b, rank(b_0d))])
}

/// `higher` are the types of the higher rank, `lower` of the lower one (c10's rule): the lower
/// one counts only when it raises the category.
fn combine_categories(higher: Option<DType>, lower: Option<DType>) -> Option<DType> {
    let (Some(h), Some(l)) = (higher, lower) else {
        return higher.or(lower);
    };
    Some(if h.is_floating() {
        h
    } else if h == DType::Bool || l.is_floating() {
        promote_types(h, l)
    } else {
        h
    })
}

/// PyTorch's `canCast`: no floating to integral, no non-bool to bool.
pub fn can_cast(from: DType, to: DType) -> bool {
    !(from.is_floating() && !to.is_floating() || from != DType::Bool && to == DType::Bool)
}

#[cfg(test)]
mod tests {
    use super::*;
    use DType::*;

    #[test]
    fn promotion_matches_pytorch_examples() {
        assert_eq!(promote_types(U8, I8), I16);
        assert_eq!(promote_types(U8, I32), I32);
        assert_eq!(promote_types(F16, BF16), F32);
        assert_eq!(promote_types(Bool, F16), F16);
        assert_eq!(promote_types(I64, F16), F16);
        // 0-d operands do not widen within a category...
        assert_eq!(result_type(U8, false, I64, true), U8);
        assert_eq!(result_type(F16, false, F64, true), F16);
        // ...but do raise it.
        assert_eq!(result_type(I32, false, F64, true), F64);
        assert_eq!(result_type(Bool, false, I64, true), I64);
        assert_eq!(result_type(I8, true, I64, true), I64);
    }

    /// Wrapped numbers (PyTorch 2.15: `t + 2.5`, `t + 300`, ...) promote by category only, and
    /// a wrapped float counts as float32.
    #[test]
    fn wrapped_numbers_promote_by_category() {
        let w = |t: DType, s: DType, t_0d: bool| {
            result_type_ranked([(t, Rank::of_tensor(!t_0d as usize)), (s, Rank::Wrapped)])
        };
        assert_eq!(w(I32, F64, false), F32);
        assert_eq!(w(I32, F64, true), F32);
        assert_eq!(w(U8, I64, false), U8);
        assert_eq!(w(Bool, I64, false), I64);
        assert_eq!(w(Bool, Bool, false), Bool);
        assert_eq!(w(F16, F64, false), F16);
        assert_eq!(w(I64, Bool, true), I64);
        // A 0-d tensor outranks a wrapped number: int32 0-d with float64 0-d is float64.
        assert_eq!(result_type(I32, true, F64, true), F64);
    }

    #[test]
    fn cast_rules() {
        assert!(!can_cast(F32, I32));
        assert!(!can_cast(I32, Bool));
        assert!(can_cast(Bool, I8));
        assert!(can_cast(F64, F16));
        assert!(can_cast(I64, U8));
    }
}
