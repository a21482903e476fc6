//! Compile a [reference model](crate::models) for a device, feed it its sample inputs, and check its
//! outputs against the model's Rust reference. Failures panic with the model's name: these are for
//! tests.

use npu_sycl_bridge::openvino::{CompiledModel, Core, InferRequest, Properties, Tensor};

use crate::models::ReferenceModel;

/// Properties that make the CPU plugin compute in f32 (it may otherwise pick bf16 or f16).
pub fn cpu_properties() -> Properties {
    Properties::new().set("INFERENCE_PRECISION_HINT", "f32")
}

/// Properties that make the NPU plugin hand the driver the model itself (`NPU_COMPILER_TYPE=DRIVER`):
/// the Windows wheel also ships the plugin's own compiler, which OpenVINO prefers on NPU 40xx+ and
/// whose native blobs the virtual NPU cannot run; the Linux wheel ships none, so there it changes
/// nothing. The bridge itself never sets it.
pub fn npu_properties() -> Properties {
    Properties::new().set("NPU_COMPILER_TYPE", "DRIVER")
}

/// Reads `m` from memory and compiles it for `device` (CPU: in f32; NPU: by the driver's compiler).
pub fn compile(core: &Core, m: &ReferenceModel, device: &str) -> CompiledModel {
    let model = core.read_model_from_memory(&m.xml, &m.weights).unwrap_or_else(|e| panic!("{}: {e}", m.name));
    let props = match device {
        "CPU" => cpu_properties(),
        "NPU" => npu_properties(),
        _ => Properties::new(),
    };
    core.compile_model(&model, device, &props).unwrap_or_else(|e| panic!("{} on {device}: {e}", m.name))
}

/// What OpenVINO's CPU plugin (`cpu`, `m` compiled for "CPU") outputs for each of `inputs`, one
/// input per run, for models with one input and one output: the reference the examples check the
/// NPU against.
pub fn cpu_outputs(cpu: &CompiledModel, m: &ReferenceModel, inputs: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let d = &m.inputs[0];
    inputs
        .iter()
        .map(|x| {
            let mut r = cpu.create_infer_request().unwrap();
            r.set_input_tensor(0, &Tensor::from_bytes(d.element_type, d.shape.clone(), x).unwrap()).unwrap();
            r.infer().unwrap_or_else(|e| panic!("{} on the CPU plugin: {e}", m.name));
            r.output_tensor(0).unwrap().bytes().unwrap().to_vec()
        })
        .collect()
}

/// Host tensors holding `m`'s sample inputs.
pub fn sample_tensors(m: &ReferenceModel) -> Vec<Tensor> {
    m.inputs
        .iter()
        .enumerate()
        .map(|(i, d)| Tensor::from_bytes(d.element_type, d.shape.clone(), &m.sample_input(i)).unwrap())
        .collect()
}

/// The reference outputs for `m`'s sample inputs.
pub fn expected(m: &ReferenceModel) -> Vec<Vec<u8>> {
    let ins = m.sample_inputs();
    let refs: Vec<&[u8]> = ins.iter().map(|v| v.as_slice()).collect();
    m.reference(&refs).unwrap()
}

/// Reads every output of `request` and checks it against the reference within `m`'s tolerance;
/// returns the outputs' bytes.
pub fn check_outputs(m: &ReferenceModel, request: &mut InferRequest) -> Vec<Vec<u8>> {
    let want = expected(m);
    (0..m.outputs.len())
        .map(|i| {
            let t = request.output_tensor(i).unwrap();
            let got = t.bytes().unwrap().to_vec();
            if let Err(e) = m.compare(i, &want[i], &got) {
                panic!("{}: {e}", m.name);
            }
            got
        })
        .collect()
}
