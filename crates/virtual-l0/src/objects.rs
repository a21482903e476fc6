//! The object model.
//!
//! Every handle this library gives out is a pointer to an [`Object<T>`]: a `#[repr(C)]` header
//! (`magic` naming the object kind, `driver` naming the owning [`DriverKind`]) followed by the
//! object. Entry points validate handles with [`get`] (NULL → `ZE_RESULT_ERROR_INVALID_NULL_HANDLE`,
//! not a live object of ours (destroyed, foreign) → `ZE_RESULT_ERROR_INVALID_ARGUMENT` without reading it,
//! wrong or dead magic → `ZE_RESULT_ERROR_INVALID_ARGUMENT`) and dispatch on the driver of their
//! first handle; every further handle must belong to the same driver
//! ([`same_driver`] → `ZE_RESULT_ERROR_INVALID_ARGUMENT`). Handles are never wrapped, so
//! `zelLoaderTranslateHandle*` is the identity.
//!
//! Crate-visible helpers for other modules (the NPU module uses these):
//! - [`driver_from`], [`device_from`], [`context_from`], [`command_list_from`], [`queue_from`],
//!   [`fence_from`], [`event_from`], [`event_pool_from`]: `handle → Result<&Object<T>, ze_result_t>`.
//! - [`driver_of`]: the driver of any handle of ours, `None` otherwise.
//! - [`device_in`]: a device handle that must belong to a given driver.
//! - [`create`] / [`destroy`] / [`get`] with a [`Kind`] impl, for new object kinds (graphs).
//! - [`driver`], [`device`]: the two static drivers and their single devices.
use crate::export::ZeResult;
use crate::sys::*;
use std::collections::HashSet;
use std::ffi::c_void;
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// Which virtual driver an object belongs to.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DriverKind {
    /// The virtual Intel GPU driver (one `ZE_DEVICE_TYPE_GPU` device).
    Gpu = 0,
    /// The virtual Intel NPU driver (one `ZE_DEVICE_TYPE_VPU` device).
    Npu = 1,
}

impl DriverKind {
    /// Both drivers, in `zeDriverGet` order.
    pub const ALL: [DriverKind; 2] = [DriverKind::Gpu, DriverKind::Npu];
    /// `"gpu"` / `"npu"`, the counter-name prefix.
    pub fn prefix(self) -> &'static str {
        match self {
            DriverKind::Gpu => "gpu",
            DriverKind::Npu => "npu",
        }
    }
}

/// An object kind: the magic stored in its header.
pub trait Kind: Send + Sync + 'static {
    /// Header magic for live objects of this kind.
    const MAGIC: u64;
}

const DEAD: u64 = 0xdead_dead_dead_dead;

/// The header every handle points to, followed by the object.
#[repr(C)]
pub struct Object<T> {
    magic: AtomicU64,
    driver: DriverKind,
    inner: T,
}

impl<T> Deref for Object<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T: Kind> Object<T> {
    /// The driver this object belongs to.
    pub fn driver(&self) -> DriverKind {
        self.driver
    }
    /// This object as a handle of any pointer type.
    pub fn handle<H>(&self) -> *mut H {
        self as *const Self as *mut H
    }
}

/// The addresses of every live object (handle lifetime tracking, as the Level Zero validation
/// layer's `ZE_ENABLE_HANDLE_LIFETIME` does): a handle is dereferenced only if it is in this set, so
/// a destroyed handle (double destroy, use after destroy) or a foreign pointer is
/// `ZE_RESULT_ERROR_INVALID_ARGUMENT` instead of a read of freed or unmapped memory. A destroyed
/// address reused by a new object aliases that object, as with a real driver.
fn live() -> MutexGuard<'static, HashSet<usize>> {
    static LIVE: OnceLock<Mutex<HashSet<usize>>> = OnceLock::new();
    LIVE.get_or_init(|| Mutex::new(HashSet::new())).lock().unwrap_or_else(|e| e.into_inner())
}

/// Allocates a new object and returns its handle (owned by the caller until [`destroy`]).
pub fn create<T: Kind, H>(driver: DriverKind, inner: T) -> *mut H {
    let p = Box::into_raw(Box::new(Object { magic: AtomicU64::new(T::MAGIC), driver, inner }));
    live().insert(p as usize);
    p as *mut H
}

