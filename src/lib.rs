//! libbroadcast: tensors with exact NumPy/PyTorch broadcasting semantics behind a C ABI.
//!
//! Two layers, one direction: [`engine`] is pure Rust (shapes, strides, plans, kernels, type
//! promotion); [`ffi`] is the only place with `extern "C"`, raw pointers and status codes.
pub mod engine;
pub mod ffi;
