//! `npu-sycl-doctor` and `examples/forum_port.rs`, run as the programs users run.
//!
//! Both are started as child processes (each picks its Level Zero platform and DPC++ adapter once
//! per process). `--virtual` makes the doctor's answers the same on every machine: the virtual
//! platform's GPU and NPU drivers, which the strategy tests also use. The example belongs to
//! npu-sycl-bridge, not to this crate, so the test asks cargo for it ([`forum_port`]).

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::Value;

const DOCTOR: &str = env!("CARGO_BIN_EXE_npu-sycl-doctor");

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    fn from(out: Output) -> Run {
        Run {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    fn context(&self) -> String {
        format!("exit {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}", self.code, self.stdout, self.stderr)
    }
}

fn doctor(args: &[&str]) -> Run {
    Run::from(Command::new(DOCTOR).args(args).output().expect("spawn npu-sycl-doctor"))
}

/// The doctor's table on the virtual platform (run once for all tests).
fn table() -> &'static Run {
    static RUN: OnceLock<Run> = OnceLock::new();
    RUN.get_or_init(|| doctor(&["--virtual"]))
}

/// The doctor's `--json` on the virtual platform (run once for all tests).
fn json() -> &'static (Run, Value) {
    static RUN: OnceLock<(Run, Value)> = OnceLock::new();
    RUN.get_or_init(|| {
        let run = doctor(&["--virtual", "--json"]);
        let v: Value = serde_json::from_str(&run.stdout)
            .unwrap_or_else(|e| panic!("--json is not valid JSON: {e}\n{}", run.context()));
        (run, v)
    })
}

/// The line of the table's section `section` (a heading) whose words start with `first`.
fn rows<'a>(out: &'a str, section: &str) -> Vec<&'a str> {
    out.lines().skip_while(|l| !l.starts_with(section)).skip(1).take_while(|l| !l.trim().is_empty()).collect()
}

/// The strategy table's rows as (strategy, memory, result, zero-copy), parsed by column.
/// Whether the profile's NPU imports user memory (NPU 40xx+ with the userptr ioctl).
fn user_memory_import() -> bool {
    let profile = std::env::var("VL0_PROFILE");
    !matches!(profile.as_deref(), Ok("mtl") | Ok("arl")) && std::env::var("VL0_NPU_USERPTR").as_deref() != Ok("0")
}

fn strategy_rows(out: &str) -> Vec<(String, String, String, String)> {
    let lines = rows(out, "SHARING STRATEGIES");
    let header = lines[0];
    let col = |name: &str| header.find(name).unwrap_or_else(|| panic!("column {name} in {header:?}"));
    let (memory, result, zero) = (col("memory"), col("result"), col("zero-copy"));
    lines[1..]
        .iter()
        .take_while(|l| !l.trim_start().starts_with("details:"))
        .map(|l| {
            let chars: Vec<char> = l.chars().collect();
            let cell = |a: usize, b: usize| {
                chars[a.min(chars.len())..b.min(chars.len())].iter().collect::<String>().trim().to_string()
            };
            // Column offsets are in chars; the header is ASCII, so byte offsets are char offsets.
            (cell(0, memory), cell(memory, result), cell(result, zero), cell(zero, chars.len()))
        })
        .collect()
}

