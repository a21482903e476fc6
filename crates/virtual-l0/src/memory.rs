//! Per-driver allocation registries backed by real memory, with each driver's import and export
//! rules as the real drivers implement them.
//!
//! Each driver has its own registry (so the NPU sees SYCL USM as foreign). Entries are found by
//! range, so interior pointers resolve; every entry gets a unique, non-zero, stable `id` (one
//! process-wide counter, as linux-npu-driver's buffer-object ids); the page size is 4096. NPU
//! entries also carry the NPU-side address the real driver reports from `zeMemGetAddressRange`
//! (`device_va`, a separate address space).
//!
//! Backing, chosen from the allocation's `pNext` chain:
//! - plain: zeroed heap memory (`std::alloc`), alignment `max(requested, 64)`, 4096 for ≥ 4 KiB;
//! - GPU host and device memory, and NPU memory: `memfd_create` + `mmap(MAP_SHARED)` (the real
//!   drivers' buffer objects are GEM objects a PRIME export can name). GPU shared USM: heap.
//! - GPU export (compute-runtime 26.14 `level_zero/core/source/context/context.cpp`
//!   `Context::getMemAllocProperties` → `handleAllocationExtensions` → `getIpcMemHandlesImpl`,
//!   `DrmAllocation::peekInternalHandle`): any host or device allocation, export descriptor or not
//!   (the descriptor only keeps it out of the USM pools); the driver's one fd for the allocation, the
//!   same number every time, closed by `zeMemFree`; shared USM → `UNSUPPORTED_FEATURE`; the export
//!   flags are not checked. NPU export (linux-npu-driver 1.32.1
//!   `umd/level_zero_driver/source/memory.cpp` `Context::getMemAllocProperties`,
//!   `umd/vpu_driver/source/memory/vpu_buffer_object.cpp` `VPUBufferObject::exportToFd`): only
//!   buffer objects whose location is external, i.e. allocated with
//!   `ze_external_memory_export_desc_t{DMA_BUF}` as the first `pNext` entry or imported from a
//!   dma-buf; each query a new fd the caller owns; any other allocation → `NOT_AVAILABLE`.
//! - fd import (`ze_external_memory_import_fd_t`): only fds this platform exported are dma-bufs (a
//!   real PRIME import refuses memfds, files, pipes). NPU: flags exactly `DMA_BUF`, the whole buffer
//!   mapped whatever the size asked, every failure `OUT_OF_DEVICE_MEMORY`, and two imports of one
//!   buffer in one context share one handle, so freeing one breaks the other (linux-npu-driver
//!   `VPUBufferObject::importFromFd`, `Context::importMemory`). GPU: the fd is closed after a
//!   successful import where the profile's compute-runtime does (26.14.37833 on).
//! - sysmem import (`ze_external_memmap_sysmem_ext_desc_t`, 0x00020037): the caller's pointer
//!   itself, pinned as the kernel pins it (`ivpu_bo_create_from_userptr_ioctl`:
//!   `pin_user_pages_fast(FOLL_LONGTERM)`), so: NPU 40xx+ with userptr only (else
//!   `UNSUPPORTED_FEATURE`); a start inside an existing allocation of the context →
//!   `INVALID_ARGUMENT`; pages that cannot be pinned long-term → `OUT_OF_DEVICE_MEMORY`: unmapped
//!   pages, driver mappings (GPU USM is a GEM-object mmap, `VM_PFNMAP|VM_IO`), read-only pages for a
//!   writable import, shared writable file mappings for a writable import (a read-only pin of
//!   them is allowed). `ZE_HOST_MEM_ALLOC_FLAG_BIAS_WRITE_COMBINED`
//!   makes the import read-only for the NPU (`DRM_IVPU_BO_READ_ONLY`).
//!
//! Crate API: [`lookup`] (`driver, ptr → Option<AllocInfo>`), [`allocate`], [`free`], [`export_handle`],
//! [`live`].
use crate::export::{chain, ZeResult};
use crate::objects::DriverKind;
use crate::os::{self, Ident};
use crate::stypes;
use crate::sys::*;
use std::alloc::Layout;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// Page size reported for every allocation.
pub const PAGE: usize = 4096;
/// `maxMemAllocSize` as each driver reports it on this profile: NPU, the system's RAM
/// (linux-npu-driver 1.32.1 `umd/level_zero_driver/source/device.cpp` `getProperties`); Xe-LPG,
/// 4 GiB - 8 KiB (compute-runtime 26.14 `compiler_product_helper_before_xe_hpc.inl`
/// `isForceToStatelessRequired`: stateless kernels cap it); Xe2+, no 4 GiB cap
/// (`compiler_product_helper_xe_hpc_and_later.inl`; `shared/source/device/device_caps.cpp`):
/// the global memory size, which on an integrated GPU is 94 % of RAM less 450 MiB (that figure is
/// **inferred**: not checked against `getGlobalMemorySize`).
pub fn max_alloc(driver: DriverKind) -> u64 {
    match driver {
        DriverKind::Npu => total_ram(),
        DriverKind::Gpu if crate::profile::current().gpu_xe2_or_later => {
            ((total_ram() as f64 * 0.94) as u64).saturating_sub(450 << 20) & !(PAGE as u64 - 1)
        }
        DriverKind::Gpu => 0xFFFF_E000,
    }
}

/// Total system RAM in bytes (0 if unknown), read once: every GPU allocation checks against it.
pub fn total_ram() -> u64 {
    static RAM: OnceLock<u64> = OnceLock::new();
    *RAM.get_or_init(os::total_ram)
}

/// Where the NPU-side addresses of NPU allocations start (the NPU's own address space).
const NPU_VA_BASE: u64 = 0x1_0000_0000;

/// `ze_memory_type_t` of an allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum MemKind {
    /// `ZE_MEMORY_TYPE_HOST` (1)
    Host = 1,
    /// `ZE_MEMORY_TYPE_DEVICE` (2)
    Device = 2,
    /// `ZE_MEMORY_TYPE_SHARED` (3)
    Shared = 3,
}

/// How an allocation came to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Driver memory (heap).
    Plain,
    /// Driver memory backed by a memfd that can be exported as a dma-buf fd.
    Exportable,
    /// Our mapping of a caller's fd.
    ImportedFd,
    /// The caller's own memory (sysmem import).
    ImportedSysmem,
}

/// What the registry knows about an allocation.
#[derive(Clone, Copy, Debug)]
pub struct AllocInfo {
    /// Start address.
    pub base: usize,
    /// Size in bytes, as requested.
    pub size: usize,
    /// Unique non-zero id.
    pub id: u64,
    /// HOST, DEVICE or SHARED.
    pub kind: MemKind,
    /// Device handle (0 for host allocations).
    pub device: usize,
    /// Context handle it was allocated on.
    pub context: usize,
    /// How it came to be.
    pub origin: Origin,
    /// The NPU may only read it (a write-combined sysmem import).
    pub read_only: bool,
    /// NPU allocations: the NPU-side address (`zeMemGetAddressRange`'s base); 0 on the GPU.
    pub device_va: u64,
    /// An NPU dma-buf import whose shared handle another import of the same buffer has closed.
    pub poisoned: bool,
}

enum Backing {
    Heap {
        ptr: *mut u8,
        layout: Layout,
    },
    /// `ident` identifies the buffer, so `Drop` can tell whether `handle` is still ours. `handle` is `None`
    /// for plain GPU memory until its first export opens it (as compute-runtime makes its export
    /// fd on the first query, `DrmAllocation::peekInternalHandle`), so that memory nobody exports
    /// holds no fd, as a GEM object holds none.
    Shared {
        handle: Option<os::Raw>,
        ident: Ident,
        map: *mut c_void,
        len: usize,
    },
    /// Our mapping of an imported dma-buf (NT handle); `ident` is the buffer's identity. The mapping holds the
    /// buffer as the kernel's GEM object holds the dma-buf file (no fd), and an export opens the
    /// buffer again through it ([`os::reopen_mapping`]).
    Mapped {
        map: *mut c_void,
        len: usize,
        ident: Ident,
    },
    Borrowed,
}

