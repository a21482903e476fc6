//! The child-process harness of the SYCL tests: DPC++ picks its Level Zero adapter once per process
//! (`SYCL_UR_USE_LEVEL_ZERO_V2`, read before SYCL initialises), so a parent test re-executes its own
//! test binary for one inner test and checks that the child passed and really ran.

use std::process::{Command, ExitStatus};

/// Runs the test `inner::<name>` of this test binary in a child process and asserts that it exited
/// successfully and printed `marker` (inner tests print it when they finished, and return at once
/// outside a child run). `configure` sets the child's environment (its child marker variable and
/// the adapter); `UR_LOADER_USE_LEVEL_ZERO_V2` is always removed. `label` names the run in messages.
pub fn run_child(name: &str, label: &str, marker: &str, configure: impl FnOnce(&mut Command)) {
    let test = format!("inner::{name}");
    let exe = std::env::current_exe().expect("current_exe");
    let mut cmd = Command::new(exe);
    cmd.args(["--exact", &test, "--nocapture", "--test-threads=1"]);
    configure(&mut cmd);
    cmd.env_remove("UR_LOADER_USE_LEVEL_ZERO_V2");
    let out = cmd.output().expect("spawn the test binary");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains(marker),
        "child `{test}` ({label}) failed: {}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}",
        describe(&out.status)
    );
    eprintln!("child `{test}` ({label}) passed");
}

/// An exit status in words: the exit code, or the signal that killed the child (a crash).
pub fn describe(status: &ExitStatus) -> String {
    #[cfg(unix)]
    let signal = std::os::unix::process::ExitStatusExt::signal(status);
    // Windows reports a crash as an exception code in the exit code.
    #[cfg(windows)]
    let signal: Option<i32> = None;
    match (status.code(), signal) {
        (Some(c), _) if cfg!(windows) => format!("exit code {c:#x}"),
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(s)) => format!("killed by signal {s} (a crash)"),
        _ => "unknown status".into(),
    }
}