#[test]
fn doctor_lists_the_virtual_gpu_and_npu_drivers_and_which_sycl_sees() {
    let run = table();
    assert_eq!(run.code, Some(0), "{}", run.context());
    let out = &run.stdout;
    assert!(out.contains("PLATFORM: VIRTUAL"), "says it is the virtual platform:\n{out}");
    let drivers = rows(out, "LEVEL ZERO DRIVERS");
    let gpu = drivers
        .iter()
        .find(|l| l.contains("GPU \"Intel(R) Arc(TM) "))
        .unwrap_or_else(|| panic!("the virtual GPU driver is listed:\n{out}"));
    let npu = drivers
        .iter()
        .find(|l| l.contains("NPU \"Intel(R) AI Boost\""))
        .unwrap_or_else(|| panic!("the virtual NPU driver is listed:\n{out}"));
    assert!(gpu.contains("yes (platform 0)"), "SYCL sees the GPU driver: {gpu}");
    assert!(!npu.contains("yes (platform"), "SYCL does not see the NPU driver: {npu}");
    assert!(npu.split_whitespace().any(|w| w == "no"), "the NPU driver's SYCL column says no: {npu}");
    assert!(out.contains("Intel NPU driver uuid"), "{out}");
    assert!(out.contains("ZE_experimental_mutable_command_list"), "the NPU driver's extensions are listed:\n{out}");
    assert!(out.contains("version  loader "), "zelLoaderGetVersions is reported:\n{out}");
    // The laptop generation, named from the NPU's device id (the profile the platform runs).
    let (laptop, family) = match std::env::var("VL0_PROFILE").as_deref() {
        Ok("mtl") => ("Meteor Lake (NPU 0x7d1d", "NPU 37xx"),
        Ok("arl") => ("Arrow Lake (NPU 0xad1d", "NPU 37xx"),
        Ok("ptl") => ("Panther Lake (NPU 0xb03e", "NPU 50xx"),
        _ => ("Lunar Lake (NPU 0x643e", "NPU 40xx"),
    };
    assert!(out.contains(&format!("LAPTOP   {laptop}, {family})")), "{out}");
    let openvino = rows(out, "OPENVINO");
    assert!(openvino.iter().any(|l| l.contains("devices") && l.contains("NPU") && l.contains("CPU")), "{out}");
}

#[test]
fn doctor_reports_the_strategies_the_strategy_tests_prove() {
    let run = table();
    assert_eq!(run.code, Some(0), "{}", run.context());
    let out = &run.stdout;
    let rows = strategy_rows(out);
    let find = |strategy: &str, memory: &str| {
        rows.iter()
            .find(|r| r.0 == strategy && r.1.starts_with(memory))
            .unwrap_or_else(|| panic!("row {strategy} / {memory} in {rows:#?}"))
    };
    let card = find("card path", "the NPU plugin's");
    assert_eq!((card.2.as_str(), card.3.as_str()), ("unsupported", "-"), "{card:?}");
    let dma = find("dma-buf", "exportable device memory");
    assert_eq!((dma.2.as_str(), dma.3.as_str()), ("works", "yes"), "{dma:?}");
    // CPU_VA of SYCL USM works on no laptop: not pinnable (NPU 40xx+) or no import at all (37xx).
    for memory in ["host USM", "shared USM"] {
        let cpu_va = find("CPU_VA", memory);
        assert_eq!((cpu_va.2.as_str(), cpu_va.3.as_str()), ("unsupported", "-"), "{cpu_va:?}");
    }
    // Shared system memory: where the NPU imports user memory (NPU 40xx+), the NPU uses the pages in
    // place and SYCL copies (no iGPU reports shared-system USM by default).
    let shared = find("shared system memory", "page-aligned process memory");
    let imports = user_memory_import();
    let want = if imports { ("works", "no") } else { ("unsupported", "-") };
    assert_eq!((shared.2.as_str(), shared.3.as_str()), want, "{shared:?}");
    // NPU memory allocated exportable (the driver exports nothing else), imported by the plugin and
    // by SYCL.
    let export = find("NPU→SYCL zero-copy", "exportable NPU memory");
    assert_eq!((export.2.as_str(), export.3.as_str()), ("works", "yes"), "{export:?}");
    let copy = find("NPU→SYCL copy", "L0 host tensor");
    assert_eq!((copy.2.as_str(), copy.3.as_str()), ("works", "no"), "{copy:?}");
    // The card path's reason, as the typed error says it.
    let details: String = out.lines().skip_while(|l| !l.contains("- card path")).take(4).collect::<Vec<_>>().join(" ");
    let details = details.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(details.contains("the card path is not supported here"), "{details}");
    assert!(details.contains("no SYCL platform wraps that driver"), "{details}");
    assert!(out.contains("AUTO: chooses dma-buf"), "{out}");
    let result = if imports { "RESULT: 4 of 7 work" } else { "RESULT: 3 of 7 work" };
    assert!(out.contains(result), "{out}");
}

