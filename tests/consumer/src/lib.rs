//! A user's crate: runs an OpenVINO IR model once on a device through npu-sycl-bridge.

use npu_sycl_bridge::openvino::{Core, Properties, Tensor};
use npu_sycl_bridge::Result;

/// Compiles the IR (`xml` + `weights`) for `device`, runs it once on `inputs`, and returns every
/// output's bytes.
pub fn infer_once(core: &Core, xml: &str, weights: &[u8], device: &str, inputs: &[Tensor]) -> Result<Vec<Vec<u8>>> {
    let model = core.read_model_from_memory(xml, weights)?;
    let compiled = core.compile_model(&model, device, &Properties::new())?;
    let mut request = compiled.create_infer_request()?;
    for (i, t) in inputs.iter().enumerate() {
        request.set_input_tensor(i, t)?;
    }
    request.infer()?;
    (0..compiled.outputs()?.len()).map(|i| Ok(request.output_tensor(i)?.bytes()?.to_vec())).collect()
}
