// The keep-alive of a caller-owned CPU_VA tensor must be 'static: a borrow cannot keep memory alive
// for a tensor that OpenVINO may hold after the borrow ends (intel/openvino-rs#125).
use std::sync::Arc;

use npu_sycl_bridge::memory::RawMemory;
use npu_sycl_bridge::npu::NpuContext;
use npu_sycl_bridge::openvino::{ElementType, TensorType};
use npu_sycl_bridge::ownership::KeepAlive;

fn make(npu: &NpuContext, memory: &[u8]) {
    let keep: KeepAlive = Arc::new(&*memory);
    let raw = unsafe { RawMemory::new(memory.as_ptr().cast_mut(), memory.len(), Some(keep)) }.unwrap();
    let _t = npu.import(raw, ElementType::F32, [1, 1024], TensorType::Input);
}

fn main() {}
