//! `cargo xtask bench` (or `cargo bench --bench report`): issue 13, "Performance, measured".
//!
//! Every figure is a ratio of medians measured in one run, the variants of each comparison
//! interleaved round by round (the machine is shared and noisy). Writes `report.md` and SVG plots
//! (made here, by `svg.rs`) to `--out DIR` (default `target/bench`).
//!
//! - Size sweep (items 1 and 4): one child process of this binary per laptop profile
//!   (`VL0_PROFILE` is read once per process), every NPU input path at sizes from 4 KiB to 256 MiB,
//!   with a single-core memcpy of the same bytes in the same rounds, and each path's import call
//!   and first inference.
//! - Bridge overhead (item 2): bind, infer, read through the crate and through OpenVINO's C API on
//!   the CPU plugin and the virtual NPU.
//! - Virtual NPU overhead (item 3): a CNN, an MLP and a transformer-like block on the virtual NPU
//!   against the CPU plugin.
//! - Throughput with 1, 2 and 4 requests in flight (item 5); the pipeline's overlap ratio is
//!   `benches/pipeline.rs` (feature `sycl`), whose output `cargo xtask bench` passes in
//!   (`--pipeline FILE`).
//!
//! Options: `--out DIR`, `--pipeline FILE`, `--max-bytes N` (largest sweep size), `--budget S`
//! (seconds per comparison, default 1.5), `--profiles lnl,mtl,...`, `--sections
//! sweep,bridge,vnpu,throughput` (a subset, for a quick look).
//! On a machine without an Intel NPU everything runs on the virtual platform: its "NPU" is
//! OpenVINO's CPU plugin on this machine's cores, so the numbers show the plumbing, not NPU speed.

mod measure;
mod overhead;
mod svg;
mod sweep;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use npu_sycl_bridge::openvino::Core;
use testkit::virtual_platform;

/// Issue 25: a pool tensor handed back to its request, against the floor.
const POOL_TARGET: f64 = 1.03;

const SIZES: [usize; 8] = [4 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20];

struct Args {
    out: PathBuf,
    pipeline: Option<PathBuf>,
    max_bytes: usize,
    budget: f64,
    profiles: Vec<String>,
    sections: Vec<String>,
    child: bool,
}

fn args() -> Args {
    let mut a = Args {
        out: PathBuf::from("target/bench"),
        pipeline: None,
        max_bytes: 256 << 20,
        budget: 1.5,
        profiles: ["lnl", "mtl", "arl", "ptl"].map(String::from).to_vec(),
        sections: ["sweep", "bridge", "vnpu", "throughput"].map(String::from).to_vec(),
        child: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--out" => a.out = it.next().expect("--out DIR").into(),
            "--pipeline" => a.pipeline = it.next().map(PathBuf::from),
            "--max-bytes" => a.max_bytes = it.next().and_then(|v| v.parse().ok()).expect("--max-bytes N"),
            "--budget" => a.budget = it.next().and_then(|v| v.parse().ok()).expect("--budget SECONDS"),
            "--profiles" => a.profiles = it.next().expect("--profiles").split(',').map(String::from).collect(),
            "--sections" => a.sections = it.next().expect("--sections").split(',').map(String::from).collect(),
            "--sweep-child" => a.child = true,
            _ => {} // cargo bench passes --bench
        }
    }
    a
}

fn size_label(b: usize) -> String {
    if b >= 1 << 20 {
        format!("{} MiB", b >> 20)
    } else {
        format!("{} KiB", b >> 10)
    }
}

fn ms(s: f64) -> String {
    if !s.is_finite() {
        "—".into()
    } else if s < 1e-3 {
        format!("{:.1} µs", s * 1e6)
    } else {
        format!("{:.2} ms", s * 1e3)
    }
}

fn r2(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.2}")
    } else {
        "—".into()
    }
}

fn laptop(p: &str) -> &'static str {
    match p {
        "lnl" => "Lunar Lake (NPU 40xx)",
        "mtl" => "Meteor Lake (NPU 37xx)",
        "arl" => "Arrow Lake (NPU 37xx)",
        "ptl" => "Panther Lake (NPU 50xx)",
        _ => "unknown",
    }
}

