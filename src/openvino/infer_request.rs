//! `InferRequest`: runs a compiled model, and keeps the tensors bound to it alive.

use std::cell::Cell;
use std::ffi::CString;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::Arc;

use openvino_sys as sys;

use super::tensor::TensorHandle;
use super::{check, cstring, CompiledModel, PortInfo, RemoteTensor, Tensor};
use crate::error::{Error, Result};

pub(crate) mod sealed {
    use super::{Arc, TensorHandle};

    pub trait Sealed {
        fn handle(&self) -> &Arc<TensorHandle>;
    }
}

/// A tensor that can be bound to an [`InferRequest`]: [`Tensor`] or [`RemoteTensor`]. Sealed: a
/// request only ever holds tensors whose memory this crate keeps alive.
pub trait Bindable: sealed::Sealed {}

impl sealed::Sealed for Tensor {
    fn handle(&self) -> &Arc<TensorHandle> {
        &self.handle
    }
}
impl Bindable for Tensor {}
impl sealed::Sealed for RemoteTensor {
    fn handle(&self) -> &Arc<TensorHandle> {
        &self.handle
    }
}
impl Bindable for RemoteTensor {}

/// The tensors bound to ports, with whether the inference writes each. A few ports per model: a
/// vector searched in order costs less per bind and inference than hashing the port.
#[derive(Default)]
struct Bindings(Vec<(Port, (Arc<TensorHandle>, bool))>);

impl Bindings {
    fn get(&self, port: &Port) -> Option<&(Arc<TensorHandle>, bool)> {
        self.0.iter().find(|(p, _)| p == port).map(|(_, b)| b)
    }

    /// Binds `port`, returning what it held.
    fn insert(&mut self, port: Port, value: (Arc<TensorHandle>, bool)) -> Option<(Arc<TensorHandle>, bool)> {
        match self.0.iter_mut().find(|(p, _)| *p == port) {
            Some((_, b)) => Some(std::mem::replace(b, value)),
            None => {
                self.0.push((port, value));
                None
            }
        }
    }

    fn values(&self) -> impl Iterator<Item = &(Arc<TensorHandle>, bool)> {
        self.0.iter().map(|(_, b)| b)
    }

    fn iter(&self) -> impl Iterator<Item = (&Port, &(Arc<TensorHandle>, bool))> {
        self.0.iter().map(|(p, b)| (p, b))
    }

    fn len(&self) -> usize {
        self.0.len()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Port {
    Input(usize),
    Output(usize),
    /// A tensor name that is not the first name of any port.
    Name(String),
}

impl std::fmt::Display for Port {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Port::Input(i) => write!(f, "input {i}"),
            Port::Output(i) => write!(f, "output {i}"),
            Port::Name(n) => write!(f, "tensor {n:?}"),
        }
    }
}

/// An inference request of a [`CompiledModel`].
///
/// # Keep-alive
/// The request holds its compiled model, and every tensor bound to it with `set_*` (and every
/// tensor of its own handed out by `input_tensor`/`output_tensor`/`tensor`). When a port is
/// rebound, the previous tensor is held until the **next inference after the rebinding has
/// finished successfully** (`infer` returned, or `wait` returned after `start_async`), or until the
/// request is dropped: OpenVINO (and the NPU plugin's recorded command lists) may still refer to it
/// until then. Tensors keep alive the memory they wrap, so memory bound once can never be freed
/// under a request.
///
/// # Data access and running inferences
/// While an inference runs, the tensors it uses cannot be viewed ([`Tensor::data`] fails), and an
/// inference cannot start while a view of one of them is alive (`infer`/`start_async` fail).
/// Rebinding or fetching tensors during `start_async` … `wait` fails too.
///
/// `InferRequest` is `Send` but not `Sync`: an `ov::InferRequest` may move between threads but
/// must not be used by two threads at once.
pub struct InferRequest {
    ptr: NonNull<sys::ov_infer_request_t>,
    inputs: Vec<PortInfo>,
    outputs: Vec<PortInfo>,
    // Fields drop in this order after Drop::drop has freed the request: tensors first, then the
    // compiled model (OpenVINO's recommended teardown order).
    /// Each bound tensor, and whether inferences write into it (outputs).
    bound: Bindings,
    /// Replaced bindings, released after the next successful inference.
    retired: Vec<Arc<TensorHandle>>,
    /// The tensors marked in use by the running asynchronous inference.
    running: Option<Vec<(Arc<TensorHandle>, bool)>>,
    model: CompiledModel,
    _not_sync: PhantomData<Cell<()>>,
}

