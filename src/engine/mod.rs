//! The broadcast engine: pure Rust, no FFI types. `unsafe` appears only where storage and kernels
//! handle raw element memory, each block with its reason.
pub mod alloc;
pub mod binary_ops;
pub(crate) mod convert;
pub mod dtype;
pub mod elem;
pub mod error;
pub mod expr;
pub mod fast;
pub mod format;
pub mod iter;
pub mod kernels;
pub mod layout;
pub mod ops;
pub mod overlap;
pub mod parallel;
pub mod reduce;
pub mod reshape;
pub mod shape;
pub mod stats;
pub mod storage;
pub mod stream;
pub mod tensor;
pub mod ternary;
pub mod unary;
pub mod unary_ops;

pub use binary_ops::BinaryOp;
pub use dtype::DType;
pub use error::{Error, ErrorKind, Result};
pub use ops::{Options, Warning, Warnings};
pub use reduce::ReduceOp;
pub use tensor::{Init, Tensor};
pub use unary_ops::UnaryOp;
