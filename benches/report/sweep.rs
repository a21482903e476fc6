//! The size sweep (issue 13 items 1 and 4), run in a child process per laptop profile: every NPU
//! input path at every size, interleaved, plus a single-core memcpy of the same size, plus each
//! path's one-time cost (import call and first inference).

use std::sync::Arc;
use std::time::Instant;

use npu_sycl_bridge::level_zero::{DeviceType, Driver, L0Allocation, L0Context};
use npu_sycl_bridge::memory::PageAlignedBuffer;
use npu_sycl_bridge::npu::NpuContext;
use npu_sycl_bridge::openvino::{Bindable, Core, ElementType, InferRequest, Properties, Tensor, TensorType};
use npu_sycl_bridge::ownership::KeepAlive;
use npu_sycl_bridge::pool::NpuPool;
use npu_sycl_bridge::Result;
use testkit::{models, virtual_platform};

use crate::measure::{interleave, median, paired, shuffle, Variant};

/// Every path, in the report's order. The floor is the L0 host tensor; `second_floor` is a second one,
/// made and run exactly as the floor (an A/A control: its ratio to the floor is the measurement's
/// own spread). `memcpy` is not a path but this machine's single-core copy of the same bytes,
/// measured in the same rounds.
pub const PATHS: [&str; 10] = [
    "unaligned",
    "aligned",
    "cpu_va",
    "dma_buf",
    "pool",
    "rebind",
    "import_per_use",
    "second_floor",
    "floor",
    "memcpy",
];

/// The NPU input paths, without the memcpy reference.
pub fn input_paths() -> impl Iterator<Item = &'static str> {
    PATHS.into_iter().filter(|p| *p != "memcpy")
}

pub fn label(path: &str) -> &'static str {
    match path {
        "unaligned" => "plain tensor, not page-aligned (copied)",
        "aligned" => "plain tensor, page-aligned",
        "cpu_va" => "CPU_VA remote tensor",
        "dma_buf" => "dma-buf (SHARED_BUF)",
        "pool" => "NpuPool tensor, reused by its request (dma-buf)",
        "rebind" => "two dma-buf tensors bound in turn",
        "import_per_use" => "dma-buf imported per inference",
        "second_floor" => "a second L0 host tensor (A/A control)",
        "floor" => "L0 host tensor (floor)",
        "memcpy" => "single-core memcpy of the input",
        _ => "?",
    }
}

pub const COUNTERS: [&str; 4] = ["npu.bytes_copied", "npu.imports.sysmem", "npu.imports.dma_buf", "npu.inferences"];

fn gpu() -> Result<(Arc<L0Context>, npu_sycl_bridge::level_zero::L0Device)> {
    for d in Driver::all()? {
        for dev in d.devices()? {
            if dev.properties()?.device_type == DeviceType::Gpu {
                return Ok((Arc::new(L0Context::create(d)?), dev));
            }
        }
    }
    Err(npu_sycl_bridge::Error::invalid_argument("no GPU device on the virtual platform"))
}

fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