#[test]
fn doctor_json_parses_and_agrees_with_the_table() {
    let (run, v) = json();
    assert_eq!(run.code, Some(0), "{}", run.context());
    assert_eq!(v["platform"]["virtual"], Value::Bool(true));
    assert_eq!(v["loader"]["virtual"], Value::Bool(true));
    assert!(v["loader"]["versions"].as_array().is_some_and(|a| !a.is_empty()), "{v:#}");

    let drivers = v["drivers"].as_array().expect("drivers");
    let by_kind = |k: &str| drivers.iter().find(|d| d["kind"] == k).unwrap_or_else(|| panic!("{k} driver in {v:#}"));
    let (gpu, npu) = (by_kind("GPU"), by_kind("NPU"));
    assert!(gpu["sycl_platform"].is_object(), "SYCL sees the GPU driver: {gpu:#}");
    assert!(npu["sycl_platform"].is_null(), "SYCL does not see the NPU driver: {npu:#}");
    assert_eq!(npu["intel_npu_driver"], Value::Bool(true));
    assert!(gpu["devices"][0]["name"].as_str().is_some_and(|n| n.starts_with("Intel(R) Arc(TM) ")), "{gpu:#}");
    assert_eq!(npu["devices"][0]["name"], "Intel(R) AI Boost");
    assert!(v["npu"]["laptop"].is_string(), "the laptop generation: {v:#}");
    assert!(npu["extensions"].as_array().unwrap().iter().any(|e| e["name"] == "ZE_experimental_mutable_command_list"));

    // The same strategies, in the same order, with the same results as the table.
    let table_rows = strategy_rows(&table().stdout);
    let json_rows = v["strategies"].as_array().expect("strategies");
    assert_eq!(table_rows.len(), json_rows.len());
    for (t, j) in table_rows.iter().zip(json_rows) {
        assert_eq!(j["strategy"], t.0.as_str(), "{t:?} vs {j:#}");
        assert_eq!(j["memory"], t.1.as_str(), "{t:?} vs {j:#}");
        assert_eq!(j["status"], t.2.as_str(), "{t:?} vs {j:#}");
        let zc = match &j["zero_copy"] {
            Value::Bool(true) => "yes",
            Value::Bool(false) => "no",
            _ => "-",
        };
        assert_eq!(zc, t.3, "{t:?} vs {j:#}");
    }
    let card = &json_rows[0];
    assert_eq!((card["kind"].as_str(), card["status"].as_str()), (Some("CardPath"), Some("unsupported")));
    assert!(card["detail"].as_str().unwrap().contains("no SYCL platform wraps that driver"), "{card:#}");
    assert_eq!(v["auto"]["chosen"], "dma-buf");
    let working = v["working"].as_array().unwrap();
    let want = if user_memory_import() { 4 } else { 3 };
    assert_eq!(
        working.len(),
        want,
        "dma-buf, NPU→SYCL zero-copy and copy, and (NPU 40xx+) shared system memory: {v:#}"
    );

    // The NPU memory paths that need no SYCL, each read in place by the graph.
    let paths = v["npu_paths"].as_array().expect("npu_paths");
    let row = |p: &str| {
        let r = paths.iter().find(|r| r["path"] == p).unwrap_or_else(|| panic!("no {p} row: {v:#}"));
        (r["status"].as_str().unwrap_or_default().to_string(), r["in_place"].clone())
    };
    assert_eq!(row("dma-buf"), ("works".into(), Value::Bool(true)), "{v:#}");
    assert_eq!(row("L0 host tensor"), ("works".into(), Value::Bool(true)), "{v:#}");
    let cpu_va =
        if user_memory_import() { ("works".into(), Value::Bool(true)) } else { ("unsupported".into(), Value::Null) };
    assert_eq!(row("CPU_VA"), cpu_va, "{v:#}");
    assert!(table().stdout.contains("NPU MEMORY PATHS without SYCL"), "{}", table().context());
}

