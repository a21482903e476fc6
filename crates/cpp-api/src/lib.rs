//! The Rust half of the C++ API (`include/npu_sycl_bridge/npu.hpp`).
//!
//! The logic a C++ program gets (the strategies and `Auto`, the import checks, the pool, who owns
//! what and when it is released) is the main crate's, called here; nothing of it is written again
//! in C++. The C++ half (`cpp/npu_api.cpp`) holds the program's OpenVINO objects and does only
//! what needs them: it creates `ov::RemoteTensor`s when the crate asks
//! ([`npu_sycl_bridge::openvino::ExternalContext`]), and wraps each Rust result in a move-only
//! C++ class.
//!
//! Both directions go through the one cxx bridge below; the value types it shares with the
//! program (error kinds, paths, reasons, strategy kinds, tensor types, pool records) are the cxx
//! shared types of [`types`], whose generated header `npu.hpp` includes. A failed call records
//! its error as one `BridgeError` for its thread, which the C++ half takes (`take_error`) and
//! throws as `npu_sycl_bridge::Error`; a panic is caught at the bridge and crosses as an
//! `internal` error.

pub mod types;

use std::any::Any;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use cxx::UniquePtr;
use npu_sycl_bridge::memory::RawMemory;
use npu_sycl_bridge::npu::{NpuContext, NpuTensor};
use npu_sycl_bridge::openvino::{
    ElementType, ExternalContext, ExternalTensor, PortInfo, RemoteContext, RemoteTensor, Shape, TensorProperties,
    TensorType,
};
use npu_sycl_bridge::ownership::KeepAlive;
use npu_sycl_bridge::pool::{NpuPool, PoolLimits};
use npu_sycl_bridge::strategy::{Auto, SharedTensor, Strategy, StrategyKind};
use npu_sycl_bridge::sycl::{self, ExportableDeviceMemory, Queue};
use npu_sycl_bridge::{Error, ErrorKind, Path};

use crate::types::{Reason, SharingPath};

#[cxx::bridge(namespace = "npu_sycl_bridge::detail")]
mod ffi {
    /// A failed call's error, taken by the C++ half right after the call threw.
    struct BridgeError {
        kind: ErrorKind,
        path: SharingPath,
        reason: Reason,
        message: String,
        explanation: String,
    }

    /// One parameter of a remote context or tensor, as OpenVINO prints it.
    struct Param {
        key: String,
        value: String,
    }

    /// Memory the program owns: its address, size and release callback.
    struct ProgramBuffer {
        data: usize,
        bytes: usize,
        release: UniquePtr<Releaser>,
    }

    #[namespace = "npu_sycl_bridge"]
    extern "C++" {
        include!("npu_sycl_bridge/types.hpp");
        type ErrorKind = crate::types::ErrorKind;
        type SharingPath = crate::types::SharingPath;
        type Reason = crate::types::Reason;
        type StrategyKind = crate::types::StrategyKind;
        type TensorType = crate::types::TensorType;
        type PoolStats = crate::types::PoolStats;
        type PoolTrimmed = crate::types::PoolTrimmed;
    }

    unsafe extern "C++" {
        include!("npu_sycl_bridge/detail/openvino_binding.hpp");

        /// The program's `ov::RemoteContext` of the NPU (and the compiled model it came from).
        type OvContext;
        /// One `ov::RemoteTensor`.
        type OvTensor;
        /// The program's release callback of memory it handed over; its destructor calls it.
        type Releaser;
        /// The program's allocator of pool buffers (exportable device memory of its SYCL context).
        type Allocator;

        /// Calls the program's allocator for `bytes` bytes.
        fn allocate(allocator: &Allocator, bytes: usize) -> Result<ProgramBuffer>;

        fn context_device_name(context: &OvContext) -> Result<String>;
        fn context_params(context: &OvContext) -> Result<Vec<Param>>;
        /// `create_tensor(element_type, shape, {MEM_TYPE, MEM_HANDLE, TENSOR_TYPE})`; empty strings
        /// and `has_mem_handle == false` leave a property out.
        /// Unsafe: `mem_handle` is a raw address or fd the plugin will use.
        unsafe fn context_create_tensor(
            context: &OvContext,
            element_type: &str,
            shape: &[usize],
            mem_type: &str,
            mem_handle: usize,
            has_mem_handle: bool,
            tensor_type: &str,
        ) -> Result<UniquePtr<OvTensor>>;
        fn tensor_element_type(tensor: &OvTensor) -> Result<String>;
        fn tensor_shape(tensor: &OvTensor) -> Result<Vec<usize>>;
        fn tensor_byte_size(tensor: &OvTensor) -> Result<usize>;
        fn tensor_device_name(tensor: &OvTensor) -> Result<String>;
        fn tensor_params(tensor: &OvTensor) -> Result<Vec<Param>>;
    }

