//! The bridge's overhead against raw OpenVINO C API calls (item 2), the virtual NPU's overhead
//! against the CPU plugin (item 3), and throughput with requests in flight (item 5).

use npu_sycl_bridge::npu::NpuContext;
use npu_sycl_bridge::openvino::{CompiledModel, Core, ElementType, InferRequest, Properties, Tensor, TensorType};
use npu_sycl_bridge::raw::AsRaw;
use npu_sycl_bridge::{Error, Result};
use openvino_sys as sys;
use testkit::models::{self, f32_bytes, Ir, NUMPY};
use testkit::reference::cpu_properties;

use crate::measure::{interleave, paired, Variant};

fn no_counter(_: &str) -> u64 {
    0
}

fn ok(st: sys::ov_status_e, what: &str) -> Result<()> {
    if st == sys::ov_status_e::OK {
        Ok(())
    } else {
        Err(Error::invalid_argument(format!("{what}: {st:?}")))
    }
}

/// Raw C API request (what a program without the crate does).
struct RawRequest(*mut sys::ov_infer_request_t);

impl RawRequest {
    fn new(compiled: &CompiledModel) -> Result<RawRequest> {
        let mut r = std::ptr::null_mut();
        // SAFETY: a live compiled model; r is an out-pointer.
        ok(unsafe { sys::ov_compiled_model_create_infer_request(compiled.as_raw(), &mut r) }, "create request")?;
        Ok(RawRequest(r))
    }
    fn bind(&mut self, t: *mut sys::ov_tensor_t) -> Result<()> {
        // SAFETY: live request and tensor (the caller keeps the tensor alive while the request uses it).
        ok(unsafe { sys::ov_infer_request_set_input_tensor_by_index(self.0, 0, t) }, "set input")
    }
    fn infer(&mut self) -> Result<()> {
        // SAFETY: live request with bound inputs.
        ok(unsafe { sys::ov_infer_request_infer(self.0) }, "infer")
    }
    fn read(&mut self, out: &mut [u8]) -> Result<()> {
        let mut t = std::ptr::null_mut();
        // SAFETY: live request; t is an out-pointer; the tensor is freed below.
        ok(unsafe { sys::ov_infer_request_get_output_tensor_by_index(self.0, 0, &mut t) }, "get output")?;
        let mut p = std::ptr::null_mut();
        let mut n = 0usize;
        // SAFETY: t is a live tensor; its data is n bytes at p while t lives.
        unsafe {
            ok(sys::ov_tensor_data(t, &mut p), "data")?;
            ok(sys::ov_tensor_get_byte_size(t, &mut n), "byte size")?;
            out.copy_from_slice(std::slice::from_raw_parts(p.cast::<u8>(), n));
            sys::ov_tensor_free(t);
        }
        Ok(())
    }
}

impl Drop for RawRequest {
    fn drop(&mut self) {
        // SAFETY: owned, freed once, nothing running.
        unsafe { sys::ov_infer_request_free(self.0) }
    }
}

