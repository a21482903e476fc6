//! `sycl::context`: plain, or made from a native Level Zero context with `keep` or `transfer`.

use std::fmt;
use std::sync::Arc;

use cxx::UniquePtr;
use level_zero_sys::{ze_context_handle_t, ze_device_handle_t};

use super::ffi::bridge;
use super::{sycl_error, Error, Result, SyclDevice};
use crate::ownership::{DeferredErrors, Foreign, KeepAlive};

/// Where a [`SyclContext`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ContextOrigin {
    /// Created by SYCL (`sycl::context(device)`); SYCL destroys its Level Zero context.
    Sycl,
    /// Made from a foreign `ze_context` with `ownership::transfer`: SYCL destroys it.
    LevelZeroTransfer,
    /// Made from a foreign `ze_context` with `ownership::keep`: never destroyed by SYCL or by us.
    LevelZeroKeep,
}

/// A `sycl::context` and the devices it was made with. Shared through `Arc`: every queue and
/// allocation holds one, so the context is released only after all of them.
pub struct SyclContext {
    // Drop order matters: the sycl::context and its devices are released first, then the keep-alive
    // of a foreign ze_context owner (fields drop in declaration order).
    raw: UniquePtr<bridge::SyclContext>,
    sycl_devices: Vec<UniquePtr<bridge::SyclDevice>>,
    devices: Vec<SyclDevice>,
    origin: ContextOrigin,
    deferred: DeferredErrors,
    /// The owner of a borrowed `ze_context` ([`Foreign::Borrowed`]), dropped last.
    owner: Option<KeepAlive>,
}

// SAFETY: the C++ objects (`sycl::context`, `sycl::device`) are reference-counted handles that the
// bridge only ever uses through `const&`; SYCL 2020 requires its host API to be thread-safe, so they
// may be used and released from any thread. `SyclDevice` is plain data, `deferred` is a `Mutex`, and the
// keep-alive is `Send + Sync` by its type.
unsafe impl Send for SyclContext {}
// SAFETY: see `Send`: every method takes `&self` and reaches the C++ objects only through `const&`.
unsafe impl Sync for SyclContext {}

impl fmt::Debug for SyclContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SyclContext")
            .field("origin", &self.origin)
            .field("devices", &self.devices.iter().map(|d| &d.name).collect::<Vec<_>>())
            .field("native", &self.native().ok())
            .finish()
    }
}

impl SyclContext {
    /// A plain `sycl::context(device)`.
    pub fn new(device: &SyclDevice) -> Result<Arc<SyclContext>> {
        let sd = device.open()?;
        let raw = bridge::make_device_context(&sd).map_err(sycl_error("sycl::context(device)"))?;
        Ok(Arc::new(SyclContext {
            raw,
            sycl_devices: vec![sd],
            devices: vec![device.clone()],
            origin: ContextOrigin::Sycl,
            deferred: DeferredErrors::default(),
            owner: None,
        }))
    }