    extern "Rust" {
        type NpuState;
        type StrategyState;
        type TensorState;
        type PoolState;

        /// Unsafe: `sycl_context` is the address of a live `sycl::context`, `sycl_device` a
        /// `ze_device_handle_t` of one of its devices.
        unsafe fn npu_open(
            context: UniquePtr<OvContext>,
            sycl_context: usize,
            sycl_device: usize,
        ) -> Result<Box<NpuState>>;
        fn npu_describe(npu: &NpuState) -> String;
        /// The error of the last call of this thread that failed (taken once).
        fn take_error() -> BridgeError;
        /// The crate's `Unsupported` error for `path` and `reason`, for checks made in C++.
        fn unsupported_error(path: SharingPath, reason: Reason, detail: &str) -> BridgeError;
        /// The names the C++ `to_string`s return.
        fn error_kind_name(kind: ErrorKind) -> &'static str;
        fn path_name(path: SharingPath) -> &'static str;
        fn reason_name(reason: Reason) -> &'static str;
        fn strategy_name(kind: StrategyKind) -> &'static str;

        fn strategy_auto(npu: &NpuState) -> Result<Box<StrategyState>>;
        fn strategy_new(npu: &NpuState, kind: StrategyKind) -> Result<Box<StrategyState>>;
        fn strategy_kind(strategy: &StrategyState) -> StrategyKind;
        fn strategy_zero_copy(strategy: &StrategyState) -> bool;
        fn strategy_decision(strategy: &StrategyState) -> String;
        fn strategy_tensor(
            strategy: &StrategyState,
            element_type: &str,
            shape: &[usize],
            tensor_type: TensorType,
        ) -> Result<Box<TensorState>>;

        /// Unsafe: `buffer` is memory the program owns, valid until its release callback runs.
        unsafe fn npu_import_host(
            npu: &NpuState,
            buffer: ProgramBuffer,
            element_type: &str,
            shape: &[usize],
            tensor_type: TensorType,
        ) -> Result<Box<TensorState>>;
        /// Unsafe: as `npu_import_host`, for exportable device memory of the program's SYCL context.
        unsafe fn npu_import_sycl(
            npu: &NpuState,
            buffer: ProgramBuffer,
            element_type: &str,
            shape: &[usize],
            tensor_type: TensorType,
        ) -> Result<Box<TensorState>>;
        /// Unsafe: `handle` is the value of an open dma-buf fd (Linux) or NT handle (Windows) the
        /// call takes (closed once, on error too).
        unsafe fn npu_import_shared_handle(
            npu: &NpuState,
            handle: u64,
            element_type: &str,
            shape: &[usize],
            tensor_type: TensorType,
        ) -> Result<Box<TensorState>>;

        fn tensor_remote(tensor: &TensorState) -> &OvTensor;
        fn tensor_data(tensor: &TensorState) -> usize;
        fn tensor_byte_size_of(tensor: &TensorState) -> usize;
        /// Whether it has a SYCL side (a strategy's tensor, or imported SYCL memory).
        fn tensor_has_sycl(tensor: &TensorState) -> bool;
        /// The strategy kind of a tensor with a SYCL side.
        fn tensor_kind(tensor: &TensorState) -> Result<StrategyKind>;
        fn tensor_zero_copy(tensor: &TensorState) -> bool;
        fn tensor_read_only(tensor: &TensorState) -> bool;
        /// The binding rules of the Rust `InferRequest` for a port of `element_type` and (when
        /// `static_shape`) `shape`; `writes`: an inference writes the port (an output).
        fn tensor_check_binding(
            tensor: &TensorState,
            port: &str,
            element_type: &str,
            shape: &[usize],
            static_shape: bool,
            writes: bool,
        ) -> Result<()>;
        fn tensor_write(tensor: &mut TensorState, offset: usize, data: &[u8]) -> Result<()>;
        fn tensor_read(tensor: &TensorState, offset: usize, out: &mut [u8]) -> Result<()>;

        /// Unsafe: every buffer is exportable device memory of the program's SYCL context, valid
        /// until its release callback runs.
        unsafe fn pool_from_sycl(npu: &NpuState, buffers: Vec<ProgramBuffer>) -> Result<Box<PoolState>>;
        /// Unsafe: every buffer is page-aligned process memory, valid until its release callback runs.
        unsafe fn pool_from_host(npu: &NpuState, buffers: Vec<ProgramBuffer>) -> Result<Box<PoolState>>;
        /// A pool of exportable SYCL memory that `allocator` makes on demand, within the limits.
        fn pool_with_allocator(
            npu: &NpuState,
            max_buffers: usize,
            max_bytes: usize,
            allocator: UniquePtr<Allocator>,
        ) -> Box<PoolState>;
        fn pool_tensor(pool: &PoolState, element_type: &str, shape: &[usize]) -> Result<Box<TensorState>>;
        fn pool_stats(pool: &PoolState) -> PoolStats;
        fn pool_trim(pool: &PoolState) -> PoolTrimmed;
    }
}