// SAFETY: `ov::InferRequest` may be used from any thread as long as calls are not concurrent; the
// `ov_infer_request_t` holder has no thread affinity. Everything else held is Send. Not Sync
// (PhantomData<Cell<()>>): all methods that touch the request take `&mut self` or only read
// cached Rust data, but the type makes no concurrency promise.
unsafe impl Send for InferRequest {}

impl InferRequest {
    /// # Safety
    /// `ptr` is a valid `ov_infer_request_t` nobody else frees, created from `model`.
    pub(crate) unsafe fn from_raw(ptr: *mut sys::ov_infer_request_t, model: CompiledModel) -> Result<InferRequest> {
        let ptr = NonNull::new(ptr).ok_or_else(|| Error::invalid_argument("OpenVINO returned a null request"))?;
        // Own the pointer before anything else can fail.
        let mut r = InferRequest {
            ptr,
            model,
            inputs: Vec::new(),
            outputs: Vec::new(),
            bound: Bindings::default(),
            retired: Vec::new(),
            running: None,
            _not_sync: PhantomData,
        };
        r.inputs = r.model.inputs()?;
        r.outputs = r.model.outputs()?;
        Ok(r)
    }

    /// The raw `ov_infer_request_t`, still owned by this request.
    pub(crate) fn as_raw(&self) -> *mut sys::ov_infer_request_t {
        self.ptr.as_ptr()
    }

    /// The compiled model this request runs.
    pub fn compiled_model(&self) -> &CompiledModel {
        &self.model
    }

    /// The model's inputs (cached at creation).
    pub fn inputs(&self) -> &[PortInfo] {
        &self.inputs
    }

    /// The model's outputs (cached at creation).
    pub fn outputs(&self) -> &[PortInfo] {
        &self.outputs
    }

    /// Whether an asynchronous inference was started and not yet waited for.
    pub fn is_running(&self) -> bool {
        self.running.is_some()
    }

    /// The tensor bound to input (or, with `output`, output) `index`, when the request is idle and
    /// holds it only there (not also bound elsewhere or retired): rebinding it to that port
    /// changes nothing for the plugin.
    pub(crate) fn sole_binding(&self, output: bool, index: usize) -> Option<&Arc<TensorHandle>> {
        if self.running.is_some() {
            return None;
        }
        let port = if output { Port::Output(index) } else { Port::Input(index) };
        let (handle, _) = self.bound.get(&port)?;
        let holds = self.bound.values().filter(|(h, _)| Arc::ptr_eq(h, handle)).count()
            + self.retired.iter().filter(|h| Arc::ptr_eq(h, handle)).count();
        (holds == 1).then_some(handle)
    }

    /// `what` is only formatted on the error path: this runs on every bind, read and inference.
    fn ensure_idle(&self, what: &dyn std::fmt::Display) -> Result<()> {
        if self.running.is_some() {
            return Err(Error::invalid_argument(format!(
                "{what}: an asynchronous inference is running on this request; call wait() first"
            )));
        }
        Ok(())
    }

    fn port_info(&self, port: &Port) -> Option<&PortInfo> {
        match port {
            Port::Input(i) => self.inputs.get(*i),
            Port::Output(i) => self.outputs.get(*i),
            Port::Name(_) => None,
        }
    }

    fn port_for_name(&self, name: &str) -> Port {
        if let Some(i) = self.inputs.iter().position(|p| p.name == name) {
            Port::Input(i)
        } else if let Some(i) = self.outputs.iter().position(|p| p.name == name) {
            Port::Output(i)
        } else {
            Port::Name(name.to_string())
        }
    }

    fn check_index(&self, port: &Port) -> Result<()> {
        let (index, n, kind) = match port {
            Port::Input(i) => (*i, self.inputs.len(), "inputs"),
            Port::Output(i) => (*i, self.outputs.len(), "outputs"),
            Port::Name(_) => return Ok(()),
        };
        if index >= n {
            return Err(Error::invalid_argument(format!("{port} does not exist: the model has {n} {kind}")));
        }
        Ok(())
    }

