//! The virtual platform comes with the build: cargo built virtual-l0's cdylib for this test binary
//! (testkit depends on virtual-l0), [`activate`] loads exactly that file under its SONAME, and the
//! rlib cargo builds alongside (with the same `#[no_mangle]` ze* exports) is linked into nothing.

use std::process::Command;

use testkit::virtual_platform::{self, activate, built_path};

#[test]
fn activate_loads_the_platform_cargo_built_with_this_test() {
    let built = built_path();
    assert!(built.is_file(), "cargo built {} with this test", built.display());
    if std::env::var_os(virtual_platform::PATH_ENV).is_some() {
        eprintln!("{} is set: not checking which file activate() loads", virtual_platform::PATH_ENV);
        return;
    }
    let vp = activate().expect("activate the virtual platform");
    assert_eq!(vp.path(), built.canonicalize().unwrap(), "activate() loads the file cargo built");
    // Under its SONAME: what the NPU plugin and the SYCL adapters open.
    let soname = std::ffi::CString::new(virtual_platform::LOADER_NAME).unwrap();
    // SAFETY: RTLD_NOLOAD only returns the handle of an already loaded object.
    let h = unsafe { libc::dlopen(soname.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
    assert!(!h.is_null(), "{} answers to {}", built.display(), virtual_platform::LOADER_NAME);
    assert!(vp.try_counter("npu.inferences").is_ok());
}

#[test]
fn no_virtual_platform_symbol_is_linked_into_the_test_binary() {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new("nm").arg("--defined-only").arg(&exe).output().expect("run nm (binutils)");
    assert!(out.status.success(), "nm {}: {}", exe.display(), String::from_utf8_lossy(&out.stderr));
    let symbols = String::from_utf8_lossy(&out.stdout);
    assert!(symbols.lines().count() > 1000, "nm lists this binary's symbols:\n{symbols}");
    let linked: Vec<&str> = symbols
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .filter(|s| ["zeInit", "zeDriverGet", "vl0_counter", "vl0_fault_inject"].contains(s))
        .collect();
    assert!(linked.is_empty(), "the virtual platform's exports are linked into {}: {linked:?}", exe.display());
    // Nor any other item of the virtual platform's crate (`ze_loader`, in Rust's symbol mangling).
    assert!(!symbols.contains("9ze_loader"), "an item of crate ze_loader is linked into {}", exe.display());
}
