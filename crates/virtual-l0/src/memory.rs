//! Per-driver allocation registries backed by real memory.
//!
//! Each driver has its own registry (so the NPU sees SYCL USM as foreign, which is what makes
//! CPU_VA import of SYCL memory work). Entries are found by range, so interior pointers resolve;
//! every entry gets a unique, non-zero, stable `id`; the page size is 4096. A pointer the driver
//! does not own is `ZE_MEMORY_TYPE_UNKNOWN` with id 0 (the API layer answers SUCCESS for it).
//!
//! Backing, chosen from the allocation's `pNext` chain:
//! - plain: zeroed heap memory (`std::alloc`), alignment `max(requested, 64)`, 4096 for ≥ 4 KiB;
//! - exportable (`ze_external_memory_export_desc_t`, DMA_BUF or OPAQUE_FD): `memfd_create` +
//!   `ftruncate` + `mmap(MAP_SHARED)`; [`export_fd`] hands out `dup(memfd)`, which the caller owns;
//! - fd import (`ze_external_memory_import_fd_t`): `mmap(MAP_SHARED)` of the caller's fd for exactly
//!   the requested size; freeing unmaps our mapping only, the fd stays the caller's;
//! - sysmem import (`ze_external_memmap_sysmem_ext_desc_t`, 0x00020037): the caller's pointer itself
//!   (zero copy); pointer and size must be multiples of 4096, else
//!   `ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT` (the spec's code for an alignment the device does not
//!   support); freeing forgets the range and never touches the memory.
//!
//! Crate API: [`lookup`] (`driver, ptr → Option<AllocInfo>`), [`allocate`], [`free`], [`export_fd`],
//! [`live`].
use crate::export::{chain, ZeResult};
use crate::objects::DriverKind;
use crate::stypes;
use crate::sys::*;
use std::alloc::Layout;
use std::collections::BTreeMap;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// Page size reported for every allocation.
pub const PAGE: usize = 4096;
/// Largest single allocation (`maxMemAllocSize`).
pub const MAX_ALLOC: usize = 4 << 30;

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
}

enum Backing {
    Heap { ptr: *mut u8, layout: Layout },
    Memfd { fd: c_int, map: *mut c_void, len: usize },
    Mapped { map: *mut c_void, len: usize },
    Borrowed,
}

// SAFETY: the pointers are owned mappings/allocations; nothing is thread-affine.
unsafe impl Send for Backing {}