/// Validates a handle of kind `T`.
///
/// # Safety
/// None for the validation itself: any pointer value is checked against the live set before it is
/// read. The returned reference is valid until the object is destroyed; the caller must not use it
/// after that (the Level Zero rule: no call may use an object that another thread is destroying).
pub unsafe fn get<'a, T: Kind, H>(h: *mut H) -> ZeResult<&'a Object<T>> {
    if h.is_null() {
        return Err(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    }
    let o = h as *const Object<T>;
    let live = live();
    if !live.contains(&(h as usize)) {
        return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT);
    }
    // SAFETY: a live object created by `create` (its header is the same for every T); it cannot be
    // freed while we hold the live set, which `destroy` needs.
    let magic = unsafe { (*o).magic.load(Ordering::Acquire) };
    drop(live);
    if magic != T::MAGIC {
        return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT);
    }
    // SAFETY: the magic says this is a live Object<T> created by `create`.
    Ok(unsafe { &*o })
}

/// Validates and destroys a handle of kind `T`, returning the object (dropped by the caller).
///
/// # Safety
/// As for [`get`]; no other thread uses the object any more (the Level Zero rule for destroy).
pub unsafe fn destroy<T: Kind, H>(h: *mut H) -> ZeResult<Box<Object<T>>> {
    // SAFETY: per the contract.
    let o = unsafe { get::<T, H>(h) }?;
    let mut live = live();
    // Under the live set, so exactly one of two racing destroys wins.
    if !live.remove(&(h as usize)) {
        return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT);
    }
    o.magic.store(DEAD, Ordering::Release);
    drop(live);
    // SAFETY: created by Box::into_raw in `create`; removed from the live set by us alone.
    Ok(unsafe { Box::from_raw(o as *const Object<T> as *mut Object<T>) })
}

/// `Err(ZE_RESULT_ERROR_INVALID_ARGUMENT)` unless `b` belongs to driver `a`.
pub fn same_driver<T: Kind>(a: DriverKind, b: &Object<T>) -> ZeResult {
    if b.driver == a {
        Ok(())
    } else {
        Err(ZE_RESULT_ERROR_INVALID_ARGUMENT)
    }
}

/// A virtual driver (static; never destroyed).
pub struct Driver {
    /// Which one.
    pub kind: DriverKind,
}
/// A virtual device (static; never destroyed).
pub struct Device {
    /// Its driver.
    pub kind: DriverKind,
}
/// A context: the devices it was created with.
pub struct Context {
    /// Device handles (all of the context's driver).
    pub devices: Vec<usize>,
}

impl Kind for Driver {
    const MAGIC: u64 = u64::from_le_bytes(*b"VL0DRIVR");
}
impl Kind for Device {
    const MAGIC: u64 = u64::from_le_bytes(*b"VL0DEVIC");
}
impl Kind for Context {
    const MAGIC: u64 = u64::from_le_bytes(*b"VL0CNTXT");
}

struct Platform {
    drivers: [&'static Object<Driver>; 2],
    devices: [&'static Object<Device>; 2],
}

fn platform() -> &'static Platform {
    static P: OnceLock<Platform> = OnceLock::new();
    P.get_or_init(|| {
        let leak_driver = |k| {
            // SAFETY: `create` returns a valid, never-freed Object<Driver>.
            unsafe { &*create::<Driver, Object<Driver>>(k, Driver { kind: k }) }
        };
        let leak_device = |k| {
            // SAFETY: as above.
            unsafe { &*create::<Device, Object<Device>>(k, Device { kind: k }) }
        };
        Platform {
            drivers: [leak_driver(DriverKind::Gpu), leak_driver(DriverKind::Npu)],
            devices: [leak_device(DriverKind::Gpu), leak_device(DriverKind::Npu)],
        }
    })
}

/// The static driver object of `kind`.
pub fn driver(kind: DriverKind) -> &'static Object<Driver> {
    platform().drivers[kind as usize]
}

/// The single device of driver `kind`.
pub fn device(kind: DriverKind) -> &'static Object<Device> {
    platform().devices[kind as usize]
}

