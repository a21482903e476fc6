// A PageAlignedBuffer moves into its CPU_VA tensor: it cannot be touched afterwards, so no Rust
// reference can alias memory the NPU writes.
use npu_sycl_bridge::memory::PageAlignedBuffer;
use npu_sycl_bridge::npu::NpuContext;
use npu_sycl_bridge::openvino::{ElementType, TensorType};

fn make(npu: &NpuContext) {
    let mut buf = PageAlignedBuffer::new(4096).unwrap();
    let _t = npu.import(buf, ElementType::F32, [1, 1024], TensorType::Output).unwrap();
    buf.as_mut_slice::<f32>()[0] = 1.0;
}

fn main() {}
