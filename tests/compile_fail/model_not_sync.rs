// An ov::Model is not safe for concurrent use: a Model can move between threads, not be shared.
use npu_sycl_bridge::openvino::Model;

fn share(m: &Model) {
    std::thread::scope(|s| {
        s.spawn(|| m.inputs());
    });
}

fn main() {
    let _ = share;
}
