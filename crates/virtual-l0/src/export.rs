//! The wrapper every exported entry point goes through, and the raw-pointer helpers.
//!
//! [`ze_api!`] declares a `#[no_mangle] unsafe extern "C" fn … -> ze_result_t` whose body runs
//! inside [`guard`]: an injected fault (see [`crate::faults`]) answers first, then the body runs
//! under `catch_unwind` (a panic returns `ZE_RESULT_ERROR_UNKNOWN`), and with `VL0_TRACE=1` the call
//! and its result are logged to stderr. [`ze_api_ptr!`] is the same for functions that return a
//! pointer or handle (a panic or an injected fault returns NULL).
use crate::sys::*;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

/// What an API body may return.
pub trait IntoZe {
    /// The `ze_result_t` to hand back.
    fn into_ze(self) -> ze_result_t;
}
impl IntoZe for ze_result_t {
    fn into_ze(self) -> ze_result_t {
        self
    }
}
impl IntoZe for Result<(), ze_result_t> {
    fn into_ze(self) -> ze_result_t {
        match self {
            Ok(()) => ZE_RESULT_SUCCESS,
            Err(e) => e,
        }
    }
}
impl IntoZe for Result<ze_result_t, ze_result_t> {
    fn into_ze(self) -> ze_result_t {
        match self {
            Ok(r) | Err(r) => r,
        }
    }
}

/// Shorthand for API bodies.
pub type ZeResult<T = ()> = Result<T, ze_result_t>;

/// Whether `VL0_TRACE` is set to something other than `0`/empty.
pub fn trace_enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("VL0_TRACE").map(|v| !v.is_empty() && v != "0").unwrap_or(false))
}

/// Writes one trace line (no-op unless `VL0_TRACE=1`).
pub fn trace(msg: std::fmt::Arguments<'_>) {
    if trace_enabled() {
        use std::io::Write;
        let tid = crate::os::thread_id();
        let _ = writeln!(std::io::stderr().lock(), "[vl0 {tid}] {msg}");
    }
}

/// Runs one exported call: fault injection, `catch_unwind`, tracing.
pub fn guard<R: IntoZe>(name: &'static str, f: impl FnOnce() -> R) -> ze_result_t {
    guard_args(name, String::new, f)
}

/// [`guard`] whose trace line also shows the arguments (`args` runs only when tracing).
pub fn guard_args<R: IntoZe>(name: &'static str, args: impl FnOnce() -> String, f: impl FnOnce() -> R) -> ze_result_t {
    let args = if trace_enabled() { args() } else { String::new() };
    if let Some(r) = crate::faults::take(name) {
        trace(format_args!("{name}({args}) -> {r:#x} (injected fault)"));
        return r;
    }
    let r = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r.into_ze(),
        Err(_) => {
            trace(format_args!("{name}: panicked"));
            ZE_RESULT_ERROR_UNKNOWN
        }
    };
    trace(format_args!("{name}({args}) -> {r:#x}"));
    r
}

/// [`guard`] for exports that return a pointer (NULL on panic or injected fault).
pub fn guard_ptr<T>(name: &'static str, f: impl FnOnce() -> *mut T) -> *mut T {
    if crate::faults::take(name).is_some() {
        trace(format_args!("{name} -> NULL (injected fault)"));
        return std::ptr::null_mut();
    }
    let r = catch_unwind(AssertUnwindSafe(f)).unwrap_or(std::ptr::null_mut());
    trace(format_args!("{name} -> {r:p}"));
    r
}

