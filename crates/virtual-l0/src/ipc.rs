//! Memory IPC handles of the virtual GPU on Linux, as compute-runtime 26.14 makes, tracks and opens
//! them (`level_zero/core/source/context/context.cpp` `getIpcMemHandlesImpl`, `setIPCHandleData`,
//! `putIpcMemHandle`, `getFdFromIpcHandle`, `getIpcHandleFromFd`, `openIpcMemHandle`, `freeMem`;
//! `context/linux/context_linux.cpp` `getDataFromIpcHandle`, `importOpaqueHandleWithFallback`).
//!
//! A handle is the driver's opaque layout (`IpcOpaqueMemoryData`, packed): the allocation's export
//! fd (the one fd `DrmAllocation::peekInternalHandle` caches per allocation, which the export-fd
//! query also returns), an offset, the exporter's process id, the handle type (fd), the memory type
//! (`InternalIpcMemoryType`) and a second copy of the fd, which tells a handle as made from one
//! whose fd the caller replaced. The driver counts the handles of each fd: a get (or an export-fd
//! query, which gets one) adds one, a put takes one, and at zero the fd is closed (the next export
//! opens a new one); freeing the allocation drops its count.
//!
//! Opening a handle as made takes the fd out of the exporter with `pidfd_getfd`, the driver's first
//! choice (it serves fds over a Unix socket where `prctl(PR_SET_PTRACER)` fails; that fallback is
//! not modelled, and `pidfd_getfd` works wherever the importer may ptrace the exporter); a handle
//! whose fd the caller replaced (one sent over a socket) is opened with that fd as it is, which stays
//! the caller's. Each open maps the buffer anew: a new pointer, which `zeMemCloseIpcHandle` frees.
//!
//! Event pools made with `ZE_EVENT_POOL_FLAG_IPC` keep their events' state in shared memory (one
//! slot per event: a signalled word and two timestamps; on hardware, the events' completion data in
//! the pool's buffer object), so that a process that opens the pool's handle sees and sets the same
//! events (`event.cpp` `EventPool::getIpcHandle`, `openEventPoolIpcHandle`, `closeIpcHandle`;
//! `Context::putIpcEventPoolHandle`). Waiting on such an event polls its word with a futex.
//!
//! Not modelled: USM pools (the offset of a pooled allocation; nothing is pooled here), shared USM
//! (its memory here is heap, not a buffer object: `UNSUPPORTED_FEATURE`), fabric handles.
use crate::api::virtual_mem;
use crate::export::ZeResult;
use crate::memory::{self, MemKind};
use crate::objects::DriverKind;
use crate::os;
use crate::sys::*;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::Duration;

/// `ZE_MAX_IPC_HANDLE_SIZE`.
pub const HANDLE_SIZE: usize = 64;

/// `InternalIpcMemoryType` (compute-runtime `shared/source/unified_memory/unified_memory.h`).
const DEVICE_USM: u8 = 0;
const HOST_USM: u8 = 1;
const RESERVED_DEVICE: u8 = 3;
const RESERVED_HOST: u8 = 4;
/// `IpcHandleType::fdHandle`.
const FD_HANDLE: u8 = 0;

/// The fields of `IpcOpaqueMemoryData` this platform reads and writes (byte offsets of the packed
/// layout: fd 0, pool offset 8, process id 16, handle type 20, memory type 21, opaque fd 22,
/// reserved data 30..62, compressed 62).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Handle {
    fd: i32,
    offset: u64,
    pid: u32,
    handle_type: u8,
    memory_type: u8,
    opaque_fd: i32,
}