// SAFETY: the pointers are owned mappings/allocations; nothing is thread-affine.
unsafe impl Send for Backing {}

impl Drop for Backing {
    fn drop(&mut self) {
        match *self {
            // SAFETY: allocated with this layout by `allocate`, freed once.
            Backing::Heap { ptr, layout } => unsafe { std::alloc::dealloc(ptr, layout) },
            Backing::Shared { handle, ident, map, len } => {
                // SAFETY: our own mapping.
                unsafe { os::unmap(map, len) };
                let Some(h) = handle else { return };
                // The GPU hands this very handle out as its export: a caller that closed it (or whose
                // number now names another object) misused it. The real driver would close whatever
                // the number names; here that is counted and the stranger's handle left alone.
                if !os::close_own(h, ident) {
                    crate::counters::add("gpu.export_fd_misuse", 1);
                    eprintln!(
                        "[virtual GPU] zeMemFree: the exported {} {h:?} was closed by someone else (it is the driver's; duplicate it to keep one)",
                        os::HANDLE_KIND
                    );
                }
            }
            // SAFETY: our own mapping of the caller's handle; the handle is not ours to close.
            Backing::Mapped { map, len, .. } => unsafe {
                os::unmap(map, len);
            },
            Backing::Borrowed => {}
        }
    }
}

struct Record {
    info: AllocInfo,
    backing: Backing,
}

type Registry = Mutex<BTreeMap<(usize, u64), Record>>;

fn registry(driver: DriverKind) -> &'static Registry {
    static R: OnceLock<[Registry; 2]> = OnceLock::new();
    &R.get_or_init(|| [Mutex::new(BTreeMap::new()), Mutex::new(BTreeMap::new())])[driver as usize]
}

fn lock(driver: DriverKind) -> std::sync::MutexGuard<'static, BTreeMap<(usize, u64), Record>> {
    registry(driver).lock().unwrap_or_else(|e| e.into_inner())
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The record containing `p` (interior pointers included), of context `ctx` if given. Records are
/// keyed by base, so the candidates are the ones starting at or below `p`.
fn find(reg: &BTreeMap<(usize, u64), Record>, p: usize, ctx: Option<usize>) -> Option<&Record> {
    if p == 0 {
        return None;
    }
    reg.range(..=(p, u64::MAX))
        .rev()
        .map(|(_, r)| r)
        .filter(|r| ctx.map_or(true, |c| r.info.context == c))
        .take(64)
        .find(|r| p >= r.info.base && p < r.info.base + r.info.size.max(1))
}

/// The allocation of `driver` containing `ptr` (interior pointers included), if any.
pub fn lookup(driver: DriverKind, ptr: *const c_void) -> Option<AllocInfo> {
    find(&lock(driver), ptr as usize, None).map(|r| r.info)
}

/// The allocation of `driver` made on context `ctx` containing `ptr`: how the NPU driver looks memory
/// up (per context: linux-npu-driver `vpu_device_context.cpp` `findBufferObject`).
pub fn lookup_in(driver: DriverKind, ctx: usize, ptr: *const c_void) -> Option<AllocInfo> {
    find(&lock(driver), ptr as usize, Some(ctx)).map(|r| r.info)
}

/// The bytes of every allocation and import of `driver` on context `ctx`, each at the size it was
/// made with (the NPU driver's `VPUDeviceContext::getAllocatedSize` sums `getAllocSize`).
pub fn allocated_in(driver: DriverKind, ctx: usize) -> usize {
    lock(driver).values().filter(|r| r.info.context == ctx).map(|r| r.info.size).sum()
}

/// Registers memory this platform mapped itself (a virtual-memory mapping, `api::virtual_mem`) as
/// a device allocation of `ctx`, so that queries and copies know it; returns its id. Not counted
/// as a live allocation; [`unregister`] removes it.
pub fn register_mapping(driver: DriverKind, ctx: usize, device: usize, base: usize, size: usize) -> u64 {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let info = AllocInfo {
        base,
        size,
        id,
        kind: MemKind::Device,
        device,
        context: ctx,
        origin: Origin::Plain,
        read_only: false,
        device_va: 0,
        poisoned: false,
    };
    lock(driver).insert((base, id), Record { info, backing: Backing::Borrowed });
    id
}

/// Removes what [`register_mapping`] registered.
pub fn unregister(driver: DriverKind, base: usize, id: u64) {
    lock(driver).remove(&(base, id));
}

/// Number of live registry entries of `driver` (imports included).
pub fn live(driver: DriverKind) -> usize {
    lock(driver).len()
}

fn round_up(n: usize, to: usize) -> usize {
    n.div_ceil(to) * to
}

/// The buffers this platform's drivers created as shareable memory, by identity: the only ones
/// that count as dma-bufs (NT handles of GPU resources on Windows). An entry stays while any
/// handle or mapping of it may exist.
fn exported() -> std::sync::MutexGuard<'static, std::collections::HashSet<Ident>> {
    static S: OnceLock<Mutex<std::collections::HashSet<Ident>>> = OnceLock::new();
    S.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether `h` (of buffer `ident`) is driver-shareable memory: one of our exports, or (Linux) a
/// real dma-buf.
pub fn is_shareable(h: os::Raw, ident: Ident) -> bool {
    exported().contains(&ident) || os::is_foreign_shareable(h, ident)
}

/// Parameters of one allocation call.
#[derive(Clone, Copy)]
pub struct Request {
    /// Owning driver.
    pub driver: DriverKind,
    /// Context handle.
    pub context: usize,
    /// Device handle (0 for host memory).
    pub device: usize,
    /// HOST, DEVICE or SHARED.
    pub kind: MemKind,
    /// Requested size.
    pub size: usize,
    /// Requested alignment (0 = default).
    pub align: usize,
    /// `ze_host_mem_alloc_flags_t` of the host descriptor (0 without one).
    pub host_flags: u32,
}

/// The memory a driver exports (`memoryAllocationExportTypes`), as the module docs and
/// [`extensions`] say per OS.
pub fn export_types(driver: DriverKind) -> u32 {
    match (driver, cfg!(windows)) {
        (DriverKind::Gpu, false) => linux_gpu_types(),
        (DriverKind::Npu, false) => stypes::EXTERNAL_MEMORY_TYPE_FLAG_DMA_BUF,
        (DriverKind::Gpu, true) => ZE_EXTERNAL_MEMORY_TYPE_FLAG_OPAQUE_WIN32,
        (DriverKind::Npu, true) => 0,
    }
}

/// The memory a driver imports (`memoryAllocationImportTypes`): STANDARD_ALLOCATION on the NPU only
/// with user-memory import (linux-npu-driver 1.32.1 `device.cpp` `getExternalMemoryProperties`; on
/// Windows **inferred** the same: the plugin tries CPU_VA there too).
pub fn import_types(driver: DriverKind) -> u32 {
    let userptr =
        if crate::profile::current().npu_userptr { stypes::EXTERNAL_MEMORY_TYPE_FLAG_STANDARD_ALLOCATION } else { 0 };
    match (driver, cfg!(windows)) {
        (DriverKind::Gpu, false) => linux_gpu_types(),
        (DriverKind::Npu, false) => stypes::EXTERNAL_MEMORY_TYPE_FLAG_DMA_BUF | userptr,
        (DriverKind::Gpu, true) => {
            ZE_EXTERNAL_MEMORY_TYPE_FLAG_OPAQUE_WIN32
                | ZE_EXTERNAL_MEMORY_TYPE_FLAG_D3D12_HEAP
                | ZE_EXTERNAL_MEMORY_TYPE_FLAG_D3D12_RESOURCE
        }
        (DriverKind::Npu, true) => ZE_EXTERNAL_MEMORY_TYPE_FLAG_OPAQUE_WIN32 | userptr,
    }
}

