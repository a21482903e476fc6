//! The doctor under Level Zero failures (issue 14 item 1, the doctor's part): its calls failed in
//! turn, each in its own `npu-sycl-doctor --virtual --json` process.
//!
//! One run under `VL0_TRACE=1` lists the doctor's Level Zero calls (about 1,250 on the virtual
//! platform: the loader's initialisation, the drivers, OpenVINO's NPU plugin, DPC++ and every
//! strategy) and gives the report without a fault. Failing every one of them in a process of its
//! own would take minutes per profile, so the sweep fails one call per *call shape*, chosen from the
//! trace deterministically: the function, its non-pointer arguments, which pointer arguments are
//! null, which Level Zero context it names, and the result it returned (about 130 shapes; 256
//! `zeEventDestroy` calls are one shape, the plugin's `zeMemGetAllocProperties` that find an
//! allocation and those that do not are two). Each shape's first call is failed
//! (`VL0_FAULTS=function:nth:code`, with the error the real driver returns there) in a new doctor
//! process, still traced, so that the sweep sees the fault fire.
//!
//! Each run must exit by itself (a run still going after [`DEADLINE`] is killed and recorded as a
//! hang), with 0 or 1 and never by a signal, and must print one valid JSON report that tells the
//! truth: every probe the fault broke is reported as failed (or unsupported, or not run) with a
//! message, every `error` has one, no strategy works that did not work without the fault, `working`
//! lists exactly the rows that work, and the exit status says whether one does. A death inside the
//! unmodified runtimes is allowed only as listed in [`RUNTIME_DEATHS`], with the reason. The report
//! (call shapes × outcomes) is written to `target/fault-sweep/doctor-<profile>.md`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use testkit::virtual_platform::driver_error_for;

const DOCTOR: &str = env!("CARGO_BIN_EXE_npu-sycl-doctor");

/// A doctor run takes well under a second on the virtual platform; one still running after this is
/// hung, and is killed.
const DEADLINE: Duration = Duration::from_secs(60);

/// Deaths inside the unmodified runtimes when a call fails (nothing the doctor can catch): the
/// function, how the process ended, what it printed (when it printed anything), and why.
const RUNTIME_DEATHS: &[(&str, &str, &str, &str)] = &[
    (
        "zeCommandQueueCreate",
        "signal 6",
        "ur_die: [L0] getZeQueue",
        "DPC++'s Level Zero adapter v1 aborts when the driver refuses a command queue (Meteor/Arrow Lake profiles)",
    ),
    (
        "zeCommandListCreate",
        "signal 11",
        "",
        "DPC++'s Level Zero adapter v1 crashes in ur_context_handle_t_::getAvailableCommandList (under \
         urEnqueueUSMMemcpy, the first SYCL copy of a queue) when the driver refuses the queue's first command \
         list (Meteor/Arrow Lake profiles; seen with gdb)",
    ),
    (
        "zeFenceCreate",
        "signal 11",
        "",
        "DPC++'s Level Zero adapter v1 crashes in ur_context_handle_t_::getAvailableCommandList (under \
         urEnqueueUSMMemcpy) when the driver refuses the fence of a queue's first command list (Meteor/Arrow \
         Lake profiles; seen with gdb)",
    ),
];