/// Medians of one bridge-overhead comparison on one device, seconds.
pub struct Bridge {
    pub device: &'static str,
    /// (step, crate median, raw median, paired crate ÷ raw (median, p25, p75)): "bind+infer+read",
    /// "bind", "infer", "read".
    pub steps: Vec<(&'static str, f64, f64, Spread)>,
}

/// A ratio's median, 25th and 75th percentile over rounds.
pub type Spread = (f64, f64, f64);

/// Bind, infer, read through the crate and through the C API on the same compiled model, with the
/// same input tensor, interleaved; and each step alone.
pub fn bridge(core: &Core, device: &'static str, budget: f64) -> Result<Bridge> {
    let m = models::fully_connected();
    let ir = core.read_model_from_memory(&m.xml, &m.weights)?;
    let props = if device == "CPU" { cpu_properties() } else { Properties::new() };
    let compiled = core.compile_model(&ir, device, &props)?;
    let d = &m.inputs[0];
    let input = Tensor::from_bytes(d.element_type, d.shape.clone(), &m.sample_input(0))?;
    let out_len = m.outputs[0].byte_size();
    let (mut c1, mut c2, mut c3, mut c4) = (
        compiled.create_infer_request()?,
        compiled.create_infer_request()?,
        compiled.create_infer_request()?,
        compiled.create_infer_request()?,
    );
    let (mut r1, mut r2, mut r3, mut r4) = (
        RawRequest::new(&compiled)?,
        RawRequest::new(&compiled)?,
        RawRequest::new(&compiled)?,
        RawRequest::new(&compiled)?,
    );
    for c in [&mut c3, &mut c4] {
        c.set_input_tensor(0, &input)?;
        c.infer()?;
    }
    for r in [&mut r3, &mut r4] {
        r.bind(input.as_raw())?;
        r.infer()?;
    }
    let (mut o1, mut o2, mut o3, mut o4) =
        (vec![0u8; out_len], vec![0u8; out_len], vec![0u8; out_len], vec![0u8; out_len]);
    let input = &input;
    let crate_read = |c: &mut InferRequest, out: &mut [u8]| -> Result<()> {
        let t = c.output_tensor(0)?;
        out.copy_from_slice(&t.bytes()?);
        Ok(())
    };
    let mut variants = vec![
        Variant::new("crate bind+infer+read", move || {
            c1.set_input_tensor(0, input)?;
            c1.infer()?;
            crate_read(&mut c1, &mut o1)
        }),
        Variant::new("raw bind+infer+read", move || {
            r1.bind(input.as_raw())?;
            r1.infer()?;
            r1.read(&mut o2)
        }),
        Variant::new("crate bind", move || c2.set_input_tensor(0, input)),
        Variant::new("raw bind", move || r2.bind(input.as_raw())),
        Variant::new("crate infer", move || c3.infer()),
        Variant::new("raw infer", move || r3.infer()),
        Variant::new("crate read", move || crate_read(&mut c4, &mut o3)),
        Variant::new("raw read", move || r4.read(&mut o4)),
    ];
    interleave(&mut variants, budget, 200, 20_000, &no_counter, &[])?;
    let find = |n: &str| variants.iter().find(|v| v.name == n).expect("measured");
    let steps = ["bind+infer+read", "bind", "infer", "read"]
        .into_iter()
        .map(|s| {
            let (c, r) = (find(&format!("crate {s}")), find(&format!("raw {s}")));
            (s, c.median(), r.median(), paired(c, r))
        })
        .collect();
    Ok(Bridge { device, steps })
}

// ---- architectures built in code -------------------------------------------------------------

fn weights(n: usize, seed: usize, scale: f32) -> Vec<u8> {
    f32_bytes(&(0..n).map(|i| (((i * 7919 + seed * 104_729) % 201) as f32 - 100.0) / 100.0 * scale).collect::<Vec<_>>())
}

/// A ResNet-style CNN: stem conv 3→64, then two residual blocks (conv-bias-relu-conv-bias, add,
/// relu) at 64 channels, 56×56.
pub fn cnn() -> (String, Vec<u8>, Vec<usize>) {
    const C: usize = 64;
    let dims = [1, C, 56, 56];
    let mut ir = Ir::default();
    let x = ir.parameter("input", ElementType::F32, &[1, 3, 56, 56]);
    let conv = r#"strides="1,1" dilations="1,1" pads_begin="1,1" pads_end="1,1" auto_pad="explicit""#;
    let mut seed = 0;
    let mut conv_bias = |ir: &mut Ir, x: &testkit::models::Out, cin: usize| {
        seed += 1;
        let k = ir.constant("k", ElementType::F32, &[C, cin, 3, 3], &weights(C * cin * 9, seed, 0.1));
        let y = ir.op("conv", "Convolution", conv, &[x, &k], ElementType::F32, &dims, None);
        let b = ir.constant("b", ElementType::F32, &[1, C, 1, 1], &weights(C, seed + 50, 0.05));
        ir.op("bias", "Add", NUMPY, &[&y, &b], ElementType::F32, &dims, None)
    };
    let stem = conv_bias(&mut ir, &x, 3);
    let mut h = ir.op("relu", "Relu", "", &[&stem], ElementType::F32, &dims, None);
    for _ in 0..2 {
        let a = conv_bias(&mut ir, &h, C);
        let a = ir.op("relu", "Relu", "", &[&a], ElementType::F32, &dims, None);
        let b = conv_bias(&mut ir, &a, C);
        let s = ir.op("residual", "Add", NUMPY, &[&b, &h], ElementType::F32, &dims, None);
        h = ir.op("relu", "Relu", "", &[&s], ElementType::F32, &dims, None);
    }
    let y = ir.op("out", "Relu", "", &[&h], ElementType::F32, &dims, Some("output"));
    ir.result("output/sink", &y);
    let (xml, w) = ir.finish("cnn");
    (xml, w, vec![1, 3, 56, 56])
}

/// An MLP: batch 128, 1024 → 1024 → 1024 → 256 with ReLU.
pub fn mlp() -> (String, Vec<u8>, Vec<usize>) {
    const B: usize = 128;
    let mut ir = Ir::default();
    let mut h = ir.parameter("input", ElementType::F32, &[B, 1024]);
    for (i, (k, n)) in [(1024, 1024), (1024, 1024), (1024, 256)].into_iter().enumerate() {
        let w = ir.constant("w", ElementType::F32, &[k, n], &weights(k * n, i, 0.03));
        let y = ir.op(
            "fc",
            "MatMul",
            r#"transpose_a="false" transpose_b="false""#,
            &[&h, &w],
            ElementType::F32,
            &[B, n],
            None,
        );
        let b = ir.constant("b", ElementType::F32, &[1, n], &weights(n, i + 9, 0.1));
        let y = ir.op("bias", "Add", NUMPY, &[&y, &b], ElementType::F32, &[B, n], None);
        h = ir.op("relu", "Relu", "", &[&y], ElementType::F32, &[B, n], if i == 2 { Some("output") } else { None });
    }
    ir.result("output/sink", &h);
    let (xml, w) = ir.finish("mlp");
    (xml, w, vec![B, 1024])
}

/// A transformer-like block (single head, no normalisation: opset1 only): T = 256 tokens, D = 384;
/// Q, K, V projections, softmax(Q·Kᵀ/√D)·V, output projection, residual, FFN 384 → 1536 → 384 with
/// ReLU, residual.
pub fn transformer() -> (String, Vec<u8>, Vec<usize>) {
    const T: usize = 256;
    const D: usize = 384;
    const F: usize = 1536;
    let mut ir = Ir::default();
    let x = ir.parameter("input", ElementType::F32, &[T, D]);
    let mm = r#"transpose_a="false" transpose_b="false""#;
    let mut seed = 0;
    let mut proj = |ir: &mut Ir, h: &testkit::models::Out, k: usize, n: usize| {
        seed += 1;
        let w = ir.constant("w", ElementType::F32, &[k, n], &weights(k * n, seed, 0.05));
        ir.op("proj", "MatMul", mm, &[h, &w], ElementType::F32, &[h.dims()[0], n], None)
    };
    let q = proj(&mut ir, &x, D, D);
    let k = proj(&mut ir, &x, D, D);
    let v = proj(&mut ir, &x, D, D);
    let s =
        ir.op("qk", "MatMul", r#"transpose_a="false" transpose_b="true""#, &[&q, &k], ElementType::F32, &[T, T], None);
    let scale = ir.constant("scale", ElementType::F32, &[1], &f32_bytes(&[1.0 / (D as f32).sqrt()]));
    let s = ir.op("scaled", "Multiply", NUMPY, &[&s, &scale], ElementType::F32, &[T, T], None);
    let p = ir.op("softmax", "SoftMax", r#"axis="1""#, &[&s], ElementType::F32, &[T, T], None);
    let a = ir.op("pv", "MatMul", mm, &[&p, &v], ElementType::F32, &[T, D], None);
    let o = proj(&mut ir, &a, D, D);
    let h = ir.op("res1", "Add", NUMPY, &[&o, &x], ElementType::F32, &[T, D], None);
    let f = proj(&mut ir, &h, D, F);
    let f = ir.op("relu", "Relu", "", &[&f], ElementType::F32, &[T, F], None);
    let f = proj(&mut ir, &f, F, D);
    let y = ir.op("res2", "Add", NUMPY, &[&f, &h], ElementType::F32, &[T, D], Some("output"));
    ir.result("output/sink", &y);
    let (xml, w) = ir.finish("transformer_block");
    (xml, w, vec![T, D])
}

/// One architecture on the virtual NPU against the CPU plugin.
pub struct VnpuRow {
    pub model: String,
    pub cpu: f64,
    pub npu: f64,
    pub cpu_cpu: f64,
    pub npu_cpu: f64,
    pub max_diff: f32,
    /// NPU ÷ CPU round by round: median, 25th and 75th percentile.
    pub paired: Spread,
    /// The NPU with a plain (heap, not page-aligned) input tensor: the plugin copies it.
    pub npu_plain: f64,
}

fn input_for(dims: &[usize]) -> Vec<u8> {
    let n: usize = dims.iter().product();
    f32_bytes(&(0..n).map(|i| ((i * 37) % 33) as f32 / 16.0 - 1.0).collect::<Vec<_>>())
}

/// Each model compiled for the NPU (the virtual one) and for the CPU plugin (f32), inputs bound
/// once (an L0 host tensor on the NPU: no copy, no import), inferences interleaved.
pub fn vnpu(core: &Core, budget: f64) -> Result<Vec<VnpuRow>> {
    let tiny = models::fully_connected();
    let el = models::scale(&[1, 1 << 20]);
    let mut list: Vec<(String, String, Vec<u8>, Vec<usize>)> = vec![
        ("tiny FC (4 KiB)".into(), tiny.xml.clone(), tiny.weights.clone(), tiny.inputs[0].shape.dims().to_vec()),
        ("elementwise 4 MiB".into(), el.xml.clone(), el.weights.clone(), el.inputs[0].shape.dims().to_vec()),
    ];
    for (name, (xml, w, dims)) in [("ResNet-style CNN", cnn()), ("MLP", mlp()), ("transformer block", transformer())] {
        list.push((name.into(), xml, w, dims));
    }
    let mut rows = Vec::new();
    for (name, xml, w, dims) in list {
        let ir = core.read_model_from_memory(&xml, &w)?;
        let on_npu = core.compile_model(&ir, "NPU", &Properties::new())?;
        let on_cpu = core.compile_model(&ir, "CPU", &cpu_properties())?;
        let npu = NpuContext::from_compiled_model(&on_npu)?;
        let bytes = input_for(&dims);
        let mut host = npu.l0_host_tensor(ElementType::F32, dims.clone(), TensorType::Binded)?;
        host.host_bytes_mut()?.copy_from_slice(&bytes);
        let plain = Tensor::from_bytes(ElementType::F32, dims.clone(), &bytes)?;
        let mut rn = on_npu.create_infer_request()?;
        rn.set_input_tensor(0, &host)?;
        rn.infer()?;
        let mut rc = on_cpu.create_infer_request()?;
        rc.set_input_tensor(0, &plain)?;
        rc.infer()?;
        let a = rn.output_tensor(0)?.bytes()?.to_vec();
        let b = rc.output_tensor(0)?.bytes()?.to_vec();
        let max_diff = a
            .chunks_exact(4)
            .zip(b.chunks_exact(4))
            .map(|(x, y)| (f32::from_le_bytes(x.try_into().unwrap()) - f32::from_le_bytes(y.try_into().unwrap())).abs())
            .fold(0f32, f32::max);
        let mut rp = on_npu.create_infer_request()?;
        let unaligned = Tensor::from_bytes(ElementType::F32, dims.clone(), &bytes)?;
        rp.set_input_tensor(0, &unaligned)?;
        rp.infer()?;
        let mut variants = vec![
            Variant::new("npu", move || rn.infer()),
            Variant::new("cpu", move || rc.infer()),
            Variant::new("npu plain", move || rp.infer()),
        ];
        interleave(&mut variants, budget, 30, 5000, &no_counter, &[])?;
        rows.push(VnpuRow {
            model: name,
            npu: variants[0].median(),
            cpu: variants[1].median(),
            npu_cpu: variants[0].cpu_median(),
            cpu_cpu: variants[1].cpu_median(),
            max_diff,
            paired: paired(&variants[0], &variants[1]),
            npu_plain: variants[2].median(),
        });
    }
    Ok(rows)
}

/// Throughput with 1, 2 and 4 requests in flight: (model, device, [inferences/s for 1, 2, 4]).
pub fn throughput(core: &Core, budget: f64) -> Result<Vec<(String, &'static str, [f64; 3])>> {
    let el = models::scale(&[1, 1 << 18]);
    let (mx, mw, mdims) = mlp();
    let list = [
        ("elementwise 1 MiB", el.xml.clone(), el.weights.clone(), el.inputs[0].shape.dims().to_vec()),
        ("MLP", mx, mw, mdims),
    ];
    let mut out = Vec::new();
    for (name, xml, w, dims) in list {
        let ir = core.read_model_from_memory(&xml, &w)?;
        for device in ["NPU", "CPU"] {
            let props = if device == "CPU" { cpu_properties() } else { Properties::new() };
            let compiled = core.compile_model(&ir, device, &props)?;
            let bytes = input_for(&dims);
            let mut variants = Vec::new();
            for n in [1usize, 2, 4] {
                let mut reqs: Vec<InferRequest> = Vec::new();
                for _ in 0..n {
                    let mut r = compiled.create_infer_request()?;
                    r.set_input_tensor(0, &Tensor::from_bytes(ElementType::F32, dims.clone(), &bytes)?)?;
                    r.infer()?;
                    reqs.push(r);
                }
                variants.push(Variant::new(format!("{n}"), move || {
                    for r in reqs.iter_mut() {
                        r.start_async()?;
                    }
                    for r in reqs.iter_mut() {
                        r.wait()?;
                    }
                    Ok(())
                }));
            }
            interleave(&mut variants, budget, 20, 3000, &no_counter, &[])?;
            let ips = |i: usize| [1.0, 2.0, 4.0][i] / variants[i].median();
            out.push((name.to_string(), device, [ips(0), ips(1), ips(2)]));
        }
    }
    Ok(out)
}
