//! [`NpuContext`]: OpenVINO's NPU context seen from Level Zero.

use std::fmt;
use std::sync::{Arc, Mutex, Weak};

use crate::error::{Error, Path, Reason, Result};
use crate::level_zero::{self, ApiVersion, DeviceType, Driver, ExternalMemoryTypes, L0Device, INTEL_NPU_DRIVER_UUID};
use crate::openvino::{CompiledModel, Core, RemoteContext};
use crate::ownership::Foreign;

/// The extension that enables zero-copy rebinding in the NPU plugin.
pub const MUTABLE_COMMAND_LIST_EXT: &str = "ZE_experimental_mutable_command_list";

/// What the NPU driver behind a context can do for the memory paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpuCapabilities {
    /// `DMA_BUF` in the device's memory import types: SHARED_BUF (dma-buf fd) tensors work (Linux).
    pub fd_import: bool,
    /// `OPAQUE_WIN32` in the device's memory import types: SHARED_BUF (NT handle) tensors work
    /// (Windows; the plugin's `isExternalMemoryFdWin32Supported`).
    pub nt_handle_import: bool,
    /// `STANDARD_ALLOCATION` (0x100) in the import types: CPU_VA tensors and the zero-copy import
    /// of page-aligned plain tensors work.
    pub sysmem_import: bool,
    /// The driver advertises `ZE_experimental_mutable_command_list`: rebinding a tensor patches
    /// the recorded command list instead of copying (without it every user tensor is copied).
    pub mutable_command_lists: bool,
    /// The raw import types.
    pub import_types: ExternalMemoryTypes,
    /// The driver's Level Zero API version.
    pub api_version: ApiVersion,
    /// The driver's version.
    pub driver_version: u32,
    /// The device's name.
    pub device_name: String,
    /// The NPU's PCI device id.
    pub device_id: u32,
    /// The laptop generation that id names, if it is one this crate knows.
    pub generation: Option<super::LaptopGeneration>,
}

/// OpenVINO's NPU context (the plugin's one Level Zero context per [`Core`]) together with the
/// Level Zero driver and device it belongs to and their capabilities.
///
/// It keeps the OpenVINO [`RemoteContext`] alive, and through it the [`Core`] (or the
/// [`CompiledModel`]) it came from. The Level Zero context is **borrowed** from the plugin: it is
/// never destroyed here. Cloning is cheap and shares everything.
#[derive(Clone)]
pub struct NpuContext {
    inner: Arc<Inner>,
}

struct Inner {
    remote: RemoteContext,
    l0: Arc<level_zero::L0Context>,
    device: L0Device,
    caps: NpuCapabilities,
}

impl NpuContext {
    /// The NPU context of the device `compiled` was compiled for.
    ///
    /// # Errors
    /// [`Unsupported { path: Path::Npu }`](crate::ErrorKind::Unsupported) when the model was compiled for
    /// another device (the message names it; OpenVINO's own error is its
    /// [`source`](std::error::Error::source)); Level Zero and OpenVINO errors otherwise.
    pub fn from_compiled_model(compiled: &CompiledModel) -> Result<NpuContext> {
        let device = compiled.property("EXECUTION_DEVICES").unwrap_or_default();
        let remote = compiled.context().map_err(|e| {
            Error::unsupported(
                Path::Npu,
                Reason::NotTheNpu,
                format!(
                    "the compiled model has no remote context, so it was not compiled for the NPU (execution \
                     devices: {}; OpenVINO said: {e})",
                    if device.is_empty() { "unknown".into() } else { device.clone() }
                ),
            )
            .with_source(e)
        })?;
        Self::from_remote_context(remote)
    }

    /// The NPU context of `core` (`core.default_context("NPU")`).
    ///
    /// # Errors
    /// [`Unsupported { path: Path::Npu }`](crate::ErrorKind::Unsupported) when the core has no NPU device
    /// (the message lists the devices it has).
    pub fn from_core(core: &Core) -> Result<NpuContext> {
        let remote = core.default_context("NPU").map_err(|e| {
            let devices = core.available_devices().map(|d| d.join(", ")).unwrap_or_else(|_| "?".into());
            Error::unsupported(
                Path::Npu,
                Reason::NotTheNpu,
                format!("OpenVINO has no NPU context (available devices: {devices}); OpenVINO said: {e}"),
            )
            .with_source(e)
        })?;
        Self::from_remote_context(remote)
    }

