// Only the crate's tensors can be bound to a request: no binding of arbitrary raw handles.
use npu_sycl_bridge::openvino::Bindable;

struct Fake;

impl Bindable for Fake {}

fn main() {}