/// compute-runtime on Linux (`device_imp_drm.cpp` `getExternalMemoryProperties`): DMA_BUF only
/// before 26.22.38646, DMA_BUF|OPAQUE_FD in both masks from it.
fn linux_gpu_types() -> u32 {
    if crate::profile::current().gpu_driver_build >= crate::profile::GPU_OPAQUE_FD_TYPES_FROM_BUILD {
        stypes::EXTERNAL_MEMORY_TYPE_FLAG_DMA_BUF | stypes::EXTERNAL_MEMORY_TYPE_FLAG_OPAQUE_FD
    } else {
        stypes::EXTERNAL_MEMORY_TYPE_FLAG_DMA_BUF
    }
}

/// What a descriptor chain asks for.
#[derive(Default)]
struct Extensions {
    export: bool,
    /// The dma-buf fd (Linux) or NT handle (Windows) to import.
    import: Option<os::Raw>,
    sysmem: Option<(usize, usize)>,
    /// `ze_relaxed_allocation_limits_exp_desc_t` with `MAX_SIZE` (GPU).
    relaxed_size: bool,
}

/// Reads the allocation extensions of `chains`. Linux: the NPU driver looks only at the first
/// entry of each chain and takes exactly `DMA_BUF` (linux-npu-driver `api/ze_memory.cpp`: else
/// `INVALID_ENUMERATION`); the GPU walks the chain and takes `DMA_BUF` or `OPAQUE_FD` alone
/// (compute-runtime `properties_parser.h`: else `UNSUPPORTED_ENUMERATION`). Windows: the GPU
/// exports `OPAQUE_WIN32` and imports it or a D3D12 heap or resource (compute-runtime 26.31.39395.13
/// `level_zero/core/source/device/device_imp.cpp` `getExternalMemoryProperties` on WDDM); the NPU
/// imports `OPAQUE_WIN32` (what OpenVINO's NPU plugin asks of it, `ZeroMem`) and exports nothing:
/// its driver is closed source, so both are **inferred**, the second from its absence in the plugin.
///
/// # Safety
/// Every chain is valid per [`chain`].
unsafe fn extensions(driver: DriverKind, chains: &[*const c_void]) -> ZeResult<Extensions> {
    // One handle type per descriptor; the Linux GPU takes either fd type at every build, whatever
    // it reports; STANDARD_ALLOCATION is no handle type. The Windows GPU (compute-runtime
    // 26.31.39395.13 `properties_parser.h` `prepareL0StructuresLookupTable`) exports when the flags
    // contain DMA_BUF, OPAQUE_FD or OPAQUE_WIN32, and imports exactly one of OPAQUE_WIN32,
    // D3D12_HEAP, D3D12_RESOURCE or D3D11_TEXTURE.
    let fds = stypes::EXTERNAL_MEMORY_TYPE_FLAG_DMA_BUF | stypes::EXTERNAL_MEMORY_TYPE_FLAG_OPAQUE_FD;
    let windows_gpu = driver == DriverKind::Gpu && cfg!(windows);
    let accepted = |types: u32| match (driver, cfg!(windows)) {
        (DriverKind::Gpu, false) => fds,
        _ => types & !stypes::EXTERNAL_MEMORY_TYPE_FLAG_STANDARD_ALLOCATION,
    };
    let export_ok = |flags: u32| match windows_gpu {
        true => flags & (fds | ZE_EXTERNAL_MEMORY_TYPE_FLAG_OPAQUE_WIN32) != 0,
        false => flags.count_ones() == 1 && accepted(export_types(driver)) & flags == flags,
    };
    let import_ok = |flags: u32| {
        let types = match windows_gpu {
            true => import_types(driver) | ZE_EXTERNAL_MEMORY_TYPE_FLAG_D3D11_TEXTURE,
            false => accepted(import_types(driver)),
        };
        flags.count_ones() == 1 && types & flags == flags
    };
    let bad_flags = match driver {
        DriverKind::Npu => ZE_RESULT_ERROR_INVALID_ENUMERATION,
        DriverKind::Gpu => ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION,
    };
    let mut x = Extensions::default();
    for &c in chains {
        // SAFETY: per the contract.
        let entries = unsafe { chain(c) };
        let take = if driver == DriverKind::Npu { 1 } else { usize::MAX };
        for e in entries.into_iter().take(take) {
            match e.stype {
                stypes::EXTERNAL_MEMORY_EXPORT_DESC => {
                    // SAFETY: stype says ze_external_memory_export_desc_t.
                    let d = unsafe { &*(e.ptr as *const ze_external_memory_export_desc_t) };
                    if !export_ok(d.flags) {
                        return Err(bad_flags);
                    }
                    x.export = true;
                }
                #[cfg(unix)]
                stypes::EXTERNAL_MEMORY_IMPORT_FD => {
                    // SAFETY: stype says ze_external_memory_import_fd_t.
                    let d = unsafe { &*(e.ptr as *const ze_external_memory_import_fd_t) };
                    if !import_ok(d.flags) {
                        return Err(bad_flags);
                    }
                    x.import = Some(d.fd);
                }
                #[cfg(windows)]
                stypes::EXTERNAL_MEMORY_IMPORT_WIN32 => {
                    // SAFETY: stype says ze_external_memory_import_win32_handle_t.
                    let d = unsafe { &*(e.ptr as *const ze_external_memory_import_win32_handle_t) };
                    if !import_ok(d.flags) {
                        return Err(bad_flags);
                    }
                    // Import by name is not modelled: a null handle is refused as the driver
                    // refuses a handle it cannot open.
                    x.import = Some(d.handle);
                }
                // compute-runtime (`context.cpp` `allocHostMem`, `properties_parser.h`
                // `prepareL0StructuresLookupTable`): the relaxed-limits descriptor must ask for
                // MAX_SIZE (else INVALID_ARGUMENT) and lifts the `maxMemAllocSize` cap.
                s if s == ZE_STRUCTURE_TYPE_RELAXED_ALLOCATION_LIMITS_EXP_DESC && driver == DriverKind::Gpu => {
                    // SAFETY: stype says ze_relaxed_allocation_limits_exp_desc_t.
                    let d = unsafe { &*(e.ptr as *const ze_relaxed_allocation_limits_exp_desc_t) };
                    if d.flags & ZE_RELAXED_ALLOCATION_LIMITS_EXP_FLAG_MAX_SIZE == 0 {
                        return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT);
                    }
                    x.relaxed_size = true;
                }
                stypes::EXTERNAL_MEMMAP_SYSMEM_EXT_DESC => {
                    // SAFETY: stype says ze_external_memmap_sysmem_ext_desc_t.
                    let d = unsafe { &*(e.ptr as *const stypes::ExternalMemmapSysmemExtDesc) };
                    x.sysmem = Some((d.pSystemMemory as usize, d.size as usize));
                }
                _ => {}
            }
        }
    }
    Ok(x)
}

/// Whether `[p, p + len)` overlaps memory a driver mapped (GPU or NPU allocations and imports:
/// GEM-object mmaps on hardware, which long-term pinning refuses). Memory that is itself a sysmem
/// import is the caller's own and does not count.
fn overlaps_driver_mapping(p: usize, len: usize) -> bool {
    DriverKind::ALL.into_iter().any(|d| {
        lock(d).values().any(|r| {
            r.info.origin != Origin::ImportedSysmem && r.info.base < p + len && p < r.info.base + r.info.size.max(1)
        })
    })
}