impl Handle {
    fn encode(&self) -> [u8; HANDLE_SIZE] {
        let mut d = [0u8; HANDLE_SIZE];
        d[0..4].copy_from_slice(&self.fd.to_ne_bytes());
        d[8..16].copy_from_slice(&self.offset.to_ne_bytes());
        d[16..20].copy_from_slice(&self.pid.to_ne_bytes());
        d[20] = self.handle_type;
        d[21] = self.memory_type;
        d[22..26].copy_from_slice(&self.opaque_fd.to_ne_bytes());
        d
    }
    fn decode(d: &[u8; HANDLE_SIZE]) -> Handle {
        let i32_at = |o: usize| i32::from_ne_bytes(d[o..o + 4].try_into().expect("4 bytes"));
        Handle {
            fd: i32_at(0),
            offset: u64::from_ne_bytes(d[8..16].try_into().expect("8 bytes")),
            pid: u32::from_ne_bytes(d[16..20].try_into().expect("4 bytes")),
            handle_type: d[20],
            memory_type: d[21],
            opaque_fd: i32_at(22),
        }
    }
    /// As made by the exporter: its fd field untouched (`getDataFromIpcHandle`).
    fn as_made(&self) -> bool {
        self.fd == self.opaque_fd
    }
}

/// What a tracked fd belongs to, for closing it when its last handle is put.
#[derive(Clone, Copy)]
enum Source {
    Allocation { base: usize, id: u64 },
    Physical(usize),
}

/// One tracked export fd (`IpcHandleTracking`).
struct Tracked {
    count: u64,
    /// The pointer the first handle was made from (`freeMem` drops the entry of that pointer).
    ptr: usize,
    source: Source,
    data: [u8; HANDLE_SIZE],
}

fn tracked() -> MutexGuard<'static, HashMap<i32, Tracked>> {
    static T: OnceLock<Mutex<HashMap<i32, Tracked>>> = OnceLock::new();
    T.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner())
}

/// The export fd, offset, memory type and source of `ptr` (`getIpcMemHandlesImpl`): virtual memory
/// mapped from physical memory, a physical memory handle itself, or a host or device allocation.
fn resolve(ptr: usize) -> ZeResult<(i32, u64, u8, Source)> {
    if let Some(src) = virtual_mem::ipc_source(ptr) {
        let src = src?;
        // A mapping at physical offset 0 is plain device USM to the importer; a non-zero offset
        // says which kind of reserved memory it is.
        let memory_type = match (src.offset, src.device) {
            (0, _) => DEVICE_USM,
            (_, true) => RESERVED_DEVICE,
            (_, false) => RESERVED_HOST,
        };
        return Ok((src.fd, src.offset, memory_type, Source::Physical(src.physical)));
    }
    let info = memory::lookup(DriverKind::Gpu, ptr as *const c_void).ok_or(ZE_RESULT_ERROR_INVALID_ARGUMENT)?;
    if info.kind == MemKind::Shared {
        return Err(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE);
    }
    let fd = match memory::export_handle(DriverKind::Gpu, ptr as *const c_void) {
        Some(Ok(Some(fd))) => fd,
        Some(Err(e)) => return Err(e),
        _ => return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT),
    };
    let memory_type = if info.kind == MemKind::Host { HOST_USM } else { DEVICE_USM };
    Ok((fd, 0, memory_type, Source::Allocation { base: info.base, id: info.id }))
}

/// `zeMemGetIpcHandle`: a handle of the memory at `ptr`, counted against its export fd.
pub fn get(ptr: *const c_void) -> ZeResult<[u8; HANDLE_SIZE]> {
    let (fd, offset, memory_type, source) = resolve(ptr as usize)?;
    let h = Handle { fd, offset, pid: std::process::id(), handle_type: FD_HANDLE, memory_type, opaque_fd: fd };
    let data = h.encode();
    tracked().entry(fd).and_modify(|t| t.count += 1).or_insert(Tracked { count: 1, ptr: ptr as usize, source, data });
    Ok(data)
}

/// The export-fd query of `zeMemGetAllocProperties` (`handleAllocationExtensions`): it gets a
/// handle, counted like any other, and answers its fd; where no handle can be made, the allocation's
/// fd untracked (`peekInternalHandle`), or that query's error.
pub fn export_fd(ptr: *const c_void) -> ZeResult<Option<os::Raw>> {
    match get(ptr) {
        Ok(d) => Ok(Some(Handle::decode(&d).fd)),
        Err(_) => Ok(memory::export_handle(DriverKind::Gpu, ptr).transpose()?.flatten()),
    }
}