struct Run {
    /// `exit N`, `signal N` or `hang`.
    end: String,
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// One doctor run with `VL0_TRACE=1`, and `VL0_FAULTS=fault` when given.
fn doctor(fault: Option<&str>, label: &str) -> Run {
    use std::os::unix::process::ExitStatusExt;
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("doctor-fault-sweep");
    std::fs::create_dir_all(&dir).unwrap();
    let (out_path, err_path) = (dir.join(format!("{label}.stdout")), dir.join(format!("{label}.stderr")));
    let mut cmd = Command::new(DOCTOR);
    cmd.args(["--virtual", "--json"]).env("VL0_TRACE", "1").env_remove("VL0_FAULTS");
    // The adapter DPC++ picks for the profile's GPU, as users get it.
    cmd.env_remove("UR_LOADER_USE_LEVEL_ZERO_V2");
    if let Some(f) = fault {
        cmd.env("VL0_FAULTS", f);
    }
    cmd.stdout(std::fs::File::create(&out_path).unwrap()).stderr(std::fs::File::create(&err_path).unwrap());
    let mut child = cmd.spawn().expect("spawn npu-sycl-doctor");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let read = |p: &PathBuf| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned();
    let (stdout, stderr) = (read(&out_path), read(&err_path));
    let _ = std::fs::remove_file(&out_path);
    let _ = std::fs::remove_file(&err_path);
    let (end, code) = match status {
        None => ("hang".to_string(), None),
        Some(s) => match (s.code(), s.signal()) {
            (Some(c), _) => (format!("exit {c}"), Some(c)),
            (None, Some(sig)) => (format!("signal {sig}"), None),
            _ => ("unknown".to_string(), None),
        },
    };
    Run { end, code, stdout, stderr }
}

/// A traced call: the function and, apart from it, its shape.
struct Call {
    function: String,
    shape: String,
}

/// The Level Zero calls of a trace in order (`[vl0 <tid>] name(args) -> result`): lines of the
/// platform that are not calls (the NPU's graph notes, the exit summary) are left out. Context
/// handles are numbered in the order they first appear, so the shape says which context a call uses.
fn calls_in(trace: &str) -> Vec<Call> {
    let mut contexts: BTreeMap<String, usize> = BTreeMap::new();
    let mut calls = Vec::new();
    for line in trace.lines() {
        let Some((_, call)) = line.strip_prefix("[vl0 ").and_then(|r| r.split_once("] ")) else { continue };
        let name_end = call.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(call.len());
        let function = &call[..name_end];
        let rest = &call[name_end..];
        if !(function.starts_with("ze") || function.starts_with("pfn"))
            || !(rest.starts_with('(') || rest.starts_with(" ->"))
        {
            continue;
        }
        let (args, result) = match rest.strip_prefix('(').and_then(|r| r.rsplit_once(") ->")) {
            Some((args, result)) => (args, result),
            None => ("", rest.trim_start_matches(" ->")),
        };
        let args: Vec<String> = args
            .split(", ")
            .filter(|a| !a.is_empty())
            .map(|a| match a.split_once('=') {
                Some((k, "0x0")) => format!("{k}=null"),
                Some(("ctx", v)) => {
                    let n = contexts.len();
                    format!("ctx=#{}", contexts.entry(v.to_string()).or_insert(n))
                }
                Some((k, v)) if v.starts_with("0x") => k.to_string(),
                Some((k, v)) => format!("{k}={v}"),
                None => a.to_string(),
            })
            .collect();
        // A pointer-returning export answers with an address; only whether it is null is its shape.
        let result = result.trim().trim_end_matches(" (injected fault)");
        let result =
            if function.starts_with("ze") && rest.starts_with(" ->") && result != "0x0" { "ptr" } else { result };
        calls.push(Call { function: function.to_string(), shape: format!("({}) -> {result}", args.join(", ")) });
    }
    calls
}

/// Each call shape's first call, as (function, n: the call's number among that function's calls, shape).
fn first_of_each_shape(calls: &[Call]) -> Vec<(String, u64, String)> {
    let mut count: BTreeMap<&str, u64> = BTreeMap::new();
    let mut seen = std::collections::BTreeSet::new();
    let mut picked = Vec::new();
    for c in calls {
        let n = count.entry(&c.function).or_insert(0);
        *n += 1;
        if seen.insert((c.function.as_str(), c.shape.as_str())) {
            picked.push((c.function.clone(), *n, c.shape.clone()));
        }
    }
    picked
}

/// The value with addresses (handles, pointers: `0x` and 8 or more hex digits) made one token, so
/// that two runs' reports compare equal when only addresses differ.
fn without_addresses(v: &Value) -> Value {
    fn scrub(s: &str) -> String {
        let b = s.as_bytes();
        let mut out = String::with_capacity(s.len());
        let mut i = 0;
        while i < b.len() {
            if b[i..].starts_with(b"0x") {
                let digits = b[i + 2..].iter().take_while(|c| c.is_ascii_hexdigit()).count();
                if digits >= 8 {
                    out.push_str("0x…");
                    i += 2 + digits;
                    continue;
                }
            }
            let c = s[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
        out
    }
    match v {
        Value::String(s) => Value::String(scrub(s)),
        Value::Array(a) => Value::Array(a.iter().map(without_addresses).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), without_addresses(v))).collect()),
        v => v.clone(),
    }
}

/// Every `error` in the report has a message.
fn errors_have_messages(v: &Value, at: &str, problems: &mut Vec<String>) {
    match v {
        Value::Object(o) => {
            for (k, v) in o {
                if k == "error" && !matches!(v.as_str(), Some(s) if !s.trim().is_empty()) {
                    problems.push(format!("{at}.error has no message: {v}"));
                }
                errors_have_messages(v, &format!("{at}.{k}"), problems);
            }
        }
        Value::Array(a) => {
            a.iter().enumerate().for_each(|(i, v)| errors_have_messages(v, &format!("{at}[{i}]"), problems))
        }
        _ => {}
    }
}

