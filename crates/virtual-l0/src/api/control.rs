//! The virtual platform's control ABI (DEVELOPERS.md): counters and fault injection.
use std::ffi::{c_char, c_int, CStr};

/// `int vl0_counter(const char* name, uint64_t* value)`: 0, or -1 for an unknown name / NULL.
#[no_mangle]
pub unsafe extern "C" fn vl0_counter(name: *const c_char, value: *mut u64) -> c_int {
    std::panic::catch_unwind(|| {
        if name.is_null() || value.is_null() {
            return -1;
        }
        // SAFETY: a NUL-terminated string from the caller.
        let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
        match crate::counters::get(&name) {
            Some(v) => {
                // SAFETY: valid u64 out-parameter from the caller.
                unsafe { *value = v };
                0
            }
            None => -1,
        }
    })
    .unwrap_or(-1)
}

/// `int vl0_fault_inject(const char* function, uint64_t nth, uint32_t result)`: the `nth` (1-based)
/// next call of `function` returns `result`. 0, or -1 for NULL.
#[no_mangle]
pub unsafe extern "C" fn vl0_fault_inject(function: *const c_char, nth: u64, result: u32) -> c_int {
    std::panic::catch_unwind(|| {
        if function.is_null() {
            return -1;
        }
        // SAFETY: a NUL-terminated string from the caller.
        let f = unsafe { CStr::from_ptr(function) }.to_string_lossy();
        crate::faults::inject(&f, nth, result);
        0
    })
    .unwrap_or(-1)
}

/// `void vl0_fault_clear(void)`.
#[no_mangle]
pub extern "C" fn vl0_fault_clear() {
    let _ = std::panic::catch_unwind(crate::faults::clear);
}
