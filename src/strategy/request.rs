//! [`SharedRequest`]: an inference request of a model with a shared tensor on every port, the
//! shortest way from a compiled model to zero-copy SYCL ⇄ NPU inference.

use std::fmt;

use super::{SharedTensor, Strategy};
use crate::error::{Error, Result};
use crate::openvino::{CompiledModel, ElementType, InferRequest, PortInfo, Shape, TensorType};

/// An inference request of `compiled` with one [`SharedTensor`] of the strategy bound to each input
/// and output ([`Strategy::request`]). Write the inputs through SYCL, run the request, read the
/// outputs through SYCL; the tensors stay bound, so the next inference sees the next writes.
///
/// The fields are the parts: move them out when a program wants them apart. Dropping them in any
/// order is sound (the request keeps what it binds alive).
pub struct SharedRequest {
    /// The request (`infer`, `start_async`, `wait`).
    pub request: InferRequest,
    /// One tensor per model input, in port order, made with [`TensorType::Input`].
    pub inputs: Vec<SharedTensor>,
    /// One tensor per model output, in port order, made with [`TensorType::Output`].
    pub outputs: Vec<SharedTensor>,
}

impl fmt::Debug for SharedRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedRequest").field("inputs", &self.inputs).field("outputs", &self.outputs).finish()
    }
}

impl Strategy {
    /// A request of `compiled` (a model compiled for this strategy's NPU) with a shared tensor of
    /// this strategy bound to every input and output, each of its port's element type and shape.
    /// ([`Auto::request`](super::Auto::request) picks a strategy per port instead.)
    ///
    /// # Errors
    /// [`Shape`](crate::ErrorKind::Shape) for a port with a dynamic shape (make its tensor with
    /// [`tensor`](Self::tensor) once the shape is known, and bind it yourself); the errors of
    /// [`tensor`](Self::tensor) and of binding.
    pub fn request(&self, compiled: &CompiledModel) -> Result<SharedRequest> {
        shared_request(compiled, |element_type, shape, tensor_type| self.tensor(element_type, shape, tensor_type))
    }
}

/// A request of `compiled` with a tensor from `make` bound to every port.
pub(super) fn shared_request(
    compiled: &CompiledModel,
    make: impl Fn(ElementType, Shape, TensorType) -> Result<SharedTensor>,
) -> Result<SharedRequest> {
    let port_tensor = |port: &PortInfo, tensor_type| {
        let shape = port.shape.clone().ok_or_else(|| {
            Error::shape(format!(
                "port {:?} has a dynamic shape; make its tensor with Strategy::tensor once the shape is known, and \
                 bind it yourself",
                port.name
            ))
        })?;
        make(port.element_type, shape, tensor_type)
    };
    let inputs = compiled.inputs()?.iter().map(|p| port_tensor(p, TensorType::Input)).collect::<Result<Vec<_>>>()?;
    let outputs = compiled.outputs()?.iter().map(|p| port_tensor(p, TensorType::Output)).collect::<Result<Vec<_>>>()?;
    let mut request = compiled.create_infer_request()?;
    for (i, t) in inputs.iter().enumerate() {
        request.set_input_tensor(i, t)?;
    }
    for (i, t) in outputs.iter().enumerate() {
        request.set_output_tensor(i, t)?;
    }
    Ok(SharedRequest { request, inputs, outputs })
}