/// Whether the NPU driver could import `[p, p + len)` as user memory (userptr ioctl present, pages
/// pinnable long-term, not another driver's mapping), as it tries for a persistent native blob.
pub fn npu_can_pin(p: usize, len: usize, read_only: bool) -> bool {
    crate::profile::current().npu_userptr
        && p != 0
        && !overlaps_driver_mapping(p, len)
        && os::pinnable(p, len, read_only)
}

/// NPU sysmem (userptr) import, as linux-npu-driver's `Context::importUserPtr` and the kernel's
/// `ivpu_bo_create_from_userptr_ioctl` do it (see the module docs).
fn import_sysmem(req: &Request, p: usize, len: usize) -> ZeResult<(usize, usize, bool)> {
    if !crate::profile::current().npu_userptr {
        return Err(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE);
    }
    if p == 0 {
        return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
    }
    if len == 0 {
        return Err(ZE_RESULT_ERROR_INVALID_SIZE);
    }
    if lookup_in(req.driver, req.context, p as *const c_void).is_some() {
        return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT);
    }
    let read_only = req.host_flags & ZE_HOST_MEM_ALLOC_FLAG_BIAS_WRITE_COMBINED != 0;
    if overlaps_driver_mapping(p, len) || !os::pinnable(p, len, read_only) {
        crate::counters::add("npu.imports.sysmem_refused", 1);
        return Err(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY);
    }
    Ok((p, len, read_only))
}

/// The alignment a GPU allocation gets. compute-runtime checks no alignment (`context.cpp`
/// `allocHostMem`/`allocDeviceMem`/`allocSharedMem` pass it on; the spec's
/// `UNSUPPORTED_ALIGNMENT` for one that is not a power of two comes from the validation layer
/// only), so every value is accepted. `SVMAllocsManager` (`unified_memory_manager.cpp`) rounds it
/// up to a multiple of the allocation's page size with `alignUpNonZero` (0 → the page size):
/// 64 KiB for device memory (`createUnifiedMemoryAllocation`), 4 KiB for host memory on an
/// integrated GPU (`createHostUnifiedMemoryAllocation`). A value that is not a power of two then
/// reaches address arithmetic that assumes one (`alignUp`, whose power-of-two check is compiled out
/// in release builds, `debug_helpers.h`); here it is rounded up to the next power of two. Host
/// and shared memory keep this platform's smaller default (64 bytes below 4 KiB).
fn gpu_alignment(kind: MemKind, align: usize) -> usize {
    let align = align.checked_next_power_of_two().unwrap_or(1 << (usize::BITS - 1));
    match kind {
        MemKind::Device => align.max(DEVICE_PAGE),
        _ => align,
    }
}

/// The page size compute-runtime aligns device allocations to (`MemoryConstants::pageSize64k`).
pub const DEVICE_PAGE: usize = 64 << 10;

static NEXT_NPU_VA: AtomicU64 = AtomicU64::new(NPU_VA_BASE);

/// Whether an allocation is made as shareable memory. Linux: every NPU buffer object (shmem) and
/// the GPU's host and device memory, which export whether or not they were allocated exportable
/// (see the module docs). Windows: GPU device memory allocated with an export descriptor only
/// (compute-runtime 26.31.39395.13 `Context::allocDeviceMem` sets `shareable`, then
/// `WddmMemoryManager` creates the resource shared and `Wddm::createNTHandle` its NT handle;
/// `Context::allocHostMem` never sets it), and no NPU memory (inferred: see [`export_types`]).
fn shareable(req: &Request, ext: &Extensions) -> bool {
    if cfg!(windows) {
        req.driver == DriverKind::Gpu && req.kind == MemKind::Device && ext.export
    } else {
        req.driver == DriverKind::Npu || req.kind != MemKind::Shared
    }
}

/// The counter word of shareable-memory imports and exports: `dma_buf` on Linux, `nt_handle` on
/// Windows.
pub fn shared_counter() -> &'static str {
    if cfg!(windows) {
        "nt_handle"
    } else {
        "dma_buf"
    }
}

/// Allocates (or imports) memory as described by `req` and the `pNext` chains in `chains`
/// (the device and host descriptors' chains; entries are interpreted as allocation extensions).
///
/// # Safety
/// Every chain is valid per [`chain`].
pub unsafe fn allocate(req: Request, chains: &[*const c_void]) -> ZeResult<*mut c_void> {
    // SAFETY: per the contract.
    let ext = unsafe { extensions(req.driver, chains) }?;
    let limit = match req.driver {
        // Relaxed limits: up to the memory there is (compute-runtime `checkMemSizeLimit`).
        DriverKind::Gpu if ext.relaxed_size => total_ram() as usize,
        DriverKind::Gpu => max_alloc(DriverKind::Gpu) as usize,
        DriverKind::Npu => usize::MAX / 2,
    };
    if req.size == 0 || req.size > limit {
        return Err(ZE_RESULT_ERROR_UNSUPPORTED_SIZE);
    }
    let req = match req.driver {
        DriverKind::Gpu => Request { align: gpu_alignment(req.kind, req.align), ..req },
        DriverKind::Npu if req.align != 0 && !req.align.is_power_of_two() => {
            return Err(ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT);
        }
        DriverKind::Npu => req,
    };
    let prefix = req.driver.prefix();
    let mut read_only = false;
    let mut import_alias = None;
    let (base, size, backing, origin) = if let (Some((p, len)), DriverKind::Npu) = (ext.sysmem, req.driver) {
        let (p, len, ro) = import_sysmem(&req, p, len)?;
        read_only = ro;
        crate::counters::add(&format!("{prefix}.imports.sysmem"), 1);
        (p, len, Backing::Borrowed, Origin::ImportedSysmem)
    } else if let Some((p, len)) = ext.sysmem {
        // The GPU's sysmem import (compute-runtime `Context::allocHostMem`: a host-pointer USM
        // allocation over the caller's pages).
        if p == 0 {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        if len < req.size || !os::pinnable(p, len, false) {
            return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT);
        }
        crate::counters::add(&format!("{prefix}.imports.sysmem"), 1);
        (p, req.size, Backing::Borrowed, Origin::ImportedSysmem)
    } else if let Some(h) = ext.import {
        // The NPU maps the whole buffer (size from the kernel) and answers every failure with
        // OUT_OF_DEVICE_MEMORY; the GPU maps what was asked (on Windows a handle it cannot open is
        // INVALID_ARGUMENT too: compute-runtime `DriverHandle::importNTHandle`). The Windows NPU's
        // answers are **inferred** the same as the Linux NPU's.
        let fail = |gpu_err| match req.driver {
            DriverKind::Npu => ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY,
            DriverKind::Gpu => gpu_err,
        };
        let (ident, buf_len) = os::stat(h).ok_or(fail(ZE_RESULT_ERROR_INVALID_ARGUMENT))?;
        if !is_shareable(h, ident) {
            return Err(fail(ZE_RESULT_ERROR_INVALID_ARGUMENT));
        }
        // The Windows GPU takes the size from the resource and ignores the one asked
        // (compute-runtime 26.31.39395.13 `Context::allocDeviceMem` → `DriverHandle::importNTHandle`).
        let whole = req.driver == DriverKind::Npu || cfg!(windows);
        let len = if whole { buf_len as usize } else { req.size };
        // A buffer smaller than the import (an empty one included) would map, then fault at first
        // access.
        if len == 0 || (!(cfg!(windows) && req.driver == DriverKind::Gpu) && (buf_len as usize) < req.size) {
            return Err(fail(ZE_RESULT_ERROR_INVALID_SIZE));
        }
        let m = os::map_shared(h, len, req.align.max(PAGE)).map_err(fail)?;
        // The kernel's one GEM handle per buffer and DRM file (Linux only).
        if req.driver == DriverKind::Npu && cfg!(unix) {
            import_alias = Some(ident);
        }
        crate::counters::add(&format!("{prefix}.imports.{}", shared_counter()), 1);
        if req.driver == DriverKind::Gpu && cfg!(unix) && crate::profile::current().gpu_import_closes_fd() {
            // compute-runtime ≥ 26.14.37833 closes the imported fd once the import succeeded (on
            // Windows it never closes the caller's handle: `Wddm::openNTHandle`).
            os::close(h);
        }
        (m as usize, len, Backing::Mapped { map: m, len, ident }, Origin::ImportedFd)
    } else if shareable(&req, &ext) {
        let len = round_up(req.size, PAGE);
        let (h, ident) = os::create_shared(len)?;
        let m = match os::map_shared(h, len, req.align.max(PAGE)) {
            Ok(m) => m,
            Err(e) => {
                os::close(h);
                return Err(e);
            }
        };
        exported().insert(ident);
        let origin = if ext.export { Origin::Exportable } else { Origin::Plain };
        let handle = if req.driver == DriverKind::Gpu && !ext.export {
            // The mapping keeps the memory; an export opens it again.
            os::close(h);
            None
        } else {
            Some(h)
        };
        (m as usize, req.size, Backing::Shared { handle, ident, map: m, len }, origin)
    } else {
        let align = req.align.max(if req.size >= PAGE { PAGE } else { 64 });
        let layout = Layout::from_size_align(req.size, align).map_err(|_| ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT)?;
        // SAFETY: layout has a non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        if p.is_null() {
            return Err(match req.kind {
                MemKind::Host => ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY,
                _ => ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY,
            });
        }
        (p as usize, req.size, Backing::Heap { ptr: p, layout }, Origin::Plain)
    };
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let device_va = match req.driver {
        DriverKind::Npu => NEXT_NPU_VA.fetch_add(round_up(size.max(1), PAGE) as u64, Ordering::Relaxed),
        DriverKind::Gpu => 0,
    };
    let info = AllocInfo {
        base,
        size,
        id,
        kind: req.kind,
        device: req.device,
        context: req.context,
        origin,
        read_only,
        device_va,
        poisoned: false,
    };
    let mut reg = lock(req.driver);
    if let Some(ident) = import_alias {
        // The kernel returns one GEM handle for every import of a buffer on one DRM file (one per
        // NPU context): the imports share it.
        aliases().entry((req.context, ident)).or_default().push((base, id));
    }
    reg.insert((base, id), Record { info, backing });
    drop(reg);
    crate::counters::add(&format!("{prefix}.live_allocations"), 1);
    Ok(base as *mut c_void)
}

