//! SYCL side (feature `sycl`).
mod ffi;