/// `zeMemPutIpcHandle`: one handle fewer; the last closes the export fd. An fd the driver does not
/// track is SUCCESS and nothing happens.
pub fn put(data: &[u8; HANDLE_SIZE]) {
    let fd = Handle::decode(data).fd;
    let mut t = tracked();
    let Some(entry) = t.get_mut(&fd) else { return };
    entry.count -= 1;
    if entry.count > 0 {
        return;
    }
    let source = entry.source;
    t.remove(&fd);
    drop(t);
    match source {
        Source::Allocation { base, id } => memory::close_export(base, id),
        Source::Physical(p) => virtual_mem::close_ipc_export(p),
    }
}

/// `zeMemFree` of `ptr`: the handles made from it are forgotten (the allocation closes its own fd).
pub fn forget(ptr: usize) {
    tracked().retain(|_, t| t.ptr != ptr);
}

/// `zeMemGetFileDescriptorFromIpcHandleExp`: the handle's fd, if the driver tracks it.
pub fn fd_of(data: &[u8; HANDLE_SIZE]) -> ZeResult<u64> {
    let fd = Handle::decode(data).fd;
    if tracked().contains_key(&fd) {
        Ok(fd as u64)
    } else {
        Err(ZE_RESULT_ERROR_INVALID_ARGUMENT)
    }
}

/// `zeMemGetIpcHandleFromFileDescriptorExp`: the handle the driver made of export fd `fd`.
pub fn handle_of(fd: u64) -> ZeResult<[u8; HANDLE_SIZE]> {
    let fd = i32::try_from(fd).map_err(|_| ZE_RESULT_ERROR_INVALID_ARGUMENT)?;
    tracked().get(&fd).map(|t| t.data).ok_or(ZE_RESULT_ERROR_INVALID_ARGUMENT)
}

/// `zeMemOpenIpcHandle`: the memory a handle names, mapped into context `ctx` (device `device`).
/// Every failure is `INVALID_ARGUMENT`, as the driver answers a failed import.
pub fn open(ctx: usize, device: usize, data: &[u8; HANDLE_SIZE]) -> ZeResult<*mut c_void> {
    let h = Handle::decode(data);
    let kind = match h.memory_type {
        DEVICE_USM | RESERVED_DEVICE => MemKind::Device,
        HOST_USM | RESERVED_HOST => MemKind::Host,
        _ => return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT),
    };
    let device = if kind == MemKind::Host { 0 } else { device };
    if h.as_made() && h.handle_type == FD_HANDLE {
        let fd = os::take_fd_of(h.pid, h.fd).ok_or(ZE_RESULT_ERROR_INVALID_ARGUMENT)?;
        // The mapping keeps the buffer; the fd taken for it is ours to close.
        let r = memory::import_ipc(ctx, device, kind, fd, h.offset);
        os::close(fd);
        r
    } else {
        memory::import_ipc(ctx, device, kind, h.fd, h.offset)
    }
}

/// Bytes per event in an IPC event pool's memory: signalled word at 0, start at 8, end at 16.
const SLOT: usize = 64;

/// The shared memory of an IPC event pool, made by the exporter or mapped from its handle.
pub struct EventPoolMemory {
    map: *mut c_void,
    len: usize,
    /// The exporter's memfd (`None` in an importer, whose mapping holds the buffer).
    fd: Option<os::Raw>,
    /// The export fd handles name, opened at the first handle, closed by the last put.
    export: Mutex<Option<os::Raw>>,
}

// SAFETY: the mapping is only reached through atomics; the fds are plain numbers.
unsafe impl Send for EventPoolMemory {}
// SAFETY: as above.
unsafe impl Sync for EventPoolMemory {}

impl EventPoolMemory {
    /// Zeroed memory for `count` events (not signalled).
    pub fn create(count: u32) -> ZeResult<Arc<Self>> {
        let len = (count as usize * SLOT).div_ceil(memory::PAGE) * memory::PAGE;
        let (fd, _) = memory::create_shareable(len)?;
        match os::map_shared(fd, len, memory::PAGE) {
            Ok(map) => Ok(Arc::new(EventPoolMemory { map, len, fd: Some(fd), export: Mutex::new(None) })),
            Err(e) => {
                os::close(fd);
                Err(e)
            }
        }
    }

