// An InferRequest may move to another thread, but two threads must not use it at once.
use npu_sycl_bridge::openvino::InferRequest;

fn share(r: &InferRequest) {
    std::thread::scope(|s| {
        s.spawn(|| r.is_running());
        s.spawn(|| r.is_running());
    });
}

fn main() {
    let _ = share;
}
