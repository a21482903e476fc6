// A host view of an NPU remote tensor borrows the tensor: it cannot outlive it (or the memory the
// tensor owns).
use npu_sycl_bridge::npu::NpuContext;
use npu_sycl_bridge::openvino::{ElementType, TensorType};

fn make(npu: &NpuContext) {
    let view;
    {
        let t = npu.l0_host_tensor(ElementType::F32, [1, 1024], TensorType::Binded).unwrap();
        view = t.host_data::<f32>().unwrap();
    }
    println!("{}", view[0]);
}

fn main() {}