    /// Whether an inference writes into `port`: outputs, and names that are no input's.
    fn written_by_inference(&self, port: &Port) -> Result<bool> {
        Ok(match port {
            Port::Input(_) => false,
            Port::Output(_) => true,
            Port::Name(n) => !self.model.has_input_named(n)?,
        })
    }

    /// Checks a tensor against the port's element type and static shape.
    fn validate(&self, port: &Port, handle: &TensorHandle) -> Result<()> {
        match self.port_info(port) {
            Some(info) => check_port(port, info, handle),
            None => Ok(()),
        }
    }

    fn set(&mut self, port: Port, tensor: &dyn Bindable) -> Result<()> {
        self.ensure_idle(&format_args!("binding a tensor to {port}"))?;
        self.check_index(&port)?;
        let handle = tensor.handle();
        // The tensor already bound here passed every check (its type and shape never change), and
        // the plugin would do nothing with it: the NPU plugin's `ZeroInferRequest::set_tensor`
        // returns early for the same tensor object (openvino@001daf28,
        // src/plugins/intel_npu/src/backend/src/zero_infer_request.cpp). So the common loop that
        // rebinds each inference makes no C call.
        if self.bound.get(&port).is_some_and(|(h, _)| Arc::ptr_eq(h, handle)) {
            return Ok(());
        }
        self.validate(&port, handle)?;
        let writes = self.written_by_inference(&port)?;
        check_writable(&port, handle, writes)?;
        let raw = self.as_raw();
        let t = handle.native()?;
        // SAFETY (all three): live request and tensor; the C API copies the ov::Tensor (a
        // shared_ptr), and this request keeps our handle (and what it wraps) alive as documented.
        let status = match &port {
            // SAFETY: as above.
            Port::Input(i) => unsafe { sys::ov_infer_request_set_input_tensor_by_index(raw, *i, t) },
            // SAFETY: as above.
            Port::Output(i) => unsafe { sys::ov_infer_request_set_output_tensor_by_index(raw, *i, t) },
            Port::Name(n) => {
                let c = cstring("tensor name", n)?;
                // SAFETY: as above; c outlives the call.
                unsafe { sys::ov_infer_request_set_tensor(raw, c.as_ptr(), t) }
            }
        };
        check(status, || format!("binding a tensor to {port}"))?;
        // Another tensor than the one bound here (the same one returned above): the old one is
        // retired until the next inference finished.
        if let Some((old, _)) = self.bound.insert(port, (handle.clone(), writes)) {
            self.retired.push(old);
        }
        Ok(())
    }

    /// Binds `tensor` to input `index`.
    ///
    /// # Errors
    /// [`Shape`](crate::ErrorKind::Shape) / [`ElementType`](crate::ErrorKind::ElementType) if it
    /// does not match the input; [`InvalidArgument`](crate::ErrorKind::InvalidArgument) for a bad
    /// index or while an asynchronous inference runs; [`OpenVino`](crate::ErrorKind::OpenVino) if
    /// OpenVINO refuses it.
    pub fn set_input_tensor(&mut self, index: usize, tensor: &impl Bindable) -> Result<()> {
        self.set(Port::Input(index), tensor)
    }

    /// Binds `tensor` to output `index` (the inference writes into it). Errors as
    /// [`set_input_tensor`](Self::set_input_tensor), and
    /// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) for memory the device may only read
    /// ([`RemoteTensor::is_read_only_for_device`]: a CPU_VA import made with `TensorType::Input`).
    pub fn set_output_tensor(&mut self, index: usize, tensor: &impl Bindable) -> Result<()> {
        self.set(Port::Output(index), tensor)
    }

    /// Binds `tensor` to the input or output with tensor name `name`. Errors as
    /// [`set_input_tensor`](Self::set_input_tensor).
    pub fn set_tensor(&mut self, name: &str, tensor: &impl Bindable) -> Result<()> {
        let port = self.port_for_name(name);
        self.set(port, tensor)
    }

