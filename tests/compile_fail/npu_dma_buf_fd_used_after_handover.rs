// NpuContext::import takes a dma-buf fd by value: the caller cannot close or reuse it afterwards (the tensor
// closes it exactly once). Use level_zero::dup_fd to keep a copy.
use std::os::fd::{AsRawFd, OwnedFd};

use npu_sycl_bridge::npu::NpuContext;
use npu_sycl_bridge::openvino::{ElementType, TensorType};

fn make(npu: &NpuContext, fd: OwnedFd) {
    let _t = npu.import(fd, ElementType::F32, [1, 1024], TensorType::Input).unwrap();
    println!("{}", fd.as_raw_fd());
}

fn main() {}