// ---- errors ----------------------------------------------------------------------------------

/// What cxx sees of a failed call: the message (its `what()`). The error itself waits in
/// `LAST_ERROR` for the C++ half's `take_error`.
#[derive(Debug)]
pub struct CppError(String);

impl fmt::Display for CppError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

thread_local! {
    /// The error of this thread's last failed call: the C++ half catches the exception cxx throws
    /// for it on the same thread, right after the call, and takes it.
    static LAST_ERROR: RefCell<Option<ffi::BridgeError>> = const { RefCell::new(None) };
}

/// Records `record` for `take_error` and gives cxx its message.
fn fail(record: ffi::BridgeError) -> CppError {
    let message = record.message.clone();
    LAST_ERROR.with(|e| *e.borrow_mut() = Some(record));
    CppError(message)
}

/// The record of `e` as C++ sees it.
fn record(e: &Error) -> ffi::BridgeError {
    let (path, reason) = match e.kind() {
        ErrorKind::Unsupported { path, reason } => (SharingPath::from(*path), Reason::from(*reason)),
        _ => (SharingPath::none, Reason::none),
    };
    ffi::BridgeError {
        kind: types::ErrorKind::from(e.kind()),
        path,
        reason,
        message: e.to_string(),
        explanation: e.explanation().unwrap_or_default().to_string(),
    }
}

impl From<Error> for CppError {
    fn from(e: Error) -> Self {
        fail(record(&e))
    }
}

fn take_error() -> ffi::BridgeError {
    LAST_ERROR.with(|e| e.borrow_mut().take()).unwrap_or_else(|| ffi::BridgeError {
        kind: types::ErrorKind::internal,
        path: SharingPath::none,
        reason: Reason::none,
        message: "the bridge recorded no error for a call that failed".into(),
        explanation: String::new(),
    })
}

fn unsupported_error(path: SharingPath, reason: Reason, detail: &str) -> ffi::BridgeError {
    let error = match (path.to_rust(), reason.to_rust()) {
        (Some(path), Some(reason)) => Error::unsupported(path, reason, detail),
        _ => Error::invalid_argument(format!("no such path {} or reason {}: {detail}", path.repr, reason.repr)),
    };
    record(&error)
}

fn error_kind_name(kind: types::ErrorKind) -> &'static str {
    kind.name()
}

fn path_name(path: SharingPath) -> &'static str {
    path.name()
}

fn reason_name(reason: Reason) -> &'static str {
    reason.name()
}

fn strategy_name(kind: types::StrategyKind) -> &'static str {
    kind.to_rust().map_or("unknown", StrategyKind::as_str)
}

type CppResult<T> = Result<T, CppError>;

/// Runs `f`, turning the crate's errors and any panic into a [`CppError`]: nothing unwinds into C++.
fn guard<T>(what: &str, f: impl FnOnce() -> npu_sycl_bridge::Result<T>) -> CppResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r.map_err(CppError::from),
        Err(panic) => {
            let why = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(fail(ffi::BridgeError {
                kind: types::ErrorKind::internal,
                path: SharingPath::none,
                reason: Reason::none,
                message: format!("{what}: internal error (a panic in the bridge): {why}"),
                explanation: String::new(),
            }))
        }
    }
}

