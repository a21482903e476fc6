//! The doctor built for Windows without SYCL (`--no-default-features`), run under Wine on the
//! virtual platform with the real Windows NPU plugin: its report of the NPU memory paths. Run by
//! `cargo xtask test-windows`; on other OSes this file has no tests.
#![cfg(windows)]

use std::process::Command;

use serde_json::Value;

const DOCTOR: &str = env!("CARGO_BIN_EXE_npu-sycl-doctor");

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(DOCTOR).args(args).output().expect("spawn npu-sycl-doctor");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Whether the profile's NPU imports user memory (NPU 40xx+, the virtual platform's default `lnl`).
fn imports_user_memory() -> bool {
    matches!(std::env::var("VL0_PROFILE").as_deref(), Err(_) | Ok("lnl" | "ptl"))
}

#[test]
fn the_windows_report_tries_the_nt_handle_path_and_says_sycl_is_not_built_in() {
    let (code, stdout, stderr) = run(&["--virtual", "--json"]);
    let context = format!("exit {code:?}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}");
    let v: Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("--json is not one JSON object: {e}\n{context}"));
    assert_eq!(code, Some(0), "an NPU path works, so the exit status is 0\n{context}");
    assert_eq!(v["platform"]["virtual"], Value::Bool(true), "{context}");
    assert_eq!(v["npu"]["nt_handle_import"], Value::Bool(true), "{context}");
    assert_eq!(v["npu"]["dma_buf_import"], Value::Bool(false), "{context}");
    assert!(v["sycl_platforms"]["error"].as_str().is_some_and(|e| e.contains("without feature `sycl`")), "{context}");
    assert!(v.get("strategies").is_none(), "no strategy rows without SYCL\n{context}");
    let paths = v["npu_paths"].as_array().unwrap_or_else(|| panic!("npu_paths\n{context}"));
    let row =
        |name: &str| paths.iter().find(|p| p["path"] == name).unwrap_or_else(|| panic!("no {name} row\n{context}"));
    for name in ["NT handle", "L0 host tensor"] {
        assert_eq!(row(name)["status"], "works", "{name}\n{context}");
        assert_eq!(row(name)["in_place"], Value::Bool(true), "{name}\n{context}");
    }
    assert!(row("NT handle")["detail"].as_str().unwrap().contains("npu.graph_args.nt_handle +2"), "{context}");
    let cpu_va = if imports_user_memory() { "works" } else { "unsupported" };
    assert_eq!(row("CPU_VA")["status"], cpu_va, "{context}");
    let working: Vec<&str> = v["working"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(working.iter().any(|w| w.starts_with("NT handle")), "{working:?}");
}

#[test]
fn the_windows_table_has_the_npu_paths_and_the_result() {
    let (code, stdout, stderr) = run(&["--virtual"]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("NPU MEMORY PATHS without SYCL"), "{stdout}");
    assert!(stdout.contains("NT-handle import yes"), "{stdout}");
    let works = if imports_user_memory() { 3 } else { 2 };
    assert!(stdout.contains(&format!("RESULT: {works} of 3 work: NT handle")), "{stdout}");
}
