//! `RemoteContext`: a device's context (`ov_remote_context_t`).

use std::collections::BTreeMap;
use std::ffi::{c_char, c_void, CString};
use std::ptr::NonNull;
use std::sync::Arc;

use openvino_sys as sys;

use super::external::{ExternalContext, TensorProperties};
use super::properties::parse_pointer;
use super::remote_tensor::{MemType, RemoteTensor, TensorType};
use super::tensor::TensorHandle;
use super::{check, parse_params, take_ov_string, ElementType, KeepAlive, Shape, Tensor};
use crate::error::{Error, Result};

pub(crate) enum ContextInner {
    Native {
        ptr: NonNull<sys::ov_remote_context_t>,
        // The Core or CompiledModel the context came from; dropped after the context is freed.
        _parent: KeepAlive,
    },
    External(Box<dyn ExternalContext>),
}

// SAFETY: an `ov_remote_context_t` holds a `std::shared_ptr<ov::RemoteContext>`; the holder has no
// thread affinity (an external context is Send + Sync by its type). The methods used
// (`get_device_name`, `get_params`, `create_tensor`, `create_host_tensor`) are const and plugins'
// contexts are shared by concurrently running compiled models and requests, so concurrent calls
// are expected by OpenVINO.
unsafe impl Send for ContextInner {}
// SAFETY: see `Send`.
unsafe impl Sync for ContextInner {}

impl Drop for ContextInner {
    fn drop(&mut self) {
        if let ContextInner::Native { ptr, .. } = self {
            // SAFETY: owned holder, freed once. It only releases this reference: the NPU plugin's
            // Level Zero context itself lives as long as the plugin. Does not throw.
            unsafe { sys::ov_remote_context_free(ptr.as_ptr()) };
        }
    }
}

/// A device context: for the NPU, the plugin's one Level Zero context (one per [`Core`](super::Core)).
///
/// Obtained from [`Core::default_context`](super::Core::default_context) or
/// [`CompiledModel::context`](super::CompiledModel::context); keeps its core (or compiled model)
/// alive. Cloning is cheap and shares it.
#[derive(Clone)]
pub struct RemoteContext {
    pub(crate) inner: Arc<ContextInner>,
}

impl RemoteContext {
    /// # Safety
    /// `ptr` is a valid `ov_remote_context_t` nobody else frees; `parent` keeps its creator alive.
    pub(crate) unsafe fn from_raw(ptr: *mut sys::ov_remote_context_t, parent: KeepAlive) -> Result<RemoteContext> {
        let ptr = NonNull::new(ptr).ok_or_else(|| Error::invalid_argument("OpenVINO returned a null context"))?;
        Ok(RemoteContext { inner: Arc::new(ContextInner::Native { ptr, _parent: parent }) })
    }

    /// A context of another OpenVINO binding (a C++ program's `ov::RemoteContext`): tensors are
    /// created through it, and the crate's checks and lifetimes apply to them as to its own.
    pub fn external(context: Box<dyn ExternalContext>) -> RemoteContext {
        RemoteContext { inner: Arc::new(ContextInner::External(context)) }
    }

    /// The raw `ov_remote_context_t`, still owned by this context; null for a context of another
    /// binding.
    pub(crate) fn as_raw(&self) -> *mut sys::ov_remote_context_t {
        match &*self.inner {
            ContextInner::Native { ptr, .. } => ptr.as_ptr(),
            ContextInner::External(_) => std::ptr::null_mut(),
        }
    }

    fn external_context(&self) -> Option<&dyn ExternalContext> {
        match &*self.inner {
            ContextInner::Native { .. } => None,
            ContextInner::External(c) => Some(c.as_ref()),
        }
    }

    pub(crate) fn keepalive(&self) -> KeepAlive {
        self.inner.clone()
    }

    /// The device the context belongs to, e.g. `"NPU"`.
    pub fn device_name(&self) -> Result<String> {
        if let Some(c) = self.external_context() {
            return c.device_name();
        }
        let mut s: *mut c_char = std::ptr::null_mut();
        // SAFETY: live context; s is an out-pointer.
        check(unsafe { sys::ov_remote_context_get_device_name(self.as_raw(), &mut s) }, || {
            "ov_remote_context_get_device_name".into()
        })?;
        // SAFETY: allocated for us by the successful call.
        Ok(unsafe { take_ov_string(s) }.unwrap_or_default())
    }