/// Checks a report made under a fault against the one made without: `Ok` with what changed
/// (`unchanged`, or the sections and strategy rows that now report a failure), `Err` with what is
/// wrong with it.
fn check(base: &Value, got: &Value, code: i32) -> Result<String, String> {
    let mut problems = Vec::new();
    let keys = |v: &Value| v.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>());
    if keys(got) != keys(base) {
        return Err(format!("the report's sections {:?} are not {:?}", keys(got), keys(base)));
    }
    errors_have_messages(got, "", &mut problems);
    let rows = got["strategies"].as_array().cloned().unwrap_or_default();
    let base_rows = base["strategies"].as_array().cloned().unwrap_or_default();
    if rows.len() != base_rows.len() {
        problems.push(format!("{} strategy rows, {} without the fault", rows.len(), base_rows.len()));
    }
    let mut changed = Vec::new();
    let mut working = Vec::new();
    for (r, b) in rows.iter().zip(&base_rows) {
        let name = format!("{} ({})", r["strategy"].as_str().unwrap_or("?"), r["memory"].as_str().unwrap_or("?"));
        if (&r["strategy"], &r["memory"]) != (&b["strategy"], &b["memory"]) {
            problems
                .push(format!("row {name} where the report without the fault has {} ({})", b["strategy"], b["memory"]));
        }
        let status = r["status"].as_str().unwrap_or("");
        let detail = r["detail"].as_str().unwrap_or("");
        match status {
            "works" => {
                working.push(name.clone());
                if !r["zero_copy"].is_boolean() {
                    problems.push(format!("{name} works but does not say whether it was zero-copy"));
                }
                if b["status"] != "works" {
                    problems.push(format!("{name} works under the fault but is {} without it", b["status"]));
                }
            }
            "failed" | "unsupported" | "not run" if !detail.trim().is_empty() => {}
            "failed" | "unsupported" | "not run" => problems.push(format!("{name} is {status} without a message")),
            other => problems.push(format!("{name} has the status {other:?}")),
        }
        if r["status"] != b["status"] {
            changed.push(format!("{name}: {status}"));
        }
    }
    let listed: Vec<String> = got["working"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect())
        .unwrap_or_default();
    if listed != working {
        problems.push(format!("`working` lists {listed:?}, the rows that work are {working:?}"));
    }
    let want_code = if working.is_empty() { 1 } else { 0 };
    if code != want_code {
        problems.push(format!("exit {code} with {} working strategies", working.len()));
    }
    // A list the fault shortened must say why. The drivers: an error. SYCL's platforms: an error, or
    // a driver whose `sycl_platform` says why it is none (DPC++ leaves out a driver whose calls fail).
    let list_of = |v: &Value, list: &str| if list == "devices" { v["openvino"][list].clone() } else { v[list].clone() };
    let shorter = |list: &str| match (list_of(got, list).as_array(), list_of(base, list).as_array()) {
        (Some(g), Some(b)) => {
            (g.len() < b.len()).then(|| format!("{list}: {} entries, {} without the fault", g.len(), b.len()))
        }
        _ => None,
    };
    if let Some(p) = shorter("drivers") {
        problems.push(p);
    }
    let explained =
        got["drivers"].as_array().is_some_and(|ds| ds.iter().any(|d| d["sycl_platform"].get("error").is_some()));
    if let Some(p) = shorter("sycl_platforms").filter(|_| !explained) {
        problems.push(format!("{p}, and no driver says why"));
    }
    // OpenVINO leaves out a device whose plugin failed to start; the NPU's name must say why.
    if let Some(p) = shorter("devices").filter(|_| got["openvino"]["npu_full_name"].get("error").is_none()) {
        problems.push(format!("openvino.{p}, and npu_full_name is no error"));
    }
    if !problems.is_empty() {
        return Err(problems.join("; "));
    }
    if !base_rows.is_empty() && changed.len() == base_rows.len() {
        let statuses: std::collections::BTreeSet<&str> = rows.iter().filter_map(|r| r["status"].as_str()).collect();
        if statuses.len() == 1 {
            changed = vec![format!("every strategy: {}", statuses.first().unwrap())];
        }
    }
    fn errors(v: &Value) -> usize {
        match v {
            Value::Object(o) => o.iter().map(|(k, v)| usize::from(k == "error") + errors(v)).sum(),
            Value::Array(a) => a.iter().map(errors).sum(),
            _ => 0,
        }
    }
    let (got, base) = (without_addresses(got), without_addresses(base));
    for (k, v) in got.as_object().unwrap() {
        if k == "strategies" || k == "working" || *v == base[k] {
            continue;
        }
        changed.push(if errors(v) > errors(&base[k]) { format!("{k}: error") } else { format!("{k} differs") });
    }
    if changed.is_empty() {
        let details_differ = got["strategies"] != base["strategies"];
        return Ok(if details_differ { "unchanged statuses, other details".into() } else { "unchanged".into() });
    }
    Ok(format!("reported: {}", changed.join(", ")))
}