/// `n` of what `make(k)` makes, and the seconds the first one took (a path's import cost).
fn made<T>(n: usize, mut make: impl FnMut(usize) -> Result<T>) -> Result<(Vec<T>, f64)> {
    let mut first = 0.0;
    let v = (0..n)
        .map(|k| {
            let t = Instant::now();
            let x = make(k)?;
            if k == 0 {
                first = secs(t);
            }
            Ok(x)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((v, first))
}

/// Runs the sweep under this process's `VL0_PROFILE` and prints one `ROW` line per path and size.
pub fn child(sizes: &[usize], budget: f64) -> Result<()> {
    let selection = virtual_platform::select(false)?;
    let vp = selection.virtual_platform();
    let counter = |n: &str| vp.map_or(0, |v| v.counter(n));
    let profile = std::env::var("VL0_PROFILE").unwrap_or_else(|_| "lnl".into());
    let core = Core::new()?;
    let (gpu_ctx, gpu_dev) = gpu()?;
    for &bytes in sizes {
        let n = bytes / 4;
        let shape = [1, n];
        let m = models::scale(&shape);
        let input = m.sample_input(0);
        let ir = core.read_model_from_memory(&m.xml, &m.weights)?;
        let compiled = core.compile_model(&ir, "NPU", &Properties::new())?;
        let npu = NpuContext::from_compiled_model(&compiled)?;
        // Where a buffer lands (its pages, cache sets, TLB entries) moves one buffer's time by up
        // to ±14% at 1 and 16 MiB here, even between two identical L0 host tensors. Every buffer
        // and request is made afresh for each placement and the rounds of all are pooled, so a
        // ratio compares paths, not the luck of one allocation.
        let mut measured: Vec<Variant<'static>> = Vec::new();
        // Every placement's one-time costs: a path set up first in its process pays the size's
        // warm-up, so each is reported as its median over the placements.
        let mut once: Vec<Once> = Vec::new();
        let placements = placements(bytes);
        for placement in 0..placements {
            let env = Placement {
                bytes,
                shape,
                input: &input,
                index: placement,
                profile: &profile,
                compiled: &compiled,
                npu: &npu,
            };
            let (variants, first_once) = env.measure(&gpu_ctx, gpu_dev, budget / placements as f64, &counter)?;
            once.extend(first_once);
            if measured.is_empty() {
                measured = variants;
            } else {
                for (all, v) in measured.iter_mut().zip(variants) {
                    all.absorb(v);
                }
            }
        }
        let variants = measured;
        let floor_v = variants.iter().position(|v| v.name == "floor").expect("the floor is measured");
        let kept_v = variants.iter().position(|v| v.name == "dma_buf").expect("the kept dma-buf tensor is measured");
        for v in &variants {
            let vs_floor = paired(v, &variants[floor_v]).0;
            let vs_kept = paired(v, &variants[kept_v]).0;
            let of_path = |pick: fn(&Once) -> f64| {
                median(&once.iter().filter(|o| o.0 == v.name).map(pick).filter(|x| x.is_finite()).collect::<Vec<_>>())
            };
            let (import, first) = (of_path(|o| o.1), of_path(|o| o.2));
            let imports = v.per_call("npu.imports.sysmem") + v.per_call("npu.imports.dma_buf");
            println!(
                "ROW\t{profile}\t{bytes}\t{}\t{:.9}\t{:.9}\t{:.9}\t{:.9}\t{:.1}\t{:.3}\t{vs_floor:.4}\t{vs_kept:.4}",
                v.name,
                v.median(),
                v.cpu_median(),
                first,
                import,
                v.per_call("npu.bytes_copied"),
                imports
            );
        }
        eprintln!("sweep {profile}: {} KiB done", bytes >> 10);
    }
    Ok(())
}

/// One measured path at one size, as parsed from a child's `ROW` line.
#[derive(Debug, Clone)]
pub struct Row {
    pub profile: String,
    pub bytes: usize,
    pub path: String,
    pub median: f64,
    pub cpu: f64,
    pub first: f64,
    pub import: f64,
    pub copied: f64,
    pub imports: f64,
    /// The median of the per-round ratios to the floor (each round ran both, close in time).
    pub vs_floor: f64,
    /// The same to the dma-buf tensor kept bound (a steady pool inference should cost what it costs).
    pub vs_kept: f64,
}

pub fn parse(line: &str) -> Option<Row> {
    let f: Vec<&str> = line.split('\t').collect();
    if f.len() != 12 || f[0] != "ROW" {
        return None;
    }
    let num = |i: usize| f[i].parse::<f64>().ok();
    Some(Row {
        profile: f[1].into(),
        bytes: f[2].parse().ok()?,
        path: f[3].into(),
        median: num(4)?,
        cpu: num(5)?,
        first: num(6)?,
        import: num(7)?,
        copied: num(8)?,
        imports: num(9)?,
        vs_floor: num(10)?,
        vs_kept: num(11)?,
    })
}

/// The largest size measured the thorough way: over many placements, each path rotating over
/// several requests. Above it one inference moves enough memory that bandwidth dominates.
pub const SMALL_MAX: usize = 16 << 20;

/// How many fresh placements a size is measured over. With 7, the luck of one run's placements
/// still moved every imported path together by up to 8% at 1 MiB between runs; with 15, the 37xx
/// laptops (mtl and arl run the same NPU code) still differed by 0.11 at 4 MiB, every zero-copy
/// path with them, so up to 16 MiB, where a placement is cheap to make, 45 spread the floor's luck.
pub fn placements(bytes: usize) -> usize {
    if bytes <= SMALL_MAX {
        45
    } else {
        15
    }
}

/// How many requests each path's calls rotate over at this size. Each request has its own output
/// buffer, and where that buffer lands moves a request's time by ±7% at 1 MiB; up to 16 MiB three
/// requests per path spread that luck. Above, memory bandwidth dominates and one request suffices.
pub fn requests_per_path(bytes: usize) -> usize {
    if bytes <= SMALL_MAX {
        3
    } else {
        1
    }
}

/// One size's model and inputs; `measure` makes every path's buffers and requests afresh.
struct Placement<'e> {
    bytes: usize,
    shape: [usize; 2],
    input: &'e [u8],
    /// Which placement of this size this is: it decides the order the paths are set up in.
    index: usize,
    profile: &'e str,
    compiled: &'e npu_sycl_bridge::openvino::CompiledModel,
    npu: &'e NpuContext,
}

/// The order the paths are set up in for placement `index` of a size: a different shuffle each
/// placement. What is made later in a process runs differently (the A/A control was 1.04-1.07 at
/// 4 MiB in every profile while its requests were made just before the floor's); set up in one
/// fixed order, that fell on the same paths in every placement.
fn setup_order(index: usize) -> Vec<&'static str> {
    let mut order: Vec<&'static str> = input_paths().collect();
    let mut seed = 0x2545_f491_4f6c_dd1du64 ^ (index as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    shuffle(&mut order, &mut seed);
    order
}

/// (path, import call s, first inference s): a path's one-time costs.
type Once = (&'static str, f64, f64);

impl<'e> Placement<'e> {
    /// `per_path` new requests, each bound to its own tensor and run once (the first one timed),
    /// and the variant whose calls rotate over them; it keeps `memory` (what the tensors were
    /// imported from) for as long as it runs.
    fn bound<T: Bindable + 'e>(
        &self,
        name: &'static str,
        import: f64,
        tensors: Vec<T>,
        memory: Vec<L0Allocation>,
    ) -> Result<(Variant<'e>, Once)> {
        let mut rs = self.requests()?;
        let mut first = 0.0;
        for (k, r) in rs.iter_mut().enumerate() {
            let t = Instant::now();
            r.set_input_tensor(0, &tensors[k])?;
            r.infer()?;
            if k == 0 {
                first = secs(t);
            }
        }
        let per_path = rs.len();
        let mut i = 0usize;
        let variant = Variant::new(name, move || {
            let _ = (&tensors, &memory);
            i += 1;
            rs[i % per_path].infer()
        });
        Ok((variant, (name, import, first)))
    }

    fn requests(&self) -> Result<Vec<InferRequest>> {
        (0..requests_per_path(self.bytes)).map(|_| self.compiled.create_infer_request()).collect()
    }

    /// Every path at this size on new buffers and requests, set up in this placement's order and
    /// interleaved for `budget` seconds.
    fn measure(
        &self,
        gpu_ctx: &Arc<L0Context>,
        gpu_dev: npu_sycl_bridge::level_zero::L0Device,
        budget: f64,
        counter: &dyn Fn(&str) -> u64,
    ) -> Result<(Vec<Variant<'static>>, Vec<Once>)> {
        let Placement { bytes, shape, input, index, profile, npu, .. } = *self;
        let alloc = |count: usize| -> Result<Vec<L0Allocation>> {
            (0..count)
                .map(|_| {
                    let mut mem = gpu_ctx.alloc_device_exportable(gpu_dev, bytes, 4096)?;
                    mem.write(0, input)?;
                    Ok(mem)
                })
                .collect()
        };
        let per_path = requests_per_path(bytes);
        // Call `i` runs request `i % per_path` with tensor `(i / per_path + i % per_path) % n`: a
        // request's successive calls bind a different tensor each time.
        let turn = move |i: usize, n: usize| (i / per_path + i % per_path) % n;
        let host_tensor = |_| {
            let mut f = npu.l0_host_tensor(ElementType::F32, shape, TensorType::Binded)?;
            f.host_bytes_mut()?.copy_from_slice(input);
            Ok(f)
        };
        let mut once: Vec<Once> = Vec::new();
        let mut variants: Vec<Variant<'e>> = Vec::new();
        // Each path makes its buffers and its requests (each with its own input, as it has its own
        // output: every path then works on as many buffers, which decides what stays in the caches).
        for path in setup_order(index) {
            let (variant, first) = match path {
                "unaligned" => {
                    let (tensors, _) = made(per_path, |_| {
                        // Plain tensor 64 bytes past a page boundary: shadow-copied.
                        let mut backing = PageAlignedBuffer::new(bytes + 4096)?;
                        backing.as_bytes_mut()[64..64 + bytes].copy_from_slice(input);
                        let ptr = backing.as_mut_ptr().cast::<u8>().wrapping_add(64).cast();
                        let owner: KeepAlive = Arc::new(backing);
                        // SAFETY: `ptr` is 64 bytes into a live mapping of bytes + 4096 bytes;
                        // `owner` keeps it alive as long as the tensor; nothing else writes it.
                        unsafe { Tensor::from_host_ptr(ElementType::F32, shape, ptr, Some(owner)) }
                    })?;
                    self.bound(path, 0.0, tensors, Vec::new())?
                }
                "aligned" => {
                    let (tensors, _) =
                        made(per_path, |_| PageAlignedBuffer::from_slice(input)?.into_tensor(ElementType::F32, shape))?;
                    self.bound(path, 0.0, tensors, Vec::new())?
                }
                "cpu_va" => {
                    let made = made(per_path, |_| {
                        npu.import(PageAlignedBuffer::from_slice(input)?, ElementType::F32, shape, TensorType::Input)
                    });
                    match made {
                        Ok((tensors, import)) => self.bound(path, import, tensors, Vec::new())?,
                        Err(e) => {
                            if index == 0 {
                                println!("MISSING\t{profile}\tcpu_va\t{}", e.to_string().replace(['\t', '\n'], " "));
                            }
                            continue;
                        }
                    }
                }
                "dma_buf" => {
                    let mem = alloc(per_path)?;
                    let (tensors, import) = made(per_path, |k| {
                        npu.import(mem[k].export_dma_buf()?, ElementType::F32, shape, TensorType::Input)
                    })?;
                    self.bound(path, import, tensors, mem)?
                }
                "pool" => {
                    let pool = NpuPool::from_buffers(npu, alloc(per_path.max(2))?)?;
                    let mut rs = self.requests()?;
                    let mut first = (path, 0.0, 0.0);
                    for (k, r) in rs.iter_mut().enumerate() {
                        let t = Instant::now();
                        let tensor = pool.tensor(ElementType::F32, shape)?;
                        let import = secs(t);
                        let t = Instant::now();
                        r.set_input_tensor(0, &tensor)?;
                        r.infer()?;
                        if k == 0 {
                            first = (path, import, secs(t));
                        }
                    }
                    let mut i = 0usize;
                    let variant = Variant::new(path, move || {
                        i += 1;
                        let r = &mut rs[i % per_path];
                        // Request affinity: the tensor this request has bound comes back to it.
                        let t = pool.input_for(r, 0)?;
                        r.set_input_tensor(0, &t)?;
                        r.infer()
                    });
                    (variant, first)
                }
                "rebind" => {
                    // What the pool adds to rebinding: the same two-tensor alternation, tensors
                    // kept. Two tensors at least; with more requests, as many as the others' inputs.
                    let mem = alloc(per_path.max(2))?;
                    let tensors: Vec<_> = mem
                        .iter()
                        .map(|m| npu.import(m.export_dma_buf()?, ElementType::F32, shape, TensorType::Input))
                        .collect::<Result<_>>()?;
                    let mut rs = self.requests()?;
                    let mut i = 0usize;
                    let variant = Variant::new(path, move || {
                        let _ = &mem;
                        i += 1;
                        let r = &mut rs[i % per_path];
                        r.set_input_tensor(0, &tensors[turn(i, tensors.len())])?;
                        r.infer()
                    });
                    (variant, (path, f64::NAN, f64::NAN))
                }
                "import_per_use" => {
                    let mem = alloc(per_path.max(2))?;
                    let mut rs = self.requests()?;
                    let mut i = 0usize;
                    let variant = Variant::new(path, move || {
                        i += 1;
                        let t = npu.import(
                            mem[turn(i, mem.len())].export_dma_buf()?,
                            ElementType::F32,
                            shape,
                            TensorType::Input,
                        )?;
                        let r = &mut rs[i % per_path];
                        r.set_input_tensor(0, &t)?;
                        r.infer()
                    });
                    (variant, (path, f64::NAN, f64::NAN))
                }
                "second_floor" | "floor" => {
                    let (tensors, import) = made(per_path, host_tensor)?;
                    self.bound(path, import, tensors, Vec::new())?
                }
                other => unreachable!("path {other} has no set-up"),
            };
            variants.push(variant);
            once.push(first);
        }
        // Back in the report's order: the rounds of every placement are pooled path by path.
        variants.sort_by_key(|v| PATHS.iter().position(|p| *p == v.name));
        let src = input.to_vec();
        let mut dst = vec![0u8; bytes];
        dst.copy_from_slice(&src);
        variants.push(Variant::new("memcpy", move || {
            dst.copy_from_slice(std::hint::black_box(&src));
            std::hint::black_box(&mut dst);
            Ok(())
        }));

        interleave(&mut variants, budget, 3, 400, counter, &COUNTERS)?;
        Ok((variants.into_iter().map(Variant::detach).collect(), once))
    }
}