/// The C++ side's exception text as an error of the crate (OpenVINO threw).
fn openvino_error(what: &str, e: cxx::Exception) -> Error {
    Error::new(ErrorKind::OpenVino { status: -1 }, format!("{what}: {}", e.what()))
}

// ---- the program's OpenVINO objects, seen by the crate -----------------------------------------

struct CppContext(UniquePtr<ffi::OvContext>);

// SAFETY: the C++ object holds `ov::RemoteContext` and `ov::CompiledModel` handles
// (shared_ptr-based, no thread affinity); the calls made through it (`get_device_name`,
// `get_params`, `create_tensor`) are const, and OpenVINO shares a plugin's context between
// concurrently running requests, so concurrent calls are expected of it.
unsafe impl Send for CppContext {}
// SAFETY: see `Send`.
unsafe impl Sync for CppContext {}

fn params(list: Vec<ffi::Param>) -> BTreeMap<String, String> {
    list.into_iter().map(|p| (p.key, p.value)).collect()
}

impl ExternalContext for CppContext {
    fn device_name(&self) -> npu_sycl_bridge::Result<String> {
        ffi::context_device_name(&self.0).map_err(|e| openvino_error("ov::RemoteContext::get_device_name", e))
    }

    fn params(&self) -> npu_sycl_bridge::Result<BTreeMap<String, String>> {
        ffi::context_params(&self.0).map(params).map_err(|e| openvino_error("ov::RemoteContext::get_params", e))
    }

    unsafe fn create_tensor(
        &self,
        element_type: ElementType,
        shape: &Shape,
        properties: &TensorProperties,
    ) -> npu_sycl_bridge::Result<Box<dyn ExternalTensor>> {
        // SAFETY: the memory behind MEM_HANDLE is valid as `ExternalContext::create_tensor` requires
        // of our caller.
        let t = unsafe {
            ffi::context_create_tensor(
                &self.0,
                element_type.name(),
                shape.dims(),
                properties.mem_type.as_str(),
                properties.mem_handle.map_or(0, |h| h as usize),
                properties.mem_handle.is_some(),
                properties.tensor_type.map_or("", |t| t.as_str()),
            )
        }
        .map_err(|e| {
            openvino_error(
                &format!("ov::RemoteContext::create_tensor({element_type}, {shape}, {})", properties.mem_type.as_str()),
                e,
            )
        })?;
        Ok(Box::new(CppTensor(t)))
    }
}

struct CppTensor(UniquePtr<ffi::OvTensor>);

// SAFETY: an `ov::RemoteTensor` handle (shared_ptr-based, no thread affinity); only const queries
// are made through it.
unsafe impl Send for CppTensor {}
// SAFETY: see `Send`.
unsafe impl Sync for CppTensor {}

impl ExternalTensor for CppTensor {
    fn element_type(&self) -> npu_sycl_bridge::Result<ElementType> {
        let name = ffi::tensor_element_type(&self.0).map_err(|e| openvino_error("get_element_type", e))?;
        ElementType::from_name(&name)
            .ok_or_else(|| Error::element_type(format!("OpenVINO element type {name:?} is unknown to the crate")))
    }

    fn shape(&self) -> npu_sycl_bridge::Result<Shape> {
        ffi::tensor_shape(&self.0).map(Shape::from).map_err(|e| openvino_error("get_shape", e))
    }

    fn byte_size(&self) -> npu_sycl_bridge::Result<usize> {
        ffi::tensor_byte_size(&self.0).map_err(|e| openvino_error("get_byte_size", e))
    }

    fn device_name(&self) -> npu_sycl_bridge::Result<String> {
        ffi::tensor_device_name(&self.0).map_err(|e| openvino_error("ov::RemoteTensor::get_device_name", e))
    }