    /// The context's parameters (`ov_remote_context_get_params`), e.g. `{"L0_CONTEXT": "0x55aa…"}`.
    pub fn params(&self) -> Result<BTreeMap<String, String>> {
        if let Some(c) = self.external_context() {
            return c.params();
        }
        let mut n = 0usize;
        let mut s: *mut c_char = std::ptr::null_mut();
        // SAFETY: live context; n and s are out-pointers.
        check(unsafe { sys::ov_remote_context_get_params(self.as_raw(), &mut n, &mut s) }, || {
            "ov_remote_context_get_params".into()
        })?;
        // SAFETY: allocated for us by the successful call (n counts pairs, not bytes).
        let text = unsafe { take_ov_string(s) }.unwrap_or_default();
        Ok(parse_params(&text))
    }

    /// The NPU plugin's Level Zero context (`ze_context_handle_t`), from the `L0_CONTEXT` parameter.
    ///
    /// It belongs to the plugin: never destroy it, and do not use it after every clone of this
    /// context (and the [`Core`](super::Core) it keeps alive) is gone.
    ///
    /// # Errors
    /// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) when the context has no
    /// `L0_CONTEXT` (it is not an NPU context).
    pub fn l0_context(&self) -> Result<*mut c_void> {
        let p = self.params()?;
        let v = p.get("L0_CONTEXT").ok_or_else(|| {
            Error::invalid_argument(format!(
                "the {} context has no L0_CONTEXT parameter (only the NPU context has one); params: {p:?}",
                self.device_name().unwrap_or_else(|_| "?".into())
            ))
        })?;
        let a = parse_pointer(v)
            .ok_or_else(|| Error::invalid_argument(format!("L0_CONTEXT value {v:?} is not a pointer")))?;
        Ok(a as *mut c_void)
    }

    /// A plain host tensor whose memory the device's plugin allocates
    /// (`ov_remote_context_create_host_tensor`; for the NPU: `zeMemAllocHost` memory that it
    /// uses without a copy). Its data can be read and written like any [`Tensor`]'s. It keeps this
    /// context alive.
    pub fn create_host_tensor(&self, element_type: ElementType, shape: impl Into<Shape>) -> Result<Tensor> {
        let shape = shape.into();
        if self.external_context().is_some() {
            return Err(Error::invalid_argument(
                "create_host_tensor: the context belongs to another OpenVINO binding; create host tensors there",
            ));
        }
        let mut dims = shape.to_i64()?;
        let mut t = std::ptr::null_mut();
        check(
            // SAFETY: live context; the shape borrows dims for the call (copied by the C API); t is an
            // out-pointer.
            unsafe {
                sys::ov_remote_context_create_host_tensor(
                    self.as_raw(),
                    element_type.to_sys(),
                    Shape::as_sys(&mut dims),
                    &mut t,
                )
            },
            || format!("ov_remote_context_create_host_tensor({element_type}, {shape})"),
        )?;
        // SAFETY: t is a new tensor nobody else owns; its memory belongs to the plugin, which the
        // context (kept alive) keeps loaded.
        unsafe { Tensor::from_raw(t, vec![self.keepalive()]) }
    }

    /// A remote tensor whose memory the plugin allocates (`MEM_TYPE=L0_INTERNAL_BUF` with
    /// `TENSOR_TYPE=tensor_type`; for the NPU: `zeMemAllocHost`, rounded up to 4 KiB).
    ///
    /// [`TensorType::Input`] memory is write-combined: fast for CPU writes, very slow for CPU reads.
    pub fn create_l0_host_tensor(
        &self,
        element_type: ElementType,
        shape: impl Into<Shape>,
        tensor_type: TensorType,
    ) -> Result<RemoteTensor> {
        // SAFETY: no memory handle is passed: the plugin allocates and owns the memory.
        unsafe {
            let properties =
                TensorProperties { mem_type: MemType::L0InternalBuf, mem_handle: None, tensor_type: Some(tensor_type) };
            self.create_tensor_over(element_type, shape.into(), properties, Vec::new(), false)
        }
    }