    /// `sycl::make_context<backend::ext_oneapi_level_zero>({ze_context, devices, ownership})`.
    ///
    /// Before calling the runtime, the shim checks that `devices` is a non-empty list of Level Zero
    /// devices of one platform and probes the context with a 1-byte `zeMemAllocDevice` per device, so a
    /// context of another driver (for example the NPU plugin's `L0_CONTEXT`) is an `Err` rather than a
    /// crash at teardown (adapter v1) where the loader rejects the foreign device handle (the virtual
    /// platform's does). It is still outside the contract below: a real driver may not check.
    ///
    /// # Safety
    /// - `ze_context` must be a valid, live Level Zero context created (by `zeContextCreate` or a
    ///   library such as OpenVINO) on the driver of the devices' platform
    ///   ([`SyclDevice::native_driver`]), in this process and through the loader SYCL uses.
    /// - With [`Foreign::Owned`], ownership moves to SYCL: nobody else may destroy the
    ///   handle, and it must not be given to SYCL with `transfer` twice.
    /// - With [`Foreign::Borrowed`](crate::ownership::Foreign::Borrowed), the handle must stay valid until the returned `SyclContext` and
    ///   everything made from it are dropped. Passing the owner's keep-alive guarantees that if
    ///   dropping the keep-alive is what destroys the context; without one, the caller guarantees it.
    /// - On `Err` with `Transfer`, whether SYCL took ownership is unspecified; treat the handle as
    ///   given away (it is not destroyed by this crate either).
    pub unsafe fn from_level_zero(
        ze_context: ze_context_handle_t,
        devices: &[SyclDevice],
        ownership: Foreign,
    ) -> Result<Arc<SyclContext>> {
        if ze_context.is_null() {
            return Err(Error::invalid_argument("SyclContext::from_level_zero: the ze_context_handle_t is null"));
        }
        if devices.is_empty() {
            return Err(Error::invalid_argument("SyclContext::from_level_zero: no devices"));
        }
        let locations: Vec<bridge::DeviceLocation> = devices.iter().map(SyclDevice::location).collect();
        let (own, origin, owner) = match ownership {
            Foreign::Owned => (bridge::Ownership::Transfer, ContextOrigin::LevelZeroTransfer, None),
            Foreign::Borrowed { owner } => (bridge::Ownership::Keep, ContextOrigin::LevelZeroKeep, owner),
        };
        let sycl_devices = devices.iter().map(SyclDevice::open).collect::<Result<Vec<_>>>()?;
        // SAFETY: the handle's validity, driver and ownership are this function's contract.
        let raw = unsafe { bridge::make_level_zero_context(ze_context as usize, &locations, own) }
            .map_err(sycl_error("SyclContext::from_level_zero"))?;
        Ok(Arc::new(SyclContext {
            raw,
            sycl_devices,
            devices: devices.to_vec(),
            origin,
            deferred: DeferredErrors::default(),
            owner,
        }))
    }

    /// A SYCL context over a context of this crate's Level Zero layer, with `ownership::keep`: the
    /// returned `SyclContext` holds the `Arc` as its keep-alive, so the `ze_context` (destroyed by its own
    /// `Drop` if it is owned) outlives the `sycl::context`. Safe, because the `Arc` guarantees the
    /// handle's lifetime; the driver is checked against the devices' platform first.
    pub fn from_level_zero_context(
        context: &Arc<crate::level_zero::L0Context>,
        devices: &[SyclDevice],
    ) -> Result<Arc<SyclContext>> {
        let driver = context.driver().as_raw();
        if let Some(d) = devices.iter().find(|d| d.native_driver() != Some(driver)) {
            return Err(Error::invalid_argument(format!(
                "SyclContext::from_level_zero_context: the Level Zero context belongs to driver {driver:p}, but device \
                 '{}' belongs to {:?}; make the context on the driver of the devices' platform",
                d.name,
                d.native_driver()
            )));
        }
        let owner: KeepAlive = context.clone();
        // SAFETY: the handle is live for as long as the `Arc` we hand over as the keep-alive (the Level
        // Zero layer destroys an owned context only in the `Drop` of its last `Arc`, and never a borrowed
        // one); the driver matches the devices' platform (checked above).
        unsafe { Self::from_level_zero(context.as_raw(), devices, Foreign::Borrowed { owner: Some(owner) }) }
    }