impl Drop for Backing {
    fn drop(&mut self) {
        match *self {
            // SAFETY: allocated with this layout by `allocate`, freed once.
            Backing::Heap { ptr, layout } => unsafe { std::alloc::dealloc(ptr, layout) },
            Backing::Memfd { fd, map, len } => {
                // SAFETY: our own mapping and our own fd; the caller's dups stay open.
                unsafe {
                    libc::munmap(map, len);
                    libc::close(fd);
                }
            }
            // SAFETY: our own mapping of the caller's fd; the fd is not ours to close.
            Backing::Mapped { map, len } => unsafe {
                libc::munmap(map, len);
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

/// The allocation of `driver` containing `ptr` (interior pointers included), if any.
pub fn lookup(driver: DriverKind, ptr: *const c_void) -> Option<AllocInfo> {
    let p = ptr as usize;
    if p == 0 {
        return None;
    }
    let reg = lock(driver);
    reg.range(..=(p, u64::MAX)).rev().take(64).map(|(_, r)| r.info).find(|i| p >= i.base && p < i.base + i.size.max(1))
}

/// Number of live registry entries of `driver` (imports included).
pub fn live(driver: DriverKind) -> usize {
    lock(driver).len()
}

fn round_up(n: usize, to: usize) -> usize {
    n.div_ceil(to) * to
}

fn errno() -> c_int {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Whether every page of `[p, p + len)` is mapped in this process.
fn mapped(p: usize, len: usize) -> bool {
    let start = p & !(PAGE - 1);
    let pages = (p + len).div_ceil(PAGE) - start / PAGE;
    let mut v = vec![0u8; pages];
    // SAFETY: v has one byte per page of the range; mincore only reports residency and fails with
    // ENOMEM when part of the range is not mapped.
    unsafe { libc::mincore(start as *mut c_void, pages * PAGE, v.as_mut_ptr()) == 0 }
}

/// Whether `fd` is a dma-buf or a memfd (what this platform's exports are), per `/proc/self/fd`.
fn is_dma_buf_like(fd: c_int) -> bool {
    match std::fs::read_link(format!("/proc/self/fd/{fd}")) {
        Ok(t) => {
            let t = t.to_string_lossy();
            t.starts_with("/memfd:") || t.starts_with("/dmabuf:") || t.starts_with("anon_inode:dmabuf")
        }
        Err(_) => false,
    }
}

/// Maps `fd` shared and read-write at an address aligned to `align` (≥ 4096).
fn map_shared(fd: c_int, len: usize, align: usize) -> ZeResult<*mut c_void> {
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    if align <= PAGE {
        // SAFETY: a fresh mapping chosen by the kernel; fd validity is checked by mmap itself.
        let m = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED, fd, 0) };
        return if m == libc::MAP_FAILED { Err(ZE_RESULT_ERROR_INVALID_ARGUMENT) } else { Ok(m) };
    }
    let span = round_up(len, PAGE) + align;
    // SAFETY: reserving fresh address space.
    let res = unsafe {
        libc::mmap(std::ptr::null_mut(), span, libc::PROT_NONE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
    };
    if res == libc::MAP_FAILED {
        return Err(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
    }
    let start = round_up(res as usize, align);
    // SAFETY: [start, start+len) lies inside our reservation; MAP_FIXED replaces only that.
    let m = unsafe { libc::mmap(start as *mut c_void, len, prot, libc::MAP_SHARED | libc::MAP_FIXED, fd, 0) };
    let head = start - res as usize;
    let tail_start = start + round_up(len, PAGE);
    let tail = res as usize + span - tail_start;
    // SAFETY: releasing the unused parts of our own reservation.
    unsafe {
        if head > 0 {
            libc::munmap(res, head);
        }
        if tail > 0 {
            libc::munmap(tail_start as *mut c_void, tail);
        }
    }
    if m == libc::MAP_FAILED {
        // SAFETY: the middle part of our reservation.
        unsafe { libc::munmap(start as *mut c_void, len) };
        return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT);
    }
    Ok(m)
}

/// Parameters of one allocation call.
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
}

/// Allocates (or imports) memory as described by `req` and the `pNext` chains in `chains`
/// (the device and host descriptors' chains; entries are interpreted as allocation extensions).
///
/// # Safety
/// Every chain is valid per [`chain`].
pub unsafe fn allocate(req: Request, chains: &[*const c_void]) -> ZeResult<*mut c_void> {
    if req.size == 0 || req.size > MAX_ALLOC {
        return Err(ZE_RESULT_ERROR_UNSUPPORTED_SIZE);
    }
    if req.align != 0 && !req.align.is_power_of_two() {
        return Err(ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT);
    }
    let mut export = false;
    let mut import_fd = None;
    let mut sysmem = None;
    for &c in chains {
        // SAFETY: per the contract.
        for e in unsafe { chain(c) } {
            match e.stype {
                stypes::EXTERNAL_MEMORY_EXPORT_DESC => {
                    // SAFETY: stype says ze_external_memory_export_desc_t.
                    let d = unsafe { &*(e.ptr as *const ze_external_memory_export_desc_t) };
                    let flags = d.flags;
                    if flags & (stypes::EXTERNAL_MEMORY_TYPE_FLAG_DMA_BUF | stypes::EXTERNAL_MEMORY_TYPE_FLAG_OPAQUE_FD)
                        == 0
                    {
                        return Err(ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION);
                    }
                    export = true;
                }
                stypes::EXTERNAL_MEMORY_IMPORT_FD => {
                    // SAFETY: stype says ze_external_memory_import_fd_t.
                    let d = unsafe { &*(e.ptr as *const ze_external_memory_import_fd_t) };
                    let flags = d.flags;
                    if flags & (stypes::EXTERNAL_MEMORY_TYPE_FLAG_DMA_BUF | stypes::EXTERNAL_MEMORY_TYPE_FLAG_OPAQUE_FD)
                        == 0
                    {
                        return Err(ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION);
                    }
                    import_fd = Some(d.fd);
                }
                stypes::EXTERNAL_MEMMAP_SYSMEM_EXT_DESC => {
                    // SAFETY: stype says ze_external_memmap_sysmem_ext_desc_t.
                    let d = unsafe { &*(e.ptr as *const stypes::ExternalMemmapSysmemExtDesc) };
                    sysmem = Some((d.pSystemMemory as usize, d.size as usize));
                }
                _ => {}
            }
        }
    }
    let prefix = req.driver.prefix();
    let (base, size, backing, origin) = if let Some((p, len)) = sysmem {
        if p == 0 {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        if p % PAGE != 0 || len % PAGE != 0 || len == 0 {
            return Err(ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT);
        }
        if len < req.size {
            return Err(ZE_RESULT_ERROR_INVALID_SIZE);
        }
        // A real driver pins the pages (userptr) and fails for a range that is not mapped, e.g.
        // memory the caller has already freed; accepting it here would crash at first use.
        if !mapped(p, len) {
            return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT);
        }
        crate::counters::add(&format!("{prefix}.imports.sysmem"), 1);
        (p, req.size, Backing::Borrowed, Origin::ImportedSysmem)
    } else if let Some(fd) = import_fd {
        let mut st: libc::stat = {
            // SAFETY: plain-old-data, fully written by fstat before use.
            unsafe { std::mem::zeroed() }
        };
        // SAFETY: st is a valid out-parameter; fd validity is checked by fstat.
        if unsafe { libc::fstat(fd, &mut st) } != 0 {
            return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT);
        }
        // Only a dma-buf (or a memfd, which is what this platform exports as one) can be imported;
        // a real driver's PRIME import rejects a regular file, pipe or socket (typically a stale fd
        // number) instead of mapping whatever it is.
        if !is_dma_buf_like(fd) {
            return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT);
        }
        // A buffer smaller than the import (an empty memfd included) would map, then SIGBUS at
        // first access.
        if (st.st_size as u64) < req.size as u64 {
            return Err(ZE_RESULT_ERROR_INVALID_SIZE);
        }
        let m = map_shared(fd, req.size, req.align.max(PAGE))?;
        crate::counters::add(&format!("{prefix}.imports.dma_buf"), 1);
        (m as usize, req.size, Backing::Mapped { map: m, len: req.size }, Origin::ImportedFd)
    } else if export {
        let len = round_up(req.size, PAGE);
        // SAFETY: the name is a valid C string.
        let fd = unsafe { libc::memfd_create(c"vl0-dmabuf".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
        }
        // SAFETY: our own fresh fd.
        if unsafe { libc::ftruncate(fd, len as libc::off_t) } != 0 {
            let _ = errno();
            // SAFETY: our own fd.
            unsafe { libc::close(fd) };
            return Err(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY);
        }
        let m = match map_shared(fd, len, req.align.max(PAGE)) {
            Ok(m) => m,
            Err(e) => {
                // SAFETY: our own fd.
                unsafe { libc::close(fd) };
                return Err(e);
            }
        };
        (m as usize, req.size, Backing::Memfd { fd, map: m, len }, Origin::Exportable)
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
    let info = AllocInfo { base, size, id, kind: req.kind, device: req.device, context: req.context, origin };
    lock(req.driver).insert((base, id), Record { info, backing });
    crate::counters::add(&format!("{prefix}.live_allocations"), 1);
    Ok(base as *mut c_void)
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
        key.and_then(|k| reg.remove(&k)).ok_or(ZE_RESULT_ERROR_INVALID_ARGUMENT)?
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
        keys.iter().filter_map(|k| reg.remove(k)).collect()
    };
    let n = recs.len();
    drop(recs); // unmaps / deallocates outside the lock
    if n > 0 {
        crate::counters::sub(&format!("{}.live_allocations", driver.prefix()), n as u64);
    }
    n
}

/// A new fd (the caller owns it) for the exportable allocation of `driver` containing `ptr`.
pub fn export_fd(driver: DriverKind, ptr: *const c_void) -> ZeResult<c_int> {
    let p = ptr as usize;
    let reg = lock(driver);
    let rec = reg
        .range(..=(p, u64::MAX))
        .next_back()
        .map(|(_, r)| r)
        .filter(|r| p >= r.info.base && p < r.info.base + r.info.size.max(1))
        .ok_or(ZE_RESULT_ERROR_INVALID_ARGUMENT)?;
    let Backing::Memfd { fd, .. } = rec.backing else {
        return Err(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE);
    };
    // SAFETY: our own open fd; the duplicate is handed to the caller.
    let d = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if d < 0 {
        return Err(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
    }
    crate::counters::add(&format!("{}.exports.dma_buf", driver.prefix()), 1);
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(driver: DriverKind, size: usize, align: usize) -> Request {
        Request { driver, context: 0, device: 0, kind: MemKind::Host, size, align }
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
            let fd = export_fd(DriverKind::Gpu, (p as *const u8).add(10).cast()).unwrap();
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
            let plain = allocate(req(DriverKind::Gpu, 64, 0), &[]).unwrap();
            assert_eq!(export_fd(DriverKind::Gpu, plain), Err(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE));
            free(DriverKind::Gpu, plain).unwrap();
        }
    }

    #[test]
    fn alignment_and_size_rules() {
        // SAFETY: no chains.
        unsafe {
            assert_eq!(allocate(req(DriverKind::Gpu, 0, 0), &[]), Err(ZE_RESULT_ERROR_UNSUPPORTED_SIZE));
            assert_eq!(allocate(req(DriverKind::Gpu, 8, 3), &[]), Err(ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT));
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

    /// Importing something that is not a dma-buf (a regular file, an empty or short memfd) is
    /// refused, as by a real driver, instead of being mapped (and, for a short one, SIGBUS later).
    #[test]
    fn fd_import_accepts_only_dma_bufs_of_sufficient_size() {
        use std::os::fd::AsRawFd;
        let path = std::env::temp_dir().join(format!("vl0-import-{}", std::process::id()));
        let file = std::fs::File::create(&path).unwrap();
        file.set_len(8192).unwrap();
        let d = import_fd_chain(file.as_raw_fd());
        let c = &d as *const _ as *const c_void;
        // SAFETY: one-entry chains; fds owned and closed below.
        unsafe {
            assert_eq!(allocate(req(DriverKind::Npu, 4096, 0), &[c]), Err(ZE_RESULT_ERROR_INVALID_ARGUMENT), "a file");
            drop(file);
            let _ = std::fs::remove_file(&path);
            let m = libc::memfd_create(c"vl0-test".as_ptr(), libc::MFD_CLOEXEC);
            assert!(m >= 0);
            let d = import_fd_chain(m);
            let c = &d as *const _ as *const c_void;
            assert_eq!(allocate(req(DriverKind::Npu, 4096, 0), &[c]), Err(ZE_RESULT_ERROR_INVALID_SIZE), "empty");
            assert_eq!(libc::ftruncate(m, 4096), 0);
            let p = allocate(req(DriverKind::Npu, 4096, 0), &[c]).unwrap();
            *(p as *mut u8) = 1;
            free(DriverKind::Npu, p).unwrap();
            libc::close(m);
        }
    }

    /// A sysmem import of memory that is not mapped (already freed) is refused, as a real driver's
    /// page pinning fails, instead of crashing at first use.
    #[test]
    fn sysmem_import_of_unmapped_memory_is_refused() {
        // SAFETY: our own mapping, unmapped before the import attempt.
        unsafe {
            let m = libc::mmap(
                std::ptr::null_mut(),
                8192,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(m, libc::MAP_FAILED);
            let d = stypes::ExternalMemmapSysmemExtDesc {
                stype: stypes::EXTERNAL_MEMMAP_SYSMEM_EXT_DESC,
                pNext: std::ptr::null(),
                pSystemMemory: m,
                size: 8192,
            };
            let c = &d as *const _ as *const c_void;
            let p = allocate(req(DriverKind::Npu, 8192, 0), &[c]).unwrap();
            assert_eq!(p, m);
            free(DriverKind::Npu, p).unwrap();
            libc::munmap((m as *mut u8).add(4096).cast(), 4096);
            assert_eq!(allocate(req(DriverKind::Npu, 8192, 0), &[c]), Err(ZE_RESULT_ERROR_INVALID_ARGUMENT));
            libc::munmap(m, 4096);
        }
    }
}
