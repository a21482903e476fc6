//! Linux: memfds stand for the drivers' GEM objects, fds for dma-buf handles.

use super::Ident;
use crate::export::ZeResult;
use crate::sys::*;
use std::ffi::{c_int, c_void};

/// A handle to shareable memory: a file descriptor.
pub type Raw = c_int;

/// The name of the handle kind, for messages.
pub const HANDLE_KIND: &str = "dma-buf fd";

/// Total system RAM in bytes (0 if unknown).
pub fn total_ram() -> u64 {
    // SAFETY: plain-old-data out-parameter, written by sysinfo.
    let mut si: libc::sysinfo = unsafe { std::mem::zeroed() };
    // SAFETY: si is a valid out-parameter.
    if unsafe { libc::sysinfo(&mut si) } != 0 {
        return 0;
    }
    si.totalram as u64 * si.mem_unit as u64
}

/// `CLOCK_MONOTONIC` in nanoseconds.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid out-parameter.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The calling thread's id, for trace lines.
pub fn thread_id() -> u64 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() as u64 }
}

/// A new shareable buffer of `len` bytes (a page multiple): the handle the creator owns, and the
/// buffer's identity.
pub fn create_shared(len: usize) -> ZeResult<(Raw, Ident)> {
    // SAFETY: the name is a valid C string.
    let fd = unsafe { libc::memfd_create(c"vl0-dmabuf".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
    }
    // SAFETY: our own fresh fd.
    if unsafe { libc::ftruncate(fd, len as libc::off_t) } != 0 {
        close(fd);
        return Err(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY);
    }
    Ok((fd, stat(fd).map(|(i, _)| i).unwrap_or_default()))
}

/// The identity and byte size of the buffer `h` names, if it is an open handle of one.
pub fn stat(h: Raw) -> Option<(Ident, u64)> {
    // SAFETY: plain-old-data, fully written by fstat before use.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: st is a valid out-parameter; fstat checks the fd itself.
    (unsafe { libc::fstat(h, &mut st) } == 0).then_some(((st.st_dev, st.st_ino), st.st_size as u64))
}

/// Whether `h` (of buffer `ident`) is a dma-buf this process did not export: a real one, or one
/// this platform made in another process and passed over (its memfds are named `vl0-dmabuf`), as
/// a real dma-buf crosses processes (`/proc/self/fd` link).
pub fn is_foreign_shareable(h: Raw, _ident: Ident) -> bool {
    std::fs::read_link(format!("/proc/self/fd/{h}")).is_ok_and(|t| {
        let t = t.to_string_lossy();
        t.starts_with("/dmabuf:") || t.starts_with("anon_inode:dmabuf") || t.starts_with("/memfd:vl0-dmabuf")
    })
}

/// Closes a handle this platform owns.
pub fn close(h: Raw) {
    // SAFETY: the caller owns the fd and gives it up.
    unsafe { libc::close(h) };
}

/// Closes the driver's own handle `h` of buffer `ident` at free time; `false` (and nothing closed)
/// when the number no longer names that buffer: someone else closed the driver's handle.
pub fn close_own(h: Raw, ident: Ident) -> bool {
    if stat(h).map(|(i, _)| i) == Some(ident) {
        close(h);
        true
    } else {
        false
    }
}

/// A second handle of the same buffer, owned by the caller.
pub fn duplicate(h: Raw) -> Option<Raw> {
    // SAFETY: F_DUPFD_CLOEXEC only reads the fd table.
    let d = unsafe { libc::fcntl(h, libc::F_DUPFD_CLOEXEC, 0) };
    (d >= 0).then_some(d)
}

/// Maps `len` bytes of `h` shared and read-write at an address aligned to `align` (≥ 4096).
pub fn map_shared(h: Raw, len: usize, align: usize) -> ZeResult<*mut c_void> {
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    if align <= 4096 {
        // SAFETY: a fresh mapping chosen by the kernel; fd validity is checked by mmap itself.
        let m = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED, h, 0) };
        return if m == libc::MAP_FAILED { Err(ZE_RESULT_ERROR_INVALID_ARGUMENT) } else { Ok(m) };
    }
    let rounded = len.div_ceil(4096) * 4096;
    let span = rounded + align;
    // SAFETY: reserving fresh address space.
    let res = unsafe {
        libc::mmap(std::ptr::null_mut(), span, libc::PROT_NONE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
    };
    if res == libc::MAP_FAILED {
        return Err(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
    }
    let start = (res as usize).div_ceil(align) * align;
    // SAFETY: [start, start+len) lies inside our reservation; MAP_FIXED replaces only that.
    let m = unsafe { libc::mmap(start as *mut c_void, len, prot, libc::MAP_SHARED | libc::MAP_FIXED, h, 0) };
    let head = start - res as usize;
    let tail_start = start + rounded;
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

/// Unmaps a mapping made by [`map_shared`].
///
/// # Safety
/// `[map, map + len)` is such a mapping, unmapped once, with no reference into it left.
pub unsafe fn unmap(map: *mut c_void, len: usize) {
    // SAFETY: the caller's contract.
    unsafe { libc::munmap(map, len) };
}

/// A new handle of the buffer behind our mapping `[map, map + len)`, through
/// `/proc/self/map_files` (the mapping holds the buffer, as the kernel's GEM object of an import
/// holds the dma-buf file; PRIME_HANDLE_TO_FD then gives the same buffer). Needs CAP_SYS_ADMIN
/// (root); elsewhere `None` and a line on stderr.
pub fn reopen_mapping(map: *mut c_void, len: usize) -> Option<Raw> {
    let start = map as usize;
    let path = format!("/proc/self/map_files/{start:x}-{:x}\0", start + len);
    // SAFETY: a NUL-terminated path; the fd is handed to the caller.
    let fd = unsafe { libc::open(path.as_ptr().cast(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        eprintln!(
            "virtual-l0: re-exporting an NPU import needs /proc/self/map_files (root): {}",
            std::io::Error::last_os_error()
        );
        return None;
    }
    Some(fd)
}

/// Whether the kernel could pin `[p, p + len)` long-term for the NPU (`pin_user_pages_fast` with
/// `FOLL_LONGTERM`, plus `FOLL_WRITE` unless `read_only`), judged from `/proc/self/maps`: every
/// page mapped; writable unless `read_only`; for a writable import, not a shared writable mapping
/// of a regular file (mm/gup.c `check_vma_flags` asks `writable_file_mapping_allowed` only with
/// `FOLL_WRITE`, and that refuses long-term pins of pages needing dirty tracking); not a device
/// mapping.
pub fn pinnable(p: usize, len: usize, read_only: bool) -> bool {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else { return false };
    let (start, end) = (p & !4095, (p + len).div_ceil(4096) * 4096);
    let mut covered = start;
    for line in maps.lines() {
        let mut f = line.split_whitespace();
        let (Some(range), Some(perms)) = (f.next(), f.next()) else { continue };
        let path = f.nth(3).unwrap_or("");
        let Some((a, b)) = range.split_once('-') else { continue };
        let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) else { continue };
        if b <= covered || a >= end {
            continue;
        }
        if a > covered {
            return false; // a hole: unmapped pages
        }
        let writable = perms.as_bytes().get(1) == Some(&b'w');
        let shared = perms.as_bytes().get(3) == Some(&b's');
        let shmem = path.starts_with("/memfd:") || path.starts_with("/dev/shm/") || path.starts_with("/dev/zero");
        let file = path.starts_with('/') && !shmem;
        let device = path.starts_with("/dev/") && !shmem;
        // A private writable file mapping is pinned through copy-on-write (anonymous pages): fine.
        if (!read_only && (!writable || (file && shared))) || device {
            return false;
        }
        covered = b;
        if covered >= end {
            return true;
        }
    }
    false
}

/// Lets any process of this user take fds out of this one (`prctl(PR_SET_PTRACER,
/// PR_SET_PTRACER_ANY)`), as compute-runtime does when it makes a context so that importers of its
/// IPC handles can; fails harmlessly where the kernel has no Yama (then the same-user rule applies).
pub fn allow_fd_takers() {
    // SAFETY: prctl with integer arguments only changes this process's ptrace policy.
    unsafe { libc::prctl(libc::PR_SET_PTRACER, libc::c_ulong::MAX, 0, 0, 0) };
}

/// A new fd of this process for fd `fd` of process `pid` (`pidfd_open` + `pidfd_getfd`), owned by
/// the caller; `None` when the process is gone, the number names nothing there, or ptrace rules
/// refuse it.
pub fn take_fd_of(pid: u32, fd: Raw) -> Option<Raw> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) } as Raw;
    if pidfd < 0 {
        return None;
    }
    // SAFETY: pidfd_getfd on our own pidfd returns a new fd or -1.
    let taken = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd, fd, 0) } as Raw;
    close(pidfd);
    (taken >= 0).then_some(taken)
}

/// Wakes every process and thread waiting on `word` (a shared futex: the word may live in memory
/// other processes map).
pub fn wake_all(word: &std::sync::atomic::AtomicU32) {
    // SAFETY: FUTEX_WAKE only reads the address to find its waiters.
    unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, i32::MAX, 0, 0, 0) };
}

/// Sleeps while `word` holds `value`, at most `max` (a shared futex; may return early).
pub fn wait_while(word: &std::sync::atomic::AtomicU32, value: u32, max: std::time::Duration) {
    let ts = libc::timespec { tv_sec: max.as_secs() as libc::time_t, tv_nsec: max.subsec_nanos() as libc::c_long };
    // SAFETY: the word is valid for the call; FUTEX_WAIT re-checks its value atomically.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAIT, value, &ts as *const libc::timespec, 0, 0)
    };
}