    /// The program's own `sycl::context` (a C++ program's, through the C++ API): a copy of the
    /// handle, so SYCL keeps it alive while this `SyclContext` lives; its devices are the context's
    /// Level Zero devices.
    ///
    /// # Errors
    /// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) for a null pointer or a context with a
    /// device that is not a Level Zero device SYCL lists; SYCL errors.
    ///
    /// # Safety
    /// `context` points to a live `sycl::context` for the duration of the call.
    pub unsafe fn from_sycl(context: *const std::ffi::c_void) -> Result<Arc<SyclContext>> {
        if context.is_null() {
            return Err(Error::invalid_argument("SyclContext::from_sycl: the sycl::context pointer is null"));
        }
        // SAFETY: `context` points to a live sycl::context (this function's contract); it is copied.
        let raw = unsafe { bridge::adopt_context(context as usize) }.map_err(sycl_error("copying a sycl::context"))?;
        let natives = bridge::context_native_devices(&raw).map_err(sycl_error("sycl::context::get_devices"))?;
        let mut devices = Vec::with_capacity(natives.len());
        for native in natives {
            let device = SyclDevice::find_by_native(native as ze_device_handle_t)?.ok_or_else(|| {
                Error::invalid_argument(format!(
                    "SyclContext::from_sycl: the context's device {native:#x} is not a Level Zero device SYCL lists"
                ))
            })?;
            devices.push(device);
        }
        let sycl_devices = devices.iter().map(SyclDevice::open).collect::<Result<Vec<_>>>()?;
        Ok(Arc::new(SyclContext {
            raw,
            sycl_devices,
            devices,
            origin: ContextOrigin::Sycl,
            deferred: DeferredErrors::default(),
            owner: None,
        }))
    }

    /// `get_native<backend::ext_oneapi_level_zero>(context)`. For a context made with
    /// [`SyclContext::from_level_zero`] this is the handle given. The handle stays owned as
    /// [`origin`](Self::origin) says; do not destroy it.
    pub fn native(&self) -> Result<ze_context_handle_t> {
        let h = bridge::context_native(&self.raw).map_err(sycl_error("get_native(context)"))?;
        Ok(h as ze_context_handle_t)
    }

    /// Where the context came from (who destroys its Level Zero context).
    pub fn origin(&self) -> ContextOrigin {
        self.origin
    }

    /// The devices the context was made with.
    pub fn devices(&self) -> &[SyclDevice] {
        &self.devices
    }

    /// The number of devices the runtime reports for the context (`context.get_devices().size()`).
    pub fn runtime_device_count(&self) -> Result<usize> {
        bridge::context_device_count(&self.raw).map_err(sycl_error("context.get_devices"))
    }

    /// Whether the context holds the owner of its borrowed `ze_context` ([`Foreign::Borrowed`]).
    pub fn has_owner(&self) -> bool {
        self.owner.is_some()
    }

    /// `sycl::get_pointer_type(ptr, context)`: the USM kind of `ptr` in this context, `None` for memory
    /// the context does not know (plain process memory, another context's or driver's memory). Only a
    /// lookup: `ptr` is never dereferenced, so any value is allowed.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn pointer_kind(&self, ptr: *const std::ffi::c_void) -> Result<Option<super::UsmKind>> {
        // SAFETY: get_pointer_type only looks the address up in the runtime's and driver's tables; it
        // never dereferences it.
        let k = unsafe { bridge::pointer_kind(ptr.cast(), &self.raw) }.map_err(sycl_error("get_pointer_type"))?;
        Ok(super::UsmKind::from_bridge(k))
    }

    /// Errors recorded by `Drop` impls of objects made from this context (for example a failing
    /// `sycl::free`), oldest first; the list is emptied.
    pub fn take_deferred_errors(&self) -> Vec<Error> {
        self.deferred.take_all()
    }

    pub(crate) fn defer_error(&self, e: Error) {
        self.deferred.push(e);
    }

    /// Returns the oldest deferred error, if any.
    pub(crate) fn check_deferred(&self) -> Result<()> {
        self.deferred.check()
    }

    pub(crate) fn raw(&self) -> &bridge::SyclContext {
        &self.raw
    }

    /// The `sycl::device` of `device`, which must be one of the context's devices.
    pub(crate) fn sycl_device(&self, device: &SyclDevice) -> Result<(usize, &bridge::SyclDevice)> {
        let slot = self.devices.iter().position(|d| d.same_as(device)).ok_or_else(|| {
            Error::invalid_argument(format!(
                "device '{}' (platform {}, device {}) is not a device of this context",
                device.name, device.platform_index, device.index
            ))
        })?;
        Ok((slot, &self.sycl_devices[slot]))
    }

    pub(crate) fn sycl_device_at(&self, slot: usize) -> &bridge::SyclDevice {
        &self.sycl_devices[slot]
    }
}