fn main() -> anyhow::Result<()> {
    let a = args();
    let sizes: Vec<usize> = SIZES.iter().copied().filter(|s| *s <= a.max_bytes).collect();
    if a.child {
        sweep::child(&sizes, a.budget)?;
        return Ok(());
    }
    std::fs::create_dir_all(&a.out)?;
    let started = std::time::Instant::now();

    // 1. The sweep, one child per profile (before this process loads anything).
    let mut rows: Vec<sweep::Row> = Vec::new();
    let mut missing: BTreeMap<String, String> = BTreeMap::new();
    let on = |x: &str| a.sections.iter().any(|s| s == x);
    for p in a.profiles.iter().filter(|_| on("sweep")) {
        eprintln!("report: size sweep under VL0_PROFILE={p}");
        let out = Command::new(std::env::current_exe()?)
            .args(["--sweep-child", "--max-bytes", &a.max_bytes.to_string(), "--budget", &a.budget.to_string()])
            .env("VL0_PROFILE", p)
            .stderr(Stdio::inherit())
            .output()?;
        let text = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            anyhow::bail!("the sweep under VL0_PROFILE={p} failed ({}): {text}", out.status);
        }
        for line in text.lines() {
            if let Some(r) = sweep::parse(line) {
                rows.push(r);
            } else if let Some(rest) = line.strip_prefix("MISSING\t") {
                let f: Vec<&str> = rest.splitn(3, '\t').collect();
                if f.len() == 3 {
                    missing.insert(f[0].to_string(), f[2].to_string());
                }
            }
        }
    }

    // 2-5 in this process (the default profile, or VL0_PROFILE as set).
    let selection = virtual_platform::select(false)?;
    let core = Core::new()?;
    eprintln!("report: bridge overhead");
    let bridge = if on("bridge") {
        vec![overhead::bridge(&core, "CPU", a.budget * 2.0)?, overhead::bridge(&core, "NPU", a.budget * 2.0)?]
    } else {
        Vec::new()
    };
    eprintln!("report: virtual NPU overhead");
    let vnpu = if on("vnpu") { overhead::vnpu(&core, a.budget * 2.0)? } else { Vec::new() };
    eprintln!("report: throughput");
    let tput = if on("throughput") { overhead::throughput(&core, a.budget)? } else { Vec::new() };
    let pipeline = a.pipeline.as_ref().and_then(|p| std::fs::read_to_string(p).ok());

    let md = report(&a, &sizes, &rows, &missing, &bridge, &vnpu, &tput, pipeline.as_deref(), &selection);
    let path = a.out.join("report.md");
    std::fs::write(&path, md)?;
    eprintln!("report: wrote {} and its plots in {:.0} s", path.display(), started.elapsed().as_secs_f64());
    Ok(())
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