/// NPU dma-buf imports per (context, buffer identity): the allocations sharing one kernel handle.
type AliasMap = std::collections::HashMap<(usize, Ident), Vec<(usize, u64)>>;

fn aliases() -> std::sync::MutexGuard<'static, AliasMap> {
    static A: OnceLock<Mutex<AliasMap>> = OnceLock::new();
    A.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner())
}

/// Freeing one NPU import of a buffer closes the handle all its imports in that context share
/// (linux-npu-driver `vpu_device_context.cpp` `freeMemAlloc` → `closeBuffer`): the others are
/// poisoned, and a graph that uses them fails.
fn unalias(reg: &mut BTreeMap<(usize, u64), Record>, rec: &Record) {
    let Backing::Mapped { ident, .. } = rec.backing else { return };
    let mut a = aliases();
    let key = (rec.info.context, ident);
    if let Some(list) = a.get_mut(&key) {
        list.retain(|&k| k != (rec.info.base, rec.info.id));
        for k in list.iter() {
            if let Some(r) = reg.get_mut(k) {
                r.info.poisoned = true;
            }
        }
        if list.is_empty() {
            a.remove(&key);
        }
    }
}

/// Frees the allocation of `driver` that starts at `ptr` (the newest one, if a sysmem range was
/// imported twice). `ZE_RESULT_ERROR_INVALID_ARGUMENT` if there is none.
pub fn free(driver: DriverKind, ptr: *mut c_void) -> ZeResult {
    let p = ptr as usize;
    if p == 0 {
        return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
    }
    let rec = {
        let mut reg = lock(driver);
        let key = reg.range((p, 0)..=(p, u64::MAX)).next_back().map(|(k, _)| *k);
        let rec = key.and_then(|k| reg.remove(&k)).ok_or(ZE_RESULT_ERROR_INVALID_ARGUMENT)?;
        if driver == DriverKind::Npu {
            unalias(&mut reg, &rec);
        }
        rec
    };
    drop(rec); // unmaps / deallocates outside the lock
    crate::counters::sub(&format!("{}.live_allocations", driver.prefix()), 1);
    Ok(())
}

/// Frees every allocation (and forgets every import) of `driver` made on context `ctx`:
/// `zeContextDestroy` may free them ("The implementation of this function may immediately free all
/// Host and Device allocations associated with this context"), so code that still uses them after
/// destroying their context is wrong on hardware and must fail here too; and without this, every
/// context a caller destroys without freeing first would leak its memory for the life of the process.
/// Returns how many were freed.
pub fn free_context(driver: DriverKind, ctx: usize) -> usize {
    let recs: Vec<Record> = {
        let mut reg = lock(driver);
        let keys: Vec<(usize, u64)> = reg.iter().filter(|(_, r)| r.info.context == ctx).map(|(k, _)| *k).collect();
        let recs: Vec<Record> = keys.iter().filter_map(|k| reg.remove(k)).collect();
        for r in &recs {
            unalias(&mut reg, r);
        }
        recs
    };
    let n = recs.len();
    drop(recs); // unmaps / deallocates outside the lock
    if n > 0 {
        crate::counters::sub(&format!("{}.live_allocations", driver.prefix()), n as u64);
    }
    n
}

/// The export handle of the allocation of `driver` containing `ptr` (see the module docs for
/// which allocations export). Linux GPU: the driver's own fd for the allocation, the same number on
/// every call, closed by `zeMemFree`. Linux NPU: a new fd the caller owns. Windows GPU: the NT
/// handle made with a shareable allocation, the same on every call, closed by `zeMemFree`
/// (compute-runtime 26.31.39395.13 `WddmAllocation::peekInternalHandle`,
/// `WddmMemoryManager::freeGraphicsMemoryImpl`); any other allocation gives SUCCESS and no handle
/// (`peekInternalHandle` returns handle 0, which `handleAllocationExtensions` treats as success).
/// Windows NPU: `NOT_AVAILABLE` (inferred, see [`export_types`]). `None` when `ptr` is no
/// allocation of `driver`.
pub fn export_handle(driver: DriverKind, ptr: *const c_void) -> Option<ZeResult<Option<os::Raw>>> {
    let mut reg = lock(driver);
    let key = find(&reg, ptr as usize, None).map(|r| (r.info.base, r.info.id))?;
    let rec = reg.get_mut(&key).expect("found just now");
    let out = match (driver, &mut rec.backing, rec.info.origin) {
        (DriverKind::Gpu, Backing::Shared { handle: Some(h), .. }, _) if cfg!(windows) => Ok(Some(*h)),
        (DriverKind::Gpu, _, _) if cfg!(windows) => Ok(None),
        (DriverKind::Npu, ..) if cfg!(windows) => Err(ZE_RESULT_ERROR_NOT_AVAILABLE),
        (DriverKind::Gpu, _, _) if rec.info.kind == MemKind::Shared => Err(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE),
        (DriverKind::Gpu, Backing::Shared { handle: Some(h), .. }, _) => Ok(Some(*h)),
        (DriverKind::Gpu, Backing::Shared { handle: cached @ None, map, len, .. }, _) => {
            let Some(h) = os::reopen_mapping(*map, *len) else {
                return Some(Err(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY));
            };
            *cached = Some(h);
            Ok(Some(h))
        }
        (DriverKind::Npu, Backing::Shared { handle: Some(h), .. }, Origin::Exportable) => {
            os::duplicate(*h).map(Some).ok_or(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY)
        }
        (DriverKind::Npu, Backing::Mapped { map, len, .. }, Origin::ImportedFd) => {
            os::reopen_mapping(*map, *len).map(Some).ok_or(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY)
        }
        // GPU: (inferred) an import whose fd the driver closed; NPU: "Buffer should be created as
        // exportable".
        (DriverKind::Gpu, ..) => Err(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE),
        (DriverKind::Npu, ..) => Err(ZE_RESULT_ERROR_NOT_AVAILABLE),
    };
    if matches!(out, Ok(Some(_))) {
        crate::counters::add(&format!("{}.exports.{}", driver.prefix(), shared_counter()), 1);
    }
    Some(out)
}

