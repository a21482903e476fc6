//! `CompiledModel`: a model compiled for one device.

use std::ffi::c_char;
use std::ptr::NonNull;
use std::sync::Arc;

use openvino_sys as sys;

use super::model::take_port;
use super::{check, cstring, take_ov_string, Core, InferRequest, KeepAlive, PortInfo, RemoteContext};
use crate::error::{Error, Result};

pub(crate) struct CompiledModelInner {
    ptr: NonNull<sys::ov_compiled_model_t>,
    // Dropped after the compiled model is freed.
    core: Core,
}

// SAFETY: `ov::CompiledModel` is documented thread-safe (creating requests, querying ports and
// properties, exporting may happen concurrently); the `ov_compiled_model_t` holder has no thread
// affinity and may be freed on any thread.
unsafe impl Send for CompiledModelInner {}
// SAFETY: see `Send`.
unsafe impl Sync for CompiledModelInner {}

impl Drop for CompiledModelInner {
    fn drop(&mut self) {
        // SAFETY: owned pointer, freed once; requests and contexts made from it hold an Arc to
        // this inner. ov_compiled_model_free does not throw.
        unsafe { sys::ov_compiled_model_free(self.ptr.as_ptr()) };
    }
}

/// A model compiled for a device ([`Core::compile_model`], [`Core::import_model`]).
///
/// Cloning is cheap and shares the compiled model. It keeps its [`Core`] alive; requests and
/// contexts created from it keep it alive.
#[derive(Clone)]
pub struct CompiledModel {
    pub(crate) inner: Arc<CompiledModelInner>,
}

impl CompiledModel {
    /// # Safety
    /// `ptr` is a valid `ov_compiled_model_t` nobody else frees, created by `core`.
    pub(crate) unsafe fn from_raw(ptr: *mut sys::ov_compiled_model_t, core: Core) -> Result<CompiledModel> {
        let ptr =
            NonNull::new(ptr).ok_or_else(|| Error::invalid_argument("OpenVINO returned a null compiled model"))?;
        Ok(CompiledModel { inner: Arc::new(CompiledModelInner { ptr, core }) })
    }

    /// The raw `ov_compiled_model_t`, still owned by this compiled model.
    pub(crate) fn as_raw(&self) -> *mut sys::ov_compiled_model_t {
        self.inner.ptr.as_ptr()
    }

    /// The core this model was compiled by.
    pub fn core(&self) -> &Core {
        &self.inner.core
    }

    pub(crate) fn keepalive(&self) -> KeepAlive {
        self.inner.clone()
    }

    /// The inputs, in order.
    pub fn inputs(&self) -> Result<Vec<PortInfo>> {
        let mut n = 0usize;
        // SAFETY: live compiled model; n is an out-pointer.
        check(unsafe { sys::ov_compiled_model_inputs_size(self.as_raw(), &mut n) }, || {
            "ov_compiled_model_inputs_size".into()
        })?;
        (0..n)
            .map(|i| {
                let mut p = std::ptr::null_mut();
                // SAFETY: live compiled model; i < n; p is an out-pointer.
                check(unsafe { sys::ov_compiled_model_input_by_index(self.as_raw(), i, &mut p) }, || {
                    format!("ov_compiled_model_input_by_index({i})")
                })?;
                // SAFETY: p is a new port owned here; the compiled model is alive.
                unsafe { take_port(p) }
            })
            .collect()
    }

    /// The outputs, in order.
    pub fn outputs(&self) -> Result<Vec<PortInfo>> {
        let mut n = 0usize;
        // SAFETY: live compiled model; n is an out-pointer.
        check(unsafe { sys::ov_compiled_model_outputs_size(self.as_raw(), &mut n) }, || {
            "ov_compiled_model_outputs_size".into()
        })?;
        (0..n)
            .map(|i| {
                let mut p = std::ptr::null_mut();
                // SAFETY: live compiled model; i < n; p is an out-pointer.
                check(unsafe { sys::ov_compiled_model_output_by_index(self.as_raw(), i, &mut p) }, || {
                    format!("ov_compiled_model_output_by_index({i})")
                })?;
                // SAFETY: p is a new port owned here; the compiled model is alive.
                unsafe { take_port(p) }
            })
            .collect()
    }

