// A data view borrows its tensor: it cannot outlive it.
use npu_sycl_bridge::openvino::{ElementType, Tensor};

fn main() {
    let view;
    {
        let t = Tensor::new(ElementType::F32, [4]).unwrap();
        view = t.data::<f32>().unwrap();
    }
    println!("{}", view[0]);
}
