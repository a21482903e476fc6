//! "When does OpenVINO copy?" — without mutable command lists, always.
//!
//! The virtual NPU is started without `ZE_experimental_mutable_command_list` (as an NPU driver or a
//! Level Zero loader older than 1.16.1 would be). The same CPU_VA and page-aligned plain tensors that
//! the graph reads in place when the driver has mutable command lists (tests/npu_memory_paths.rs)
//! are then copied by the plugin into its own buffers on every inference: results stay correct, but
//! the graph never touches the caller's pages. Its own test binary: the setting is read once per process.

mod common;

use common::{compile, expected};
use npu_sycl_bridge::memory::PageAlignedBuffer;
use npu_sycl_bridge::npu::NpuContext;
use npu_sycl_bridge::openvino::{Core, ElementType};
use testkit::models;
use testkit::virtual_platform;

#[test]
fn without_mutable_command_lists_user_memory_is_copied_not_shared() {
    // Before the platform is loaded: the NPU driver reads it when it lists its extensions.
    std::env::set_var("VL0_NPU_MUTABLE_COMMAND_LISTS", "0");
    let vp = virtual_platform::activate().unwrap();
    let core = Core::new().unwrap();
    let m = models::multi_io();
    let npu_model = compile(&core, &m, "NPU");
    let npu = NpuContext::from_compiled_model(&npu_model).unwrap();
    assert!(!npu.capabilities().mutable_command_lists, "the driver does not advertise MCL");
    // Where the NPU imports user memory, a CPU_VA tensor; elsewhere (NPU 37xx) the plugin's own host
    // memory: either way memory the graph would use in place with mutable command lists.
    let (a, b) = (m.sample_input(0), m.sample_input(1));
    let ta = common::npu::in_place_input(&npu, &a, [1, 1024]);
    let tb = PageAlignedBuffer::from_slice(&b).unwrap().into_tensor(ElementType::F32, [1, 1024]).unwrap();
    let mut request = npu_model.create_infer_request().unwrap();
    request.set_input_tensor(0, &ta).unwrap();
    request.set_input_tensor(1, &tb).unwrap();

    let sysmem_args0 = vp.counter("npu.graph_args.sysmem");
    let inferences0 = vp.counter("npu.inferences");
    request.infer().unwrap();
    request.infer().unwrap();
    assert_eq!(vp.counter("npu.inferences"), inferences0 + 2, "ran on the virtual NPU");
    assert_eq!(
        vp.counter("npu.graph_args.sysmem"),
        sysmem_args0,
        "without MCL the graph ran on the plugin's own buffers: the inputs were copied"
    );
    let want = expected(&m);
    for (i, w) in want.iter().enumerate() {
        let got = request.output_tensor(i).unwrap().bytes().unwrap().to_vec();
        m.compare(i, w, &got).unwrap();
    }
}
