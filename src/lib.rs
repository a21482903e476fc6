//! npu-sycl-bridge: zero-copy memory sharing between oneAPI/DPC++ (SYCL) and OpenVINO's NPU plugin.
#![deny(missing_docs)]

pub mod error;
pub use error::{Error, ErrorKind, Result};

pub mod level_zero;
pub mod models;
pub mod npu;
pub mod openvino;
pub mod virtual_platform;

#[cfg(feature = "sycl")]
pub mod sycl;

#[cfg(feature = "sycl")]
pub mod strategy;