#[test]
fn doctor_exits_non_zero_when_no_strategy_works() {
    // A device selector that matches no device: SYCL has no GPU, so no strategy can run.
    let run = Run::from(
        Command::new(DOCTOR)
            .args(["--virtual"])
            .env("ONEAPI_DEVICE_SELECTOR", "opencl:*")
            .output()
            .expect("spawn npu-sycl-doctor"),
    );
    assert_eq!(run.code, Some(1), "{}", run.context());
    assert!(run.stdout.contains("RESULT: no SYCL ⇄ NPU sharing strategy works here"), "{}", run.context());
    assert!(strategy_rows(&run.stdout).iter().all(|r| r.2 == "not run"), "{}", run.context());
    // The GPU driver is no SYCL platform here, and the report says why rather than "not a SYCL platform".
    assert!(
        run.stdout.contains("driver 0 (GPU) SYCL platform: error:")
            && run.stdout.split_whitespace().collect::<Vec<_>>().join(" ").contains(
                "the driver has a GPU device, but DPC++ made no SYCL platform of it (ONEAPI_DEVICE_SELECTOR=\"opencl:*\""
            ),
        "{}",
        run.context()
    );

    let bad = doctor(&["--no-such-flag"]);
    assert_eq!(bad.code, Some(2), "{}", bad.context());
    assert!(bad.stderr.contains("usage: npu-sycl-doctor"), "{}", bad.context());
}

/// One argument the doctor does not know: any bytes but NUL (which no argv can hold), not UTF-8
/// included, that are none of its flags.
fn unknown_argument() -> impl proptest::strategy::Strategy<Value = OsString> {
    use proptest::prelude::*;
    prop_oneof![
        prop::sample::select(vec!["", "-", "--", "--JSON", "--json=1", "-j", "--virtual ", "---help", "-hh"])
            .prop_map(OsString::from),
        "[^\0]{0,16}".prop_map(OsString::from),
        prop::collection::vec(1u8..=255, 0..12).prop_map(OsString::from_vec),
    ]
    .prop_filter("not a flag", |a| !matches!(a.to_str(), Some("--json" | "--virtual" | "-h" | "--help")))
}

proptest::proptest! {
    // Each case starts the binary, which exits before it loads a runtime: a few dozen stay quick.
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 24, ..Default::default() })]

    /// Known flags, then an unknown argument, then anything: a usage error (exit 2, the usage on
    /// stderr, nothing on stdout), never a panic and never a run. The parser itself is
    /// property-tested in-process (src/main.rs); this is the binary's side of it.
    #[test]
    fn unknown_arguments_are_usage_errors(
        before in proptest::collection::vec(proptest::sample::select(vec!["--json", "--virtual"]), 0..3),
        bad in unknown_argument(),
        after in proptest::collection::vec(unknown_argument(), 0..3),
    ) {
        let run = Run::from(
            Command::new(DOCTOR).args(&before).arg(&bad).args(&after).output().expect("spawn npu-sycl-doctor"),
        );
        proptest::prop_assert_eq!(run.code, Some(2), "{}", run.context());
        proptest::prop_assert!(run.stderr.contains("usage: npu-sycl-doctor"), "{}", run.context());
        let named = format!("unknown argument {:?}", bad.to_string_lossy());
        proptest::prop_assert!(run.stderr.contains(&named), "{named}: {}", run.context());
        proptest::prop_assert!(run.stdout.is_empty(), "{}", run.context());
    }
}

/// npu-sycl-bridge's `forum_port` example, as cargo builds it for this run (once per test process).
///
/// Cargo builds only this crate's own targets for its tests, so the test runs `cargo build --example
/// forum_port` itself, in this workspace and this test's profile. It resolves features as `cargo xtask
/// test` does (`--workspace --features npu-sycl-bridge/sycl`; resolving them for npu-sycl-bridge
/// alone would build a second copy of the crate), so there it only finds the example fresh. The path
/// is the one cargo reports for the artifact.
fn forum_port() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        // This test's profile: target/<profile>/deps/doctor-<hash>.
        let exe = std::env::current_exe().expect("current_exe");
        let profile = exe.parent().and_then(Path::parent).and_then(Path::file_name).expect("target/<profile>");
        let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
        cmd.current_dir(&workspace)
            .args(["build", "--quiet", "--message-format=json", "--workspace", "--features", "npu-sycl-bridge/sycl"])
            .args(["--example", "forum_port"]);
        match profile.to_str() {
            Some("debug") => {}
            Some("release") => {
                cmd.arg("--release");
            }
            _ => {
                cmd.arg("--profile").arg(profile);
            }
        }
        let out = cmd.output().expect("spawn cargo");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "cargo build --example forum_port failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "forum_port")
            .find_map(|m| m["executable"].as_str().map(PathBuf::from))
            .unwrap_or_else(|| panic!("cargo reported no forum_port executable:\n{stdout}"))
    })
}

