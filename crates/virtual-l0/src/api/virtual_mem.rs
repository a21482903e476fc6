//! The GPU's virtual-memory API (reserve, physical memory, map/unmap, access attributes, page size)
//! and the atomic-access attributes of shared allocations, as compute-runtime implements them
//! (`level_zero/core/source/context/context.cpp`). The NPU has neither: linux-npu-driver 1.32.1
//! fills no virtual-memory or physical-memory table, so its calls are `UNSUPPORTED_FEATURE`.
//!
//! A reservation is a `PROT_NONE` range of this process; physical memory is a memfd; mapping maps
//! the memfd at the reserved address with the protection of the reservation's access attribute
//! (read-write, read-only, none), so the copies the GPU runs here reach it, and registers the range
//! as device memory of the context.
use crate::export::{input, out, ZeResult};
use crate::objects::{self, context_from, device_in, DriverKind, Kind};
use crate::sys::*;
use std::collections::{BTreeMap, HashMap};
use std::ffi::c_void;
use std::sync::{Mutex, MutexGuard};

/// compute-runtime's page sizes for the virtual-memory API (`DrmMemoryManager::selectAlignmentAndHeap`:
/// the 64 KiB candidate, and 2 MiB from 2 MiB on, `AlignLocalMemoryVaTo2MB` being on by default).
pub fn page_size(size: usize) -> usize {
    if size >= 2 << 20 {
        2 << 20
    } else {
        64 << 10
    }
}

/// `Context::getPageAlignedSizeRequired`: `size` rounded up to its page size (at least one page).
fn page_aligned(size: usize) -> usize {
    let page = page_size(size);
    if size > page {
        size.div_ceil(page) * page
    } else {
        page
    }
}

/// `ze_physical_mem_handle_t`: a memfd, a dma-buf as far as imports go (a physical allocation is
/// a GEM object of its own on hardware).
pub struct PhysicalMem {
    fd: libc::c_int,
    size: usize,
    /// Device memory (not `ALLOCATE_ON_HOST`): mapped at most once at a time.
    device: bool,
    /// The export fd IPC handles name (`DrmAllocation::peekInternalHandle` caches one per
    /// allocation), opened at the first handle, closed when its last handle is put.
    export: Mutex<Option<libc::c_int>>,
}
impl Kind for PhysicalMem {
    const MAGIC: u64 = u64::from_le_bytes(*b"VL0PHYSM");
}
impl Drop for PhysicalMem {
    fn drop(&mut self) {
        // SAFETY: our own fds; mappings of the memory stay valid after the close.
        unsafe {
            libc::close(self.fd);
            if let Some(e) = *self.export.get_mut().unwrap_or_else(|e| e.into_inner()) {
                libc::close(e);
            }
        }
    }
}

struct Mapping {
    size: usize,
    physical: usize,
    id: u64,
}

/// What an IPC handle of mapped virtual memory names: the export fd of the physical allocation
/// behind the mapping, and the physical handle.
pub struct IpcSource {
    pub fd: libc::c_int,
    pub physical: usize,
}

/// The IPC source of `ptr` when it lies in a mapping of physical memory (compute-runtime 26.14 keeps
/// no physical offset: the handle names the whole physical allocation); `None` otherwise, a physical
/// memory handle itself included (no SVM allocation to 26.14).
pub fn ipc_source(ptr: usize) -> Option<ZeResult<IpcSource>> {
    let physical = {
        let mut rs = reservations();
        let (_, r) = containing(&mut rs, ptr, 1)?;
        let (_, m) = r.mappings.range(..=ptr).next_back().filter(|(b, m)| ptr < **b + m.size)?;
        m.physical
    };
    // SAFETY: the value is checked against the live objects before it is read.
    let pm = unsafe { objects::get::<PhysicalMem, _>(physical as ze_physical_mem_handle_t) }.ok()?;
    let mut export = pm.export.lock().unwrap_or_else(|e| e.into_inner());
    let fd = match *export {
        Some(fd) => fd,
        None => match crate::os::duplicate(pm.fd) {
            Some(fd) => *export.insert(fd),
            None => return Some(Err(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY)),
        },
    };
    Some(Ok(IpcSource { fd, physical }))
}

/// Closes the export fd of physical memory `physical` (its last IPC handle was put).
pub fn close_ipc_export(physical: usize) {
    // SAFETY: the value is checked against the live objects before it is read.
    if let Ok(pm) = unsafe { objects::get::<PhysicalMem, _>(physical as ze_physical_mem_handle_t) } {
        if let Some(fd) = pm.export.lock().unwrap_or_else(|e| e.into_inner()).take() {
            crate::os::close(fd);
        }
    }
}

