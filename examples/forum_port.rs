//! The forum snippet, ported step by step — and then done the way that works.
//!
//! The snippet developers post (Intel community forum, KB 000100965) wants SYCL and the NPU to share
//! one buffer:
//!
//! ```cpp
//! auto ctx    = compiled_model.get_context().as<ov::intel_npu::level_zero::ZeroContext>();
//! auto ze_ctx = static_cast<ze_context_handle_t>(ctx.get());
//! sycl::device dev = /* the SYCL device for that context */;
//! sycl::context sctx = sycl::make_context<sycl::backend::ext_oneapi_level_zero>(
//!     {ze_ctx, {dev}, sycl::ext::oneapi::level_zero::ownership::keep});
//! void* p = sycl::malloc_shared(bytes, dev, sctx);
//! auto t = ctx.create_tensor(ov::element::f32, shape, p /* as a remote tensor */);
//! request.set_input_tensor(t); request.infer();
//! ```
//!
//! This program runs each of those steps with npu-sycl-bridge and prints what it got. The route
//! stops at "choose the SYCL device": the NPU's Level Zero driver is never a SYCL platform, so there
//! is no device to make the context with. It prints the typed error the card path returns (and what
//! the SYCL runtime itself says when the context is forced on the GPU's device), then continues with
//! [`Auto`], which tries the strategies in order and keeps the first that works, runs a real model (built in
//! code by `testkit::models`) on the NPU straight from and into SYCL memory, checks the
//! output against OpenVINO's CPU plugin, and shows that no copy was made.
//!
//! On a machine with an Intel NPU (`/dev/accel/accel*` and a system `libze_loader.so.1`) it uses
//! the real hardware; otherwise the virtual Level Zero platform, and it says so first.
//!
//! Run: `cargo xtask example` (= `cargo run --features sycl --example forum_port`). Exit status 1
//! when the NPU's output differs from the CPU plugin's, or on any error.

use std::sync::Arc;

use anyhow::{anyhow, Context as _, Result};
use npu_sycl_bridge::npu::NpuContext;
use npu_sycl_bridge::openvino::{CompiledModel, Core, Properties, Tensor, TensorType};
use npu_sycl_bridge::ownership::Foreign;
use npu_sycl_bridge::raw::AsRaw;
use npu_sycl_bridge::strategy::{Auto, SharedTensor, Strategy, StrategyKind};
use npu_sycl_bridge::sycl::{self, DeviceType, Platform};
use npu_sycl_bridge::ErrorKind;
use testkit::models::{self, ReferenceModel};
use testkit::virtual_platform::{self, Selection, VirtualPlatform};

/// Prints a numbered step: the C++ line of the snippet and what the bridge does for it.
fn step(n: u32, cpp: &str, rust: &str) {
    println!();
    println!("[{n}] {cpp}");
    println!("    bridge: {rust}");
}

/// Prints a result line of the current step.
fn got(line: impl AsRef<str>) {
    for (i, l) in line.as_ref().lines().enumerate() {
        println!("    {} {l}", if i == 0 { "->" } else { "  " });
    }
}

/// Wraps long messages (errors) for the terminal, indented under the step.
fn wrapped(prefix: &str, text: &str) {
    let width = 100usize;
    let mut line = String::from(prefix);
    let indent = " ".repeat(prefix.chars().count());
    for word in text.split_whitespace() {
        if line.chars().count() + 1 + word.chars().count() > width && line.trim().len() > prefix.trim().len() {
            println!("{line}");
            line = indent.clone();
        }
        if !line.ends_with(' ') && !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    println!("{line}");
}

fn main() {
    match run() {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("forum_port: error: {e:#}");
            std::process::exit(1);
        }
    }
}

/// Counter deltas of the virtual platform around the inference.
struct Counters {
    names: [&'static str; 6],
    before: [u64; 6],
}

impl Counters {
    const NAMES: [&'static str; 6] = [
        "gpu.bytes_copied",
        "npu.bytes_copied",
        "npu.inferences",
        "npu.graph_args.dma_buf",
        "npu.graph_args.sysmem",
        "npu.imports.dma_buf",
    ];

    fn start(vp: &VirtualPlatform) -> Counters {
        Counters { names: Self::NAMES, before: Self::NAMES.map(|n| vp.counter(n)) }
    }

