//! A safe layer over OpenVINO's C API (`openvino-sys`, loaded at run time).
//!
//! | type | owns | keeps alive |
//! |------|------|-------------|
//! | [`Core`] | `ov_core_t` | — |
//! | [`Model`] | `ov_model_t` | its [`Core`] |
//! | [`CompiledModel`] | `ov_compiled_model_t` | its [`Core`] |
//! | [`RemoteContext`] | `ov_remote_context_t` | its [`Core`] or [`CompiledModel`] |
//! | [`Tensor`] | `ov_tensor_t` (host memory) | whatever memory it wraps |
//! | [`RemoteTensor`] | `ov_tensor_t` (device / shared memory) | its [`RemoteContext`] and the memory it wraps |
//! | [`RemoteContext::external`], [`ExternalTensor`] | a C++ program's `ov::RemoteContext` / `ov::RemoteTensor` (another binding) | what the binding holds |
//! | [`InferRequest`] | `ov_infer_request_t` | its [`CompiledModel`] and every bound tensor, until it was rebound **and** the next inference finished |
//!
//! Every handle has exactly one owner and is freed once, in `Drop` (which never panics). The
//! handle types hold `Arc`s to their parents, so a parent can never be freed before a child:
//! dropping a [`Core`] while a tensor of one of its contexts is still bound to a request is fine.
//!
//! Errors from OpenVINO have the kind [`ErrorKind::OpenVino`](crate::ErrorKind::OpenVino) and
//! carry OpenVINO's last error message. That message is process-global in the C API (not per
//! thread), so when two threads fail at the same moment one may see the other's text.
//!
//! ```no_run
//! use testkit::models;
//! use npu_sycl_bridge::openvino::{Core, Properties, Tensor};
//!
//! # fn main() -> npu_sycl_bridge::Result<()> {
//! let core = Core::new()?;
//! let m = models::fully_connected();
//! let model = core.read_model_from_memory(&m.xml, &m.weights)?;
//! let compiled = core.compile_model(&model, "CPU", &Properties::new())?;
//! let mut request = compiled.create_infer_request()?;
//! let input = Tensor::from_bytes(m.inputs[0].element_type, &m.inputs[0].shape, &m.sample_input(0))?;
//! request.set_input_tensor(0, &input)?;
//! request.infer()?;
//! let output = request.output_tensor(0)?;
//! println!("{:?}", &output.data::<f32>()?[..4]);
//! # Ok(()) }
//! ```

mod compiled_model;
mod core;
mod element_type;
mod external;
mod infer_request;
mod library;
mod model;
mod properties;
mod remote_context;
mod remote_tensor;
mod shape;
pub(crate) mod tensor;

pub use self::compiled_model::CompiledModel;
pub use self::core::{Core, DeviceVersion};
pub use self::element_type::{Element, ElementType, F16};
pub use self::external::{ExternalContext, ExternalTensor, TensorProperties};
pub(crate) use self::infer_request::sealed::Sealed as BindableSealed;
pub use self::infer_request::{Bindable, InferRequest};
pub use self::library::{library_path, load, OPENVINO_C_ENV};
pub use self::model::{Model, PortInfo};
pub use self::properties::{parse_params, Properties};
pub use self::remote_context::RemoteContext;
pub use self::remote_tensor::{MemType, RemoteTensor, RemoteTensorParams, TensorType};
pub use self::shape::Shape;
pub(crate) use self::tensor::TensorHandle;
#[cfg(feature = "sycl")]
pub(crate) use self::tensor::TensorUse;
pub use self::tensor::{Tensor, TensorBytes, TensorBytesMut, TensorData, TensorDataMut};

pub(crate) use crate::ownership::KeepAlive;

use std::ffi::{c_char, CStr, CString};

use openvino_sys as sys;

use crate::error::{Error, Result};

/// Turns an `ov_status_e` into a `Result`; on failure the message is "`what`: STATUS (code): last
/// OpenVINO error message".
pub(crate) fn check(status: sys::ov_status_e, what: impl FnOnce() -> String) -> Result<()> {
    if status == sys::ov_status_e::OK {
        return Ok(());
    }
    let code = status as i32;
    // INVALID_C_PARAM is returned before the C shim catches anything, so the last message would
    // be a stale one from an earlier failure.
    let detail = if status == sys::ov_status_e::INVALID_C_PARAM {
        "a parameter passed to the C API is invalid (null or out of range)".to_string()
    } else {
        last_error_message().unwrap_or_else(|| "OpenVINO gave no error message".into())
    };
    Err(Error::openvino(code, format!("{}: {}", what(), tidy(&detail, &format!("{status:?} ({code})")))))
}

/// OpenVINO messages nest "Exception from <file>:<line>:" lines around the actual text. This puts
/// the text first and the status and throw locations after it, on one line.
fn tidy(detail: &str, status: &str) -> String {
    let mut text = Vec::new();
    let mut at = Vec::new();
    for line in detail.lines().map(str::trim).filter(|l| !l.is_empty()) {
        match line.strip_prefix("Exception from ") {
            Some(loc) => at.push(loc.trim_end_matches(':')),
            None => text.push(line),
        }
    }
    let text = if text.is_empty() { "no details".to_string() } else { text.join(" ") };
    if at.is_empty() {
        format!("{text} [{status}]")
    } else {
        format!("{text} [{status}; thrown at {}]", at.join(" < "))
    }
}

/// OpenVINO's last error message (process-global), if any.
pub(crate) fn last_error_message() -> Option<String> {
    // SAFETY: ov_get_last_err_msg takes no arguments; it returns null or a new[]-allocated copy of
    // the message, which take_ov_string frees with ov_free.
    let p = unsafe { sys::ov_get_last_err_msg() };
    // SAFETY: p is null or a NUL-terminated string owned by us, allocated by the C library.
    unsafe { take_ov_string(p) }
}

/// Copies an OpenVINO-allocated string and frees it with `ov_free`. Null gives `None`.
///
/// # Safety
/// `p` is null or a NUL-terminated string allocated by the OpenVINO C library that nobody else
/// frees.
pub(crate) unsafe fn take_ov_string(p: *const c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    // SAFETY: guaranteed by the caller: p is a valid NUL-terminated string.
    let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
    // SAFETY: p was allocated by the C library (new[]), ov_free is its matching delete[].
    unsafe { sys::ov_free(p) };
    Some(s)
}

/// A C string for OpenVINO, or an InvalidArgument error naming `what` if `s` contains a NUL.
pub(crate) fn cstring(what: &str, s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::invalid_argument(format!("{what} {s:?} contains a NUL byte")))
}
