// A slice of a PageAlignedBuffer cannot be held while the buffer is given to a tensor.
use npu_sycl_bridge::memory::PageAlignedBuffer;
use npu_sycl_bridge::npu::NpuContext;
use npu_sycl_bridge::openvino::{ElementType, TensorType};

fn make(npu: &NpuContext) {
    let mut buf = PageAlignedBuffer::new(4096).unwrap();
    let slice = buf.as_mut_slice::<f32>();
    let _t = npu.import(buf, ElementType::F32, [1, 1024], TensorType::Output).unwrap();
    slice[0] = 1.0;
}

fn main() {}
