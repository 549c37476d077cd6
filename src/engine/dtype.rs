//! Element types and PyTorch 2.x type promotion (docs/semantics.md, section 6).

/// Promotion categories, ordered: a 0-d operand only raises the result's category.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Category {
    Bool,
    Integer,
    Floating,
}

/// The element-type table's `printed` column: `implied` (printing leaves the type unsaid) or
/// `shown`.
macro_rules! printed {
    (implied) => {
        true
    };
    (shown) => {
        false
    };
}

/// The table: `Variant = code "name" "PyTorch's name" "checked C++ name" "typeid name" size
/// Category DLPack-code printed (lowest, highest) "Go constant" "Go element type" "Julia element
/// type";`, one row per element type in code order (see the methods of [`DType`] for what each
/// column means; the last three are for scripts/gen_ops.py, which writes the Go and Julia
/// packages' lists).
macro_rules! dtypes {
    ($($var:ident = $code:literal $name:literal $torch:literal $checked:literal $typeid:literal
        $size:literal $cat:ident $dlpack:literal $repr:ident ($lowest:expr, $highest:expr)
        $go:literal $go_elem:literal $julia:literal;)+) => {
        /// The element types. The discriminants are the stable codes of the C API.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum DType {
            $($var = $code,)+
        }

        impl DType {
            /// Every element type, in code order.
            pub const ALL: [DType; [$($code),+].len()] = [$(DType::$var),+];

            /// The size of one element in bytes.
            pub fn size(self) -> usize {
                match self {
                    $(DType::$var => $size,)+
                }
            }

            /// The library's name, as `bc_dtype_name` returns it.
            pub fn name(self) -> &'static str {
                match self {
                    $(DType::$var => $name,)+
                }
            }

            /// PyTorch's scalar-type name, used in its messages ("Float", "Int", ...).
            pub fn torch_name(self) -> &'static str {
                match self {
                    $(DType::$var => $torch,)+
                }
            }

            /// PyTorch's name of the dtype in Python (`torch.float16`), as printing shows it.
            pub fn torch_dtype(self) -> &'static str {
                match self {
                    $(DType::$var => concat!("torch.", $name),)+
                }
            }

            /// The C++ type PyTorch's checked conversions name ("value cannot be converted to
            /// type uint8_t without overflow").
            pub fn checked_cpp_name(self) -> &'static str {
                match self {
                    $(DType::$var => $checked,)+
                }
            }

            /// The C++ type as `typeid(...).name()` demangles it, which some of PyTorch's checks
            /// print (`lerp`, `clamp_`): "unsigned char", "long int".
            pub fn typeid_name(self) -> &'static str {
                match self {
                    $(DType::$var => $typeid,)+
                }
            }

            pub fn category(self) -> Category {
                match self {
                    $(DType::$var => Category::$cat,)+
                }
            }

            /// DLPack's type code of the element type (`DLDataTypeCode`: 0 signed integer, 1
            /// unsigned, 2 IEEE float, 4 bfloat16, 6 bool); its bits are the size's.
            pub fn dlpack_code(self) -> u8 {
                match self {
                    $(DType::$var => $dlpack,)+
                }
            }

            /// Whether PyTorch's printing leaves the type unsaid for a tensor with elements: the
            /// type a tensor of Python literals of its kind gets (bool, int64, float32).
            pub fn repr_implied(self) -> bool {
                match self {
                    $(DType::$var => printed!($repr),)+
                }
            }

            /// The lowest and the highest finite value the type holds, as f64.
            pub fn range(self) -> (f64, f64) {
                match self {
                    $(DType::$var => ($lowest, $highest),)+
                }
            }
        }
    };
}

dtypes! {
    // variant code  name        PyTorch   checked C++      typeid name      size category  DLPack  printed  (lowest, highest)                                Go         Go element     Julia
    Bool = 0       "bool"      "Bool"     "bool"           "bool"           1    Bool      6       implied  (0.0, 1.0)                                       "Bool"     "bool"         "Bool";
    U8 = 1         "uint8"     "Byte"     "uint8_t"        "unsigned char"  1    Integer   1       shown    (0.0, 255.0)                                     "Uint8"    "uint8"        "UInt8";
    I8 = 2         "int8"      "Char"     "int8_t"         "signed char"    1    Integer   0       shown    (-128.0, 127.0)                                  "Int8"     "int8"         "Int8";
    I16 = 3        "int16"     "Short"    "int16_t"        "short int"      2    Integer   0       shown    (-32768.0, 32767.0)                              "Int16"    "int16"        "Int16";
    I32 = 4        "int32"     "Int"      "int"            "int"            4    Integer   0       shown    (i32::MIN as f64, i32::MAX as f64)               "Int32"    "int32"        "Int32";
    I64 = 5        "int64"     "Long"     "int64_t"        "long int"       8    Integer   0       implied  (i64::MIN as f64, i64::MAX as f64)               "Int64"    "int64"        "Int64";
    F16 = 6        "float16"   "Half"     "c10::Half"      "c10::Half"      2    Floating  2       shown    (-65504.0, 65504.0)                              "Float16"  "Float16Bits"  "Float16";
    BF16 = 7       "bfloat16"  "BFloat16" "c10::BFloat16"  "c10::BFloat16"  2    Floating  4       shown    (-3.3895313892515355e38, 3.3895313892515355e38)  "BFloat16" "BFloat16Bits" "BFloat16Bits";
    F32 = 8        "float32"   "Float"    "float"          "float"          4    Floating  2       implied  (f32::MIN as f64, f32::MAX as f64)               "Float32"  "float32"      "Float32";
    F64 = 9        "float64"   "Double"   "double"         "double"         8    Floating  2       shown    (f64::MIN, f64::MAX)                             "Float64"  "float64"      "Float64";
}

impl DType {
    pub fn from_code(code: i32) -> Option<DType> {
        usize::try_from(code)
            .ok()
            .and_then(|i| DType::ALL.get(i).copied())
    }

    pub fn code(self) -> i32 {
        self as i32
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
