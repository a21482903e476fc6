//! Misuse that the types of the SYCL layer reject at compile time (trybuild).
#![cfg(feature = "sycl")]

#[test]
fn sycl_compile_fail() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/compile_fail_sycl/*.rs");
}