    fn params(&self) -> npu_sycl_bridge::Result<BTreeMap<String, String>> {
        ffi::tensor_params(&self.0).map(params).map_err(|e| openvino_error("ov::RemoteTensor::get_params", e))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The program's release callback as a keep-alive: dropped (and so called) once, after the NPU,
/// every tensor over the memory and every request let go of it.
struct Release {
    // Held, never read: dropping it calls the program's callback.
    _callback: UniquePtr<ffi::Releaser>,
}

// SAFETY: the C++ API documents that a release callback may run on any thread; nothing else
// reaches the object.
unsafe impl Send for Release {}
// SAFETY: `&Release` gives no access to the callback.
unsafe impl Sync for Release {}

// ---- what C++ holds ---------------------------------------------------------------------------

/// The NPU context of the program's compiled model, with the program's SYCL context and device.
pub struct NpuState {
    npu: NpuContext,
    context: Arc<sycl::SyclContext>,
    device: sycl::SyclDevice,
    /// The in-order queue the crate's SYCL copies of imported memory run on.
    queue: Arc<Queue>,
}

/// A strategy, or `Auto` (which picks a strategy per tensor and keeps its decision report).
pub enum StrategyState {
    Fixed(Strategy),
    Auto(Auto),
}

impl StrategyState {
    /// The strategy chosen (for `Auto`: the one tensors come from unless they need a fallback).
    fn strategy(&self) -> &Strategy {
        match self {
            StrategyState::Fixed(s) => s,
            StrategyState::Auto(auto) => auto.strategy(),
        }
    }
}

/// A tensor handed to C++: SYCL memory shared with the NPU, or imported memory without a SYCL side.
pub enum TensorState {
    Shared(SharedTensor),
    Imported { tensor: NpuTensor, data: usize },
}

/// A pool of the program's memory: exportable SYCL memory (shared tensors), or host memory.
pub enum PoolState {
    Sycl { pool: NpuPool<ExportableDeviceMemory>, queue: Arc<Queue> },
    Host(NpuPool<RawMemory>),
}

/// The program's allocator as the pool's: called under the pool's lock, on the thread that asked
/// for a tensor.
struct ProgramAllocator(UniquePtr<ffi::Allocator>);

// SAFETY: the C++ API documents that the allocator may be called from any thread that takes a
// tensor from the pool; the pool calls it under its mutex, so never concurrently.
unsafe impl Send for ProgramAllocator {}

impl ProgramAllocator {
    fn allocate(&self, bytes: usize) -> npu_sycl_bridge::Result<ffi::ProgramBuffer> {
        ffi::allocate(&self.0, bytes).map_err(|e| {
            Error::new(ErrorKind::InvalidArgument, format!("the program's pool allocator failed: {}", e.what()))
        })
    }
}

fn element(name: &str) -> npu_sycl_bridge::Result<ElementType> {
    ElementType::from_name(name).ok_or_else(|| Error::element_type(format!("unknown element type {name:?}")))
}

fn tensor_type(t: types::TensorType) -> npu_sycl_bridge::Result<TensorType> {
    t.to_rust().ok_or_else(|| Error::invalid_argument(format!("tensor type {} is not input, output or binded", t.repr)))
}

fn strategy_kind_from(kind: types::StrategyKind) -> npu_sycl_bridge::Result<StrategyKind> {
    kind.to_rust().ok_or_else(|| {
        Error::invalid_argument(format!("strategy kind {} is not one of the C++ StrategyKind values", kind.repr))
    })
}

unsafe fn npu_open(
    context: UniquePtr<ffi::OvContext>,
    sycl_context: usize,
    sycl_device: usize,
) -> CppResult<Box<NpuState>> {
    guard("npu_sycl_bridge::Npu", || {
        let npu = NpuContext::from_remote_context(RemoteContext::external(Box::new(CppContext(context))))?;
        // SAFETY: the C++ API passes the address of the queue's live sycl::context.
        let context = unsafe { sycl::SyclContext::from_sycl(sycl_context as *const std::ffi::c_void) }?;
        let device = context
            .devices()
            .iter()
            .find(|d| d.native_device().map(|h| h as usize) == Some(sycl_device))
            .cloned()
            .ok_or_else(|| {
                Error::unsupported(
                    Path::Sycl,
                    npu_sycl_bridge::Reason::NoLevelZeroGpu,
                    "the queue's device is not a Level Zero device of its context",
                )
            })?;
        let queue = Arc::new(Queue::new(&context, &device)?);
        Ok(Box::new(NpuState { npu, context, device, queue }))
    })
}

fn npu_describe(npu: &NpuState) -> String {
    let c = npu.npu.capabilities();
    format!(
        "NPU {} (device id {:#06x}{}), driver {:#x}: dma-buf import {}, system memory import {}; SYCL device {}",
        c.device_name,
        c.device_id,
        c.generation.map(|g| format!(", {g}")).unwrap_or_default(),
        c.driver_version,
        if c.fd_import { "yes" } else { "no" },
        if c.sysmem_import { "yes" } else { "no" },
        npu.device.name
    )
}

fn strategy_auto(npu: &NpuState) -> CppResult<Box<StrategyState>> {
    guard("npu_sycl_bridge::Strategy::automatic", || {
        Ok(Box::new(StrategyState::Auto(Auto::select(&npu.npu, &npu.context, &npu.device)?)))
    })
}

fn strategy_new(npu: &NpuState, kind: types::StrategyKind) -> CppResult<Box<StrategyState>> {
    guard("npu_sycl_bridge::Strategy", || {
        let strategy = Strategy::new(strategy_kind_from(kind)?, &npu.npu, &npu.context, &npu.device)?;
        Ok(Box::new(StrategyState::Fixed(strategy)))
    })
}

fn strategy_kind(strategy: &StrategyState) -> types::StrategyKind {
    strategy.strategy().kind().into()
}

fn strategy_zero_copy(strategy: &StrategyState) -> bool {
    strategy.strategy().is_zero_copy()
}

fn strategy_decision(strategy: &StrategyState) -> String {
    match strategy {
        StrategyState::Fixed(_) => String::new(),
        StrategyState::Auto(auto) => auto.decision().to_string(),
    }
}

fn strategy_tensor(
    strategy: &StrategyState,
    element_type: &str,
    shape: &[usize],
    tensor_type_code: types::TensorType,
) -> CppResult<Box<TensorState>> {
    guard("npu_sycl_bridge::Strategy::tensor", || {
        let (element_type, tensor_type) = (element(element_type)?, tensor_type(tensor_type_code)?);
        let t = match strategy {
            StrategyState::Fixed(s) => s.tensor(element_type, shape, tensor_type)?,
            StrategyState::Auto(auto) => auto.tensor(element_type, shape, tensor_type)?,
        };
        Ok(Box::new(TensorState::Shared(t)))
    })
}

unsafe fn npu_import_host(
    npu: &NpuState,
    buffer: ffi::ProgramBuffer,
    element_type: &str,
    shape: &[usize],
    tensor_type_code: types::TensorType,
) -> CppResult<Box<TensorState>> {
    guard("npu_sycl_bridge::Npu::import", || {
        let (data, bytes) = (buffer.data, buffer.bytes);
        let owner: KeepAlive = Arc::new(Release { _callback: buffer.release });
        // SAFETY: the program's memory, valid until its release callback (owned by `owner`) runs.
        let memory = unsafe { RawMemory::new(data as *mut u8, bytes, Some(owner)) }?;
        let tensor = npu.npu.import(memory, element(element_type)?, shape, tensor_type(tensor_type_code)?)?;
        Ok(Box::new(TensorState::Imported { tensor, data }))
    })
}

unsafe fn npu_import_sycl(
    npu: &NpuState,
    buffer: ffi::ProgramBuffer,
    element_type: &str,
    shape: &[usize],
    tensor_type_code: types::TensorType,
) -> CppResult<Box<TensorState>> {
    guard("npu_sycl_bridge::Npu::import", || {
        // SAFETY: exportable device memory of the program's context, valid until its release runs.
        let memory = unsafe { program_sycl_memory(&npu.context, &npu.device, buffer) }?;
        let tensor = npu.npu.import(memory, element(element_type)?, shape, tensor_type(tensor_type_code)?)?;
        Ok(Box::new(TensorState::Shared(SharedTensor::new(&npu.queue, tensor)?)))
    })
}

unsafe fn npu_import_shared_handle(
    npu: &NpuState,
    handle: u64,
    element_type: &str,
    shape: &[usize],
    tensor_type_code: types::TensorType,
) -> CppResult<Box<TensorState>> {
    let call =
        if cfg!(windows) { "npu_sycl_bridge::Npu::import_nt_handle" } else { "npu_sycl_bridge::Npu::import_dma_buf" };
    guard(call, || {
        let element_type = element(element_type)?;
        let tensor_type = tensor_type(tensor_type_code)?;
        #[cfg(unix)]
        let tensor = {
            let fd = i32::try_from(handle).map_err(|_| {
                Error::invalid_argument(format!("dma-buf fd {} is not a file descriptor", handle as i64))
            })?;
            // SAFETY: the call takes the open fd (the C++ API's contract); it is closed once.
            let fd = unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) };
            npu.npu.import::<std::os::fd::OwnedFd>(fd, element_type, shape, tensor_type)?
        };
        #[cfg(windows)]
        let tensor = {
            use std::os::windows::io::{FromRawHandle, OwnedHandle};
            let len = element_type.byte_size(shape.iter().product());
            // SAFETY: the call takes the open handle (the C++ API's contract); it is closed once.
            let handle = unsafe { OwnedHandle::from_raw_handle(handle as usize as *mut std::ffi::c_void) };
            npu.npu.import(
                npu_sycl_bridge::memory::NtHandleMemory::new(handle, len),
                element_type,
                shape,
                tensor_type,
            )?
        };
        Ok(Box::new(TensorState::Imported { tensor, data: 0 }))
    })
}