    /// A remote tensor over memory named by typed properties (`ov_remote_context_create_tensor_props`
    /// with `MEM_TYPE`, optionally `MEM_HANDLE` and `TENSOR_TYPE`), of memory the device may only
    /// read when `read_only_for_device` (the NPU driver imports it read-only): the tensor then
    /// cannot be bound where an inference writes.
    ///
    /// # Safety
    /// As `raw::openvino::remote_tensor`, the public door to it.
    pub(crate) unsafe fn create_tensor_over(
        &self,
        element_type: ElementType,
        shape: Shape,
        properties: TensorProperties,
        keepalive: Vec<KeepAlive>,
        read_only_for_device: bool,
    ) -> Result<RemoteTensor> {
        let TensorProperties { mem_type, mem_handle, tensor_type } = properties;
        let mut keep = keepalive;
        keep.push(self.keepalive());
        let handle = match self.external_context() {
            Some(c) => {
                // SAFETY: the caller's contract is the one `create_tensor` asks for.
                let t = unsafe { c.create_tensor(element_type, &shape, &properties) }?;
                TensorHandle::from_external(t, keep, read_only_for_device)
            }
            None => {
                // SAFETY: the caller's contract.
                let t = unsafe { self.create_native_tensor(element_type, &shape, mem_type, mem_handle, tensor_type) }?;
                // SAFETY: t is a new tensor nobody else owns; keep holds the context and (caller's
                // contract) the wrapped memory.
                unsafe { TensorHandle::from_raw_remote(t, keep, read_only_for_device) }?
            }
        };
        Ok(RemoteTensor { handle, context: self.clone() })
    }

    /// `ov_remote_context_create_tensor_props`: a new `ov_tensor_t` the caller owns.
    ///
    /// # Safety
    /// As [`create_tensor_over`](Self::create_tensor_over).
    unsafe fn create_native_tensor(
        &self,
        element_type: ElementType,
        shape: &Shape,
        mem_type: MemType,
        mem_handle: Option<*mut c_void>,
        tensor_type: Option<TensorType>,
    ) -> Result<*mut sys::ov_tensor_t> {
        let mut dims = shape.to_i64()?;
        let mem_type_c = CString::new(mem_type.as_str()).expect("no NUL in a MemType name");
        let tensor_type_c = tensor_type.map(|t| CString::new(t.as_str()).expect("no NUL in a TensorType name"));
        let mut props = vec![sys::ov_property_t { key: c"MEM_TYPE".as_ptr(), value: mem_type_c.as_ptr().cast() }];
        if let Some(h) = mem_handle {
            props.push(sys::ov_property_t { key: c"MEM_HANDLE".as_ptr(), value: h.cast_const() });
        }
        if let Some(t) = &tensor_type_c {
            props.push(sys::ov_property_t { key: c"TENSOR_TYPE".as_ptr(), value: t.as_ptr().cast() });
        }
        let mut t = std::ptr::null_mut();
        check(
            // SAFETY: live context; the shape borrows dims and the properties point into static keys,
            // mem_type_c and tensor_type_c, all alive during the call (the C API copies strings; the
            // handle is stored as a pointer value); num_properties counts pairs. The validity of the
            // handle is the caller's contract.
            unsafe {
                sys::ov_remote_context_create_tensor_props(
                    self.as_raw(),
                    element_type.to_sys(),
                    Shape::as_sys(&mut dims),
                    props.len(),
                    props.as_ptr(),
                    &mut t,
                )
            },
            || {
                format!(
                    "creating a {} remote tensor ({element_type}, {shape}, MEM_HANDLE {:?}, TENSOR_TYPE {})",
                    mem_type.as_str(),
                    mem_handle,
                    tensor_type.map_or("default", |t| t.as_str())
                )
            },
        )?;
        Ok(t)
    }
}

impl std::fmt::Debug for RemoteContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteContext").field("raw", &self.as_raw()).finish()
    }
}
