//! Windows: unnamed sections (`CreateFileMappingW` over the paging file) stand for the GPU
//! driver's shareable WDDM resources, section handles for their NT handles.
//!
//! A section made here is one page longer than asked: the last page carries a magic word and a
//! serial number, the buffer's identity (Windows tells a program no identity of a section
//! handle). No mapping a caller gets reaches that page.
// A HANDLE is a pointer-typed value the kernel looks up in its table; nothing here dereferences one.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use super::Ident;
use crate::export::ZeResult;
use crate::sys::*;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use windows_sys::Win32::Foundation::{
    CloseHandle, DuplicateHandle, GetHandleInformation, DUPLICATE_SAME_ACCESS, HANDLE, INVALID_HANDLE_VALUE,
};
use windows_sys::Win32::System::Memory::{
    CreateFileMappingW, MapViewOfFileEx, UnmapViewOfFile, VirtualAlloc, VirtualFree, VirtualQuery, FILE_MAP_ALL_ACCESS,
    MEMORY_BASIC_INFORMATION, MEMORY_MAPPED_VIEW_ADDRESS, MEM_COMMIT, MEM_RELEASE, MEM_RESERVE, PAGE_EXECUTE_READWRITE,
    PAGE_EXECUTE_WRITECOPY, PAGE_GUARD, PAGE_NOACCESS, PAGE_READWRITE, PAGE_WRITECOPY,
};
use windows_sys::Win32::System::SystemInformation::{GlobalMemoryStatusEx, MEMORYSTATUSEX};
use windows_sys::Win32::System::Threading::{GetCurrentProcess, GetCurrentThreadId};

/// A handle to shareable memory: an NT handle.
pub type Raw = HANDLE;

/// The name of the handle kind, for messages.
pub const HANDLE_KIND: &str = "NT handle";

const PAGE: usize = 4096;
/// Windows maps views on this boundary.
const GRANULARITY: usize = 64 << 10;
/// The first word of a section's identity page.
const MAGIC: u64 = 0x766c_305f_7365_6374; // "vl0_sect"
static NEXT_SERIAL: AtomicU64 = AtomicU64::new(1);

/// Total system RAM in bytes (0 if unknown).
pub fn total_ram() -> u64 {
    // SAFETY: plain-old-data; dwLength is set as the call requires.
    let mut m: MEMORYSTATUSEX = unsafe { std::mem::zeroed() };
    m.dwLength = std::mem::size_of::<MEMORYSTATUSEX>() as u32;
    // SAFETY: m is a valid out-parameter.
    if unsafe { GlobalMemoryStatusEx(&mut m) } == 0 {
        return 0;
    }
    m.ullTotalPhys
}

/// The performance counter (what Windows programs time with) in nanoseconds.
pub fn monotonic_ns() -> u64 {
    use windows_sys::Win32::System::Performance::{QueryPerformanceCounter, QueryPerformanceFrequency};
    let (mut count, mut freq) = (0i64, 0i64);
    // SAFETY: valid out-parameters; both calls always succeed on Windows XP and later.
    unsafe {
        QueryPerformanceCounter(&mut count);
        QueryPerformanceFrequency(&mut freq);
    }
    (count as u128 * 1_000_000_000 / freq.max(1) as u128) as u64
}

/// The calling thread's id, for trace lines.
pub fn thread_id() -> u64 {
    // SAFETY: no preconditions.
    unsafe { GetCurrentThreadId() as u64 }
}

fn view(h: Raw, len: usize, at: *const c_void) -> Option<*mut c_void> {
    // SAFETY: maps a view of a section handle (MapViewOfFile checks the handle itself); `at` is null
    // or an address this module just released.
    let v: MEMORY_MAPPED_VIEW_ADDRESS = unsafe { MapViewOfFileEx(h, FILE_MAP_ALL_ACCESS, 0, 0, len, at) };
    (!v.Value.is_null()).then_some(v.Value)
}