    fn slot(&self, index: u32) -> *mut u8 {
        debug_assert!((index as usize + 1) * SLOT <= self.len);
        self.map.cast::<u8>().wrapping_add(index as usize * SLOT)
    }
}

impl Drop for EventPoolMemory {
    fn drop(&mut self) {
        // SAFETY: our own mapping, no slot of it left (slots hold an Arc of the pool).
        unsafe { os::unmap(self.map, self.len) };
        let export = self.export.get_mut().unwrap_or_else(|e| e.into_inner()).take();
        for fd in self.fd.into_iter().chain(export) {
            os::close(fd);
        }
    }
}

/// One event's state in an IPC event pool's memory.
pub struct EventSlot {
    pool: Arc<EventPoolMemory>,
    index: u32,
}

impl EventSlot {
    pub fn new(pool: Arc<EventPoolMemory>, index: u32) -> Self {
        EventSlot { pool, index }
    }
    fn word(&self) -> &AtomicU32 {
        // SAFETY: the slot lies in the pool's live, 64-byte-aligned shared mapping, which the Arc
        // keeps; it is only ever accessed atomically.
        unsafe { &*(self.pool.slot(self.index) as *const AtomicU32) }
    }
    fn stamp(&self, at: usize) -> &AtomicU64 {
        // SAFETY: as for `word`; offsets 8 and 16 are 8-byte aligned inside the slot.
        unsafe { &*(self.pool.slot(self.index).add(at) as *const AtomicU64) }
    }
    pub fn is_signaled(&self) -> bool {
        self.word().load(Ordering::Acquire) != 0
    }
    pub fn begin(&self, start: u64) {
        self.stamp(8).store(start, Ordering::Relaxed);
    }
    pub fn signal(&self, start: u64, end: u64) {
        self.stamp(8).store(start, Ordering::Relaxed);
        self.stamp(16).store(end, Ordering::Relaxed);
        self.word().store(1, Ordering::Release);
        os::wake_all(self.word());
    }
    pub fn reset(&self) {
        self.word().store(0, Ordering::Release);
        self.stamp(8).store(0, Ordering::Relaxed);
        self.stamp(16).store(0, Ordering::Relaxed);
    }
    pub fn timestamps(&self) -> (u64, u64) {
        (self.stamp(8).load(Ordering::Relaxed), self.stamp(16).load(Ordering::Relaxed))
    }
    /// Sleeps until the event may be signalled, at most `max`.
    pub fn wait_for(&self, max: Duration) {
        os::wait_while(self.word(), 0, max);
    }
}

/// Event pools' export fds: their handle counts and pools (`trackIpcEventPoolHandle`).
type PoolHandles = HashMap<i32, (u64, Weak<EventPoolMemory>)>;

fn tracked_pools() -> MutexGuard<'static, PoolHandles> {
    static T: OnceLock<Mutex<PoolHandles>> = OnceLock::new();
    T.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner())
}

/// `ze_event_pool_flags_t` bits the handle carries.
const POOL_HOST_VISIBLE: u32 = 0x1;
const POOL_IPC: u32 = 0x2;
const POOL_TIMESTAMP: u32 = 0x4;
const POOL_MAPPED_TIMESTAMP: u32 = 0x8;