    fn get(&mut self, port: Port) -> Result<Tensor> {
        self.ensure_idle(&format_args!("getting the tensor of {port}"))?;
        self.check_index(&port)?;
        if let Some((h, _)) = self.bound.get(&port) {
            return Ok(Tensor { handle: h.clone() });
        }
        let raw = self.as_raw();
        let mut t = std::ptr::null_mut();
        // SAFETY (all three): live request; t is an out-pointer; the result is a new ov_tensor_t
        // holding a shared_ptr to the request's tensor.
        let status = match &port {
            // SAFETY: as above.
            Port::Input(i) => unsafe { sys::ov_infer_request_get_input_tensor_by_index(raw, *i, &mut t) },
            // SAFETY: as above.
            Port::Output(i) => unsafe { sys::ov_infer_request_get_output_tensor_by_index(raw, *i, &mut t) },
            Port::Name(n) => {
                let c: CString = cstring("tensor name", n)?;
                // SAFETY: as above; c outlives the call.
                unsafe { sys::ov_infer_request_get_tensor(raw, c.as_ptr(), &mut t) }
            }
        };
        check(status, || format!("getting the tensor of {port}"))?;
        // SAFETY: t is a new tensor we own; its memory belongs to the request's plugin, which the
        // compiled model (kept alive) keeps loaded.
        let tensor = unsafe { Tensor::from_raw(t, vec![self.model.keepalive()]) }?;
        let writes = self.written_by_inference(&port)?;
        self.bound.insert(port, (tensor.handle.clone(), writes));
        Ok(tensor)
    }

    /// The tensor of input `index`: the one bound with `set_*`, or the request's own (fetched
    /// once, then held by the request like a bound tensor).
    ///
    /// The result shares the bound tensor. If a [`RemoteTensor`] is bound, it has no host view:
    /// its `data`/`bytes` fail; use the remote tensor's own memory.
    pub fn input_tensor(&mut self, index: usize) -> Result<Tensor> {
        self.get(Port::Input(index))
    }

    /// The tensor of output `index`: the one bound with `set_*`, or the request's own.
    pub fn output_tensor(&mut self, index: usize) -> Result<Tensor> {
        self.get(Port::Output(index))
    }

    /// The tensor with tensor name `name` (input or output).
    pub fn tensor(&mut self, name: &str) -> Result<Tensor> {
        let port = self.port_for_name(name);
        self.get(port)
    }

    /// Marks every tensor the request knows as used by an inference.
    /// Marks every bound tensor as used by an inference (written, for outputs); on failure none
    /// stays marked.
    fn begin(&self) -> Result<Vec<(Arc<TensorHandle>, bool)>> {
        // One entry per tensor: a tensor bound to an input and an output is written.
        let mut used: Vec<(Arc<TensorHandle>, bool, &Port)> = Vec::with_capacity(self.bound.len());
        for (port, (h, writes)) in self.bound.iter() {
            match used.iter_mut().find(|(u, _, _)| Arc::ptr_eq(u, h)) {
                Some(u) => u.1 |= *writes,
                None => used.push((h.clone(), *writes, port)),
            }
        }
        let mut marked: Vec<(Arc<TensorHandle>, bool)> = Vec::with_capacity(used.len());
        for (h, writes, port) in used {
            if let Err(e) = h.begin_inference(&format_args!("the tensor bound to {port}"), writes) {
                for (u, w) in &marked {
                    u.end_inference(*w);
                }
                return Err(e);
            }
            marked.push((h, writes));
        }
        Ok(marked)
    }

    fn end(&mut self, used: Vec<(Arc<TensorHandle>, bool)>, ok: bool) {
        for (u, writes) in &used {
            u.end_inference(*writes);
        }
        if ok {
            // The inference after the rebinding has finished: nothing refers to them any more.
            self.retired.clear();
        }
    }

    /// Runs an inference and waits for it (`ov_infer_request_infer`).
    pub fn infer(&mut self) -> Result<()> {
        self.ensure_idle(&"infer")?;
        let used = self.begin()?;
        // SAFETY: live request; every bound tensor is alive (held in self.bound / self.retired).
        let status = unsafe { sys::ov_infer_request_infer(self.as_raw()) };
        self.end(used, status == sys::ov_status_e::OK);
        check(status, || "inference (ov_infer_request_infer)".into())
    }