/// Declares exported `ze_result_t` entry points whose bodies run inside [`guard`].
#[macro_export]
macro_rules! ze_api {
    ($( $(#[$m:meta])* fn $name:ident ( $($a:ident : $t:ty),* $(,)? ) $body:block )*) => {$(
        $(#[$m])*
        #[no_mangle]
        pub unsafe extern "C" fn $name($($a: $t),*) -> $crate::sys::ze_result_t {
            $crate::export::guard_args(
                stringify!($name),
                || {
                    let v: Vec<String> = vec![$(format!(concat!(stringify!($a), "={:?}"), $a)),*];
                    v.join(", ")
                },
                move || $body,
            )
        }
    )*};
}

/// Declares exported entry points returning a pointer, run inside [`guard_ptr`].
#[macro_export]
macro_rules! ze_api_ptr {
    ($( $(#[$m:meta])* fn $name:ident ( $($a:ident : $t:ty),* $(,)? ) -> $ret:ty $body:block )*) => {$(
        $(#[$m])*
        #[no_mangle]
        pub unsafe extern "C" fn $name($($a: $t),*) -> $ret {
            $crate::export::guard_ptr(stringify!($name), move || $body)
        }
    )*};
}

/// Exported entry points that only answer `ZE_RESULT_ERROR_UNSUPPORTED_FEATURE`. They take no
/// parameters: under the x86-64 SysV ABI the caller owns its arguments, so ignoring them is sound.
#[macro_export]
macro_rules! ze_unsupported {
    ($($name:ident)*) => {$(
        #[no_mangle]
        pub extern "C" fn $name() -> $crate::sys::ze_result_t {
            $crate::export::guard(stringify!($name), || $crate::sys::ZE_RESULT_ERROR_UNSUPPORTED_FEATURE)
        }
    )*};
}

/// `&mut *p`, or `ZE_RESULT_ERROR_INVALID_NULL_POINTER` for NULL.
///
/// # Safety
/// `p` is NULL or valid for writes of a `T` for `'a`, with no other live reference.
pub unsafe fn out<'a, T>(p: *mut T) -> ZeResult<&'a mut T> {
    // SAFETY: the caller guarantees validity when non-null.
    unsafe { p.as_mut() }.ok_or(ZE_RESULT_ERROR_INVALID_NULL_POINTER)
}

/// `&*p`, or `ZE_RESULT_ERROR_INVALID_NULL_POINTER` for NULL.
///
/// # Safety
/// `p` is NULL or valid for reads of a `T` for `'a`.
pub unsafe fn input<'a, T>(p: *const T) -> ZeResult<&'a T> {
    // SAFETY: the caller guarantees validity when non-null.
    unsafe { p.as_ref() }.ok_or(ZE_RESULT_ERROR_INVALID_NULL_POINTER)
}

/// The common header of every Level Zero descriptor and property structure.
#[repr(C)]
struct Base {
    stype: u32,
    p_next: *mut c_void,
}

/// One entry of a `pNext` chain: its structure type and address.
#[derive(Clone, Copy, Debug)]
pub struct ChainEntry {
    /// `stype` of the entry.
    pub stype: u32,
    /// The entry itself.
    pub ptr: *mut c_void,
}

/// The entries of the chain that starts at `first` (the `pNext` of the top-level structure).
/// Unknown entries are the caller's to skip. At most 64 entries are visited (cycle guard).
///
/// # Safety
/// Every pointer in the chain is NULL or points to a structure starting with `{stype, pNext}`.
pub unsafe fn chain(first: *const c_void) -> Vec<ChainEntry> {
    let mut v = Vec::new();
    let mut p = first as *mut c_void;
    while !p.is_null() && v.len() < 64 {
        // SAFETY: the caller guarantees each non-null entry starts with a Base header.
        let b = unsafe { &*(p as *const Base) };
        v.push(ChainEntry { stype: b.stype, ptr: p });
        p = b.p_next;
    }
    v
}

/// The `pNext` of a structure that starts with `{stype, pNext}`.
///
/// # Safety
/// `s` points to such a structure.
pub unsafe fn next_of(s: *const c_void) -> *const c_void {
    // SAFETY: per the contract.
    unsafe { (*(s as *const Base)).p_next as *const c_void }
}

/// The first chain entry with `stype`, cast to `T`.
///
/// # Safety
/// As for [`chain`], and an entry with `stype` really is a `T`.
pub unsafe fn find<T>(first: *const c_void, stype: u32) -> Option<*mut T> {
    // SAFETY: per the contract.
    unsafe { chain(first) }.into_iter().find(|e| e.stype == stype).map(|e| e.ptr as *mut T)
}

/// The standard two-call enumeration: `*count == 0` or `out == NULL` asks for the count; otherwise
/// up to `*count` entries are written with `fill` and `*count` becomes the number written.
///
/// # Safety
/// `count` is valid for reads and writes; `out` is NULL or valid for `*count` elements.
pub unsafe fn enumerate<T>(count: *mut u32, out: *mut T, n: usize, mut fill: impl FnMut(usize, &mut T)) -> ZeResult {
    // SAFETY: per the contract.
    let count = unsafe { self::out(count) }?;
    if *count == 0 || out.is_null() {
        *count = n as u32;
        return Ok(());
    }
    let k = (*count as usize).min(n);
    for i in 0..k {
        // SAFETY: i < *count and the caller provided *count elements.
        fill(i, unsafe { &mut *out.add(i) });
    }
    *count = k as u32;
    Ok(())
}

/// Copies `s` into a fixed C string field, truncating and NUL-terminating.
pub fn set_cstr(dst: &mut [std::ffi::c_char], s: &str) {
    let n = s.len().min(dst.len().saturating_sub(1));
    for (d, b) in dst.iter_mut().zip(s.as_bytes()[..n].iter()) {
        *d = *b as std::ffi::c_char;
    }
    if n < dst.len() {
        dst[n] = 0;
    }
}

/// Monotonic nanoseconds of the host clock the drivers read (`CLOCK_MONOTONIC` on Linux, the
/// performance counter on Windows), used for timestamps.
pub fn now_ns() -> u64 {
    crate::os::monotonic_ns()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panics_become_unknown_and_faults_fire_first() {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        assert_eq!(guard("unitPanics", || -> ze_result_t { panic!("boom") }), ZE_RESULT_ERROR_UNKNOWN);
        std::panic::set_hook(prev);
        assert_eq!(guard("unitOk", || Ok::<(), ze_result_t>(())), ZE_RESULT_SUCCESS);
        crate::faults::inject("unitFaulty", 1, ZE_RESULT_ERROR_DEVICE_LOST);
        let mut ran = false;
        assert_eq!(
            guard("unitFaulty", || {
                ran = true;
                ZE_RESULT_SUCCESS
            }),
            ZE_RESULT_ERROR_DEVICE_LOST
        );
        assert!(!ran, "an injected fault answers before the body runs");
        assert!(guard_ptr::<u8>("unitPtr", || panic!("boom")).is_null());
    }

    #[test]
    fn chains_and_enumeration() {
        #[repr(C)]
        struct S {
            stype: u32,
            p_next: *mut c_void,
        }
        let mut c = S { stype: 3, p_next: std::ptr::null_mut() };
        let b = S { stype: 2, p_next: &mut c as *mut S as *mut c_void };
        // SAFETY: a valid two-entry chain.
        let v = unsafe { chain(&b as *const S as *const c_void) };
        assert_eq!(v.iter().map(|e| e.stype).collect::<Vec<_>>(), [2, 3]);
        let mut n = 0u32;
        let mut out = [0u32; 3];
        // SAFETY: valid count and array.
        unsafe {
            enumerate(&mut n, out.as_mut_ptr(), 2, |i, o| *o = i as u32 + 10).unwrap();
            assert_eq!(n, 2);
            n = 3;
            enumerate(&mut n, out.as_mut_ptr(), 2, |i, o| *o = i as u32 + 10).unwrap();
            assert_eq!((n, out), (2, [10, 11, 0]));
        }
        let mut name = [1 as std::ffi::c_char; 4];
        set_cstr(&mut name, "abcdef");
        assert_eq!(name, [b'a' as std::ffi::c_char, b'b' as _, b'c' as _, 0]);
    }
}