#[test]
fn forum_port_example_runs_auto_dma_buf_without_copies() {
    let run = Run::from(Command::new(forum_port()).arg("--virtual").output().expect("spawn forum_port"));
    assert_eq!(run.code, Some(0), "{}", run.context());
    let out = &run.stdout;
    assert!(out.contains("PLATFORM: VIRTUAL"), "says it runs on the virtual platform:\n{out}");
    // Each step of the snippet, numbered, in order.
    let mut at = 0;
    for n in 1..=11 {
        let tag = format!("\n[{n}] ");
        at = out[at..].find(&tag).map(|i| at + i).unwrap_or_else(|| panic!("step [{n}] in order:\n{out}"));
    }
    assert!(
        out.contains("ErrorKind::Unsupported { path: CardPath, reason: NoSyclPlatform }"),
        "the card path's typed error:\n{out}"
    );
    // The example wraps long messages: compare with the line breaks folded.
    let folded = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(folded.contains("does not accept device"), "make_context's own error when forced:\n{out}");
    assert!(out.contains("Auto chose: dma-buf (zero-copy: yes)"), "{out}");
    assert!(out.contains("decision report: chose dma-buf because it is first in Auto's order and works"), "{out}");
    assert!(out.contains("equals the CPU plugin's"), "{out}");
    assert!(out.contains("gpu.bytes_copied +0, npu.bytes_copied +0"), "{out}");
    assert!(out.contains("npu.graph_args.dma_buf +2"), "{out}");
    assert!(out.contains("RESULT: strategy dma-buf ran; output equals the CPU plugin's; no copy was made"), "{out}");
}

#[test]
fn doctor_and_example_give_the_same_answers_under_adapter_v2() {
    // DPC++ picks its Level Zero adapter once per process; v2 is what Battlemage-class GPUs get.
    let run = Run::from(
        Command::new(DOCTOR)
            .args(["--virtual", "--json"])
            .env("SYCL_UR_USE_LEVEL_ZERO_V2", "1")
            .env_remove("UR_LOADER_USE_LEVEL_ZERO_V2")
            .output()
            .expect("spawn npu-sycl-doctor"),
    );
    assert_eq!(run.code, Some(0), "{}", run.context());
    let v: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}\n{}", run.context()));
    let statuses: Vec<(&str, &str)> = v["strategies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["strategy"].as_str().unwrap(), s["status"].as_str().unwrap()))
        .collect();
    let (_, v1) = json();
    let statuses_v1: Vec<(&str, &str)> = v1["strategies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["strategy"].as_str().unwrap(), s["status"].as_str().unwrap()))
        .collect();
    assert_eq!(statuses, statuses_v1, "adapter v2 vs the default (v1 on the virtual GPU)");
    assert_eq!(v["auto"]["chosen"], "dma-buf");

    let ex = Run::from(
        Command::new(forum_port())
            .arg("--virtual")
            .env("SYCL_UR_USE_LEVEL_ZERO_V2", "1")
            .env_remove("UR_LOADER_USE_LEVEL_ZERO_V2")
            .output()
            .expect("spawn forum_port"),
    );
    assert_eq!(ex.code, Some(0), "{}", ex.context());
    assert!(
        ex.stdout.contains("RESULT: strategy dma-buf ran; output equals the CPU plugin's; no copy was made"),
        "{}",
        ex.context()
    );
}