/// `zeEventPoolGetIpcHandle` of an IPC pool with `count` events and `flags`: `IpcOpaqueEventPoolData`
/// (packed: fd 0, opaque fd 8, event count 16, process id 20, root device 24, max packets 26,
/// devices 27, flag bits 28 (device allocation, host visible, implicit scaling, mapped timestamps,
/// timestamps), handle type 29). One packet per event is **inferred** (only this platform reads it).
pub fn event_pool_handle(mem: &Arc<EventPoolMemory>, count: u32, flags: u32) -> ZeResult<[u8; HANDLE_SIZE]> {
    let fd = {
        let mut export = mem.export.lock().unwrap_or_else(|e| e.into_inner());
        match *export {
            Some(fd) => fd,
            None => {
                let own = mem.fd.ok_or(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE)?;
                *export.insert(os::duplicate(own).ok_or(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY)?)
            }
        }
    };
    tracked_pools().entry(fd).and_modify(|t| t.0 += 1).or_insert((1, Arc::downgrade(mem)));
    let mut d = [0u8; HANDLE_SIZE];
    d[0..8].copy_from_slice(&(fd as u64).to_ne_bytes());
    d[8..16].copy_from_slice(&(fd as u64).to_ne_bytes());
    d[16..20].copy_from_slice(&count.to_ne_bytes());
    d[20..24].copy_from_slice(&std::process::id().to_ne_bytes());
    d[26] = 1;
    d[27] = 1;
    let bit = |f: u32, b: u8| if flags & f != 0 { b } else { 0 };
    let device_allocation = if flags & POOL_HOST_VISIBLE == 0 { 1 } else { 0 };
    d[28] = device_allocation | bit(POOL_HOST_VISIBLE, 2) | bit(POOL_MAPPED_TIMESTAMP, 8) | bit(POOL_TIMESTAMP, 16);
    d[29] = FD_HANDLE;
    Ok(d)
}

/// `zeEventPoolOpenIpcHandle`: the pool's memory, event count and flags. A handle as made is opened
/// through the exporter (`pidfd_getfd`), one whose fd the caller replaced with that fd; every
/// failure is `INVALID_ARGUMENT`.
pub fn open_event_pool(d: &[u8; HANDLE_SIZE]) -> ZeResult<(Arc<EventPoolMemory>, u32, u32)> {
    let u64_at = |o: usize| u64::from_ne_bytes(d[o..o + 8].try_into().expect("8 bytes"));
    let u32_at = |o: usize| u32::from_ne_bytes(d[o..o + 4].try_into().expect("4 bytes"));
    let (handle, opaque, count, pid) = (u64_at(0), u64_at(8), u32_at(16), u32_at(20));
    let fd = handle as i32;
    let (fd, owned) = if handle == opaque {
        (os::take_fd_of(pid, fd).ok_or(ZE_RESULT_ERROR_INVALID_ARGUMENT)?, true)
    } else {
        (fd, false)
    };
    let mapped = (|| {
        let (_, len) = os::stat(fd).ok_or(ZE_RESULT_ERROR_INVALID_ARGUMENT)?;
        let len = len as usize;
        if count == 0 || len < count as usize * SLOT {
            return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT);
        }
        os::map_shared(fd, len, memory::PAGE).map(|map| (map, len))
    })();
    if owned {
        os::close(fd);
    }
    let (map, len) = mapped.map_err(|_| ZE_RESULT_ERROR_INVALID_ARGUMENT)?;
    let mut flags = POOL_IPC;
    if d[28] & 2 != 0 {
        flags |= POOL_HOST_VISIBLE;
    }
    if d[28] & 8 != 0 {
        flags |= POOL_MAPPED_TIMESTAMP;
    }
    if d[28] & 16 != 0 {
        flags |= POOL_TIMESTAMP;
    }
    Ok((Arc::new(EventPoolMemory { map, len, fd: None, export: Mutex::new(None) }), count, flags))
}