struct Reservation {
    /// What `zeVirtualMemReserve` was asked for (`zeVirtualMemFree` must name the same size).
    size: usize,
    /// The whole `mmap`ed range (base, length) behind it.
    region: (usize, usize),
    access: ze_memory_access_attribute_t,
    context: usize,
    /// Mappings by start address.
    mappings: BTreeMap<usize, Mapping>,
}

fn reservations() -> MutexGuard<'static, BTreeMap<usize, Reservation>> {
    static R: Mutex<BTreeMap<usize, Reservation>> = Mutex::new(BTreeMap::new());
    R.lock().unwrap_or_else(|e| e.into_inner())
}

/// `Context::findSupportedVirtualReservation`: the reservation containing `[ptr, ptr + size)`.
fn containing(r: &mut BTreeMap<usize, Reservation>, ptr: usize, size: usize) -> Option<(&usize, &mut Reservation)> {
    r.range_mut(..=ptr).next_back().filter(|(b, v)| ptr.saturating_add(size) <= **b + v.size)
}

fn prot(access: ze_memory_access_attribute_t) -> libc::c_int {
    match access {
        ZE_MEMORY_ACCESS_ATTRIBUTE_READWRITE => libc::PROT_READ | libc::PROT_WRITE,
        ZE_MEMORY_ACCESS_ATTRIBUTE_READONLY => libc::PROT_READ,
        _ => libc::PROT_NONE,
    }
}

/// Whether the GPU may read (or, with `write`, write) `[ptr, ptr + len)` as far as virtual-memory
/// reservations go: a range in a reservation mapped with `NONE` (or `READONLY`, for a write) is not
/// (compute-runtime binds the range with the reservation's flags, `mapPhysicalDeviceMemoryToVirtualMemory`);
/// memory outside every reservation is not this module's to judge.
pub fn gpu_may_access(ptr: usize, len: usize, write: bool) -> bool {
    let mut rs = reservations();
    match containing(&mut rs, ptr, len.max(1)) {
        Some((_, r)) => match r.access {
            ZE_MEMORY_ACCESS_ATTRIBUTE_READWRITE => true,
            ZE_MEMORY_ACCESS_ATTRIBUTE_READONLY => !write,
            _ => false,
        },
        None => true,
    }
}

fn valid_access(access: ze_memory_access_attribute_t) -> ZeResult {
    match access {
        ZE_MEMORY_ACCESS_ATTRIBUTE_NONE
        | ZE_MEMORY_ACCESS_ATTRIBUTE_READWRITE
        | ZE_MEMORY_ACCESS_ATTRIBUTE_READONLY => Ok(()),
        _ => Err(ZE_RESULT_ERROR_INVALID_ENUMERATION),
    }
}

/// Puts an inaccessible anonymous range back over `[ptr, ptr + len)` (inside a reservation).
fn unmap_range(ptr: usize, len: usize) {
    // SAFETY: the range lies in a reservation of ours; MAP_FIXED replaces only our own mapping.
    unsafe {
        libc::mmap(
            ptr as *mut c_void,
            len,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED,
            -1,
            0,
        );
    }
}

/// The GPU context of `ctx`, else the call's answer: NPU → `UNSUPPORTED_FEATURE`.
unsafe fn gpu_context(ctx: ze_context_handle_t) -> ZeResult<()> {
    // SAFETY: per the caller.
    match unsafe { context_from(ctx) }?.driver() {
        DriverKind::Gpu => Ok(()),
        DriverKind::Npu => Err(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE),
    }
}

/// Atomic-access attributes set on shared allocations, by allocation id (`Device::atomicAccessAllocations`).
fn atomic_attrs() -> MutexGuard<'static, HashMap<u64, u32>> {
    static A: std::sync::OnceLock<Mutex<HashMap<u64, u32>>> = std::sync::OnceLock::new();
    A.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner())
}