    /// Whether `name` is one of the tensor names of an input (any of its names, not only the first).
    pub fn has_input_named(&self, name: &str) -> Result<bool> {
        let c = cstring("tensor name", name)?;
        let mut p = std::ptr::null_mut();
        // SAFETY: live compiled model; c outlives the call; p is an out-pointer.
        let status = unsafe { sys::ov_compiled_model_input_by_name(self.as_raw(), c.as_ptr(), &mut p) };
        if status != sys::ov_status_e::OK || p.is_null() {
            return Ok(false);
        }
        // SAFETY: p is a new port owned here (freed by take_port); the compiled model is alive.
        unsafe { take_port(p) }?;
        Ok(true)
    }

    /// A property of the compiled model as a string (`ov_compiled_model_get_property`).
    pub fn property(&self, key: &str) -> Result<String> {
        let c_key = cstring("property key", key)?;
        let mut v: *mut c_char = std::ptr::null_mut();
        // SAFETY: live compiled model; key outlives the call; v is an out-pointer.
        check(unsafe { sys::ov_compiled_model_get_property(self.as_raw(), c_key.as_ptr(), &mut v) }, || {
            format!("ov_compiled_model_get_property({key:?})")
        })?;
        // SAFETY: allocated for us by the successful call.
        Ok(unsafe { take_ov_string(v) }.unwrap_or_default())
    }

    /// A new inference request. It keeps this compiled model alive.
    pub fn create_infer_request(&self) -> Result<InferRequest> {
        let mut r = std::ptr::null_mut();
        // SAFETY: live compiled model; r is an out-pointer.
        check(unsafe { sys::ov_compiled_model_create_infer_request(self.as_raw(), &mut r) }, || {
            "ov_compiled_model_create_infer_request".into()
        })?;
        // SAFETY: r is a new request nobody else owns, created from self.
        unsafe { InferRequest::from_raw(r, self.clone()) }
    }

    /// The device context this model was compiled for (`ov_compiled_model_get_context`). For the
    /// NPU it is the same context as [`Core::default_context`]. It keeps this compiled model alive.
    pub fn context(&self) -> Result<RemoteContext> {
        let mut ctx = std::ptr::null_mut();
        // SAFETY: live compiled model; ctx is an out-pointer.
        check(unsafe { sys::ov_compiled_model_get_context(self.as_raw(), &mut ctx) }, || {
            "ov_compiled_model_get_context".into()
        })?;
        // SAFETY: ctx is a new context nobody else owns.
        unsafe { RemoteContext::from_raw(ctx, self.keepalive()) }
    }

    /// Exports the compiled model to `path` (`ov_compiled_model_export_model`).
    pub fn export_to_file(&self, path: &std::path::Path) -> Result<()> {
        let s = path
            .to_str()
            .ok_or_else(|| Error::invalid_argument(format!("the path {} is not valid UTF-8", path.display())))?;
        let c = cstring("path", s)?;
        // SAFETY: live compiled model; c outlives the call.
        check(unsafe { sys::ov_compiled_model_export_model(self.as_raw(), c.as_ptr()) }, || {
            format!("exporting the compiled model to {}", path.display())
        })
    }

    /// Exports the compiled model to bytes that [`Core::import_model`] accepts. The C API only
    /// exports to a file, so this goes through a temporary file that is removed afterwards.
    pub fn export(&self) -> Result<Vec<u8>> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            "npu-sycl-bridge-export-{}-{}.blob",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        struct Remove<'a>(&'a std::path::Path);
        impl Drop for Remove<'_> {
            fn drop(&mut self) {
                let _ = std::fs::remove_file(self.0);
            }
        }
        let _remove = Remove(&path);
        self.export_to_file(&path)?;
        std::fs::read(&path).map_err(|e| Error::io(format!("reading the exported model {}", path.display()), e))
    }
}

impl std::fmt::Debug for CompiledModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledModel").field("raw", &self.as_raw()).finish()
    }
}
