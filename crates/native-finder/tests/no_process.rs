//! The searches start no process at run time (OpenVINO's loader in npu-sycl-bridge calls
//! `find_openvino` in every process that uses it): `python3` is asked by the build script only.
//!
//! Checked two ways, in a process of its own (one test in this binary, so nothing else runs):
//! - `PATH` holds only a fake `python3` that records each call and answers with packages that
//!   exist (so a finder that asked it would find them);
//! - `getrusage(RUSAGE_CHILDREN)`: any child process that ran and was waited for adds its page
//!   faults there (an `exec`, or even a bare `fork`, faults pages in).
// A Unix test (fake `python3` scripts, `getrusage`); the rule holds on Windows by the same code.
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

fn child_page_faults() -> i64 {
    // SAFETY: an all-zero rusage is valid, and getrusage fills it in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid out-pointer.
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) }, 0);
    usage.ru_minflt + usage.ru_majflt
}

fn touch(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, b"").unwrap();
}

#[test]
fn the_searches_start_no_process_and_never_ask_python3() {
    let dir = std::env::temp_dir().join(format!("native-finder-no-process-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let calls = dir.join("python3-calls");
    // What a python3 that was asked would report: an openvino package and an intel-sycl-rt prefix.
    let pkg = dir.join("site-packages/openvino");
    touch(&pkg.join("libs/libopenvino_c.so.9999"));
    let prefix = dir.join("sycl-prefix");
    touch(&prefix.join("include/sycl/sycl.hpp"));
    touch(&prefix.join("lib/libsycl.so.99"));
    let bin = dir.join("bin");
    let python3 = bin.join("python3");
    touch(&python3);
    std::fs::write(
        &python3,
        format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\ncase \"$*\" in *intel-sycl-rt*) echo '{}' ;; *) echo '{}' ;; esac\n",
            calls.display(),
            prefix.display(),
            pkg.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&python3, std::fs::Permissions::from_mode(0o755)).unwrap();

    // The fake works: asked the way the build script asks, it records the call and answers.
    let out = Command::new("python3").args(["-c", "import openvino"]).env("PATH", &bin).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), pkg.display().to_string());
    assert!(calls.is_file(), "the fake python3 records its calls");
    std::fs::remove_file(&calls).unwrap();

    // Only the fake on PATH; no variable that names an installation; an empty project home.
    std::env::set_var("PATH", &bin);
    for var in ["OPENVINO_INSTALL_DIR", "INTEL_OPENVINO_DIR", "OpenVINO_DIR", "SYCL_ROOT", "CMPLR_ROOT", "ONEAPI_ROOT"]
    {
        std::env::remove_var(var);
    }
    std::env::set_var("NPU_SYCL_BRIDGE_HOME", dir.join("home"));

    let faults = child_page_faults();
    let openvino = native_finder::find_openvino();
    let sycl = native_finder::find_sycl();
    let icpx = native_finder::icpx();
    let after = child_page_faults();

    assert!(
        !calls.exists(),
        "the run-time search ran python3: {}",
        std::fs::read_to_string(&calls).unwrap_or_default()
    );
    assert_eq!(after, faults, "the run-time search ran a child process (RUSAGE_CHILDREN grew)");
    // Nothing the fake would have answered was used.
    if let Ok(f) = &openvino {
        assert!(!f.library.starts_with(&dir), "{f}");
    }
    if let Ok(f) = &sycl {
        assert!(!f.library.starts_with(&dir), "{f}");
    }
    assert_eq!(icpx, None, "no icpx in the fake PATH");
    std::fs::remove_dir_all(&dir).unwrap();
}