ze_api! {
    /// `Context::queryVirtualMemPageSize`: 64 KiB, or 2 MiB for sizes of 2 MiB and more.
    fn zeVirtualMemQueryPageSize(ctx: ze_context_handle_t, dev: ze_device_handle_t, size: usize, pagesize: *mut usize) {
        // SAFETY: handles validated; out-parameter from the caller.
        unsafe {
            gpu_context(ctx)?;
            device_in(DriverKind::Gpu, dev)?;
            *out(pagesize)? = page_size(size);
        }
        Ok(())
    }
    /// `Context::reserveVirtualMem`: the size must be a multiple of 4 KiB (`UNSUPPORTED_SIZE`); the
    /// range starts on a 2 MiB boundary (the SVM-heap reservation: 2 MiB more is reserved and the
    /// start aligned up); `pStart` is a hint; access starts as NONE.
    fn zeVirtualMemReserve(ctx: ze_context_handle_t, start: *const c_void, size: usize, pptr: *mut *mut c_void) {
        // SAFETY: handle validated; out-parameter from the caller.
        let pptr = unsafe { gpu_context(ctx)?; out(pptr)? };
        if size == 0 || size % 4096 != 0 {
            return Err(ZE_RESULT_ERROR_UNSUPPORTED_SIZE);
        }
        const ALIGN: usize = 2 << 20;
        let total = size.div_ceil(ALIGN) * ALIGN + ALIGN;
        // SAFETY: a fresh anonymous inaccessible mapping; the hint is only a hint.
        let m = unsafe {
            libc::mmap(start as *mut c_void, total, libc::PROT_NONE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE, -1, 0)
        };
        if m == libc::MAP_FAILED {
            return Err(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
        }
        let base = (m as usize).div_ceil(ALIGN) * ALIGN;
        reservations().insert(base, Reservation {
            size,
            region: (m as usize, total),
            access: ZE_MEMORY_ACCESS_ATTRIBUTE_NONE,
            context: ctx as usize,
            mappings: BTreeMap::new(),
        });
        *pptr = base as *mut c_void;
        Ok(())
    }
    /// `Context::freeVirtualMem`: the start of a reservation with its very size, else
    /// `INVALID_ARGUMENT`; mappings still in it go with it.
    fn zeVirtualMemFree(ctx: ze_context_handle_t, ptr: *const c_void, size: usize) {
        // SAFETY: handle validated.
        unsafe { gpu_context(ctx) }?;
        let mut rs = reservations();
        match rs.get(&(ptr as usize)) {
            Some(r) if r.size == size => {}
            _ => return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT),
        }
        let r = rs.remove(&(ptr as usize)).expect("present");
        drop(rs);
        for (b, m) in r.mappings {
            crate::memory::unregister(DriverKind::Gpu, b, m.id);
        }
        // SAFETY: the whole range this reservation mmap'ed.
        unsafe { libc::munmap(r.region.0 as *mut c_void, r.region.1) };
        Ok(())
    }
    /// `Context::createPhysicalMem`: device memory in multiples of its page size, host memory
    /// (`ALLOCATE_ON_HOST`) in multiples of 4 KiB, else `UNSUPPORTED_SIZE`.
    fn zePhysicalMemCreate(ctx: ze_context_handle_t, dev: ze_device_handle_t, desc: *mut ze_physical_mem_desc_t, o: *mut ze_physical_mem_handle_t) {
        // SAFETY: handles validated; descriptor and out-parameter from the caller.
        let (d, o) = unsafe { gpu_context(ctx)?; (input(desc as *const ze_physical_mem_desc_t)?, out(o)?) };
        let on_host = d.flags & ZE_PHYSICAL_MEM_FLAG_ALLOCATE_ON_HOST != 0;
        // Host physical memory does not use the device (`Context::createPhysicalMem` reads it only
        // for device memory), so a NULL device is accepted there.
        if !(on_host && dev.is_null()) {
            // SAFETY: handle validated.
            unsafe { device_in(DriverKind::Gpu, dev) }?;
        }
        let ok_size = if on_host { d.size % 4096 == 0 } else { page_aligned(d.size) == d.size };
        if d.size == 0 || !ok_size {
            return Err(ZE_RESULT_ERROR_UNSUPPORTED_SIZE);
        }
        let (fd, _) = crate::memory::create_shareable(d.size).map_err(|_| ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)?;
        *o = objects::create(DriverKind::Gpu, PhysicalMem { fd, size: d.size, device: !on_host, export: Mutex::new(None) });
        Ok(())
    }
    /// `Context::destroyPhysicalMem`: SUCCESS, also for a handle it does not know.
    fn zePhysicalMemDestroy(ctx: ze_context_handle_t, h: ze_physical_mem_handle_t) {
        // SAFETY: handle validated.
        unsafe { gpu_context(ctx) }?;
        // SAFETY: no further use of the handle (L0 rule); an unknown one is left alone.
        let _ = unsafe { objects::destroy::<PhysicalMem, _>(h) };
        Ok(())
    }
    /// `Context::mapVirtualMem`: `size` a multiple of its page size (`UNSUPPORTED_SIZE`), `ptr` and
    /// `offset` aligned to it (`UNSUPPORTED_ALIGNMENT`), `offset + size` inside the physical memory,
    /// device physical memory mapped once, `[ptr, ptr + size)` inside a reservation and not mapped
    /// at `ptr` yet (else `INVALID_ARGUMENT`), `access` a valid attribute (`INVALID_ENUMERATION`),
    /// which becomes the reservation's.
    fn zeVirtualMemMap(ctx: ze_context_handle_t, ptr: *const c_void, size: usize, h: ze_physical_mem_handle_t, offset: usize, access: ze_memory_access_attribute_t) {
        // SAFETY: handles validated.
        let pm = unsafe { gpu_context(ctx)?; objects::get::<PhysicalMem, _>(h) }?;
        let page = page_size(size);
        if page_aligned(size) != size {
            return Err(ZE_RESULT_ERROR_UNSUPPORTED_SIZE);
        }
        if (ptr as usize) % page != 0 || offset % page != 0 {
            return Err(ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT);
        }
        if offset > pm.size || pm.size - offset < size {
            return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT);
        }
        let mut rs = reservations();
        if pm.device && rs.values().any(|r| r.mappings.values().any(|m| m.physical == h as usize)) {
            return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT);
        }
        valid_access(access)?;
        let (_, r) = containing(&mut rs, ptr as usize, size).ok_or(ZE_RESULT_ERROR_INVALID_ARGUMENT)?;
        if r.mappings.range(..ptr as usize + size).next_back().is_some_and(|(b, m)| b + m.size > ptr as usize) {
            return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT);
        }
        r.access = access;
        // SAFETY: inside our reservation; maps the memfd over our own PROT_NONE range.
        let m = unsafe {
            libc::mmap(ptr as *mut c_void, size, prot(access), libc::MAP_SHARED | libc::MAP_FIXED, pm.fd, offset as libc::off_t)
        };
        if m == libc::MAP_FAILED {
            return Err(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY);
        }
        let id = crate::memory::register_mapping(DriverKind::Gpu, r.context, 0, ptr as usize, size);
        r.mappings.insert(ptr as usize, Mapping { size, physical: h as usize, id });
        Ok(())
    }
    /// `Context::unMapVirtualMem`: `size` a multiple of its page size (`UNSUPPORTED_SIZE`), `ptr`
    /// aligned to it (`UNSUPPORTED_ALIGNMENT`); the mappings in the range are removed.
    fn zeVirtualMemUnmap(ctx: ze_context_handle_t, ptr: *const c_void, size: usize) {
        // SAFETY: handle validated.
        unsafe { gpu_context(ctx) }?;
        let page = page_size(size);
        if page_aligned(size) != size {
            return Err(ZE_RESULT_ERROR_UNSUPPORTED_SIZE);
        }
        if (ptr as usize) % page != 0 {
            return Err(ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT);
        }
        let (p, end) = (ptr as usize, ptr as usize + size);
        let mut rs = reservations();
        if let Some((_, r)) = containing(&mut rs, p, size) {
            let gone: Vec<usize> = r.mappings.range(p..end).map(|(b, _)| *b).collect();
            for b in gone {
                let m = r.mappings.remove(&b).expect("present");
                crate::memory::unregister(DriverKind::Gpu, b, m.id);
                unmap_range(b, m.size);
            }
        }
        Ok(())
    }
    /// `Context::setVirtualMemAccessAttribute`: the attribute of the reservation containing the
    /// range (else `INVALID_ARGUMENT`; an unknown attribute `INVALID_ENUMERATION`); a mapping at
    /// `ptr` is mapped again with it.
    fn zeVirtualMemSetAccessAttribute(ctx: ze_context_handle_t, ptr: *const c_void, size: usize, access: ze_memory_access_attribute_t) {
        // SAFETY: handle validated.
        unsafe { gpu_context(ctx) }?;
        let mut rs = reservations();
        let (_, r) = containing(&mut rs, ptr as usize, size).ok_or(ZE_RESULT_ERROR_INVALID_ARGUMENT)?;
        valid_access(access)?;
        r.access = access;
        if let Some(m) = r.mappings.get(&(ptr as usize)) {
            // SAFETY: a mapping of ours.
            unsafe { libc::mprotect(ptr as *mut c_void, m.size, prot(access)) };
        }
        Ok(())
    }
    /// `Context::getVirtualMemAccessAttribute`: the reservation's attribute and its size.
    fn zeVirtualMemGetAccessAttribute(ctx: ze_context_handle_t, ptr: *const c_void, size: usize, access: *mut ze_memory_access_attribute_t, out_size: *mut usize) {
        // SAFETY: handle validated; out-parameters from the caller.
        let (access, out_size) = unsafe { gpu_context(ctx)?; (out(access)?, out(out_size)?) };
        let mut rs = reservations();
        let (_, r) = containing(&mut rs, ptr as usize, size).ok_or(ZE_RESULT_ERROR_INVALID_ARGUMENT)?;
        *access = r.access;
        *out_size = r.size;
        Ok(())
    }

    /// `Context::setAtomicAccessAttribute`: only on a shared allocation of the device (a NULL
    /// device, another kind or an unknown pointer: `INVALID_ARGUMENT`; with shared-system USM a
    /// pointer the driver does not know is plain process memory and takes the attribute);
    /// DEVICE_ATOMICS and HOST_ATOMICS need ATOMIC in the device's and host's capabilities (set),
    /// SYSTEM_ATOMICS CONCURRENT_ATOMIC in the shared capabilities (only shared-system USM has it),
    /// 0 and the NO_* flags mean none; anything else `INVALID_ARGUMENT`.
    fn zeMemSetAtomicAccessAttributeExp(ctx: ze_context_handle_t, dev: ze_device_handle_t, ptr: *const c_void, _size: usize, attr: ze_memory_atomic_attr_exp_flags_t) {
        // SAFETY: handle validated.
        unsafe { gpu_context(ctx) }?;
        if dev.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT);
        }
        // SAFETY: validated.
        unsafe { device_in(DriverKind::Gpu, dev) }?;
        let system = crate::profile::current().gpu_shared_system_usm;
        let info = crate::memory::lookup(DriverKind::Gpu, ptr);
        let key = match info {
            Some(i) if i.kind == crate::memory::MemKind::Shared => i.id,
            Some(_) => return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT),
            None if system => !(ptr as u64), // plain process memory, keyed by its address
            None => return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT),
        };
        let mut valid = attr == 0;
        valid |= attr & (ZE_MEMORY_ATOMIC_ATTR_EXP_FLAG_DEVICE_ATOMICS | ZE_MEMORY_ATOMIC_ATTR_EXP_FLAG_HOST_ATOMICS) != 0;
        if attr & ZE_MEMORY_ATOMIC_ATTR_EXP_FLAG_SYSTEM_ATOMICS != 0 {
            // Shared single- and cross-device capabilities have no CONCURRENT_ATOMIC here; the
            // shared-system ones do where shared-system USM is on.
            if !(system && info.is_none()) {
                return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT);
            }
            valid = true;
        }
        let none = ZE_MEMORY_ATOMIC_ATTR_EXP_FLAG_NO_ATOMICS | ZE_MEMORY_ATOMIC_ATTR_EXP_FLAG_NO_HOST_ATOMICS
            | ZE_MEMORY_ATOMIC_ATTR_EXP_FLAG_NO_DEVICE_ATOMICS | ZE_MEMORY_ATOMIC_ATTR_EXP_FLAG_NO_SYSTEM_ATOMICS;
        valid |= attr & none != 0;
        if !valid {
            return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT);
        }
        atomic_attrs().insert(key, attr);
        Ok(())
    }
    /// `Context::getAtomicAccessAttribute`: what was set on the allocation; never set, or a pointer
    /// the driver does not know, `INVALID_ARGUMENT`.
    fn zeMemGetAtomicAccessAttributeExp(ctx: ze_context_handle_t, dev: ze_device_handle_t, ptr: *const c_void, _size: usize, attr: *mut ze_memory_atomic_attr_exp_flags_t) {
        // SAFETY: handles validated; out-parameter from the caller.
        let attr = unsafe { gpu_context(ctx)?; device_in(DriverKind::Gpu, dev)?; out(attr)? };
        let key = match crate::memory::lookup(DriverKind::Gpu, ptr) {
            Some(i) => i.id,
            None if crate::profile::current().gpu_shared_system_usm => !(ptr as u64),
            None => return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT),
        };
        *attr = *atomic_attrs().get(&key).ok_or(ZE_RESULT_ERROR_INVALID_ARGUMENT)?;
        Ok(())
    }
}