#[allow(clippy::too_many_arguments)]
fn report(
    a: &Args,
    sizes: &[usize],
    rows: &[sweep::Row],
    missing: &BTreeMap<String, String>,
    bridge: &[overhead::Bridge],
    vnpu: &[overhead::VnpuRow],
    tput: &[(String, &'static str, [f64; 3])],
    pipeline: Option<&str>,
    selection: &virtual_platform::Selection,
) -> String {
    let mut s = String::new();
    let virt = selection.is_virtual();
    let _ = writeln!(s, "# npu-sycl-bridge: performance, measured\n");
    let _ = writeln!(
        s,
        "{}\n\nMachine: {}, {} CPUs; OpenVINO {}. Every figure is a ratio of medians measured in this one run, \
         the variants of each comparison interleaved round by round (a new order each round). CPU time is the process's \
         (every thread, getrusage) per inference.\n",
        if virt {
            "**Virtual-platform numbers.** No Intel NPU here: the \"NPU\" is the virtual Level Zero platform, whose \
             graphs run on OpenVINO's CPU plugin on this machine's cores. The ratios show what each path costs in \
             plumbing (copies, imports, dispatch), not NPU speed."
        } else {
            "Real NPU."
        },
        cpu_model(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        Core::version().unwrap_or_default()
    );

    // ---- sweep ----
    let get = |p: &str, b: usize, path: &str| rows.iter().find(|r| r.profile == p && r.bytes == b && r.path == path);
    let _ = writeln!(s, "## 1. Size sweep: each input path against the resident floor\n");
    let _ = writeln!(
        s,
        "Model: `testkit::models::scale` (one f32 Multiply, work proportional to size), input and output of the \
         given size. Paths: {}. Ratio = the median over rounds of (path ÷ floor) per round, the floor being the \
         L0 host tensor (the plugin's own memory, no copy, no import) at the same size, same process, same round. \
         Every buffer and request of a size is made afresh {} times ({} above {}), the paths set up in a new order each time, and the rounds of all are pooled: where a \
         buffer lands (cache sets, TLB reach) moves one allocation's time by up to 14% at 1 and 16 MiB, even \
         between two identical L0 host tensors. *second_floor* is what is left of that luck after pooling: a \
         second L0 host tensor made and run exactly as the floor, whose ratio would be 1.00 without it. Up to {} each path's calls also rotate over {} requests \
         of its own, each with its own input (and output) buffer: every buffer has a placement of its own, \
         and every path works on as many buffers. `memcpy` is this machine's single-core copy of the input \
         bytes, measured in the same rounds; *copy ÷ memcpy* = (copied path − floor) ÷ memcpy: what the plugin's \
         copy costs against the physical limit of what zero-copy saves. Sizes: {} to {}{}.\n",
        sweep::input_paths().map(|p| format!("*{}*", sweep::label(p))).collect::<Vec<_>>().join(", "),
        sweep::placements(sweep::SMALL_MAX),
        sweep::placements(sweep::SMALL_MAX + 1),
        size_label(sweep::SMALL_MAX),
        size_label(sweep::SMALL_MAX),
        sweep::requests_per_path(sweep::SMALL_MAX),
        size_label(sizes[0]),
        size_label(*sizes.last().unwrap_or(&0)),
        if a.max_bytes < 256 << 20 { " (limited with --max-bytes)" } else { "" }
    );
    let mut worst_zero_copy: Vec<(String, String, usize, f64)> = Vec::new();
    for p in &a.profiles {
        let _ = writeln!(s, "### {} (`VL0_PROFILE={p}`)\n", laptop(p));
        if let Some(why) = missing.get(p) {
            let _ = writeln!(s, "CPU_VA: not on this laptop ({why}).\n");
        }
        let present: Vec<&str> =
            sweep::input_paths().filter(|path| rows.iter().any(|r| r.profile == *p && r.path == *path)).collect();
        if present.len() < 2 {
            let _ = writeln!(s, "Not measured in this run.\n");
            continue;
        }
        let _ = write!(s, "| size | floor | memcpy (GB/s) |");
        for path in present.iter().filter(|x| **x != "floor") {
            let _ = write!(s, " {path} |");
        }
        let _ = writeln!(s, " copy ÷ memcpy |");
        let _ = writeln!(s, "|---:|---:|---:|{}---:|", "---:|".repeat(present.len() - 1));
        let mut series: Vec<svg::Series> = Vec::new();
        for path in present.iter().filter(|x| **x != "floor") {
            series.push(svg::Series { name: sweep::label(path).to_string(), points: Vec::new() });
        }
        for &b in sizes {
            let Some(floor) = get(p, b, "floor") else { continue };
            let mc = get(p, b, "memcpy").map_or(f64::NAN, |r| r.median);
            let _ = write!(s, "| {} | {} | {} |", size_label(b), ms(floor.median), r2(b as f64 / mc / 1e9));
            for (i, path) in present.iter().filter(|x| **x != "floor").enumerate() {
                match get(p, b, path) {
                    Some(r) => {
                        let ratio = r.vs_floor;
                        let cpu = r.cpu / floor.cpu;
                        let mark = if r.copied > 0.0 {
                            " c"
                        } else if r.imports >= 0.5 {
                            " i"
                        } else {
                            ""
                        };
                        let _ = write!(s, " {} / {}{mark} |", r2(ratio), r2(cpu));
                        series[i].points.push((b as f64, ratio));
                        if ["cpu_va", "dma_buf", "pool"].contains(path) {
                            worst_zero_copy.push((p.clone(), path.to_string(), b, ratio));
                        }
                    }
                    None => {
                        let _ = write!(s, " — |");
                    }
                }
            }
            let copied = get(p, b, "unaligned").map_or(f64::NAN, |r| r.median);
            let _ = writeln!(s, " {} |", r2((copied - floor.median) / mc));
        }
        let _ = writeln!(
            s,
            "\nCells: median ratio / CPU-time ratio to the floor; `c` = the virtual NPU counted bytes copied per \
             inference, `i` = an import per inference. memcpy and its GB/s are absolute (one core).\n"
        );
        let ticks: Vec<(f64, String)> = sizes.iter().map(|b| (*b as f64, size_label(*b))).collect();
        series.retain(|x| x.name != sweep::label("memcpy"));
        let svg = svg::line_chart(
            &format!("Per-inference time ÷ floor, {} (virtual platform)", laptop(p)),
            "input size",
            "median ÷ L0 host tensor (log)",
            &ticks,
            &series,
            true,
            Some(1.0),
        );
        let file = format!("sweep-{p}.svg");
        let _ = std::fs::write(a.out.join(&file), svg);
        let _ = writeln!(s, "![size sweep, {p}]({file})\n");
    }
    let all: Vec<_> = worst_zero_copy.iter().collect();
    target_line(&mut s, "zero-copy paths CPU_VA, dma-buf, pool", 1.05, &all, |w| format!("{} {}", w.0, w.1));
    // Issue 25: a request handed back its own pool tensor costs what a tensor kept bound costs.
    let pool: Vec<_> = worst_zero_copy.iter().filter(|w| w.1 == "pool").collect();
    target_line(&mut s, "pool, reused by its request,", POOL_TARGET, &pool, |w| w.0.clone());
    // What the target stands for, measured directly: each round also ran the kept dma-buf tensor, so
    // the pool's ratio to it needs no floor, whose own placement luck moves every ratio above.
    // (cell, pool ÷ kept)
    let vs_kept: Vec<_> = pool
        .iter()
        .filter_map(|w| get(&w.0, w.2, "pool").map(|r| (*w, r.vs_kept)))
        .filter(|(_, k)| k.is_finite())
        .collect();
    let over: Vec<String> = vs_kept
        .iter()
        .filter(|(w, _)| w.3 > POOL_TARGET)
        .map(|(w, k)| format!("{} {} {k:.2}x", w.0, size_label(w.2)))
        .collect();
    let cells: Vec<(usize, f64)> = vs_kept.iter().map(|(w, k)| (w.2, *k)).collect();
    split_line(&mut s, "Pool ÷ the dma-buf tensor kept bound, paired per round", &cells, &over);
    // The A/A control: how far the floor measured against itself strays; a pool cell over the
    // target is put beside its own cell's A/A value.
    let aa: Vec<(&String, usize, f64)> = a
        .profiles
        .iter()
        .flat_map(|p| sizes.iter().filter_map(move |&b| get(p, b, "second_floor").map(|r| (p, b, r.vs_floor))))
        .filter(|c| c.2.is_finite())
        .collect();
    let beside: Vec<String> = pool
        .iter()
        .filter(|w| w.3 > POOL_TARGET)
        .filter_map(|w| aa.iter().find(|c| *c.0 == w.0 && c.1 == w.2))
        .map(|c| format!("{} {} {:.2}x", c.0, size_label(c.1), c.2))
        .collect();
    let cells: Vec<(usize, f64)> = aa.iter().map(|c| (c.1, c.2)).collect();
    split_line(&mut s, "The floor against itself (*second_floor* ÷ floor, A/A)", &cells, &beside);

    // ---- import / amortisation ----
    let _ = writeln!(s, "## 2. Import and first-inference cost; amortisation; the pool\n");
    let _ = writeln!(
        s,
        "Per path and size: the import call (`NpuContext::import`, the pool's first `tensor()`, or allocating the \
         floor's L0 host tensor), the first inference on a new request (bind + infer; it includes the request's own \
         warm-up, which every path pays alike; both are medians over the placements), the one-time cost = import + first inference − the floor's first \
         inference (for the floor: allocating and filling its tensor), and **N** = inferences after which the path has paid back its one-time cost against \
         the copied path (one-time ÷ (copied median − path median); — when it never does). *pool ÷ per-use* = \
         steady pool inference (no import) ÷ a dma-buf imported for every inference; *pool ÷ rebind* = the \
         pool's own cost: a pool inference (take a tensor, bind it, infer) ÷ binding two kept dma-buf tensors in \
         turn (the same rebinding, without the pool).\n"
    );
    for p in &a.profiles {
        let _ = writeln!(s, "### {}\n", laptop(p));
        let _ = writeln!(s, "| size | path | import | first inference | one-time | N | |");
        let _ = writeln!(s, "|---:|---|---:|---:|---:|---:|---|");
        for &b in sizes {
            let copied = get(p, b, "unaligned").map_or(f64::NAN, |r| r.median);
            let floor_first = get(p, b, "floor").map_or(f64::NAN, |r| r.first);
            for path in ["cpu_va", "dma_buf", "pool", "floor"] {
                let Some(r) = get(p, b, path) else { continue };
                let one = if path == "floor" { r.import } else { r.import + r.first - floor_first };
                let gain = copied - r.median;
                let n = if gain > 0.0 { format!("{:.0}", (one / gain).ceil().max(1.0)) } else { "—".into() };
                let extra = if path == "pool" {
                    let per_use = get(p, b, "import_per_use").map_or(f64::NAN, |x| x.median);
                    let rebind = get(p, b, "rebind").map_or(f64::NAN, |x| x.median);
                    format!("pool ÷ per-use {}, pool ÷ rebind {}", r2(r.median / per_use), r2(r.median / rebind))
                } else {
                    String::new()
                };
                let _ = writeln!(
                    s,
                    "| {} | {path} | {} | {} | {} | {n} | {extra} |",
                    size_label(b),
                    ms(r.import),
                    ms(r.first),
                    ms(one)
                );
            }
        }
        let _ = writeln!(s);
    }
    {
        let ticks: Vec<(f64, String)> = sizes.iter().map(|b| (*b as f64, size_label(*b))).collect();
        let series: Vec<svg::Series> = a
            .profiles
            .iter()
            .map(|p| svg::Series {
                name: format!("{p}: import ÷ pool"),
                points: sizes
                    .iter()
                    .filter_map(|b| {
                        Some((*b as f64, get(p, *b, "import_per_use")?.median / get(p, *b, "pool")?.median))
                    })
                    .collect(),
            })
            .collect();
        let svg = svg::line_chart(
            "dma-buf imported per inference ÷ NpuPool reuse (virtual platform)",
            "input size",
            "median ratio (log)",
            &ticks,
            &series,
            true,
            Some(1.0),
        );
        let _ = std::fs::write(a.out.join("pool.svg"), svg);
        let _ = writeln!(s, "![import per use against the pool](pool.svg)\n");
    }

    // ---- throughput ----
    let _ = writeln!(s, "## 3. Throughput with requests in flight\n");
    let _ = writeln!(
        s,
        "Inferences per second with 1, 2 and 4 requests started together (`start_async` on each, then `wait`), as \
         a ratio to one request; each request has its own input and output. This machine has {} CPUs, and the \
         virtual NPU runs on them.\n",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let _ = writeln!(s, "| model | device | 1 request (inf/s) | 2 ÷ 1 | 4 ÷ 1 |");
    let _ = writeln!(s, "|---|---|---:|---:|---:|");
    for (m, d, v) in tput {
        let _ = writeln!(s, "| {m} | {d} | {:.0} | {} | {} |", v[0], r2(v[1] / v[0]), r2(v[2] / v[0]));
    }
    let groups: Vec<String> = tput.iter().map(|t| format!("{} {}", t.0, t.1)).collect();
    let svg = svg::bar_chart(
        "Throughput ÷ one request (virtual platform)",
        "inferences/s ÷ 1 request",
        &groups,
        &[1usize, 2, 4]
            .iter()
            .enumerate()
            .map(|(i, n)| (format!("{n} in flight"), tput.iter().map(|t| t.2[i] / t.2[0]).collect()))
            .collect::<Vec<_>>(),
        Some(1.0),
    );
    let _ = std::fs::write(a.out.join("throughput.svg"), svg);
    let _ = writeln!(s, "\n![throughput](throughput.svg)\n");
    match pipeline {
        Some(text) => {
            let _ = writeln!(
                s,
                "Pipeline (`benches/pipeline.rs`, same run of `cargo xtask bench`):\n\n```text\n{}\n```\n",
                text.trim()
            );
        }
        None => {
            let _ = writeln!(
                s,
                "Pipeline: not run (`cargo xtask bench` runs `benches/pipeline.rs`, which needs feature `sycl`).\n"
            );
        }
    }

    // ---- bridge ----
    let _ = writeln!(s, "## 4. Bridge overhead: the crate against OpenVINO's C API\n");
    let _ = writeln!(
        s,
        "`testkit::models::fully_connected` (4 KiB in and out): bind the input, infer, read the output into a \
         buffer, through the crate and through raw `openvino-sys` calls (same compiled model, same input tensor, \
         own requests), interleaved; then each step alone. Target: ≤ 1.02x for the whole sequence.\n"
    );
    let _ = writeln!(s, "| device | step | crate | raw C API | crate ÷ raw | per round: median (IQR) | crate − raw |");
    let _ = writeln!(s, "|---|---|---:|---:|---:|---:|---:|");
    for b in bridge {
        for (step, c, r, p) in &b.steps {
            let _ = writeln!(
                s,
                "| {} | {step} | {} | {} | {:.3} | {:.3} ({:.3}–{:.3}) | {} |",
                b.device,
                ms(*c),
                ms(*r),
                c / r,
                p.0,
                p.1,
                p.2,
                ms(c - r)
            );
        }
    }
    let _ = writeln!(s);
    for b in bridge {
        let Some(&(_, c, r, _)) = b.steps.first() else { continue };
        let _ = writeln!(
            s,
            "**Target ≤ 1.02x, {}:** {} ({} per inference).\n",
            b.device,
            if c / r <= 1.02 { format!("met, {:.3}x", c / r) } else { format!("not met, {:.3}x", c / r) },
            ms(c - r)
        );
    }

    // ---- vnpu ----
    let _ = writeln!(s, "## 5. Virtual NPU overhead: the same model on the virtual NPU and on the CPU plugin\n");
    let _ = writeln!(
        s,
        "Each model compiled for `NPU` (the virtual one: the NPU plugin, the virtual Level Zero driver, which \
         compiles the graph for OpenVINO's CPU plugin in f32) and for `CPU` (f32), input bound once (an L0 host \
         tensor on the NPU: no copy, no import), inferences interleaved. Target: ≤ 1.05x for models of ≥ 1 ms. \
         *fixed* = NPU − CPU per inference.\n"
    );
    let _ = writeln!(
        s,
        "| model | CPU plugin | virtual NPU | NPU ÷ CPU | per round: median (IQR) | NPU − CPU | CPU time ratio | plain input: NPU ÷ CPU | max \\|NPU − CPU\\| |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in vnpu {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.3} | {:.3} ({:.3}–{:.3}) | {} | {} | {} | {:.2e} |",
            r.model,
            ms(r.cpu),
            ms(r.npu),
            r.npu / r.cpu,
            r.paired.0,
            r.paired.1,
            r.paired.2,
            ms(r.npu - r.cpu),
            r2(r.npu_cpu / r.cpu_cpu),
            r2(r.npu_plain / r.cpu),
            r.max_diff
        );
    }
    let fixed = vnpu.first().map_or(f64::NAN, |r| r.npu - r.cpu);
    for r in vnpu.iter().filter(|r| r.cpu >= 1e-3) {
        let ratio = r.npu / r.cpu;
        let _ = writeln!(
            s,
            "\n**Target ≤ 1.05x, {} ({}):** {} {:.3}x; the tiny model's fixed dispatch cost ({}) is {:.1}% of it.",
            r.model,
            ms(r.cpu),
            if ratio <= 1.05 { "met," } else { "not met," },
            ratio,
            ms(fixed),
            fixed / r.cpu * 100.0
        );
    }
    if !vnpu.is_empty() {
        let _ = writeln!(
            s,
            "\nWhere the time goes: the virtual NPU runs the same CPU-plugin graph (same f32 precision, the \
             same cores), so its extra is (1) a fixed dispatch cost per inference, {} here (the tiny model), \
             spent on the CPU (its CPU-time ratio equals its wall-time ratio): the NPU plugin's submission \
             (mutable command list, queue, fence), the virtual driver's Level Zero calls, and its engine's \
             per-execution wrapping of every graph argument as a new `ov::Tensor` bound to a pooled CPU \
             request (`crates/virtual-l0/src/npu/engine.rs`, `run`: about one C API bind, ~0.7 µs, per \
             argument); (2) for inputs that are not the plugin's memory, the plugin's copy (*plain input* \
             column: a heap tensor, shadow-copied). Threading and precision add nothing measurable: the \
             graphs are compiled with `INFERENCE_PRECISION_HINT=f32` on both sides, and the CPU time \
             ratios of the ≥ 1 ms models stay within the wall-time ratios' noise.",
            ms(fixed)
        );
    }
    let groups: Vec<String> = vnpu.iter().map(|r| r.model.clone()).collect();
    let svg = svg::bar_chart(
        "Virtual NPU ÷ CPU plugin, same model",
        "median ratio",
        &groups,
        &[
            ("wall time".to_string(), vnpu.iter().map(|r| r.npu / r.cpu).collect()),
            ("CPU time".to_string(), vnpu.iter().map(|r| r.npu_cpu / r.cpu_cpu).collect()),
        ],
        Some(1.0),
    );
    let _ = std::fs::write(a.out.join("vnpu.svg"), svg);
    let _ = writeln!(s, "\n![virtual NPU overhead](vnpu.svg)\n");
    s
}

/// One line of `what`'s ratios (size, ratio) split at `sweep::SMALL_MAX` (above it each path has one
/// request, so the two ranges say different things), with the values at the cells over the pool
/// target; nothing when nothing was measured.
fn split_line(s: &mut String, what: &str, cells: &[(usize, f64)], over: &[String]) {
    if cells.is_empty() {
        return;
    }
    let range = |small: bool| {
        let mut v: Vec<f64> = cells.iter().filter(|c| (c.0 <= sweep::SMALL_MAX) == small).map(|c| c.1).collect();
        v.sort_by(|x, y| x.partial_cmp(y).expect("no NaN"));
        match (v.first(), v.last()) {
            (Some(lo), Some(hi)) => {
                format!("{lo:.2}x to {hi:.2}x (median {:.2}x, {} cells)", measure::median(&v), v.len())
            }
            _ => "not measured".to_string(),
        }
    };
    let at = if over.is_empty() {
        String::new()
    } else {
        format!("; at the cells over the pool target: {}", over.join(", "))
    };
    let _ =
        writeln!(s, "{what}: up to {} {}; above {}{at}.\n", size_label(sweep::SMALL_MAX), range(true), range(false));
}

/// One "**Target (...)**" line: how many of `points` (profile, path, size, ratio to the floor) are
/// within `target`, and those over it, each named by `name` and its size.
fn target_line(
    s: &mut String,
    what: &str,
    target: f64,
    points: &[&(String, String, usize, f64)],
    name: impl Fn(&(String, String, usize, f64)) -> String,
) {
    let over: Vec<_> = points.iter().filter(|w| w.3 > target).collect();
    let listed = if over.is_empty() {
        String::new()
    } else {
        // Three decimals: a value just over the target would print as the target itself with two.
        let each: Vec<_> = over.iter().map(|w| format!("{} {} {:.3}x", name(w), size_label(w.2), w.3)).collect();
        format!("; over: {}", each.join(", "))
    };
    let _ = writeln!(
        s,
        "**Target ({what} within {target}x of the floor at every size):** {} of {} measurements within{listed}.\n",
        points.len() - over.len(),
        points.len(),
    );
}
