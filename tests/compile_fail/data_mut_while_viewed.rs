// A write view needs the tensor mutably: not while a read view of the same handle is alive.
use npu_sycl_bridge::openvino::{ElementType, Tensor};

fn main() {
    let mut t = Tensor::new(ElementType::F32, [4]).unwrap();
    let read = t.data::<f32>().unwrap();
    let mut write = t.data_mut::<f32>().unwrap();
    write[0] = read[0];
}