impl TensorState {
    fn remote(&self) -> &RemoteTensor {
        match self {
            TensorState::Shared(t) => t.remote_tensor(),
            TensorState::Imported { tensor, .. } => tensor.remote(),
        }
    }
}

fn tensor_remote(tensor: &TensorState) -> &ffi::OvTensor {
    let cpp = tensor
        .remote()
        .external()
        .and_then(|t| t.as_any().downcast_ref::<CppTensor>())
        .expect("every tensor of the C++ API is made by its own context");
    &cpp.0
}

fn tensor_data(tensor: &TensorState) -> usize {
    match tensor {
        TensorState::Shared(t) => t.sycl_ptr() as usize,
        TensorState::Imported { data, .. } => *data,
    }
}

fn tensor_byte_size_of(tensor: &TensorState) -> usize {
    match tensor {
        TensorState::Shared(t) => t.byte_size(),
        TensorState::Imported { tensor, .. } => tensor.byte_size(),
    }
}

fn tensor_has_sycl(tensor: &TensorState) -> bool {
    matches!(tensor, TensorState::Shared(_))
}

fn tensor_kind(tensor: &TensorState) -> CppResult<types::StrategyKind> {
    guard("npu_sycl_bridge::SharedTensor::kind", || match tensor {
        TensorState::Shared(t) => Ok(t.kind().into()),
        TensorState::Imported { .. } => Err(no_sycl_side()),
    })
}