#[test]
fn every_call_shape_of_the_doctor_fails_cleanly() {
    let profile = std::env::var("VL0_PROFILE").unwrap_or_else(|_| "lnl".into());
    let trace = doctor(None, "trace");
    assert_eq!(trace.code, Some(0), "the doctor without a fault: {}\n{}", trace.end, trace.stderr);
    let base: Value = serde_json::from_str(&trace.stdout)
        .unwrap_or_else(|e| panic!("the report without a fault is not JSON: {e}\n{}", trace.stdout));
    let calls = calls_in(&trace.stderr);
    let picked = first_of_each_shape(&calls);
    assert!(picked.len() > 50, "the trace lists the doctor's calls: {} shapes of {} calls", picked.len(), calls.len());
    let functions: std::collections::BTreeSet<&str> = calls.iter().map(|c| c.function.as_str()).collect();

    // (function, n, shape, how it ended, outcome) per call; the problems and the runtimes' deaths.
    let mut rows: Vec<[String; 5]> = Vec::new();
    let mut bad: Vec<String> = Vec::new();
    let mut deaths: Vec<String> = Vec::new();
    for (i, (function, n, shape)) in picked.iter().enumerate() {
        let code = driver_error_for(function);
        let fault = format!("{function}:{n}:{code:#x}");
        let run = doctor(Some(&fault), &format!("fault-{i}"));
        let fired = run.stderr.contains("(injected fault)");
        let said: Vec<&str> =
            run.stderr.lines().filter(|l| !l.starts_with("[vl0") && !l.trim().is_empty()).take(3).collect();
        let outcome = match run.code {
            _ if !fired => Err("the fault never fired (the call was not made)".to_string()),
            Some(c @ (0 | 1)) => match serde_json::from_str::<Value>(&run.stdout) {
                Ok(report) => check(&base, &report, c),
                Err(e) => Err(format!("stdout is not one JSON report ({e}): {:?}", run.stdout.get(..200))),
            },
            Some(c) => Err(format!("exit {c}: {}", said.join(" / "))),
            None => {
                let known = RUNTIME_DEATHS
                    .iter()
                    .find(|(f, end, printed, _)| f == function && *end == run.end && run.stderr.contains(printed));
                match known {
                    Some((_, _, _, why)) => {
                        deaths.push(format!("- `{fault}` ({}): {why}.", run.end));
                        Ok(format!("RUNTIME DEATH ({})", run.end))
                    }
                    None => Err(format!("{}: {}", run.end, said.join(" / "))),
                }
            }
        };
        let outcome = outcome.unwrap_or_else(|problem| {
            bad.push(format!("{fault} {shape}: {problem}"));
            format!("BAD: {problem}")
        });
        rows.push([function.clone(), n.to_string(), shape.clone(), run.end, outcome]);
    }

    let mut report = String::new();
    let _ = writeln!(report, "# Fault sweep: npu-sycl-doctor --virtual --json on {profile}\n");
    let _ = writeln!(
        report,
        "The traced run made {} Level Zero calls of {} functions, in {} call shapes (function, non-pointer \
         arguments, which pointers are null, which context, the traced result). Each shape's first call was \
         failed in its own doctor process, with the error the real driver returns there; the other calls of \
         a shape were not failed.\n",
        calls.len(),
        functions.len(),
        picked.len()
    );
    let mut tally: BTreeMap<String, usize> = BTreeMap::new();
    for r in &rows {
        let kind = r[4].split(':').next().unwrap_or("").to_string();
        *tally.entry(format!("{} / {kind}", r[3])).or_insert(0) += 1;
    }
    let _ = writeln!(report, "| how it ended / outcome | runs |\n|---|---|");
    for (k, n) in &tally {
        let _ = writeln!(report, "| {k} | {n} |");
    }
    let _ = writeln!(report, "\n| call | n | shape | ended | outcome |\n|---|---|---|---|---|");
    for r in &rows {
        let _ = writeln!(report, "| {} | {} | `{}` | {} | {} |", r[0], r[1], r[2].replace('|', "\\|"), r[3], r[4]);
    }
    if !deaths.is_empty() {
        let _ = writeln!(report, "\nDeaths inside the runtimes:\n{}", deaths.join("\n"));
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("../fault-sweep");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("doctor-{profile}.md"));
    std::fs::write(&path, &report).unwrap();
    eprintln!(
        "doctor: {} call shapes of {} calls swept ({} runtime deaths), report in {}",
        rows.len(),
        calls.len(),
        deaths.len(),
        path.display()
    );
    assert!(
        bad.is_empty(),
        "injected failures the doctor did not handle:\n{}\nreport: {}",
        bad.join("\n"),
        path.display()
    );
}