    /// Starts an inference (`ov_infer_request_start_async`); finish it with [`wait`](Self::wait).
    pub fn start_async(&mut self) -> Result<()> {
        self.ensure_idle(&"start_async")?;
        let used = self.begin()?;
        // SAFETY: live request; bound tensors stay alive until wait() or drop.
        let status = unsafe { sys::ov_infer_request_start_async(self.as_raw()) };
        if status != sys::ov_status_e::OK {
            self.end(used, false);
            return check(status, || "starting an inference (ov_infer_request_start_async)".into());
        }
        self.running = Some(used);
        Ok(())
    }

    /// Waits for the inference started by [`start_async`](Self::start_async) and returns its
    /// result. Returns `Ok(())` at once if none is running.
    pub fn wait(&mut self) -> Result<()> {
        let Some(used) = self.running.take() else { return Ok(()) };
        // SAFETY: live request with a started inference.
        let status = unsafe { sys::ov_infer_request_wait(self.as_raw()) };
        self.end(used, status == sys::ov_status_e::OK);
        check(status, || "inference (ov_infer_request_wait)".into())
    }
}

impl Drop for InferRequest {
    fn drop(&mut self) {
        if let Some(used) = self.running.take() {
            // SAFETY: live request; the inference must finish before the request and the tensors
            // it uses are released. The status is irrelevant here.
            let _ = unsafe { sys::ov_infer_request_wait(self.as_raw()) };
            for (u, writes) in &used {
                u.end_inference(*writes);
            }
        }
        // SAFETY: owned pointer, freed once, no inference running. Bound tensors and the compiled
        // model are dropped after this (fields drop after Drop::drop). Does not throw.
        unsafe { sys::ov_infer_request_free(self.ptr.as_ptr()) };
    }
}

impl std::fmt::Debug for InferRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InferRequest")
            .field("raw", &self.as_raw())
            .field("bound", &self.bound.len())
            .field("retired", &self.retired.len())
            .field("running", &self.running.is_some())
            .finish()
    }
}

/// The binding rules every binding follows (this crate's [`InferRequest`], and the C++ API's `bind`
/// through [`RemoteTensor::check_binding`]): the tensor has the port's element type and static shape.
fn check_port(port: &dyn std::fmt::Display, info: &PortInfo, handle: &TensorHandle) -> Result<()> {
    let et = handle.element_type()?;
    if et != info.element_type {
        return Err(Error::element_type(format!(
            "{port} ({:?}) takes {} elements, but the tensor has {et} elements",
            info.name, info.element_type
        )));
    }
    if let Some(want) = &info.shape {
        let got = handle.shape()?;
        if &got != want {
            return Err(Error::shape(format!(
                "{port} ({:?}) has shape {want}, but the tensor has shape {got}",
                info.name
            )));
        }
    }
    Ok(())
}

/// The other binding rule: memory the device may only read is never bound where an inference writes.
fn check_writable(port: &dyn std::fmt::Display, handle: &TensorHandle, writes: bool) -> Result<()> {
    if handle.is_read_only_for_device() && writes {
        return Err(Error::invalid_argument(format!(
            "{port}: the NPU writes into this port, but the tensor's memory is read-only for the NPU: it is a \
             CPU_VA import made with TensorType::Input, which the NPU driver maps read-only (the plugin passes \
             the write-combined flag, which linux-npu-driver turns into a read-only buffer object). Make output \
             tensors with TensorType::Output or TensorType::Binded"
        )));
    }
    Ok(())
}

impl RemoteTensor {
    /// Checks the rules [`InferRequest`] applies when it binds this tensor to a port described by
    /// `info` (`writes`: an inference writes the port, as outputs): the port's element type and static
    /// shape, and no read-only memory where an inference writes. For a binding that binds the tensor
    /// itself (the C++ API's `bind`), so that both follow one rule.
    ///
    /// # Errors
    /// [`ElementType`](crate::ErrorKind::ElementType), [`Shape`](crate::ErrorKind::Shape),
    /// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) for read-only memory on a written port.
    pub fn check_binding(&self, info: &PortInfo, writes: bool) -> Result<()> {
        let port = format_args!("{} {:?}", if writes { "output" } else { "input" }, info.name);
        check_port(&port, info, &self.handle)?;
        check_writable(&port, &self.handle, writes)
    }
}