/// A new shareable buffer of `len` bytes (a page multiple) that imports accept as one of this
/// platform's dma-bufs: the handle the caller owns, and the buffer's identity.
pub fn create_shareable(len: usize) -> ZeResult<(os::Raw, Ident)> {
    let (h, ident) = os::create_shared(len)?;
    exported().insert(ident);
    Ok((h, ident))
}

/// Closes the GPU's cached export handle of allocation `(base, id)` and forgets it, so that the next
/// export opens a new one (compute-runtime `DrmMemoryManager::closeInternalHandle`, which
/// `zeMemPutIpcHandle` calls when a handle's last reference goes).
pub fn close_export(base: usize, id: u64) {
    let mut reg = lock(DriverKind::Gpu);
    if let Some(Record { backing: Backing::Shared { handle, ident, .. }, .. }) = reg.get_mut(&(base, id)) {
        if let Some(h) = handle.take() {
            os::close_own(h, *ident);
        }
    }
}

/// Maps the buffer behind dma-buf `h` (not taken over) into context `ctx` of the GPU as memory of
/// `kind`, the returned pointer `offset` bytes into it: an opened IPC handle, freed by
/// `zeMemCloseIpcHandle` (`zeMemFree`). A handle that is no dma-buf of this platform, or an offset
/// past its end, is `INVALID_ARGUMENT` (compute-runtime `Context::openIpcMemHandle` answers every
/// failed import so).
#[cfg(unix)]
pub fn import_ipc(ctx: usize, device: usize, kind: MemKind, h: os::Raw, offset: u64) -> ZeResult<*mut c_void> {
    let (ident, len) = os::stat(h).ok_or(ZE_RESULT_ERROR_INVALID_ARGUMENT)?;
    if !is_shareable(h, ident) || len == 0 || offset >= len {
        return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT);
    }
    let len = len as usize;
    let map = os::map_shared(h, len, PAGE)?;
    let base = map as usize + offset as usize;
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let info = AllocInfo {
        base,
        size: len - offset as usize,
        id,
        kind,
        device,
        context: ctx,
        origin: Origin::ImportedFd,
        read_only: false,
        device_va: 0,
        poisoned: false,
    };
    lock(DriverKind::Gpu).insert((base, id), Record { info, backing: Backing::Mapped { map, len, ident } });
    crate::counters::add("gpu.live_allocations", 1);
    crate::counters::add(&format!("gpu.imports.{}", shared_counter()), 1);
    Ok(base as *mut c_void)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::ffi::c_int;

    /// The Linux exports always carry an fd.
    fn export_fd(driver: DriverKind, ptr: *const c_void) -> Option<ZeResult<c_int>> {
        export_handle(driver, ptr).map(|r| r.map(|h| h.expect("Linux exports carry an fd")))
    }

    fn req(driver: DriverKind, size: usize, align: usize) -> Request {
        Request { driver, context: 0, device: 0, kind: MemKind::Host, size, align, host_flags: 0 }
    }

    #[test]
    fn interior_pointers_and_foreign_pointers() {
        // SAFETY: no chains.
        let p = unsafe { allocate(req(DriverKind::Gpu, 10000, 0), &[]) }.unwrap();
        let i = lookup(DriverKind::Gpu, p).unwrap();
        let j = lookup(DriverKind::Gpu, (p as usize + 9999) as *const c_void).unwrap();
        assert_eq!((i.id, i.base, i.size), (j.id, j.base, j.size));
        assert!(lookup(DriverKind::Gpu, (p as usize + 10000) as *const c_void).map_or(true, |k| k.id != i.id));
        assert!(lookup(DriverKind::Npu, p).is_none());
        assert_eq!(p as usize % PAGE, 0);
        free(DriverKind::Gpu, p).unwrap();
        assert!(lookup(DriverKind::Gpu, p).is_none());
        assert_eq!(free(DriverKind::Gpu, p), Err(ZE_RESULT_ERROR_INVALID_ARGUMENT));
    }

    #[test]
    fn exportable_memory_with_large_alignment() {
        // SAFETY: plain-C descriptor, fully initialised below.
        let mut d: ze_external_memory_export_desc_t = unsafe { std::mem::zeroed() };
        d.stype = ZE_STRUCTURE_TYPE_EXTERNAL_MEMORY_EXPORT_DESC;
        d.flags = ZE_EXTERNAL_MEMORY_TYPE_FLAG_DMA_BUF;
        let chain = &d as *const _ as *const c_void;
        // SAFETY: a one-entry chain; the fd and mappings are checked and released below.
        unsafe {
            let p =
                allocate(Request { kind: MemKind::Device, ..req(DriverKind::Gpu, 5000, 1 << 16) }, &[chain]).unwrap();
            assert_eq!(p as usize % (1 << 16), 0);
            *(p as *mut u8).add(4999) = 42;
            let fd = export_fd(DriverKind::Gpu, (p as *const u8).add(10).cast()).unwrap().unwrap();
            let mut st: libc::stat = std::mem::zeroed();
            assert_eq!(libc::fstat(fd, &mut st), 0);
            assert!(st.st_size >= 5000);
            let m = libc::mmap(std::ptr::null_mut(), 5000, libc::PROT_READ, libc::MAP_SHARED, fd, 0);
            assert_ne!(m, libc::MAP_FAILED);
            assert_eq!(*(m as *const u8).add(4999), 42);
            free(DriverKind::Gpu, p).unwrap();
            assert_eq!(*(m as *const u8).add(4999), 42, "the exported fd keeps the pages");
            libc::munmap(m, 5000);
            libc::close(fd);
        }
    }

    /// compute-runtime exports any host or device allocation (export descriptor or not) and no
    /// shared USM; linux-npu-driver exports only buffer objects allocated exportable and its imports.
    #[test]
    fn which_allocations_export() {
        let e = export_desc();
        let c = &e as *const _ as *const c_void;
        // SAFETY: one-entry chains; every fd and allocation released below.
        unsafe {
            let plain_host = allocate(req(DriverKind::Gpu, 64, 0), &[]).unwrap();
            let fd = export_fd(DriverKind::Gpu, plain_host).unwrap().unwrap();
            assert!(libc::fcntl(fd, libc::F_GETFD) >= 0, "plain GPU host memory exports");
            free(DriverKind::Gpu, plain_host).unwrap();
            let shared = Request { kind: MemKind::Shared, ..req(DriverKind::Gpu, PAGE, 0) };
            for chains in [&[][..], &[c][..]] {
                let p = allocate(shared, chains).unwrap();
                assert_eq!(export_fd(DriverKind::Gpu, p), Some(Err(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE)));
                free(DriverKind::Gpu, p).unwrap();
            }
            assert_eq!(export_fd(DriverKind::Gpu, 0x1000 as *const c_void), None, "unknown pointer");

            let plain = allocate(req(DriverKind::Npu, PAGE, 0), &[]).unwrap();
            assert_eq!(export_fd(DriverKind::Npu, plain), Some(Err(ZE_RESULT_ERROR_NOT_AVAILABLE)));
            let exportable = allocate(req(DriverKind::Npu, PAGE, 0), &[c]).unwrap();
            let fd = export_fd(DriverKind::Npu, exportable).unwrap().unwrap();
            *(exportable as *mut u8) = 7;
            let d = import_fd_chain(fd);
            let imported =
                allocate(Request { context: 9, ..req(DriverKind::Npu, PAGE, 0) }, &[&d as *const _ as *const c_void])
                    .unwrap();
            libc::close(fd);
            let again = export_fd(DriverKind::Npu, imported).unwrap().unwrap();
            let m = libc::mmap(std::ptr::null_mut(), PAGE, libc::PROT_READ, libc::MAP_SHARED, again, 0);
            assert_ne!(m, libc::MAP_FAILED);
            assert_eq!(*(m as *const u8), 7, "an import exports the same buffer again");
            libc::munmap(m, PAGE);
            libc::close(again);
            for p in [plain, exportable, imported] {
                free(DriverKind::Npu, p).unwrap();
            }
        }
    }

    #[test]
    fn alignment_and_size_rules() {
        // SAFETY: no chains.
        unsafe {
            assert_eq!(allocate(req(DriverKind::Gpu, 0, 0), &[]), Err(ZE_RESULT_ERROR_UNSUPPORTED_SIZE));
            assert_eq!(allocate(req(DriverKind::Npu, 8, 3), &[]), Err(ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT));
            let p = allocate(req(DriverKind::Gpu, 8, 3), &[]).unwrap();
            assert_eq!(p as usize % 4, 0, "GPU: any alignment, rounded up to a power of two");
            free(DriverKind::Gpu, p).unwrap();
            let p = allocate(req(DriverKind::Gpu, 8, 1 << 16), &[]).unwrap();
            assert_eq!(p as usize % (1 << 16), 0);
            free(DriverKind::Gpu, p).unwrap();
        }
    }

    fn import_fd_chain(fd: c_int) -> ze_external_memory_import_fd_t {
        // SAFETY: plain-C descriptor, fully initialised below.
        let mut d: ze_external_memory_import_fd_t = unsafe { std::mem::zeroed() };
        d.stype = ZE_STRUCTURE_TYPE_EXTERNAL_MEMORY_IMPORT_FD;
        d.flags = ZE_EXTERNAL_MEMORY_TYPE_FLAG_DMA_BUF;
        d.fd = fd;
        d
    }

    fn export_desc() -> ze_external_memory_export_desc_t {
        // SAFETY: plain-C descriptor, fully initialised below.
        let mut d: ze_external_memory_export_desc_t = unsafe { std::mem::zeroed() };
        d.stype = ZE_STRUCTURE_TYPE_EXTERNAL_MEMORY_EXPORT_DESC;
        d.flags = ZE_EXTERNAL_MEMORY_TYPE_FLAG_DMA_BUF;
        d
    }

    fn sysmem_desc(p: *mut c_void, len: usize) -> stypes::ExternalMemmapSysmemExtDesc {
        stypes::ExternalMemmapSysmemExtDesc {
            stype: stypes::EXTERNAL_MEMMAP_SYSMEM_EXT_DESC,
            pNext: std::ptr::null(),
            pSystemMemory: p,
            size: len as u64,
        }
    }

    fn anon(len: usize) -> *mut c_void {
        // SAFETY: a fresh private anonymous mapping.
        let m = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(m, libc::MAP_FAILED);
        m
    }

    /// The NPU imports only dma-bufs (here: buffers a virtual driver exported; a regular file or a
    /// memfd nobody exported is refused as a PRIME import refuses it), maps the whole buffer whatever
    /// size was asked, and answers every failure with OUT_OF_DEVICE_MEMORY.
    #[test]
    fn npu_fd_import_takes_only_exported_buffers_and_maps_them_whole() {
        use std::os::fd::AsRawFd;
        let path = std::env::temp_dir().join(format!("vl0-import-{}", std::process::id()));
        let file = std::fs::File::create(&path).unwrap();
        file.set_len(8192).unwrap();
        let d = import_fd_chain(file.as_raw_fd());
        let c = &d as *const _ as *const c_void;
        // SAFETY: one-entry chains; fds owned and closed below.
        unsafe {
            assert_eq!(
                allocate(req(DriverKind::Npu, 4096, 0), &[c]),
                Err(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY),
                "a file"
            );
            drop(file);
            let _ = std::fs::remove_file(&path);
            let m = libc::memfd_create(c"vl0-test".as_ptr(), libc::MFD_CLOEXEC);
            assert_eq!(libc::ftruncate(m, 4096), 0);
            let d = import_fd_chain(m);
            let c = &d as *const _ as *const c_void;
            assert_eq!(
                allocate(req(DriverKind::Npu, 4096, 0), &[c]),
                Err(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY),
                "a memfd"
            );
            libc::close(m);

            let e = export_desc();
            let gpu = allocate(
                Request { kind: MemKind::Device, ..req(DriverKind::Gpu, 3 * PAGE, 0) },
                &[&e as *const _ as *const c_void],
            )
            .unwrap();
            let fd = export_fd(DriverKind::Gpu, gpu).unwrap().unwrap();
            let d = import_fd_chain(fd);
            let c = &d as *const _ as *const c_void;
            let p = allocate(req(DriverKind::Npu, 16, 0), &[c]).unwrap();
            assert_eq!(lookup(DriverKind::Npu, p).unwrap().size, 3 * PAGE, "the whole buffer is mapped");
            let mut bad = import_fd_chain(fd);
            bad.flags = ZE_EXTERNAL_MEMORY_TYPE_FLAG_OPAQUE_FD;
            let cb = &bad as *const _ as *const c_void;
            assert_eq!(allocate(req(DriverKind::Npu, 16, 0), &[cb]), Err(ZE_RESULT_ERROR_INVALID_ENUMERATION));
            bad.flags = ZE_EXTERNAL_MEMORY_TYPE_FLAG_OPAQUE_FD | ZE_EXTERNAL_MEMORY_TYPE_FLAG_DMA_BUF;
            let cb = &bad as *const _ as *const c_void;
            assert_eq!(allocate(req(DriverKind::Npu, 16, 0), &[cb]), Err(ZE_RESULT_ERROR_INVALID_ENUMERATION));
            free(DriverKind::Npu, p).unwrap();
            free(DriverKind::Gpu, gpu).unwrap();
        }
    }

    /// GPU exports hand out the driver's own fd (the same number every time), which zeMemFree closes;
    /// NPU exports a new fd per query that the caller owns.
    #[test]
    fn export_fd_ownership_per_driver() {
        let e = export_desc();
        let c = &e as *const _ as *const c_void;
        // SAFETY: one-entry chains; fds checked and closed as each driver's rule says.
        unsafe {
            let gpu = allocate(Request { kind: MemKind::Device, ..req(DriverKind::Gpu, PAGE, 0) }, &[c]).unwrap();
            let a = export_fd(DriverKind::Gpu, gpu).unwrap().unwrap();
            assert_eq!(export_fd(DriverKind::Gpu, gpu).unwrap().unwrap(), a, "one cached fd per allocation");
            assert!(libc::fcntl(a, libc::F_GETFD) >= 0);
            let misuse = crate::counters::get("gpu.export_fd_misuse").unwrap_or(0);
            free(DriverKind::Gpu, gpu).unwrap();
            assert_eq!(crate::counters::get("gpu.export_fd_misuse").unwrap_or(0), misuse);
            let npu = allocate(req(DriverKind::Npu, PAGE, 0), &[c]).unwrap();
            let x = export_fd(DriverKind::Npu, npu).unwrap().unwrap();
            let y = export_fd(DriverKind::Npu, npu).unwrap().unwrap();
            assert_ne!(x, y, "a new fd per NPU export");
            free(DriverKind::Npu, npu).unwrap();
            assert!(libc::fcntl(x, libc::F_GETFD) >= 0, "the caller's NPU export outlives the allocation");
            libc::close(x);
            libc::close(y);
        }
    }

    /// Two NPU imports of one buffer in one context share the kernel's handle: freeing one poisons
    /// the other; an import in another context is independent.
    #[test]
    fn npu_imports_of_one_buffer_alias_per_context() {
        let e = export_desc();
        // SAFETY: one-entry chains; everything freed below.
        unsafe {
            let gpu = allocate(
                Request { kind: MemKind::Device, ..req(DriverKind::Gpu, PAGE, 0) },
                &[&e as *const _ as *const c_void],
            )
            .unwrap();
            let d = import_fd_chain(export_fd(DriverKind::Gpu, gpu).unwrap().unwrap());
            let c = &d as *const _ as *const c_void;
            let one = allocate(Request { context: 7, ..req(DriverKind::Npu, PAGE, 0) }, &[c]).unwrap();
            let two = allocate(Request { context: 7, ..req(DriverKind::Npu, PAGE, 0) }, &[c]).unwrap();
            let other = allocate(Request { context: 8, ..req(DriverKind::Npu, PAGE, 0) }, &[c]).unwrap();
            free(DriverKind::Npu, one).unwrap();
            assert!(lookup_in(DriverKind::Npu, 7, two).unwrap().poisoned);
            assert!(!lookup_in(DriverKind::Npu, 8, other).unwrap().poisoned);
            assert!(lookup_in(DriverKind::Npu, 8, two).is_none(), "looked up per context");
            free(DriverKind::Npu, two).unwrap();
            free(DriverKind::Npu, other).unwrap();
            free(DriverKind::Gpu, gpu).unwrap();
        }
    }

    /// Sysmem (userptr) import pins pages as the kernel does: unmapped pages, GPU USM (a driver
    /// mapping), read-only pages for a writable import fail with OUT_OF_DEVICE_MEMORY; a second
    /// import inside the same context's import is INVALID_ARGUMENT; the write-combined flag makes the
    /// import read-only for the NPU; unaligned input is accepted (the driver rounds to pages).
    #[test]
    fn sysmem_import_pins_like_the_kernel() {
        // SAFETY: our own mappings and allocations, released below.
        unsafe {
            let m = anon(3 * PAGE);
            let d = sysmem_desc(m, 2 * PAGE);
            let c = &d as *const _ as *const c_void;
            if !crate::profile::current().npu_userptr {
                // NPU 37xx, or a kernel without the userptr ioctl: no user-memory import at all.
                assert_eq!(allocate(req(DriverKind::Npu, 2 * PAGE, 0), &[c]), Err(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE));
                eprintln!("profile {}: no user-memory import; checked the refusal", crate::profile::current().name);
                libc::munmap(m, 3 * PAGE);
                return;
            }
            let p = allocate(Request { context: 3, ..req(DriverKind::Npu, 2 * PAGE, 0) }, &[c]).unwrap();
            assert_eq!(p, m);
            assert!(!lookup(DriverKind::Npu, p).unwrap().read_only);
            assert_eq!(
                allocate(Request { context: 3, ..req(DriverKind::Npu, 2 * PAGE, 0) }, &[c]),
                Err(ZE_RESULT_ERROR_INVALID_ARGUMENT)
            );
            let inner = sysmem_desc((m as *mut u8).add(PAGE).cast(), PAGE);
            assert_eq!(
                allocate(
                    Request { context: 3, ..req(DriverKind::Npu, PAGE, 0) },
                    &[&inner as *const _ as *const c_void]
                ),
                Err(ZE_RESULT_ERROR_INVALID_ARGUMENT),
                "a start inside an import of the same context"
            );
            let q = allocate(Request { context: 4, ..req(DriverKind::Npu, 2 * PAGE, 0) }, &[c]).unwrap();
            free(DriverKind::Npu, q).unwrap();
            free(DriverKind::Npu, p).unwrap();
            let odd = sysmem_desc((m as *mut u8).add(100).cast(), 5000);
            let o = allocate(req(DriverKind::Npu, 5000, 0), &[&odd as *const _ as *const c_void]).unwrap();
            free(DriverKind::Npu, o).unwrap();
            let wc =
                Request { host_flags: ZE_HOST_MEM_ALLOC_FLAG_BIAS_WRITE_COMBINED, ..req(DriverKind::Npu, 2 * PAGE, 0) };
            let r = allocate(wc, &[c]).unwrap();
            assert!(lookup(DriverKind::Npu, r).unwrap().read_only);
            free(DriverKind::Npu, r).unwrap();
            assert_eq!(libc::mprotect(m, 3 * PAGE, libc::PROT_READ), 0);
            assert_eq!(
                allocate(req(DriverKind::Npu, 2 * PAGE, 0), &[c]),
                Err(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY),
                "read-only pages"
            );
            let r = allocate(
                Request { host_flags: ZE_HOST_MEM_ALLOC_FLAG_BIAS_WRITE_COMBINED, ..req(DriverKind::Npu, 2 * PAGE, 0) },
                &[c],
            )
            .unwrap();
            free(DriverKind::Npu, r).unwrap();
            libc::munmap((m as *mut u8).add(PAGE).cast(), PAGE);
            assert_eq!(
                allocate(
                    Request {
                        host_flags: ZE_HOST_MEM_ALLOC_FLAG_BIAS_WRITE_COMBINED,
                        ..req(DriverKind::Npu, 2 * PAGE, 0)
                    },
                    &[c]
                ),
                Err(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY),
                "unmapped pages"
            );
            libc::munmap(m, 3 * PAGE);

            // A shared writable mapping of a regular file: the kernel refuses only a writable
            // long-term pin of it.
            let path = std::env::temp_dir().join(format!("vl0-pin-{}", std::process::id()));
            let file =
                std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path).unwrap();
            file.set_len(2 * PAGE as u64).unwrap();
            let fm = libc::mmap(
                std::ptr::null_mut(),
                2 * PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                std::os::fd::AsRawFd::as_raw_fd(&file),
                0,
            );
            assert_ne!(fm, libc::MAP_FAILED);
            let fd_desc = sysmem_desc(fm, 2 * PAGE);
            let f = &fd_desc as *const _ as *const c_void;
            assert_eq!(
                allocate(req(DriverKind::Npu, 2 * PAGE, 0), &[f]),
                Err(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY),
                "a writable pin of a shared file mapping"
            );
            let r = allocate(
                Request { host_flags: ZE_HOST_MEM_ALLOC_FLAG_BIAS_WRITE_COMBINED, ..req(DriverKind::Npu, 2 * PAGE, 0) },
                &[f],
            )
            .expect("a read-only pin of a shared file mapping");
            free(DriverKind::Npu, r).unwrap();
            libc::munmap(fm, 2 * PAGE);
            drop(file);
            std::fs::remove_file(&path).unwrap();

            for kind in [MemKind::Host, MemKind::Shared] {
                let usm = allocate(Request { kind, ..req(DriverKind::Gpu, 2 * PAGE, PAGE) }, &[]).unwrap();
                let d = sysmem_desc(usm, 2 * PAGE);
                assert_eq!(
                    allocate(req(DriverKind::Npu, 2 * PAGE, 0), &[&d as *const _ as *const c_void]),
                    Err(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY),
                    "GPU {kind:?} USM is a driver mapping the NPU cannot pin"
                );
                free(DriverKind::Gpu, usm).unwrap();
            }
        }
    }
}
