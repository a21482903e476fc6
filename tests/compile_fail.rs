//! Misuse that the types of the OpenVINO layer reject at compile time (trybuild).

#[test]
fn compile_fail() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/compile_fail/*.rs");
}