    /// Wraps an NPU remote context.
    ///
    /// # Errors
    /// [`Unsupported { path: Path::Npu }`](crate::ErrorKind::Unsupported) when `remote` is not an NPU
    /// context or no Level Zero NPU driver owns its `L0_CONTEXT`.
    pub fn from_remote_context(remote: RemoteContext) -> Result<NpuContext> {
        let name = remote.device_name()?;
        if !name.starts_with("NPU") {
            return Err(Error::unsupported(
                Path::Npu,
                Reason::NotTheNpu,
                format!("the remote context belongs to {name:?}, not to the NPU; use a model compiled for \"NPU\""),
            ));
        }
        let handle = remote.l0_context().map_err(|e| e.context("reading the NPU context's L0_CONTEXT"))?;
        if handle.is_null() {
            return Err(Error::unsupported(Path::Npu, Reason::NotTheNpu, "the NPU context's L0_CONTEXT is null"));
        }
        let (driver, device) = find_npu_driver()?;
        // SAFETY: `handle` is the NPU plugin's ze_context_handle_t (L0_CONTEXT), created on the
        // plugin's NPU driver, shared by every live Core; the plugin destroys it only when the last
        // holder (Core, remote context, tensor) goes, and `owner`
        // (a clone of the remote context) keeps that Core alive for as long as this wrapper.
        let l0 =
            unsafe { level_zero::L0Context::from_raw(handle.cast(), driver, Foreign::borrowed_by(remote.clone())) };
        l0.status().map_err(|e| {
            Error::unsupported(
                Path::Npu,
                Reason::NotTheNpu,
                format!("the NPU context L0_CONTEXT {handle:p} is not usable on the NPU driver: {e}"),
            )
            .with_source(e)
        })?;
        let ext = device.external_memory_properties()?;
        let dprops = device.properties()?;
        let drv = driver.properties()?;
        let caps = NpuCapabilities {
            fd_import: ext.import.contains(ExternalMemoryTypes::DMA_BUF),
            nt_handle_import: ext.import.contains(ExternalMemoryTypes::OPAQUE_WIN32),
            sysmem_import: ext.import.contains(ExternalMemoryTypes::STANDARD_ALLOCATION),
            mutable_command_lists: driver.has_extension(MUTABLE_COMMAND_LIST_EXT)?,
            import_types: ext.import,
            api_version: driver.api_version()?,
            driver_version: drv.driver_version,
            device_name: dprops.name,
            device_id: dprops.device_id,
            generation: super::LaptopGeneration::from_npu_device_id(dprops.device_id),
        };
        Ok(NpuContext { inner: Arc::new(Inner { remote, l0: Arc::new(l0), device, caps }) })
    }

    /// The OpenVINO remote context.
    pub fn remote_context(&self) -> &RemoteContext {
        &self.inner.remote
    }

    /// The plugin's Level Zero context (borrowed: never destroyed by this crate). Allocations
    /// made in it hold this `Arc`, and so keep the OpenVINO core alive.
    pub fn level_zero_context(&self) -> &Arc<level_zero::L0Context> {
        &self.inner.l0
    }

    /// The NPU's Level Zero driver.
    pub fn driver(&self) -> Driver {
        self.inner.device.driver()
    }

    /// The NPU's Level Zero device.
    pub fn device(&self) -> L0Device {
        self.inner.device
    }

    /// What the driver supports.
    pub fn capabilities(&self) -> &NpuCapabilities {
        &self.inner.caps
    }

    /// The crate's own Level Zero context on the NPU driver: one per process, made on first use
    /// and destroyed when the last allocation in it is freed. Memory the NPU exports to SYCL
    /// (`NpuExport`) is allocated here, not in the plugin's context: a dma-buf imported into the
    /// context that made it gets that allocation's kernel handle again, and the plugin's free of its
    /// import would close the handle under the allocation (linux-npu-driver 1.32.1
    /// `VPUBufferObject::importFromFd`, `VPUDeviceContext::freeMemAlloc` →
    /// `allowDeleteExternalHandle`). Each context opens its own DRM file, so imports into the
    /// plugin's context are independent of it.
    pub fn export_context(&self) -> Result<Arc<level_zero::L0Context>> {
        static OWN: Mutex<Weak<level_zero::L0Context>> = Mutex::new(Weak::new());
        let mut own = OWN.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = own.upgrade() {
            return Ok(c);
        }
        let c = Arc::new(level_zero::L0Context::create(self.driver())?);
        *own = Arc::downgrade(&c);
        Ok(c)
    }
}

impl fmt::Debug for NpuContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NpuContext")
            .field("l0", &self.inner.l0)
            .field("device", &self.inner.device)
            .field("capabilities", &self.inner.caps)
            .finish()
    }
}

/// The Level Zero driver the NPU plugin uses: uuid [`INTEL_NPU_DRIVER_UUID`] with a VPU device
/// (the plugin accepts no other and uses the driver's first device).
fn find_npu_driver() -> Result<(Driver, L0Device)> {
    let mut seen = Vec::new();
    for driver in Driver::all()? {
        let props = driver.properties()?;
        if props.uuid != INTEL_NPU_DRIVER_UUID {
            seen.push(format!("{:02x?}", props.uuid));
            continue;
        }
        for device in driver.devices()? {
            if device.properties()?.device_type == DeviceType::Vpu {
                return Ok((driver, device));
            }
        }
    }
    Err(Error::unsupported(
        Path::Npu,
        Reason::NotTheNpu,
        format!(
            "no Level Zero driver with Intel's NPU driver uuid and a VPU device (drivers seen: {})",
            if seen.is_empty() { "none".into() } else { seen.join(", ") }
        ),
    ))
}