    fn delta(&self, vp: &VirtualPlatform, name: &str) -> u64 {
        let i = self.names.iter().position(|n| *n == name).expect("a known counter");
        vp.counter(name) - self.before[i]
    }
}

fn run() -> Result<bool> {
    println!("npu-sycl-bridge: the forum snippet, ported step by step");
    println!("=======================================================");
    // Before anything opens a Level Zero loader: the real NPU, or the virtual platform.
    let selection = virtual_platform::select(std::env::args().any(|a| a == "--virtual"))
        .context("choosing the Level Zero platform")?;
    match &selection {
        Selection::Virtual { platform, reason } => {
            println!("PLATFORM: VIRTUAL — {reason}.");
            println!(
                "          Running on npu-sycl-bridge's virtual Level Zero platform (a virtual Intel GPU and NPU,"
            );
            println!("          {}),", platform.path().display());
            println!(
                "          under the unmodified OpenVINO NPU plugin and DPC++ runtime. Timings mean nothing here."
            );
        }
        Selection::Real { loader, accel } => {
            let nodes: Vec<String> = accel.iter().map(|p| p.display().to_string()).collect();
            println!("PLATFORM: REAL Intel NPU ({}), Level Zero loader {}", nodes.join(", "), loader.display());
        }
    }

    let m = models::convolution();
    println!(
        "MODEL:    {} (built in code by testkit::models): {} {} {} -> {} {} {}",
        m.name,
        m.inputs[0].name,
        m.inputs[0].element_type,
        m.inputs[0].shape,
        m.outputs[0].name,
        m.outputs[0].element_type,
        m.outputs[0].shape
    );

    // [1] compile for the NPU.
    step(
        1,
        "ov::CompiledModel compiled_model = core.compile_model(model, \"NPU\");",
        "Core::compile_model(&model, \"NPU\", ..)",
    );
    let core = Core::new().context("creating the OpenVINO core")?;
    let model = core.read_model_from_memory(&m.xml, &m.weights).context("reading the model")?;
    let compiled = core.compile_model(&model, "NPU", &Properties::new()).context("compiling for the NPU")?;
    got(format!(
        "compiled (OpenVINO {}); EXECUTION_DEVICES = {}",
        Core::version().unwrap_or_else(|e| format!("? ({e})")),
        compiled.property("EXECUTION_DEVICES").unwrap_or_else(|e| format!("? ({e})"))
    ));

    // [2] the compiled model's remote context.
    step(2, "auto remote = compiled_model.get_context();", "CompiledModel::context()");
    let remote = compiled.context().context("compiled_model.get_context()")?;
    got(format!("remote context of device {:?}, params {:?}", remote.device_name()?, remote.params()?));

    // [3] as ZeroContext.
    step(
        3,
        "auto zero = remote.as<ov::intel_npu::level_zero::ZeroContext>();",
        "NpuContext::from_compiled_model(&compiled)",
    );
    let npu = NpuContext::from_compiled_model(&compiled).context("the NPU's ZeroContext")?;
    let caps = npu.capabilities();
    got(format!(
        "the NPU plugin's context: Level Zero driver {:p} (Intel NPU driver uuid), device {:?}\n\
         driver version {:#x}, API {}; dma-buf import: {}, system-memory (CPU_VA) import: {}, mutable command lists: {}",
        npu.driver().as_raw(),
        caps.device_name,
        caps.driver_version,
        caps.api_version,
        yes(caps.fd_import),
        yes(caps.sysmem_import),
        yes(caps.mutable_command_lists)
    ));

    // [4] its ze_context_handle_t.
    step(4, "ze_context_handle_t ze_ctx = zero.get();", "NpuContext::level_zero_context().as_raw()");
    let ze_ctx = npu.level_zero_context().as_raw();
    got(format!(
        "ze_context_handle_t = {ze_ctx:p} (L0_CONTEXT), on the NPU's driver {:p}\n\
         borrowed from the NPU plugin: the bridge never destroys it; it lives as long as the Core",
        npu.driver().as_raw()
    ));

    // [5] choose the SYCL device for that context.
    step(
        5,
        "sycl::device dev = /* the SYCL device of ze_ctx's driver */;",
        "sycl::platforms(), Platform::find_by_native_driver(NPU driver)",
    );
    let platforms = sycl::platforms().context("sycl::platform::get_platforms()")?;
    if platforms.is_empty() {
        got("SYCL lists no platform at all (no usable Level Zero GPU driver)");
    }
    for p in &platforms {
        let devs: Vec<String> = p.devices()?.iter().map(|d| format!("{:?} {:?}", d.device_type, d.name)).collect();
        got(format!(
            "SYCL platform [{}] {:?} ({:?}), Level Zero driver {:p}: {}",
            p.index,
            p.name,
            p.backend,
            p.native_driver().unwrap_or(std::ptr::null_mut()),
            devs.join(", ")
        ));
    }
    let npu_platform = Platform::find_by_native_driver(npu.driver().as_raw())?;
    let npu_device = sycl::SyclDevice::find_by_native(npu.device().as_raw())?;
    let gpu = sycl::devices()?.into_iter().find(|d| d.is_level_zero() && d.device_type == DeviceType::Gpu).ok_or_else(
        || anyhow!("no Level Zero GPU is a SYCL device here; every SYCL ⇄ NPU strategy needs the iGPU's"),
    )?;
    match (&npu_platform, &npu_device) {
        (None, None) => got(format!(
            "NO SYCL platform wraps the NPU's driver {:p}, and no SYCL device is the NPU: the NPU is not a SYCL device.\n\
             DPC++ makes platforms only of Level Zero drivers that have a GPU device. The only candidate is the\n\
             GPU {:?} — a device of ANOTHER driver ({:p}).",
            npu.driver().as_raw(),
            gpu.name,
            gpu.native_driver().unwrap_or(std::ptr::null_mut())
        )),
        _ => got(format!(
            "unexpected: SYCL lists the NPU's driver (platform {npu_platform:?}, device {npu_device:?}); the card path may work"
        )),
    }

    // [6] make_context(ownership::keep).
    step(
        6,
        "sycl::context sctx = sycl::make_context<backend::ext_oneapi_level_zero>({ze_ctx, {dev}, ownership::keep});",
        "Strategy::card_path(npu.level_zero_context(), &npu) (the card path: the snippet's route)",
    );
    let mut card_path_error = None;
    match Strategy::card_path(npu.level_zero_context(), &npu) {
        Err(e) => {
            card_path_error = Some(e.message().to_string());
            got(format!("refused with a typed error: ErrorKind::{:?}", e.kind()));
            wrapped("       ", &format!("{e:#}"));
            // What DPC++ itself does when the snippet is forced through with the GPU's device. That
            // breaks `from_level_zero`'s contract (the context must be of the devices' driver), so it
            // is done only where the outcome is defined: on the virtual platform, whose loader checks
            // every handle. On real drivers even the shim's probe would hand the NPU driver a GPU
            // device handle.
            if selection.is_virtual() {
                let keep: Arc<dyn std::any::Any + Send + Sync> = npu.level_zero_context().clone();
                // SAFETY: the handle is the NPU plugin's live context (kept alive by `keep`, which
                // also keeps the Core alive). It belongs to another driver than the GPU's, against
                // the contract, on purpose; on the virtual platform (checked above) that is defined:
                // the shim's probe (zeMemAllocDevice on the context with the GPU's device) gets
                // ZE_RESULT_ERROR_INVALID_ARGUMENT from the loader's handle checks and throws before
                // the runtime sees the handle (tests/sycl_shim.rs, cross_driver_make_context_is_an_error).
                let forced = unsafe {
                    sycl::SyclContext::from_level_zero(
                        ze_ctx,
                        std::slice::from_ref(&gpu),
                        Foreign::Borrowed { owner: Some(keep) },
                    )
                };
                match forced {
                    Err(e) => {
                        got(format!(
                            "forced with the GPU's device {:?}, make_context throws (ErrorKind::{:?}):",
                            gpu.name,
                            e.kind()
                        ));
                        wrapped("       ", e.message());
                    }
                    Ok(ctx) => got(format!("forced with the GPU's device, make_context returned {ctx:?} (unexpected)")),
                }
            } else {
                got("not forced with the GPU's device on real drivers: a context of another driver is outside \
                     make_context's contract (adapter v2 throws, v1 crashes at teardown)");
            }
        }
        Ok(card) => got(format!("the card path works here (SYCL lists the NPU's driver): {card:?}")),
    }

    // [7] malloc_shared in that context.
    step(
        7,
        "void* p = sycl::malloc_shared(bytes, dev, sctx);",
        "CardPath::tensor (UsmBuffer::new(.., UsmKind::Shared, ..))",
    );
    got("not reached on this route: there is no SYCL context over the NPU's Level Zero context to allocate in");

    // [8] wrap as a remote tensor — with the strategy that works.
    step(
        8,
        "auto t = zero.create_tensor(ov::element::f32, shape, p);",
        "Auto::select(&npu, &sycl_context, &gpu): try the strategies in order, keep the first that works",
    );
    let sycl_context = sycl::SyclContext::new(&gpu).context("sycl::context(gpu)")?;
    let auto = Auto::select(&npu, &sycl_context, &gpu).context("Auto::select")?;
    let decision = auto.decision();
    got(format!("Auto chose: {} (zero-copy: {})", decision.chosen, yes(decision.chosen.is_zero_copy())));
    for (kind, outcome) in &decision.attempts {
        match outcome {
            Ok(()) => println!("       {:<14} works", kind.as_str()),
            Err(e) => {
                let tag = match e.kind() {
                    ErrorKind::Unsupported { .. } => "unsupported",
                    _ => "failed",
                };
                if card_path_error.as_deref() == Some(e.message()) {
                    println!("       {:<14} {tag}: the typed error of step 6", kind.as_str());
                } else {
                    wrapped(&format!("       {:<14} {tag}: ", kind.as_str()), e.message());
                }
            }
        }
    }
    wrapped("       decision report: ", &decision.to_string());

    let (din, dout) = (&m.inputs[0], &m.outputs[0]);
    let mut input = auto.tensor(din.element_type, din.shape.clone(), TensorType::Input).context("the input tensor")?;
    let output = auto.tensor(dout.element_type, dout.shape.clone(), TensorType::Output).context("the output tensor")?;
    let sample = m.sample_input(0);
    input.write(0, &sample).context("writing the input through SYCL")?;
    describe_tensor("input ", &input)?;
    describe_tensor("output", &output)?;

    // [9] bind and infer.
    step(
        9,
        "request.set_input_tensor(t); request.set_output_tensor(o); request.infer();",
        "InferRequest::set_input_tensor / set_output_tensor / infer",
    );
    let mut request = compiled.create_infer_request()?;
    let vp = selection.virtual_platform();
    let counters = vp.map(Counters::start);
    request.set_input_tensor(0, input.remote_tensor())?;
    request.set_output_tensor(0, output.remote_tensor())?;
    request.infer().context("inference on the NPU")?;
    let copies = vp.zip(counters.as_ref()).map(|(vp, c)| {
        (
            c.delta(vp, "gpu.bytes_copied"),
            c.delta(vp, "npu.bytes_copied"),
            c.delta(vp, "npu.inferences"),
            c.delta(vp, "npu.graph_args.dma_buf"),
            c.delta(vp, "npu.graph_args.sysmem"),
        )
    });
    got("inference finished");

    // [10] read the output through SYCL and compare with the CPU plugin.
    step(
        10,
        "q.memcpy(host, out, bytes).wait();  // compare with the CPU plugin",
        "SharedTensor::read_to_vec(queue); the same model on \"CPU\"",
    );
    let npu_out: Vec<u8> = output.read_to_vec().context("reading the output through SYCL")?;
    let cpu_out = cpu_output(&core, &m, &sample)?;
    let same = match m.compare(0, &cpu_out, &npu_out) {
        Ok(()) => {
            got(format!(
                "NPU output (read by SYCL) equals the CPU plugin's: {} values within atol {} / rtol {}",
                dout.shape.element_count(),
                m.atol,
                m.rtol
            ));
            true
        }
        Err(e) => {
            got(format!("MISMATCH: the NPU output differs from the CPU plugin's: {e}"));
            false
        }
    };

    // [11] was anything copied?
    step(
        11,
        "// was anything copied between SYCL and the NPU?",
        "virtual platform counters / remote tensor parameters",
    );
    let zero_copy = report_copies(&auto, &input, &output, copies)?;

    println!();
    println!(
        "RESULT: strategy {} ran; output {} the CPU plugin's; {}",
        auto.kind(),
        if same { "equals" } else { "DIFFERS FROM" },
        if zero_copy { "no copy was made" } else { "copies were made (see step 11)" }
    );
    // Teardown in any order is sound; this is the natural one: request, tensors, strategy, contexts.
    drop(request);
    drop((input, output));
    drop(auto);
    Ok(same)
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn describe_tensor(what: &str, t: &SharedTensor) -> Result<()> {
    let p = t.remote_tensor().params()?;
    got(format!(
        "{what}: {} remote tensor {} {}, MEM_TYPE {}, MEM_HANDLE {:p}, SYCL pointer {:p}",
        t.kind(),
        t.element_type(),
        t.shape(),
        p.mem_type.map(|m| m.as_str()).unwrap_or("?"),
        p.mem_handle,
        t.sycl_ptr()
    ));
    Ok(())
}

/// The same model on OpenVINO's CPU plugin (computing in f32), from the same input bytes.
fn cpu_output(core: &Core, m: &ReferenceModel, input: &[u8]) -> Result<Vec<u8>> {
    let model = core.read_model_from_memory(&m.xml, &m.weights)?;
    let cpu: CompiledModel =
        core.compile_model(&model, "CPU", &Properties::new().set("INFERENCE_PRECISION_HINT", "f32"))?;
    let mut r = cpu.create_infer_request()?;
    let d = &m.inputs[0];
    let t = Tensor::from_bytes(d.element_type, d.shape.clone(), input)?;
    r.set_input_tensor(0, &t)?;
    r.infer().context("inference on the CPU plugin")?;
    let out = r.output_tensor(0)?;
    let bytes = out.bytes()?.to_vec();
    Ok(bytes)
}

/// Prints the evidence that no copy was made; returns whether the run was zero-copy.
fn report_copies(
    auto: &Auto,
    input: &SharedTensor,
    output: &SharedTensor,
    copies: Option<(u64, u64, u64, u64, u64)>,
) -> Result<bool> {
    if !auto.kind().is_zero_copy() {
        got(format!(
            "the chosen strategy ({}) is not zero-copy: SYCL reaches the NPU plugin's memory by memcpy",
            auto.kind()
        ));
        return Ok(false);
    }
    match copies {
        Some((gpu_copied, npu_copied, inferences, args_dma_buf, args_sysmem)) => {
            let imported = match auto.kind() {
                StrategyKind::DmaBuf => args_dma_buf,
                _ => args_sysmem,
            };
            got(format!(
                "virtual platform counters during bind + infer: gpu.bytes_copied +{gpu_copied}, npu.bytes_copied \
                 +{npu_copied}, npu.inferences +{inferences},\n\
                 npu.graph_args.dma_buf +{args_dma_buf}, npu.graph_args.sysmem +{args_sysmem} (graph arguments that \
                 were SYCL's own imported pages)"
            ));
            let ok = gpu_copied == 0 && npu_copied == 0 && inferences == 1 && imported == 2;
            if ok {
                got("no copy was made: the NPU graph read its input from and wrote its output into SYCL's memory");
            } else {
                got("NOT zero-copy: a driver copied bytes, or the graph ran on other memory");
            }
            Ok(ok)
        }
        None => {
            // Real hardware: no counters. What can be checked is which import path the plugin used,
            // and for CPU_VA that the NPU uses SYCL's very address.
            let mut ok = true;
            for (what, t) in [("input", input), ("output", output)] {
                let p = t.remote_tensor().params()?;
                let mem_type = p.mem_type.map(|m| m.as_str()).unwrap_or("?");
                match auto.kind() {
                    StrategyKind::DmaBuf => got(format!(
                        "{what}: MEM_TYPE {mem_type}: the NPU driver imported SYCL's dma-buf (MEM_HANDLE {:p} is the \
                         NPU's mapping of the same pages; SYCL's device pointer is {:p})",
                        p.mem_handle,
                        t.sycl_ptr()
                    )),
                    _ => {
                        let same = p.mem_handle == t.sycl_ptr().cast();
                        ok &= same;
                        got(format!(
                            "{what}: MEM_TYPE {mem_type}, MEM_HANDLE {:p} {} the SYCL pointer {:p}",
                            p.mem_handle,
                            if same { "==" } else { "!=" },
                            t.sycl_ptr()
                        ));
                    }
                }
            }
            got(if ok {
                "no copy was made: the plugin imported SYCL's memory (no shadow buffer)"
            } else {
                "NOT zero-copy: the NPU uses another address than SYCL's"
            });
            Ok(ok)
        }
    }
}
