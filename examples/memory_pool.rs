//! "I want my own memory pool for the NPU: can I pass my pre-allocated memory to the NPU plugin?"
//!
//! Yes. This program allocates eight buffers once, in its own SYCL context on the iGPU (exportable
//! device memory: what reaches the NPU without a copy on every laptop generation), hands them to
//! an [`NpuPool`], and runs 1,000 inferences on two requests with tensors from the pool: SYCL
//! writes each input straight into a pool buffer, the NPU reads it and writes its output into
//! another, SYCL reads that back. It prints the pool's statistics (each buffer imported once, on
//! its first use, then never again) and the virtual platform's counters (nothing copied), and
//! checks every output against the CPU plugin.
//!
//! `cargo run --features sycl --example memory_pool [-- --virtual]`: on a machine without an Intel
//! NPU it runs on the virtual Level Zero platform and says so.
use std::sync::Arc;

use anyhow::{bail, ensure, Context as _};
use npu_sycl_bridge::npu::NpuContext;
use npu_sycl_bridge::openvino::{Core, Properties};
use npu_sycl_bridge::pool::NpuPool;
use npu_sycl_bridge::strategy::SharedTensor;
use npu_sycl_bridge::sycl::{self, ExportableDeviceMemory, Queue};
use testkit::models;
use testkit::virtual_platform::{self, Selection};

const BUFFERS: usize = 8;
const INFERENCES: usize = 1000;
/// Each request holds the tensors bound to it until it is rebound: with two requests the pool
/// settles after four inferences.
const WARM_UP: usize = 4;

fn main() -> anyhow::Result<()> {
    let selection = virtual_platform::select(std::env::args().any(|a| a == "--virtual"))?;
    let vp = selection.virtual_platform();
    match &selection {
        Selection::Virtual { reason, .. } => {
            println!("PLATFORM: VIRTUAL ({reason}): counters are real, timings are not")
        }
        Selection::Real { loader, .. } => println!("PLATFORM: REAL Intel NPU, Level Zero loader {}", loader.display()),
    }
    let counter = |name: &str| vp.map_or(0, |p| p.counter(name));

    let core = Core::new()?;
    let m = models::fully_connected();
    let model = core.read_model_from_memory(&m.xml, &m.weights)?;
    let compiled = core.compile_model(&model, "NPU", &Properties::new())?;
    let cpu = core.compile_model(&model, "CPU", &testkit::reference::cpu_properties())?;
    let npu = NpuContext::from_compiled_model(&compiled)?;
    let (din, dout) = (&m.inputs[0], &m.outputs[0]);

    // The program's own SYCL context and buffers, allocated once.
    let gpu = sycl::devices()?
        .into_iter()
        .find(|d| d.is_level_zero() && d.device_type == sycl::DeviceType::Gpu)
        .context("no Level Zero GPU is a SYCL device here")?;
    let context = sycl::SyclContext::new(&gpu)?;
    let queue = Arc::new(Queue::new(&context, &gpu)?);
    let bytes = din.byte_size().max(dout.byte_size());
    let buffers = (0..BUFFERS)
        .map(|_| ExportableDeviceMemory::new(&context, &gpu, bytes, 4096))
        .collect::<Result<Vec<_>, _>>()?;
    println!("allocated {BUFFERS} buffers of {bytes} bytes in the program's SYCL context");
    let pool = NpuPool::from_buffers(&npu, buffers)?;

    // Two inputs in turn: the sample and its negation.
    let inputs = [m.sample_input(0), testkit::npu::other_input(&m, 0)];
    let expected = testkit::reference::cpu_outputs(&cpu, &m, &inputs);

    let mut requests = [compiled.create_infer_request()?, compiled.create_infer_request()?];
    let mut warm = None;
    let copied0 = (counter("gpu.bytes_copied"), counter("npu.bytes_copied"));
    let mut copies_during_inference = (0, 0);
    for i in 0..INFERENCES {
        let request = &mut requests[i % 2];
        let mut input = SharedTensor::new(&queue, pool.tensor(din.element_type, din.shape.clone())?)?;
        let output = SharedTensor::new(&queue, pool.tensor(dout.element_type, dout.shape.clone())?)?;
        let x = i % inputs.len();
        input.write(0, &inputs[x])?; // SYCL writes the pool buffer the NPU reads
        request.set_input_tensor(0, &input)?;
        request.set_output_tensor(0, &output)?;
        let before = (counter("gpu.bytes_copied"), counter("npu.bytes_copied"));
        request.infer()?;
        copies_during_inference.0 += counter("gpu.bytes_copied") - before.0;
        copies_during_inference.1 += counter("npu.bytes_copied") - before.1;
        let got: Vec<u8> = output.read_to_vec()?; // SYCL reads the pool buffer the NPU wrote
        if let Err(e) = m.compare(0, &expected[x], &got) {
            bail!("inference {i}: the NPU's output differs from the CPU plugin's: {e}");
        }
        if i + 1 == WARM_UP {
            warm = Some(pool.stats());
        }
    }
    let warm = warm.expect("more inferences than the warm-up");
    let stats = pool.stats();
    println!("{INFERENCES} inferences on two requests; every output equals the CPU plugin's");
    println!("pool after warm-up ({WARM_UP} inferences): {warm}");
    println!("pool at the end:                   {stats}");
    println!("imports after warm-up: {}", stats.imports - warm.imports);
    println!(
        "copies during the inferences: gpu.bytes_copied +{}, npu.bytes_copied +{} (SYCL's own writes and reads: gpu.bytes_copied +{})",
        copies_during_inference.0,
        copies_during_inference.1,
        counter("gpu.bytes_copied") - copied0.0 - copies_during_inference.0,
    );
    ensure!(stats.imports <= BUFFERS as u64, "each buffer is imported at most once: {stats}");
    ensure!(stats.allocations == 0, "the pool used the program's buffers only: {stats}");
    ensure!(stats.imports == warm.imports, "no import after the warm-up: {warm} then {stats}");
    if vp.is_some() {
        ensure!(copies_during_inference == (0, 0), "nothing copied during the inferences");
    }
    println!("RESULT: {INFERENCES} inferences from a pool of the program's own SYCL buffers; {} imports in all, none after warm-up; nothing copied", stats.imports);
    Ok(())
}
