//! The C ABI: the only module with `extern "C"`, caller pointers and status codes.
//!
//! Conventions, for every export: a status (`BC_OK` = 0 or a `BC_ERR_*` code) is returned; every
//! pointer is checked (NULL gives `BC_ERR_NULL_ARG`, except documented `(NULL, 0)` empty arrays);
//! handles are validated against the registry (`BC_ERR_INVALID_HANDLE`); panics are caught
//! (`BC_ERR_INTERNAL`); out-handles are NULL unless the call succeeds; a failed call changes
//! nothing the caller owns. See `boundary` for the mechanism and `status` for the codes. Every
//! export that returns a status is `#[must_use]`, which the header spells `BC_MUST_USE`.
#![allow(non_camel_case_types)]

mod boundary;
pub mod data;
pub mod dlpack;
pub mod error;
pub mod expr;
pub mod handle;
pub mod ops;
pub mod ops_named;
pub mod plan;
pub mod reduce;
pub mod scalar;
pub mod settings;
pub mod shape;
pub mod stats;
mod status;
pub mod tensor;
pub mod ternary;
pub mod unary;
pub mod unary_named;

pub use data::*;
pub use dlpack::*;
pub use error::*;
pub use expr::*;
pub use handle::{bc_tensor, BC_MAX_NDIM};
pub use ops::*;
pub use ops_named::*;
pub use plan::*;
pub use reduce::*;
pub use scalar::*;
pub use settings::*;
pub use shape::*;
pub use stats::*;
pub use status::{
    BC_ERR_ALLOC, BC_ERR_BUFFER_TOO_SMALL, BC_ERR_DTYPE, BC_ERR_INTERNAL, BC_ERR_INVALID_ARG,
    BC_ERR_INVALID_HANDLE, BC_ERR_NULL_ARG, BC_ERR_OVERFLOW, BC_ERR_OVERLAP, BC_ERR_READ_ONLY,
    BC_ERR_SHAPE, BC_ERR_VALUE, BC_OK,
};
pub use tensor::*;
pub use ternary::*;
pub use unary::*;
pub use unary_named::*;
