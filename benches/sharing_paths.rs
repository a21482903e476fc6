//! What binding an NPU input through each memory path costs per inference, measured in one run.
//!
//! `cargo bench --bench sharing_paths` runs on the virtual platform the bench build compiles (testkit
//! depends on virtual-l0: an optimised build under target/release). The README's figures were
//! measured with the debug build: `cargo build -p virtual-l0 &&
//! NPU_SYCL_BRIDGE_VIRTUAL_L0=target/debug/libze_loader.so cargo bench --bench sharing_paths`.
//! On a machine without an Intel NPU it runs on the virtual platform, whose "NPU" executes on
//! the CPU: the numbers then validate the plumbing (which path copies, which does not), not NPU
//! performance. The paths, for the same model and tensor (3 MiB f32 input, `models::large_input`):
//!
//! 1a. plain tensor, not page-aligned — the plugin shadow-copies it on every inference;
//! 1b. plain tensor, page-aligned — imported implicitly (sysmem import), then rebound;
//! 2.  CPU_VA remote tensor over a `PageAlignedBuffer`;
//! 3.  dma-buf fd exported by the (virtual) GPU — SHARED_BUF;
//! 4.  L0 host tensor (BINDED), the resident floor: no import, no copy.
//!
//! Reported as ratios measured in this run: each path's median against the floor (4), and the share
//! of the avoidable cost each path removes, (1a − x) / (1a − 4). Under a laptop profile
//! (`VL0_PROFILE`) a path that laptop lacks (CPU_VA on NPU 37xx) is reported with the reason; the
//! page-aligned plain tensor is then copied like the unaligned one.

use npu_sycl_bridge::level_zero::{DeviceType, Driver, L0Context};
use npu_sycl_bridge::memory::PageAlignedBuffer;
use npu_sycl_bridge::npu::NpuContext;
use npu_sycl_bridge::openvino::{Core, ElementType, InferRequest, Properties, Tensor, TensorType};
use npu_sycl_bridge::ownership::KeepAlive;
use std::sync::Arc;
use std::time::{Duration, Instant};
use testkit::{models, virtual_platform};

const WARMUP: usize = 5;
const ITERATIONS: usize = 200;
const SHAPE: [usize; 4] = [1, 3, 512, 512];

struct Measured {
    label: &'static str,
    first: Duration,
    median: Duration,
    p10: Duration,
    p90: Duration,
    cpu_per_infer: Duration,
}

fn measure(label: &'static str, request: &mut InferRequest, bind: impl FnOnce(&mut InferRequest)) -> Measured {
    let t0 = Instant::now();
    bind(request);
    request.infer().expect("first inference");
    let first = t0.elapsed();
    for _ in 0..WARMUP {
        request.infer().expect("warm-up inference");
    }
    let cpu0 = testkit::cpu_time::process_cpu_time();
    let mut times: Vec<Duration> = (0..ITERATIONS)
        .map(|_| {
            let t = Instant::now();
            request.infer().expect("inference");
            t.elapsed()
        })
        .collect();
    let cpu_per_infer = (testkit::cpu_time::process_cpu_time() - cpu0) / ITERATIONS as u32;
    times.sort();
    Measured {
        label,
        first,
        median: times[ITERATIONS / 2],
        p10: times[ITERATIONS / 10],
        p90: times[ITERATIONS * 9 / 10],
        cpu_per_infer,
    }
}

