// A data view is tied to the thread that took it (it registers itself in the tensor's use state).
use npu_sycl_bridge::openvino::{ElementType, Tensor};

fn main() {
    let t = Tensor::new(ElementType::F32, [4]).unwrap();
    let view = t.data::<f32>().unwrap();
    std::thread::scope(|s| {
        s.spawn(move || view.len());
    });
}
