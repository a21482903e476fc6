//! `RemoteTensor`: a tensor over device-visible memory (`ov::RemoteTensor`), and its parameters.

use std::collections::BTreeMap;
use std::ffi::{c_char, c_void};
use std::sync::Arc;

use openvino_sys as sys;

use super::external::ExternalTensor;
use super::properties::parse_pointer;
use super::tensor::TensorHandle;
use super::{check, parse_params, take_ov_string, ElementType, RemoteContext, Shape};
use crate::error::Result;

/// The `MEM_TYPE` of an NPU remote tensor (`ov::intel_npu::MemType`).
///
/// `MMAPED_FILE` is not here: it needs a `FileDescriptor` value, which the C API cannot express.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemType {
    /// `L0_INTERNAL_BUF`: memory the plugin allocates (`zeMemAllocHost`).
    L0InternalBuf,
    /// `SHARED_BUF`: an imported dma-buf; on Linux `MEM_HANDLE` is the fd cast to a pointer.
    SharedBuf,
    /// `CPU_VA`: imported user memory; `MEM_HANDLE` is its address; address and size must be
    /// multiples of 4096.
    CpuVa,
}

impl MemType {
    /// The property string (`"L0_INTERNAL_BUF"`, `"SHARED_BUF"`, `"CPU_VA"`).
    pub fn as_str(self) -> &'static str {
        match self {
            MemType::L0InternalBuf => "L0_INTERNAL_BUF",
            MemType::SharedBuf => "SHARED_BUF",
            MemType::CpuVa => "CPU_VA",
        }
    }

    /// Parses a property string.
    pub fn parse(s: &str) -> Option<MemType> {
        match s {
            "L0_INTERNAL_BUF" => Some(MemType::L0InternalBuf),
            "SHARED_BUF" => Some(MemType::SharedBuf),
            "CPU_VA" => Some(MemType::CpuVa),
            _ => None,
        }
    }

    /// The `MEM_HANDLE` value for a dma-buf fd on Linux: the fd number cast to a pointer.
    #[cfg(unix)]
    pub fn fd_handle(fd: std::os::fd::RawFd) -> *mut c_void {
        fd as isize as *mut c_void
    }

    /// The `MEM_HANDLE` value for an NT handle on Windows: the handle itself.
    #[cfg(windows)]
    pub fn nt_handle(handle: std::os::windows::io::RawHandle) -> *mut c_void {
        handle
    }
}

/// The `TENSOR_TYPE` of an NPU remote tensor (`ov::intel_npu::TensorType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TensorType {
    /// `INPUT`: L0_INTERNAL_BUF memory is write-combined (treat it as CPU write-only).
    Input,
    /// `OUTPUT`.
    Output,
    /// `BINDED`: the default (except for MMAPED_FILE).
    Binded,
}

impl TensorType {
    /// The property string (`"INPUT"`, `"OUTPUT"`, `"BINDED"`).
    pub fn as_str(self) -> &'static str {
        match self {
            TensorType::Input => "INPUT",
            TensorType::Output => "OUTPUT",
            TensorType::Binded => "BINDED",
        }
    }

    /// Parses a property string.
    pub fn parse(s: &str) -> Option<TensorType> {
        match s {
            "INPUT" => Some(TensorType::Input),
            "OUTPUT" => Some(TensorType::Output),
            "BINDED" => Some(TensorType::Binded),
            _ => None,
        }
    }
}

/// The parameters of a remote tensor ([`RemoteTensor::params`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteTensorParams {
    /// `MEM_HANDLE`: always a **virtual address** (the user pointer for CPU_VA, the driver's
    /// mapping for SHARED_BUF — never the fd). Null when absent.
    pub mem_handle: *mut c_void,
    /// `MEM_TYPE`, when it is one this crate knows.
    pub mem_type: Option<MemType>,
    /// `TENSOR_TYPE`, when present and known.
    pub tensor_type: Option<TensorType>,
    /// Every parameter as printed by OpenVINO.
    pub raw: BTreeMap<String, String>,
}

