//! # npu-sycl-bridge-testkit
//!
//! What the tests, examples, benches and `npu-sycl-doctor` of
//! [npu-sycl-bridge](npu_sycl_bridge) share, and what a crate that depends on npu-sycl-bridge
//! uses in its own tests (as a dev-dependency):
//!
//! | module | what |
//! |--------|------|
//! | [`models`] | small reference models written as IR by Rust code, with a Rust reference implementation |
//! | [`virtual_platform`] | the virtual Level Zero platform: [`activate`](virtual_platform::activate), [`select`](virtual_platform::select), counters, fault injection |
//! | [`reference`](mod@reference) | compile a reference model, feed it its sample inputs, check outputs against the reference |
//! | [`npu`] | the NPU tests' setup on the virtual platform: one Core per process, a model compiled for the NPU and the CPU plugin, comparisons |
//! | [`child`] | the SYCL tests' child-process harness (one DPC++ adapter per process) |
//!
//! # The virtual platform comes with the build
//! This crate depends on `virtual-l0`, so cargo builds the virtual platform (`libze_loader.so`, SONAME
//! `libze_loader.so.1`) as part of every build that uses testkit, into that build's own target
//! directory, and [`virtual_platform::activate`] loads it from there. A dependent crate's tests
//! need no `cargo build -p virtual-l0` and no environment variable:
//!
//! ```no_run
//! use npu_sycl_bridge::openvino::Core;
//! use testkit::{models, reference, virtual_platform};
//!
//! virtual_platform::activate()?; // before anything opens a Level Zero loader
//! let core = Core::new()?;
//! let m = models::fully_connected();
//! let mut request = reference::compile(&core, &m, "NPU").create_infer_request()?;
//! for (i, t) in reference::sample_tensors(&m).iter().enumerate() {
//!     request.set_input_tensor(i, t)?;
//! }
//! request.infer()?;
//! reference::check_outputs(&m, &mut request); // panics with the first difference
//! # Ok::<(), npu_sycl_bridge::Error>(())
//! ```
#![warn(missing_docs)]

pub mod child;
pub mod cpu_time;
pub mod models;
pub mod npu;
pub mod reference;
pub mod virtual_platform;