fn tensor_zero_copy(tensor: &TensorState) -> bool {
    match tensor {
        TensorState::Shared(t) => t.is_zero_copy(),
        TensorState::Imported { .. } => true,
    }
}

fn tensor_read_only(tensor: &TensorState) -> bool {
    tensor.remote().is_read_only_for_device()
}

fn no_sycl_side() -> Error {
    Error::invalid_argument(
        "this tensor is imported memory without a SYCL side (host memory or a dma-buf fd): write and read it \
         through its owner",
    )
}

fn tensor_check_binding(
    tensor: &TensorState,
    port: &str,
    element_type: &str,
    shape: &[usize],
    static_shape: bool,
    writes: bool,
) -> CppResult<()> {
    guard("npu_sycl_bridge::SharedTensor::bind", || {
        let info = PortInfo {
            name: port.to_string(),
            element_type: element(element_type)?,
            shape: static_shape.then(|| Shape::new(shape)),
        };
        tensor.remote().check_binding(&info, writes)
    })
}

fn tensor_write(tensor: &mut TensorState, offset: usize, data: &[u8]) -> CppResult<()> {
    guard("npu_sycl_bridge::SharedTensor::write", || match tensor {
        TensorState::Shared(t) => t.write(offset, data),
        TensorState::Imported { .. } => Err(no_sycl_side()),
    })
}

fn tensor_read(tensor: &TensorState, offset: usize, out: &mut [u8]) -> CppResult<()> {
    guard("npu_sycl_bridge::SharedTensor::read", || match tensor {
        TensorState::Shared(t) => t.read(offset, out),
        TensorState::Imported { .. } => Err(no_sycl_side()),
    })
}