/// Validates a driver handle.
///
/// # Safety
/// As for [`get`].
pub unsafe fn driver_from<'a>(h: ze_driver_handle_t) -> ZeResult<&'a Object<Driver>> {
    // SAFETY: per the contract.
    unsafe { get(h) }
}
/// Validates a device handle.
///
/// # Safety
/// As for [`get`].
pub unsafe fn device_from<'a>(h: ze_device_handle_t) -> ZeResult<&'a Object<Device>> {
    // SAFETY: per the contract.
    unsafe { get(h) }
}
/// Validates a device handle that must belong to `driver` (else `ZE_RESULT_ERROR_INVALID_ARGUMENT`).
///
/// # Safety
/// As for [`get`].
pub unsafe fn device_in<'a>(driver: DriverKind, h: ze_device_handle_t) -> ZeResult<&'a Object<Device>> {
    // SAFETY: per the contract.
    let d = unsafe { device_from(h) }?;
    same_driver(driver, d)?;
    Ok(d)
}
/// Validates a context handle.
///
/// # Safety
/// As for [`get`].
pub unsafe fn context_from<'a>(h: ze_context_handle_t) -> ZeResult<&'a Object<Context>> {
    // SAFETY: per the contract.
    unsafe { get(h) }
}
/// Validates a command list handle.
///
/// # Safety
/// As for [`get`].
pub unsafe fn command_list_from<'a>(h: ze_command_list_handle_t) -> ZeResult<&'a Object<crate::cmdlist::CommandList>> {
    // SAFETY: per the contract.
    unsafe { get(h) }
}
/// Validates a command queue handle.
///
/// # Safety
/// As for [`get`].
pub unsafe fn queue_from<'a>(h: ze_command_queue_handle_t) -> ZeResult<&'a Object<crate::cmdlist::CommandQueue>> {
    // SAFETY: per the contract.
    unsafe { get(h) }
}
/// Validates a fence handle.
///
/// # Safety
/// As for [`get`].
pub unsafe fn fence_from<'a>(h: ze_fence_handle_t) -> ZeResult<&'a Object<crate::cmdlist::Fence>> {
    // SAFETY: per the contract.
    unsafe { get(h) }
}
/// Validates an event handle.
///
/// # Safety
/// As for [`get`].
pub unsafe fn event_from<'a>(h: ze_event_handle_t) -> ZeResult<&'a Object<crate::cmdlist::Event>> {
    // SAFETY: per the contract.
    unsafe { get(h) }
}
/// Validates an event pool handle.
///
/// # Safety
/// As for [`get`].
pub unsafe fn event_pool_from<'a>(h: ze_event_pool_handle_t) -> ZeResult<&'a Object<crate::cmdlist::EventPool>> {
    // SAFETY: per the contract.
    unsafe { get(h) }
}

/// The driver of any live handle of ours (driver, device, context, queue, list, fence, event
/// pool, event, or any kind whose magic starts with `VL0`), `None` for NULL or foreign pointers.
///
/// # Safety
/// As for [`get`].
pub unsafe fn driver_of(h: *mut c_void) -> Option<DriverKind> {
    if h.is_null() {
        return None;
    }
    let o = h as *const Object<()>;
    let live = live();
    if !live.contains(&(h as usize)) {
        return None;
    }
    // SAFETY: a live object of ours (see `get`); the header layout is the same for every T.
    let magic = unsafe { (*o).magic.load(Ordering::Acquire) };
    drop(live);
    if magic.to_le_bytes()[..3] != *b"VL0" {
        return None;
    }
    // SAFETY: one of our headers.
    Some(unsafe { (*o).driver })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Thing;
    impl Kind for Thing {
        const MAGIC: u64 = u64::from_le_bytes(*b"VL0THING");
    }

    /// Handles are checked against the objects alive, never read blindly: a destroyed handle, a
    /// forged header and a pointer to unmapped memory are INVALID_ARGUMENT (no use-after-free read,
    /// no double free, no SIGSEGV).
    #[test]
    fn only_live_handles_are_dereferenced() {
        let h: *mut c_void = create(DriverKind::Gpu, Thing);
        // SAFETY: every pointer below is only validated, never trusted.
        unsafe {
            assert!(get::<Thing, _>(h).is_ok());
            assert_eq!(driver_of(h), Some(DriverKind::Gpu));
            assert!(destroy::<Thing, _>(h).is_ok());
            assert_eq!(get::<Thing, _>(h).err(), Some(ZE_RESULT_ERROR_INVALID_ARGUMENT), "use after destroy");
            assert_eq!(destroy::<Thing, _>(h).err(), Some(ZE_RESULT_ERROR_INVALID_ARGUMENT), "double destroy");
            assert_eq!(driver_of(h), None);

            let forged = Object { magic: AtomicU64::new(Thing::MAGIC), driver: DriverKind::Npu, inner: Thing };
            let fh = &forged as *const Object<Thing> as *mut c_void;
            assert_eq!(get::<Thing, _>(fh).err(), Some(ZE_RESULT_ERROR_INVALID_ARGUMENT), "not one of ours");
            assert_eq!(driver_of(fh), None);

            let page =
                libc::mmap(std::ptr::null_mut(), 4096, libc::PROT_NONE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0);
            assert_ne!(page, libc::MAP_FAILED);
            assert_eq!(get::<Thing, _>(page).err(), Some(ZE_RESULT_ERROR_INVALID_ARGUMENT), "unreadable");
            assert_eq!(driver_of(page), None);
            libc::munmap(page, 4096);
        }
    }
}