/// `zeEventPoolPutIpcHandle`: one handle fewer; the last closes the pool's export fd.
pub fn put_event_pool(d: &[u8; HANDLE_SIZE]) {
    let fd = u64::from_ne_bytes(d[0..8].try_into().expect("8 bytes")) as i32;
    let mut t = tracked_pools();
    let Some(entry) = t.get_mut(&fd) else { return };
    entry.0 -= 1;
    if entry.0 > 0 {
        return;
    }
    let mem = entry.1.upgrade();
    t.remove(&fd);
    drop(t);
    if let Some(fd) = mem.and_then(|m| m.export.lock().unwrap_or_else(|e| e.into_inner()).take()) {
        os::close(fd);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::cmd::{zeEventCreate, zeEventHostSignal, zeEventHostSynchronize, zeEventPoolCreate};
    use crate::api::cmd::{zeEventPoolGetIpcHandle, zeEventPoolOpenIpcHandle, zeEventQueryStatus};
    use crate::api::context::zeContextCreate;
    use crate::api::memory::zeMemPutIpcHandle;
    use crate::api::memory::{
        zeMemAllocDevice, zeMemCloseIpcHandle, zeMemFree, zeMemGetFileDescriptorFromIpcHandleExp,
    };
    use crate::api::memory::{zeMemGetIpcHandle, zeMemGetIpcHandleFromFileDescriptorExp, zeMemOpenIpcHandle};
    use crate::objects::{device, driver};
    use std::ptr::null_mut;

    /// The handle a parent test passes to its child process (hex).
    const CHILD_HANDLE: &str = "VL0_IPC_TEST_HANDLE";

    fn gpu() -> (ze_context_handle_t, ze_device_handle_t) {
        // SAFETY: plain-C descriptor.
        let desc: ze_context_desc_t = unsafe { std::mem::zeroed() };
        let mut c = null_mut();
        // SAFETY: valid driver handle, descriptor and out-parameter.
        assert_eq!(unsafe { zeContextCreate(driver(DriverKind::Gpu).handle(), &desc, &mut c) }, ZE_RESULT_SUCCESS);
        (c, device(DriverKind::Gpu).handle())
    }

    fn device_memory(c: ze_context_handle_t, d: ze_device_handle_t, size: usize) -> *mut u8 {
        // SAFETY: plain-C descriptor.
        let desc: ze_device_mem_alloc_desc_t = unsafe { std::mem::zeroed() };
        let mut p = null_mut();
        // SAFETY: valid handles, descriptor and out-parameter.
        assert_eq!(unsafe { zeMemAllocDevice(c, &desc, size, 0, d, &mut p) }, ZE_RESULT_SUCCESS);
        p.cast()
    }

    fn hex(d: &[u8]) -> String {
        d.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn unhex(s: &str) -> [u8; HANDLE_SIZE] {
        let mut d = [0u8; HANDLE_SIZE];
        for (i, b) in d.iter_mut().enumerate() {
            *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex");
        }
        d
    }

    /// Runs the ignored test `name` of this binary in a child process with `handle` and waits for it.
    fn child(name: &str, handle: &[u8]) -> std::process::ExitStatus {
        std::process::Command::new(std::env::current_exe().expect("test binary"))
            .args(["--exact", name, "--ignored", "--test-threads=1"])
            .env(CHILD_HANDLE, hex(handle))
            .status()
            .expect("child test process")
    }

    #[test]
    fn device_memory_crosses_processes_by_handle() {
        let (c, d) = gpu();
        let p = device_memory(c, d, 8192);
        for i in 0..8192 {
            // SAFETY: 8192 bytes of host-mapped device memory.
            unsafe { *p.add(i) = (i % 251) as u8 };
        }
        let mut h = ze_ipc_mem_handle_t { data: [0; HANDLE_SIZE] };
        // SAFETY: valid handles and out-parameter.
        assert_eq!(unsafe { zeMemGetIpcHandle(c, p.cast(), &mut h) }, ZE_RESULT_SUCCESS);
        let status = child("ipc::tests::child_reads_and_writes_the_memory", &h.data.map(|b| b as u8));
        assert!(status.success(), "the child could not open, read or write the memory: {status}");
        // SAFETY: as above; the child wrote byte 0 of the same buffer.
        assert_eq!(unsafe { *p }, 0xa5, "the child's write is in this process's memory: one buffer, no copy");
        // SAFETY: valid handles.
        unsafe {
            assert_eq!(zeMemPutIpcHandle(c, h), ZE_RESULT_SUCCESS);
            assert_eq!(zeMemFree(c, p.cast()), ZE_RESULT_SUCCESS);
        }
    }

    #[test]
    #[ignore = "the child half of device_memory_crosses_processes_by_handle"]
    fn child_reads_and_writes_the_memory() {
        let h = ze_ipc_mem_handle_t {
            data: unhex(&std::env::var(CHILD_HANDLE).expect("run by the parent")).map(|b| b as _),
        };
        let (c, d) = gpu();
        let mut q = null_mut();
        // SAFETY: valid handles and out-parameter.
        assert_eq!(unsafe { zeMemOpenIpcHandle(c, d, h, 0, &mut q) }, ZE_RESULT_SUCCESS);
        let q = q as *mut u8;
        for i in 0..8192 {
            // SAFETY: the opened memory is the parent's 8192 bytes.
            assert_eq!(unsafe { *q.add(i) }, (i % 251) as u8, "byte {i}");
        }
        // SAFETY: as above.
        unsafe { *q = 0xa5 };
        // SAFETY: valid handles.
        assert_eq!(unsafe { zeMemCloseIpcHandle(c, q.cast()) }, ZE_RESULT_SUCCESS);
    }

    #[test]
    fn handles_are_counted_per_export_fd_and_the_last_put_closes_it() {
        let (c, d) = gpu();
        let p = device_memory(c, d, 4096);
        let (mut a, mut b) =
            (ze_ipc_mem_handle_t { data: [0; HANDLE_SIZE] }, ze_ipc_mem_handle_t { data: [0; HANDLE_SIZE] });
        let mut fd = 0u64;
        let mut again = ze_ipc_mem_handle_t { data: [0; HANDLE_SIZE] };
        // SAFETY: valid handles and out-parameters throughout.
        unsafe {
            assert_eq!(zeMemGetIpcHandle(c, p.cast(), &mut a), ZE_RESULT_SUCCESS);
            assert_eq!(zeMemGetIpcHandle(c, p.cast(), &mut b), ZE_RESULT_SUCCESS);
            assert_eq!(a.data, b.data, "one export fd per allocation");
            assert_eq!(zeMemGetFileDescriptorFromIpcHandleExp(c, a, &mut fd), ZE_RESULT_SUCCESS);
            assert_eq!(zeMemGetIpcHandleFromFileDescriptorExp(c, fd, &mut again), ZE_RESULT_SUCCESS);
            assert_eq!(again.data, a.data);
            // An opened handle is a new mapping of the same memory.
            let mut q = null_mut();
            assert_eq!(zeMemOpenIpcHandle(c, d, a, 0, &mut q), ZE_RESULT_SUCCESS);
            assert_ne!(q, p.cast());
            *p.add(100) = 7;
            assert_eq!(*(q as *const u8).add(100), 7);
            assert_eq!(zeMemCloseIpcHandle(c, q), ZE_RESULT_SUCCESS);
            assert_eq!(zeMemPutIpcHandle(c, a), ZE_RESULT_SUCCESS);
            assert_eq!(zeMemGetFileDescriptorFromIpcHandleExp(c, a, &mut fd), ZE_RESULT_SUCCESS, "one handle left");
            assert_eq!(zeMemPutIpcHandle(c, b), ZE_RESULT_SUCCESS);
            assert_eq!(zeMemGetFileDescriptorFromIpcHandleExp(c, a, &mut fd), ZE_RESULT_ERROR_INVALID_ARGUMENT);
            assert_eq!(zeMemGetIpcHandleFromFileDescriptorExp(c, fd, &mut again), ZE_RESULT_ERROR_INVALID_ARGUMENT);
            // A handle whose exporter closed its fd no longer opens.
            let mut q = null_mut();
            assert_eq!(zeMemOpenIpcHandle(c, d, a, 0, &mut q), ZE_RESULT_ERROR_INVALID_ARGUMENT);
            assert_eq!(zeMemFree(c, p.cast()), ZE_RESULT_SUCCESS);
        }
    }

    fn ipc_event_pool(c: ze_context_handle_t, flags: u32) -> (ze_result_t, ze_event_pool_handle_t) {
        // SAFETY: plain-C descriptor.
        let mut desc: ze_event_pool_desc_t = unsafe { std::mem::zeroed() };
        desc.flags = flags;
        desc.count = 4;
        let mut p = null_mut();
        // SAFETY: valid handles, descriptor and out-parameter.
        (unsafe { zeEventPoolCreate(c, &desc, 0, null_mut(), &mut p) }, p)
    }

    fn event(p: ze_event_pool_handle_t, index: u32) -> ze_event_handle_t {
        // SAFETY: plain-C descriptor.
        let mut desc: ze_event_desc_t = unsafe { std::mem::zeroed() };
        desc.index = index;
        let mut e = null_mut();
        // SAFETY: valid handles, descriptor and out-parameter.
        assert_eq!(unsafe { zeEventCreate(p, &desc, &mut e) }, ZE_RESULT_SUCCESS);
        e
    }

    #[test]
    fn an_event_of_an_ipc_pool_is_signalled_from_another_process() {
        let (c, _) = gpu();
        let (r, plain) = ipc_event_pool(c, ZE_EVENT_POOL_FLAG_HOST_VISIBLE);
        assert_eq!(r, ZE_RESULT_SUCCESS);
        let mut h = ze_ipc_event_pool_handle_t { data: [0; HANDLE_SIZE] };
        // SAFETY: valid handle and out-parameter.
        assert_eq!(unsafe { zeEventPoolGetIpcHandle(plain, &mut h) }, ZE_RESULT_ERROR_UNSUPPORTED_FEATURE);
        let (r, pool) = ipc_event_pool(c, ZE_EVENT_POOL_FLAG_HOST_VISIBLE | ZE_EVENT_POOL_FLAG_IPC);
        assert_eq!(r, ZE_RESULT_SUCCESS);
        // SAFETY: valid handle and out-parameter.
        assert_eq!(unsafe { zeEventPoolGetIpcHandle(pool, &mut h) }, ZE_RESULT_SUCCESS);
        let e = event(pool, 2);
        // SAFETY: valid handle.
        assert_eq!(unsafe { zeEventQueryStatus(e) }, ZE_RESULT_NOT_READY);
        let status = child("ipc::tests::child_signals_event_2", &h.data.map(|b| b as u8));
        assert!(status.success(), "the child could not open the pool or signal: {status}");
        // SAFETY: valid handle.
        assert_eq!(unsafe { zeEventHostSynchronize(e, 5_000_000_000) }, ZE_RESULT_SUCCESS);
    }

    #[test]
    #[ignore = "the child half of an_event_of_an_ipc_pool_is_signalled_from_another_process"]
    fn child_signals_event_2() {
        let h = ze_ipc_event_pool_handle_t {
            data: unhex(&std::env::var(CHILD_HANDLE).expect("run by the parent")).map(|b| b as _),
        };
        let (c, _) = gpu();
        let mut pool = null_mut();
        // SAFETY: valid handle and out-parameter.
        assert_eq!(unsafe { zeEventPoolOpenIpcHandle(c, h, &mut pool) }, ZE_RESULT_SUCCESS);
        let e = event(pool, 2);
        // SAFETY: valid handle.
        assert_eq!(unsafe { zeEventQueryStatus(e) }, ZE_RESULT_NOT_READY, "the parent's event as it stands");
        // SAFETY: valid handle.
        assert_eq!(unsafe { zeEventHostSignal(e) }, ZE_RESULT_SUCCESS);
    }

    #[test]
    fn handle_layout_is_the_drivers_packed_opaque_data() {
        let h =
            Handle { fd: 7, offset: 0x1000, pid: 4242, handle_type: FD_HANDLE, memory_type: HOST_USM, opaque_fd: 7 };
        let d = h.encode();
        assert_eq!(&d[0..4], &7i32.to_ne_bytes());
        assert_eq!(&d[8..16], &0x1000u64.to_ne_bytes());
        assert_eq!(&d[16..20], &4242u32.to_ne_bytes());
        assert_eq!((d[20], d[21]), (FD_HANDLE, HOST_USM));
        assert_eq!(&d[22..26], &7i32.to_ne_bytes());
        assert!(d[26..].iter().all(|b| *b == 0));
        assert_eq!(Handle::decode(&d), h);
        let mut replaced = d;
        replaced[0..4].copy_from_slice(&9i32.to_ne_bytes());
        assert!(!Handle::decode(&replaced).as_made());
    }
}
