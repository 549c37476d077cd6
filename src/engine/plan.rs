//! The names the execution plan had before the one iterator ([`super::iter`]), kept for the
//! reductions (which move onto the iterator next) and for the pool's start test.
pub use super::iter::{broadcast_strides, Iter as Plan};
