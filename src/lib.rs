//! npu-sycl-bridge: zero-copy memory sharing between oneAPI/DPC++ (SYCL) and OpenVINO's NPU plugin.
#![deny(missing_docs)]

#[cfg(feature = "sycl")]
pub mod sycl;
