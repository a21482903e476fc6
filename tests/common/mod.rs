//! The integration tests' helpers live in the testkit crate (`crates/testkit`); this re-exports them
//! under the paths the tests use: the [`testkit::reference`] functions (compile a reference model,
//! run it, compare), [`child`] (the SYCL tests' child-process harness) and [`npu`] (the NPU tests'
//! setup on the virtual platform).
#![allow(unused_imports)]

pub use testkit::reference::*;
pub use testkit::{child, npu};

#[cfg(feature = "sycl")]
pub mod sycl;