/// A tensor over device-visible memory, created by a [`RemoteContext`].
///
/// It keeps its context (and so the core) alive, and whatever memory owner it was given at
/// creation. Its memory is not reachable through `ov_tensor_data`: the layer that made it knows
/// the memory (for the NPU paths, the NPU tensor and its host views).
/// Cloning is cheap and shares the tensor.
#[derive(Clone)]
pub struct RemoteTensor {
    pub(crate) handle: Arc<TensorHandle>,
    pub(crate) context: RemoteContext,
}

impl RemoteTensor {
    /// How many holders share this tensor (clones, requests, keep-alives): 1 when only one does.
    pub(crate) fn handle_count(&self) -> usize {
        Arc::strong_count(&self.handle)
    }

    /// The context that created it.
    pub fn context(&self) -> &RemoteContext {
        &self.context
    }

    /// The raw `ov_tensor_t`, still owned by this tensor; null for a tensor of another binding
    /// ([`external`](Self::external)).
    pub(crate) fn as_raw(&self) -> *mut sys::ov_tensor_t {
        self.handle.as_ptr()
    }

    /// The element type.
    pub fn element_type(&self) -> Result<ElementType> {
        self.handle.element_type()
    }

    /// The shape.
    pub fn shape(&self) -> Result<Shape> {
        self.handle.shape()
    }

    /// Whether the device may only read the tensor's memory: a CPU_VA import made with
    /// [`TensorType::Input`] (the NPU driver maps it read-only). Such a tensor cannot be bound to an
    /// output ([`InferRequest::set_output_tensor`](super::InferRequest::set_output_tensor) refuses it).
    pub fn is_read_only_for_device(&self) -> bool {
        self.handle.is_read_only_for_device()
    }

    /// The byte size of the tensor's data.
    pub fn byte_size(&self) -> Result<usize> {
        self.handle.byte_size()
    }

    /// The tensor of another OpenVINO binding this is (a C++ program's `ov::RemoteTensor`), if it
    /// is one.
    pub fn external(&self) -> Option<&dyn ExternalTensor> {
        self.handle.external()
    }

    /// The device the tensor's memory belongs to (`ov_remote_tensor_get_device_name`).
    pub fn device_name(&self) -> Result<String> {
        if let Some(t) = self.external() {
            return t.device_name();
        }
        let mut s: *mut c_char = std::ptr::null_mut();
        // SAFETY: live remote tensor; s is an out-pointer.
        check(unsafe { sys::ov_remote_tensor_get_device_name(self.as_raw(), &mut s) }, || {
            "ov_remote_tensor_get_device_name".into()
        })?;
        // SAFETY: allocated for us by the successful call.
        Ok(unsafe { take_ov_string(s) }.unwrap_or_default())
    }

    /// The tensor's parameters (`ov_remote_tensor_get_params`): MEM_HANDLE (a VA), MEM_TYPE,
    /// TENSOR_TYPE.
    pub fn params(&self) -> Result<RemoteTensorParams> {
        let raw = match self.external() {
            Some(t) => t.params()?,
            None => {
                let mut n = 0usize;
                let mut s: *mut c_char = std::ptr::null_mut();
                // SAFETY: live remote tensor; n and s are out-pointers.
                check(unsafe { sys::ov_remote_tensor_get_params(self.as_raw(), &mut n, &mut s) }, || {
                    "ov_remote_tensor_get_params".into()
                })?;
                // SAFETY: allocated for us by the successful call.
                parse_params(&unsafe { take_ov_string(s) }.unwrap_or_default())
            }
        };
        Ok(RemoteTensorParams {
            mem_handle: raw.get("MEM_HANDLE").and_then(|v| parse_pointer(v)).unwrap_or(0) as *mut c_void,
            mem_type: raw.get("MEM_TYPE").and_then(|v| MemType::parse(v)),
            tensor_type: raw.get("TENSOR_TYPE").and_then(|v| TensorType::parse(v)),
            raw,
        })
    }
}

impl std::fmt::Debug for RemoteTensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteTensor")
            .field("raw", &self.as_raw())
            .field("element_type", &self.element_type().ok())
            .field("shape", &self.shape().ok())
            .finish()
    }
}
