//! The examples run as a user runs them, on the virtual platform (`--virtual`), and say what they
//! claim: `examples/memory_pool.rs` (the forum's pool question) and `examples/pipeline` (frames through
//! SYCL and the NPU, overlapped, with no copy between them).
#![cfg(feature = "sycl")]

use std::path::PathBuf;
use std::process::Command;

/// `target/<profile>/examples/<name>`, built by `cargo test --features sycl`.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe"); // target/<profile>/deps/examples-<hash>
    let p = exe.parent().and_then(|d| d.parent()).expect("target/<profile>").join("examples").join(name);
    assert!(p.is_file(), "{} does not exist: `cargo test --features sycl` builds the examples", p.display());
    p
}

/// Runs the example `name` on the virtual platform, asserts it succeeded, returns its stdout.
fn run_virtual(name: &str) -> String {
    let out = Command::new(example(name)).arg("--virtual").output().unwrap_or_else(|e| panic!("spawn {name}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{name} failed ({:?}):\n{stdout}\n{stderr}", out.status);
    stdout
}

#[test]
fn memory_pool_imports_each_buffer_once_and_copies_nothing() {
    let stdout = run_virtual("memory_pool");
    assert!(stdout.contains("PLATFORM: VIRTUAL"), "says where it runs:\n{stdout}");
    assert!(stdout.contains("allocated 8 buffers"), "{stdout}");
    assert!(stdout.contains("1000 inferences on two requests; every output equals the CPU plugin's"), "{stdout}");
    assert!(stdout.contains("imports after warm-up: 0"), "{stdout}");
    assert!(stdout.contains("copies during the inferences: gpu.bytes_copied +0, npu.bytes_copied +0"), "{stdout}");
    // The statistics line: never more imports than buffers, no allocation by the pool.
    let end = stdout.lines().find(|l| l.starts_with("pool at the end:")).expect("the pool's statistics");
    let imports: u64 = end.split(", ").find_map(|f| f.strip_suffix(" imports")?.parse().ok()).expect("imports");
    assert!((1..=8).contains(&imports), "{end}");
    assert!(end.contains(" 0 allocations"), "{end}");
}

#[test]
fn pipeline_overlaps_sycl_and_npu_work_with_no_copy() {
    let stdout = run_virtual("pipeline");
    assert!(stdout.contains("strategy: dma-buf (zero-copy: yes)"), "{stdout}");
    assert!(stdout.contains("24 frames of 3145728 bytes; every output equals the CPU plugin's"), "{stdout}");
    assert!(
        stdout.contains("SYCL wrote 23 of 24 frames while the other request's inference was in flight"),
        "{stdout}"
    );
    assert!(stdout.contains("npu.bytes_copied +0, npu.graph_args.dma_buf +48, npu.inferences +24"), "{stdout}");
}