/// Exportable SYCL memory of the program's, with its release callback.
///
/// # Safety
/// `buffer` is exportable device memory of `device` in `context`, valid until its release runs.
unsafe fn program_sycl_memory(
    context: &Arc<sycl::SyclContext>,
    device: &sycl::SyclDevice,
    buffer: ffi::ProgramBuffer,
) -> npu_sycl_bridge::Result<ExportableDeviceMemory> {
    let owner: KeepAlive = Arc::new(Release { _callback: buffer.release });
    // SAFETY: this function's contract.
    unsafe {
        npu_sycl_bridge::raw::sycl::exportable_device_memory(
            context,
            device,
            buffer.data as *mut u8,
            buffer.bytes,
            owner,
        )
    }
}

unsafe fn pool_from_sycl(npu: &NpuState, buffers: Vec<ffi::ProgramBuffer>) -> CppResult<Box<PoolState>> {
    guard("npu_sycl_bridge::Pool", || {
        let memory = buffers
            .into_iter()
            // SAFETY: the C++ API's contract: exportable memory of the program's context.
            .map(|b| unsafe { program_sycl_memory(&npu.context, &npu.device, b) })
            .collect::<Result<Vec<_>, _>>()?;
        let pool = NpuPool::from_buffers(&npu.npu, memory)?;
        Ok(Box::new(PoolState::Sycl { pool, queue: Arc::clone(&npu.queue) }))
    })
}

unsafe fn pool_from_host(npu: &NpuState, buffers: Vec<ffi::ProgramBuffer>) -> CppResult<Box<PoolState>> {
    guard("npu_sycl_bridge::Pool::of_host_memory", || {
        let mut memory = Vec::with_capacity(buffers.len());
        for b in buffers {
            let owner: KeepAlive = Arc::new(Release { _callback: b.release });
            // SAFETY: the C++ API's contract: the program's memory, valid until its release runs.
            memory.push(unsafe { RawMemory::new(b.data as *mut u8, b.bytes, Some(owner)) }?);
        }
        Ok(Box::new(PoolState::Host(NpuPool::from_buffers(&npu.npu, memory)?)))
    })
}

fn pool_with_allocator(
    npu: &NpuState,
    max_buffers: usize,
    max_bytes: usize,
    allocator: UniquePtr<ffi::Allocator>,
) -> Box<PoolState> {
    let allocator = ProgramAllocator(allocator);
    let (context, device) = (Arc::clone(&npu.context), npu.device.clone());
    let allocate = move |bytes: usize| -> npu_sycl_bridge::Result<ExportableDeviceMemory> {
        let b = allocator.allocate(bytes)?;
        // SAFETY: the C++ API's contract for the allocator: exportable device memory of the
        // program's SYCL context, valid until its release runs.
        unsafe { program_sycl_memory(&context, &device, b) }
    };
    let pool = NpuPool::with_allocator(&npu.npu, PoolLimits { max_buffers, max_bytes }, allocate);
    Box::new(PoolState::Sycl { pool, queue: Arc::clone(&npu.queue) })
}

fn pool_tensor(pool: &PoolState, element_type: &str, shape: &[usize]) -> CppResult<Box<TensorState>> {
    guard("npu_sycl_bridge::Pool::tensor", || {
        let element_type = element(element_type)?;
        Ok(Box::new(match pool {
            PoolState::Sycl { pool, queue } => {
                TensorState::Shared(SharedTensor::new(queue, pool.tensor(element_type, shape)?)?)
            }
            PoolState::Host(pool) => {
                let tensor = pool.tensor(element_type, shape)?;
                let data = tensor.remote().params()?.mem_handle as usize;
                TensorState::Imported { tensor, data }
            }
        }))
    })
}

fn pool_stats(pool: &PoolState) -> types::PoolStats {
    match pool {
        PoolState::Sycl { pool, .. } => pool.stats(),
        PoolState::Host(pool) => pool.stats(),
    }
    .into()
}

fn pool_trim(pool: &PoolState) -> types::PoolTrimmed {
    let t = match pool {
        PoolState::Sycl { pool, .. } => pool.trim(),
        PoolState::Host(pool) => pool.trim(),
    };
    types::PoolTrimmed { imports: t.imports, buffers: t.buffers, bytes: t.bytes }
}