fn main() -> anyhow::Result<()> {
    let selection = virtual_platform::select(false)?;
    let model = models::large_input();
    let input = model.sample_input(0);
    let bytes = input.len();
    let core = Core::new()?;
    let ir = core.read_model_from_memory(&model.xml, &model.weights)?;
    let compiled = core.compile_model(&ir, "NPU", &Properties::new())?;
    let npu = NpuContext::from_compiled_model(&compiled)?;
    let mut results = Vec::new();

    // 1a. Plain tensor over memory that is deliberately 64 bytes past a page boundary.
    {
        let mut backing = PageAlignedBuffer::new(bytes + 4096)?;
        backing.as_bytes_mut()[64..64 + bytes].copy_from_slice(&input);
        let ptr = backing.as_mut_ptr().cast::<u8>().wrapping_add(64).cast();
        let owner: KeepAlive = Arc::new(backing);
        // SAFETY: `ptr` points 64 bytes into a live mapping of bytes + 4096 bytes, so `bytes` bytes
        // are valid from it; `owner` keeps the mapping alive as long as the tensor; nothing else
        // touches it.
        let tensor = unsafe { Tensor::from_host_ptr(ElementType::F32, SHAPE, ptr, Some(owner))? };
        let mut r = compiled.create_infer_request()?;
        results.push(measure("1a plain, unaligned (copied)", &mut r, |r| r.set_input_tensor(0, &tensor).unwrap()));
    }
    // 1b. Plain tensor, page-aligned: imported implicitly.
    {
        let tensor = PageAlignedBuffer::from_slice(&input)?.into_tensor(ElementType::F32, SHAPE)?;
        let mut r = compiled.create_infer_request()?;
        results.push(measure("1b plain, page-aligned (imported)", &mut r, |r| r.set_input_tensor(0, &tensor).unwrap()));
    }
    // 2. CPU_VA, where the NPU imports user memory.
    let mut missing = Vec::new();
    match npu.import(PageAlignedBuffer::from_slice(&input)?, ElementType::F32, SHAPE, TensorType::Input) {
        Ok(tensor) => {
            let mut r = compiled.create_infer_request()?;
            results.push(measure("2  CPU_VA remote tensor", &mut r, |r| r.set_input_tensor(0, &tensor).unwrap()));
        }
        Err(e) => missing.push(format!("2  CPU_VA remote tensor: not on this laptop ({:?})", e.kind())),
    }
    // 3. dma-buf exported by the GPU.
    {
        let (driver, device) = Driver::all()?
            .into_iter()
            .find_map(|d| {
                let dev = d
                    .devices()
                    .ok()?
                    .into_iter()
                    .find(|v| v.properties().is_ok_and(|p| p.device_type == DeviceType::Gpu))?;
                Some((d, dev))
            })
            .ok_or_else(|| anyhow::anyhow!("no GPU driver"))?;
        let gpu = Arc::new(L0Context::create(driver)?);
        let mut mem = gpu.alloc_device_exportable(device, bytes, 4096)?;
        mem.write(0, &input)?;
        let tensor = npu.import(mem.export_dma_buf()?, ElementType::F32, SHAPE, TensorType::Input)?;
        let mut r = compiled.create_infer_request()?;
        results.push(measure("3  dma-buf (SHARED_BUF)", &mut r, |r| r.set_input_tensor(0, &tensor).unwrap()));
        drop(r);
        drop(tensor);
        drop(mem);
    }
    // 4. Resident floor.
    {
        let mut tensor = npu.l0_host_tensor(ElementType::F32, SHAPE, TensorType::Binded)?;
        tensor.host_bytes_mut()?.copy_from_slice(&input);
        let mut r = compiled.create_infer_request()?;
        results
            .push(measure("4  L0 host tensor (resident floor)", &mut r, |r| r.set_input_tensor(0, &tensor).unwrap()));
    }

    let floor = results.last().expect("the floor was measured").median.as_secs_f64();
    let copy = results[0].median.as_secs_f64();
    let laptop = npu.capabilities().generation.map_or_else(|| "unknown laptop".to_string(), |g| g.to_string());
    println!(
        "NPU input paths on {laptop}, {} MiB f32 input, {ITERATIONS} inferences each ({}):",
        bytes >> 20,
        if selection.is_virtual() { "virtual platform: plumbing, not NPU speed" } else { "real NPU" }
    );
    println!(
        "{:<36} {:>11} {:>11} {:>11} {:>11} {:>11} {:>9} {:>14}",
        "path", "first (ms)", "median(ms)", "p10 (ms)", "p90 (ms)", "cpu/inf(ms)", "÷ floor", "saving of 1a"
    );
    for m in &results {
        let med = m.median.as_secs_f64();
        let saving = if (copy - floor).abs() > f64::EPSILON { (copy - med) / (copy - floor) } else { f64::NAN };
        println!(
            "{:<36} {:>11.3} {:>11.3} {:>11.3} {:>11.3} {:>11.3} {:>9.2} {:>13.0}%",
            m.label,
            m.first.as_secs_f64() * 1e3,
            med * 1e3,
            m.p10.as_secs_f64() * 1e3,
            m.p90.as_secs_f64() * 1e3,
            m.cpu_per_infer.as_secs_f64() * 1e3,
            med / floor,
            saving * 100.0
        );
    }
    for m in &missing {
        println!("{m}");
    }
    Ok(())
}
