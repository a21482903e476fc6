//! OpenVINO objects held by another binding than this crate's C API layer: a C++ program's
//! `ov::RemoteContext` and `ov::RemoteTensor` (the C++ API, `crates/cpp-api`). The crate's logic
//! (the import checks, the strategies, the pool, the lifetimes) runs unchanged over them: a
//! [`RemoteContext`](super::RemoteContext) made with [`RemoteContext::external`](super::RemoteContext::external)
//! creates its tensors through [`ExternalContext::create_tensor`], and the resulting
//! [`RemoteTensor`](super::RemoteTensor)s hold the binding's tensor instead of an `ov_tensor_t`.
//!
//! Such a tensor cannot be bound to this crate's [`InferRequest`](super::InferRequest): the binding
//! that made it binds it.

use std::any::Any;
use std::collections::BTreeMap;
use std::ffi::c_void;

use super::{ElementType, MemType, Shape, TensorType};
use crate::error::Result;

/// The properties of a remote tensor: what `ov::RemoteContext::create_tensor` gets as its
/// `ov::AnyMap` (`MEM_TYPE`, and optionally `MEM_HANDLE` and `TENSOR_TYPE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TensorProperties {
    /// `MEM_TYPE`.
    pub mem_type: MemType,
    /// `MEM_HANDLE`, passed as a pointer value (for `SHARED_BUF` on Linux: the fd cast to a
    /// pointer, see [`MemType::fd_handle`]).
    pub mem_handle: Option<*mut c_void>,
    /// `TENSOR_TYPE`.
    pub tensor_type: Option<TensorType>,
}

/// A device context of another OpenVINO binding.
pub trait ExternalContext: Send + Sync + 'static {
    /// The device the context belongs to, e.g. `"NPU"`.
    fn device_name(&self) -> Result<String>;
    /// The context's parameters as OpenVINO prints them (`L0_CONTEXT` for the NPU).
    fn params(&self) -> Result<BTreeMap<String, String>>;
    /// `create_tensor(element_type, shape, properties)`.
    ///
    /// # Safety
    /// As `raw::openvino::remote_tensor`: the
    /// memory behind `MEM_HANDLE` is valid for the tensor's byte size and stays so while the
    /// returned tensor (and everything the binding lets hold it) lives.
    unsafe fn create_tensor(
        &self,
        element_type: ElementType,
        shape: &Shape,
        properties: &TensorProperties,
    ) -> Result<Box<dyn ExternalTensor>>;
}

/// A remote tensor of another OpenVINO binding.
pub trait ExternalTensor: Any + Send + Sync {
    /// The element type.
    fn element_type(&self) -> Result<ElementType>;
    /// The shape.
    fn shape(&self) -> Result<Shape>;
    /// The byte size of the tensor's data.
    fn byte_size(&self) -> Result<usize>;
    /// The device the tensor's memory belongs to.
    fn device_name(&self) -> Result<String>;
    /// The tensor's parameters as OpenVINO prints them (`MEM_HANDLE`, `MEM_TYPE`, `TENSOR_TYPE`).
    fn params(&self) -> Result<BTreeMap<String, String>>;
    /// For the binding to find its own type again.
    fn as_any(&self) -> &dyn Any;
}
