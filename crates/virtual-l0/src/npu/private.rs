//! The NPU driver's private `zex*` entry points, reached only through
//! `zeDriverGetExtensionFunctionAddress` (linux-npu-driver 1.32.1 `api/ze_driver.cpp`
//! `CHECK_PRIVATE_FUNCTION`, `api/prv/zex_driver.cpp`).

use std::ffi::{c_char, c_void, CStr};

use crate::export::guard;
use crate::objects::{context_from, same_driver, DriverKind};
use crate::sys::*;

use super::cache;

/// The function behind a private name, if it is one.
pub fn function_address(name: &CStr) -> Option<*mut c_void> {
    let f: *mut c_void = match name.to_bytes() {
        b"zexDiskCacheSetSize" => zexDiskCacheSetSize as unsafe extern "C" fn(usize) -> ze_result_t as *mut c_void,
        b"zexDiskCacheGetSize" => zexDiskCacheGetSize as unsafe extern "C" fn(*mut usize) -> ze_result_t as *mut c_void,
        b"zexDiskCacheGetDirectory" => {
            zexDiskCacheGetDirectory as unsafe extern "C" fn(*mut c_char, *mut usize) -> ze_result_t as *mut c_void
        }
        b"zexContextSetIdlePruningTimeout" => {
            zexContextSetIdlePruningTimeout as unsafe extern "C" fn(ze_context_handle_t, u64) -> ze_result_t
                as *mut c_void
        }
        _ => return None,
    };
    Some(f)
}

unsafe extern "C" fn zexDiskCacheSetSize(size: usize) -> ze_result_t {
    guard("zexDiskCacheSetSize", || {
        cache::set_max_size(size);
        Ok(())
    })
}

unsafe extern "C" fn zexDiskCacheGetSize(size: *mut usize) -> ze_result_t {
    guard("zexDiskCacheGetSize", || {
        if size.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        // SAFETY: a non-NULL out-parameter from the caller.
        unsafe { *size = cache::max_size() };
        Ok(())
    })
}

/// Copies the directory (truncated to `*len - 1` bytes), NUL-terminated; `*len` becomes the bytes
/// copied without the NUL. An off cache is the empty string.
unsafe extern "C" fn zexDiskCacheGetDirectory(path: *mut c_char, len: *mut usize) -> ze_result_t {
    guard("zexDiskCacheGetDirectory", || {
        if path.is_null() || len.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        let dir = cache::dir().map(|d| d.to_string_lossy().into_owned()).unwrap_or_default();
        // SAFETY: the caller provides `*len` writable bytes at `path` (at least one, for the NUL).
        unsafe {
            let room = (*len).saturating_sub(1);
            let n = dir.len().min(room);
            std::ptr::copy_nonoverlapping(dir.as_ptr(), path.cast::<u8>(), n);
            *path.add(n) = 0;
            *len = n;
        }
        Ok(())
    })
}

/// The idle time after which the context's cached buffers are pruned (see [`super::idle`]).
unsafe extern "C" fn zexContextSetIdlePruningTimeout(hContext: ze_context_handle_t, timeout_ms: u64) -> ze_result_t {
    guard("zexContextSetIdlePruningTimeout", || {
        if hContext.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
        }
        // SAFETY: handle validation.
        same_driver(DriverKind::Npu, unsafe { context_from(hContext) }?)?;
        super::idle::set_timeout(hContext as usize, timeout_ms);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_functions_answer_as_the_driver() {
        assert!(function_address(c"zexDiskCacheGetSize").is_some());
        assert!(function_address(c"zexNoSuchThing").is_none());
        // SAFETY: valid out-parameters.
        unsafe {
            assert_eq!(zexDiskCacheGetSize(std::ptr::null_mut()), ZE_RESULT_ERROR_INVALID_NULL_POINTER);
            let mut n = 0usize;
            assert_eq!(zexDiskCacheGetSize(&mut n), ZE_RESULT_SUCCESS);
            assert_eq!(n, cache::max_size());
            let mut buf = [0x55 as c_char; 4];
            let mut len = buf.len();
            assert_eq!(zexDiskCacheGetDirectory(buf.as_mut_ptr(), &mut len), ZE_RESULT_SUCCESS);
            assert!(len <= 3, "truncated to the room left for the NUL");
            assert_eq!(buf[len], 0);
            assert_eq!(zexContextSetIdlePruningTimeout(std::ptr::null_mut(), 1), ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
        }
    }
}