/// A new shareable buffer of `len` bytes (a page multiple): the handle the creator owns, and the
/// buffer's identity.
pub fn create_shared(len: usize) -> ZeResult<(Raw, Ident)> {
    let total = (len + PAGE) as u64;
    // SAFETY: a new unnamed section backed by the paging file; no existing object is touched.
    let h = unsafe {
        CreateFileMappingW(
            INVALID_HANDLE_VALUE,
            std::ptr::null(),
            PAGE_READWRITE,
            (total >> 32) as u32,
            total as u32,
            std::ptr::null(),
        )
    };
    if h.is_null() {
        return Err(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY);
    }
    let ident = (MAGIC, NEXT_SERIAL.fetch_add(1, Ordering::Relaxed));
    let Some(v) = view(h, len + PAGE, std::ptr::null()) else {
        close(h);
        return Err(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
    };
    // SAFETY: the view is len + PAGE bytes, writable, ours; the identity page is its last page.
    unsafe {
        let id = v.cast::<u8>().add(len).cast::<u64>();
        id.write(ident.0);
        id.add(1).write(ident.1);
        UnmapViewOfFile(MEMORY_MAPPED_VIEW_ADDRESS { Value: v });
    }
    Ok((h, ident))
}

/// The identity and byte size (less the identity page) of the section `h` names, if it is an open
/// handle of a section this module made.
pub fn stat(h: Raw) -> Option<(Ident, u64)> {
    let v = view(h, 0, std::ptr::null())?;
    // SAFETY: plain-old-data out-parameter.
    let mut mbi: MEMORY_BASIC_INFORMATION = unsafe { std::mem::zeroed() };
    // SAFETY: v is our fresh view; mbi is a valid out-parameter.
    let ok = unsafe { VirtualQuery(v, &mut mbi, std::mem::size_of::<MEMORY_BASIC_INFORMATION>()) } != 0;
    let size = mbi.RegionSize;
    let ident = (ok && size >= PAGE).then(|| {
        // SAFETY: the last page of the whole-section view we just mapped.
        unsafe {
            let id = v.cast::<u8>().add(size - PAGE).cast::<u64>();
            (id.read(), id.add(1).read())
        }
    });
    // SAFETY: our own view, unmapped once.
    unsafe { UnmapViewOfFile(MEMORY_MAPPED_VIEW_ADDRESS { Value: v }) };
    ident.filter(|i| i.0 == MAGIC).map(|i| (i, (size - PAGE) as u64))
}

/// No section is shareable memory of a driver but the ones this platform made.
pub fn is_foreign_shareable(_h: Raw, _ident: Ident) -> bool {
    false
}

/// Closes a handle this platform owns.
pub fn close(h: Raw) {
    // SAFETY: the caller owns the handle and gives it up.
    unsafe { CloseHandle(h) };
}

/// Closes the driver's own handle `h` of buffer `ident` at free time; `false` (and nothing closed)
/// when the value no longer names that buffer: someone else closed the driver's handle.
pub fn close_own(h: Raw, ident: Ident) -> bool {
    let mut flags = 0u32;
    // SAFETY: only reads the handle table.
    let open = unsafe { GetHandleInformation(h, &mut flags) } != 0;
    if open && stat(h).map(|(i, _)| i) == Some(ident) {
        close(h);
        true
    } else {
        false
    }
}

/// A second handle of the same section, owned by the caller.
pub fn duplicate(h: Raw) -> Option<Raw> {
    let mut out: HANDLE = std::ptr::null_mut();
    // SAFETY: duplicates within this process; `out` is a valid out-parameter.
    let ok = unsafe {
        let me = GetCurrentProcess();
        DuplicateHandle(me, h, me, &mut out, 0, 0, DUPLICATE_SAME_ACCESS)
    } != 0;
    ok.then_some(out)
}

/// Maps `len` bytes of `h` shared and read-write at an address aligned to `align` (views start on
/// 64 KiB; a larger alignment reserves a range, releases it and maps at its aligned start, again
/// if another thread took it meanwhile).
pub fn map_shared(h: Raw, len: usize, align: usize) -> ZeResult<*mut c_void> {
    if align <= GRANULARITY {
        return view(h, len, std::ptr::null()).ok_or(ZE_RESULT_ERROR_INVALID_ARGUMENT);
    }
    for _ in 0..16 {
        // SAFETY: reserves fresh address space only.
        let res = unsafe { VirtualAlloc(std::ptr::null(), len + align, MEM_RESERVE, PAGE_NOACCESS) };
        if res.is_null() {
            return Err(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
        }
        let start = (res as usize).div_ceil(align) * align;
        // SAFETY: releases the reservation just made.
        unsafe { VirtualFree(res, 0, MEM_RELEASE) };
        if let Some(v) = view(h, len, start as *const c_void) {
            return Ok(v);
        }
    }
    Err(ZE_RESULT_ERROR_INVALID_ARGUMENT)
}

/// Unmaps a mapping made by [`map_shared`].
///
/// # Safety
/// `map` is such a mapping, unmapped once, with no reference into it left.
pub unsafe fn unmap(map: *mut c_void, _len: usize) {
    // SAFETY: the caller's contract.
    unsafe { UnmapViewOfFile(MEMORY_MAPPED_VIEW_ADDRESS { Value: map }) };
}

/// An import's mapping keeps no handle here to open again: `None` (the Windows NPU exports no
/// imported memory, see `memory.rs`).
pub fn reopen_mapping(_map: *mut c_void, _len: usize) -> Option<Raw> {
    None
}

/// Whether the Windows NPU driver could lock `[p, p + len)` for a user-memory import. Its source
/// is closed: **inferred** as what locking user pages needs (every page committed; writable
/// unless `read_only`; no guard pages).
pub fn pinnable(p: usize, len: usize, read_only: bool) -> bool {
    let end = p.saturating_add(len);
    let mut at = p & !(PAGE - 1);
    while at < end {
        // SAFETY: plain-old-data out-parameter.
        let mut mbi: MEMORY_BASIC_INFORMATION = unsafe { std::mem::zeroed() };
        // SAFETY: VirtualQuery accepts any address of this process.
        if unsafe { VirtualQuery(at as *const c_void, &mut mbi, std::mem::size_of::<MEMORY_BASIC_INFORMATION>()) } == 0
        {
            return false;
        }
        let writable = matches!(
            mbi.Protect & 0xff,
            PAGE_READWRITE | PAGE_WRITECOPY | PAGE_EXECUTE_READWRITE | PAGE_EXECUTE_WRITECOPY
        );
        if mbi.State != MEM_COMMIT || mbi.Protect & (PAGE_GUARD | PAGE_NOACCESS) != 0 || (!read_only && !writable) {
            return false;
        }
        at = mbi.BaseAddress as usize + mbi.RegionSize;
    }
    true
}
