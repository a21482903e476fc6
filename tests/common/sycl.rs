#![allow(dead_code)]
//! The SYCL tests' setup: a reference model compiled for the NPU and the CPU, the virtual GPU as a
//! SYCL device, and a SYCL context of it.
use std::sync::Arc;

use npu_sycl_bridge::sycl::{self, Backend, DeviceType, SyclContext};
use testkit::models::ReferenceModel;
use testkit::npu::{core, vp, NpuAndCpu};

/// `m` on the NPU and the CPU, and the iGPU's SYCL device and context.
pub struct SyclEnv {
    pub base: NpuAndCpu,
    pub gpu: sycl::SyclDevice,
    pub ctx: Arc<SyclContext>,
}

/// The virtual GPU as a SYCL Level Zero device.
pub fn sycl_gpu() -> sycl::SyclDevice {
    vp();
    sycl::devices()
        .expect("SYCL devices")
        .into_iter()
        .find(|d| d.backend == Backend::LevelZero && d.device_type == DeviceType::Gpu)
        .expect("the virtual GPU is a SYCL Level Zero GPU device")
}

/// [`SyclEnv`] for `m`.
pub fn sycl_env(m: ReferenceModel) -> SyclEnv {
    let base = NpuAndCpu::new(core(), m);
    let gpu = sycl_gpu();
    let ctx = SyclContext::new(&gpu).expect("sycl::context(gpu)");
    SyclEnv { base, gpu, ctx }
}
