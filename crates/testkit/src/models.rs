//! Small reference models, written as OpenVINO IR v11 (XML + weights) by Rust code.
//!
//! The crate uses them to probe devices (does the NPU compile and run anything?), in its examples
//! and in its tests. They are real models that every OpenVINO device plugin compiles, not mocks.
//! Each comes with a pure-Rust [`reference`](ReferenceModel::reference) implementation, so a result
//! can be checked against the mathematics as well as against another device.
//!
//! | function | inputs | outputs | ops |
//! |----------|--------|---------|-----|
//! | [`convolution`] | `input` f32 \[1,4,32,32\] | `output` f32 \[1,4,32,32\] | 3×3 Convolution, pad 1 |
//! | [`fully_connected`] | `input` f32 \[4,256\] | `output` f32 \[4,256\] | MatMul + Add |
//! | [`multi_io`] | `a`, `b` f32 \[1,1024\] | `sum`, `product` f32 \[1,1024\] | Add, Multiply |
//! | [`f16_scale`] | `input` f16 \[1,2048\] | `output` f16 \[1,2048\] | Multiply + Add in f16 |
//! | [`u8_input`] | `input` u8 \[1,4096\] | `output` f32 \[1,4096\] | Convert to f32, Multiply, Add |
//! | [`large_input`] | `input` f32 \[1,3,512,512\] (3 MiB) | `output` f32 \[1,3,512,512\] | Multiply |
//! | [`scale`] | `input` f32 of any shape | `output` f32, same shape | Multiply (not in [`all`]) |
//!
//! [`Ir`] writes IR v11 for models built in code (opset1 operations).
//!
//! **Every input and output of every model has a byte size that is a multiple of 4096**, so any
//! of them can be bound as a `CPU_VA` remote tensor over page-aligned memory.
//!
//! The sample inputs ([`ReferenceModel::sample_input`]) are small multiples of 1/16, and the
//! weights multiples of 1/64 or 1/8: with them every f32 result is exact whatever the summation
//! order, so the CPU plugin (with `INFERENCE_PRECISION_HINT=f32`) matches the reference bit for
//! bit. The tolerances ([`ReferenceModel::atol`], [`ReferenceModel::rtol`]) allow for devices
//! that compute in f16 (the NPU).

use std::fmt::Write as _;
use std::sync::Arc;

use npu_sycl_bridge::openvino::{ElementType, Shape, F16};
use npu_sycl_bridge::{Error, Result};

/// The name, element type and shape of a model input or output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorDesc {
    /// The tensor name.
    pub name: String,
    /// The element type.
    pub element_type: ElementType,
    /// The shape.
    pub shape: Shape,
}

impl TensorDesc {
    fn new(name: &str, element_type: ElementType, dims: &[usize]) -> Self {
        TensorDesc { name: name.into(), element_type, shape: Shape::new(dims) }
    }

    /// The byte size of a tensor with this description.
    pub fn byte_size(&self) -> usize {
        self.element_type.byte_size(self.shape.element_count())
    }
}

type ReferenceFn = dyn Fn(&[&[u8]]) -> Vec<Vec<u8>> + Send + Sync;

/// A reference model: IR text, weights, its interface and a Rust implementation of it.
#[derive(Clone)]
pub struct ReferenceModel {
    /// A short name (`"convolution"`, ...).
    pub name: &'static str,
    /// The IR v11 XML.
    pub xml: String,
    /// The weights (`.bin` contents); may be empty.
    pub weights: Vec<u8>,
    /// The inputs, in order.
    pub inputs: Vec<TensorDesc>,
    /// The outputs, in order.
    pub outputs: Vec<TensorDesc>,
    /// Absolute tolerance for comparing float outputs (0 for integer outputs).
    pub atol: f32,
    /// Relative tolerance for comparing float outputs.
    pub rtol: f32,
    reference: Arc<ReferenceFn>,
}

impl std::fmt::Debug for ReferenceModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReferenceModel")
            .field("name", &self.name)
            .field("inputs", &self.inputs)
            .field("outputs", &self.outputs)
            .field("weights", &self.weights.len())
            .finish()
    }
}

impl ReferenceModel {
    /// Computes the expected outputs (as bytes) from the inputs (as bytes), in Rust.
    ///
    /// # Errors
    /// [`InvalidArgument`](npu_sycl_bridge::ErrorKind::InvalidArgument) for a wrong number of inputs,
    /// [`Size`](npu_sycl_bridge::ErrorKind::Size) for an input of the wrong byte size.
    pub fn reference(&self, inputs: &[&[u8]]) -> Result<Vec<Vec<u8>>> {
        if inputs.len() != self.inputs.len() {
            return Err(Error::invalid_argument(format!(
                "model {} has {} inputs, {} were given",
                self.name,
                self.inputs.len(),
                inputs.len()
            )));
        }
        for (d, i) in self.inputs.iter().zip(inputs) {
            if d.byte_size() != i.len() {
                return Err(Error::size(format!("input {:?} of model {}", d.name, self.name), d.byte_size(), i.len()));
            }
        }
        Ok((self.reference)(inputs))
    }

    /// A deterministic input for input `index` (bytes of its element type): small multiples of
    /// 1/16 in \[-1, 1\] for float inputs, `0..=255` for u8.
    pub fn sample_input(&self, index: usize) -> Vec<u8> {
        let d = &self.inputs[index];
        let n = d.shape.element_count();
        let v = |i: usize| ((i * 37 + index * 11) % 33) as f32 / 16.0 - 1.0;
        match d.element_type {
            ElementType::U8 => (0..n).map(|i| ((i * 37 + index * 11) % 256) as u8).collect(),
            ElementType::F16 => (0..n).flat_map(|i| F16::from_f32(v(i)).0.to_le_bytes()).collect(),
            _ => (0..n).flat_map(|i| v(i).to_le_bytes()).collect(),
        }
    }

    /// All sample inputs.
    pub fn sample_inputs(&self) -> Vec<Vec<u8>> {
        (0..self.inputs.len()).map(|i| self.sample_input(i)).collect()
    }

    /// Compares output `index` with the expected bytes, within the model's tolerance. The error
    /// says where the first mismatch is and how large the largest difference is.
    pub fn compare(&self, index: usize, expected: &[u8], actual: &[u8]) -> std::result::Result<(), String> {
        let d = &self.outputs[index];
        if expected.len() != actual.len() {
            return Err(format!("output {:?}: {} bytes expected, {} got", d.name, expected.len(), actual.len()));
        }
        let (e, a): (Vec<f32>, Vec<f32>) = match d.element_type {
            ElementType::F32 => (f32s(expected), f32s(actual)),
            ElementType::F16 => (f16s(expected), f16s(actual)),
            _ => {
                return match expected.iter().zip(actual).position(|(x, y)| x != y) {
                    None => Ok(()),
                    Some(i) => Err(format!("output {:?}: byte {i} differs: {} != {}", d.name, expected[i], actual[i])),
                };
            }
        };
        let mut first = None;
        let mut worst = 0f32;
        for (i, (x, y)) in e.iter().zip(&a).enumerate() {
            let diff = (x - y).abs();
            let ok = diff <= self.atol + self.rtol * x.abs() && !y.is_nan();
            if !ok && first.is_none() {
                first = Some((i, *x, *y));
            }
            worst = worst.max(diff);
        }
        match first {
            None => Ok(()),
            Some((i, x, y)) => Err(format!(
                "output {:?}: element {i} is {y}, expected {x} (atol {}, rtol {}; largest difference {worst})",
                d.name, self.atol, self.rtol
            )),
        }
    }
}

/// Every reference model.
pub fn all() -> Vec<ReferenceModel> {
    vec![convolution(), fully_connected(), multi_io(), f16_scale(), u8_input(), large_input()]
}

// ---- helpers -------------------------------------------------------------------------------

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

fn f16s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(2).map(|c| F16(u16::from_le_bytes([c[0], c[1]])).to_f32()).collect()
}

/// Little-endian bytes of f32 values (an f32 tensor's or constant's bytes).
pub fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn f16_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| F16::from_f32(*x).0.to_le_bytes()).collect()
}

fn precision(et: ElementType) -> &'static str {
    match et {
        ElementType::F32 => "FP32",
        ElementType::F16 => "FP16",
        ElementType::U8 => "U8",
        ElementType::I32 => "I32",
        ElementType::I64 => "I64",
        _ => "UNSPECIFIED",
    }
}

fn join(dims: &[usize]) -> String {
    dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(",")
}

fn dims_xml(dims: &[usize]) -> String {
    dims.iter().map(|d| format!("<dim>{d}</dim>")).collect()
}

/// An output port of a layer being built by an [`Ir`].
#[derive(Debug, Clone)]
pub struct Out {
    layer: usize,
    port: usize,
    et: ElementType,
    dims: Vec<usize>,
}

impl Out {
    /// The port's shape.
    pub fn dims(&self) -> &[usize] {
        &self.dims
    }
}

/// A minimal IR v11 writer (layers, edges and a weights blob), for models built in code beyond the
/// reference models (the benchmarks' CNN, MLP and transformer-like block). Every op is written as
/// `version="opset1"`, so only opset1 operations can be used.
#[derive(Debug, Default)]
pub struct Ir {
    layers: String,
    edges: Vec<(usize, usize, usize, usize)>,
    weights: Vec<u8>,
    next: usize,
}

impl Ir {
    fn id(&mut self) -> usize {
        self.next += 1;
        self.next - 1
    }

    /// A `Parameter` (model input) with tensor name `name`.
    pub fn parameter(&mut self, name: &str, et: ElementType, dims: &[usize]) -> Out {
        let id = self.id();
        let _ = write!(
            self.layers,
            r#"
    <layer id="{id}" name="{name}" type="Parameter" version="opset1">
      <data shape="{}" element_type="{et}"/>
      <output><port id="0" precision="{}" names="{name}">{}</port></output>
    </layer>"#,
            join(dims),
            precision(et),
            dims_xml(dims)
        );
        Out { layer: id, port: 0, et, dims: dims.to_vec() }
    }

    /// A `Const` holding `bytes` (appended to the weights).
    pub fn constant(&mut self, name: &str, et: ElementType, dims: &[usize], bytes: &[u8]) -> Out {
        let id = self.id();
        let offset = self.weights.len();
        self.weights.extend_from_slice(bytes);
        let _ = write!(
            self.layers,
            r#"
    <layer id="{id}" name="{name}" type="Const" version="opset1">
      <data element_type="{et}" shape="{}" offset="{offset}" size="{}"/>
      <output><port id="0" precision="{}">{}</port></output>
    </layer>"#,
            join(dims),
            bytes.len(),
            precision(et),
            dims_xml(dims)
        );
        Out { layer: id, port: 0, et, dims: dims.to_vec() }
    }

    /// An opset1 operation of type `ty` with attributes `data` (`key="value" ...`, may be empty),
    /// one output of `et` and `dims`, optionally with a tensor name.
    #[allow(clippy::too_many_arguments)]
    pub fn op(
        &mut self,
        name: &str,
        ty: &str,
        data: &str,
        inputs: &[&Out],
        et: ElementType,
        dims: &[usize],
        tensor_name: Option<&str>,
    ) -> Out {
        let id = self.id();
        let ins: String = inputs
            .iter()
            .enumerate()
            .map(|(i, o)| format!(r#"<port id="{i}" precision="{}">{}</port>"#, precision(o.et), dims_xml(&o.dims)))
            .collect();
        let out_port = inputs.len();
        let names = tensor_name.map(|n| format!(r#" names="{n}""#)).unwrap_or_default();
        let data = if data.is_empty() { String::new() } else { format!("\n      <data {data}/>") };
        let _ = write!(
            self.layers,
            r#"
    <layer id="{id}" name="{name}" type="{ty}" version="opset1">{data}
      <input>{ins}</input>
      <output><port id="{out_port}" precision="{}"{names}>{}</port></output>
    </layer>"#,
            precision(et),
            dims_xml(dims)
        );
        for (i, o) in inputs.iter().enumerate() {
            self.edges.push((o.layer, o.port, id, i));
        }
        Out { layer: id, port: out_port, et, dims: dims.to_vec() }
    }

    /// A `Result` (model output) of `input`.
    pub fn result(&mut self, name: &str, input: &Out) {
        let id = self.id();
        let _ = write!(
            self.layers,
            r#"
    <layer id="{id}" name="{name}" type="Result" version="opset1">
      <input><port id="0" precision="{}">{}</port></input>
    </layer>"#,
            precision(input.et),
            dims_xml(&input.dims)
        );
        self.edges.push((input.layer, input.port, id, 0));
    }

    /// The IR XML and the weights.
    pub fn finish(self, net: &str) -> (String, Vec<u8>) {
        let mut xml = format!("<?xml version=\"1.0\"?>\n<net name=\"{net}\" version=\"11\">\n  <layers>");
        xml.push_str(&self.layers);
        xml.push_str("\n  </layers>\n  <edges>");
        for (fl, fp, tl, tp) in &self.edges {
            let _ =
                write!(xml, "\n    <edge from-layer=\"{fl}\" from-port=\"{fp}\" to-layer=\"{tl}\" to-port=\"{tp}\"/>");
        }
        xml.push_str("\n  </edges>\n</net>\n");
        (xml, self.weights)
    }
}

/// The `auto_broadcast="numpy"` attribute of elementwise operations.
pub const NUMPY: &str = r#"auto_broadcast="numpy""#;

// ---- the models ------------------------------------------------------------------------------

/// A 3×3 convolution with 4 input and 4 output channels, stride 1, padding 1, no bias:
/// `input` f32 \[1,4,32,32\] (16 KiB) → `output` f32 \[1,4,32,32\] (16 KiB).
pub fn convolution() -> ReferenceModel {
    const C: usize = 4;
    const H: usize = 32;
    const W: usize = 32;
    let w: Vec<f32> = (0..C * C * 9).map(|i| ((i * 7 % 11) as f32 - 5.0) / 8.0).collect();
    let mut ir = Ir::default();
    let x = ir.parameter("input", ElementType::F32, &[1, C, H, W]);
    let k = ir.constant("filters", ElementType::F32, &[C, C, 3, 3], &f32_bytes(&w));
    let y = ir.op(
        "conv",
        "Convolution",
        r#"strides="1,1" dilations="1,1" pads_begin="1,1" pads_end="1,1" auto_pad="explicit""#,
        &[&x, &k],
        ElementType::F32,
        &[1, C, H, W],
        Some("output"),
    );
    ir.result("output/sink", &y);
    let (xml, weights) = ir.finish("convolution");
    let reference = move |inputs: &[&[u8]]| {
        let x = f32s(inputs[0]);
        let mut y = vec![0f32; C * H * W];
        for o in 0..C {
            for r in 0..H {
                for c in 0..W {
                    let mut acc = 0f32;
                    for i in 0..C {
                        for ky in 0..3 {
                            for kx in 0..3 {
                                let (yy, xx) = (r as isize + ky as isize - 1, c as isize + kx as isize - 1);
                                if yy < 0 || xx < 0 || yy >= H as isize || xx >= W as isize {
                                    continue;
                                }
                                acc += w[((o * C + i) * 3 + ky) * 3 + kx] * x[(i * H + yy as usize) * W + xx as usize];
                            }
                        }
                    }
                    y[(o * H + r) * W + c] = acc;
                }
            }
        }
        vec![f32_bytes(&y)]
    };
    ReferenceModel {
        name: "convolution",
        xml,
        weights,
        inputs: vec![TensorDesc::new("input", ElementType::F32, &[1, C, H, W])],
        outputs: vec![TensorDesc::new("output", ElementType::F32, &[1, C, H, W])],
        atol: 2e-2,
        rtol: 1e-2,
        reference: Arc::new(reference),
    }
}

/// A fully connected layer, `output = input × weights + bias`: `input` f32 \[4,256\] (4 KiB),
/// weights \[256,256\], bias \[256\] → `output` f32 \[4,256\] (4 KiB).
pub fn fully_connected() -> ReferenceModel {
    const M: usize = 4;
    const K: usize = 256;
    const N: usize = 256;
    let w: Vec<f32> = (0..K * N).map(|i| (((i / N) * 13 + (i % N) * 7) % 17) as f32 / 64.0 - 0.125).collect();
    let b: Vec<f32> = (0..N).map(|n| (n % 9) as f32 / 8.0 - 0.5).collect();
    let mut ir = Ir::default();
    let x = ir.parameter("input", ElementType::F32, &[M, K]);
    let wc = ir.constant("weights", ElementType::F32, &[K, N], &f32_bytes(&w));
    let mm = ir.op(
        "matmul",
        "MatMul",
        r#"transpose_a="false" transpose_b="false""#,
        &[&x, &wc],
        ElementType::F32,
        &[M, N],
        None,
    );
    let bc = ir.constant("bias", ElementType::F32, &[1, N], &f32_bytes(&b));
    let y = ir.op("add", "Add", NUMPY, &[&mm, &bc], ElementType::F32, &[M, N], Some("output"));
    ir.result("output/sink", &y);
    let (xml, weights) = ir.finish("fully_connected");
    let reference = move |inputs: &[&[u8]]| {
        let x = f32s(inputs[0]);
        let mut y = vec![0f32; M * N];
        for m in 0..M {
            for n in 0..N {
                let mut acc = 0f32;
                for k in 0..K {
                    acc += x[m * K + k] * w[k * N + n];
                }
                y[m * N + n] = acc + b[n];
            }
        }
        vec![f32_bytes(&y)]
    };
    ReferenceModel {
        name: "fully_connected",
        xml,
        weights,
        inputs: vec![TensorDesc::new("input", ElementType::F32, &[M, K])],
        outputs: vec![TensorDesc::new("output", ElementType::F32, &[M, N])],
        atol: 5e-2,
        rtol: 1e-2,
        reference: Arc::new(reference),
    }
}

/// Two inputs and two outputs: `a`, `b` f32 \[1,1024\] → `sum` = a + b, `product` = a · b
/// (f32 \[1,1024\], 4 KiB each).
pub fn multi_io() -> ReferenceModel {
    const N: usize = 1024;
    let mut ir = Ir::default();
    let a = ir.parameter("a", ElementType::F32, &[1, N]);
    let b = ir.parameter("b", ElementType::F32, &[1, N]);
    let s = ir.op("add", "Add", NUMPY, &[&a, &b], ElementType::F32, &[1, N], Some("sum"));
    let p = ir.op("mul", "Multiply", NUMPY, &[&a, &b], ElementType::F32, &[1, N], Some("product"));
    ir.result("sum/sink", &s);
    ir.result("product/sink", &p);
    let (xml, weights) = ir.finish("multi_io");
    let reference = |inputs: &[&[u8]]| {
        let (a, b) = (f32s(inputs[0]), f32s(inputs[1]));
        let s: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
        let p: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
        vec![f32_bytes(&s), f32_bytes(&p)]
    };
    ReferenceModel {
        name: "multi_io",
        xml,
        weights,
        inputs: vec![TensorDesc::new("a", ElementType::F32, &[1, N]), TensorDesc::new("b", ElementType::F32, &[1, N])],
        outputs: vec![
            TensorDesc::new("sum", ElementType::F32, &[1, N]),
            TensorDesc::new("product", ElementType::F32, &[1, N]),
        ],
        atol: 2e-3,
        rtol: 1e-3,
        reference: Arc::new(reference),
    }
}

/// An f16 model: `input` f16 \[1,2048\] (4 KiB) → `output` = input · 0.5 + 0.25, f16 \[1,2048\].
pub fn f16_scale() -> ReferenceModel {
    const N: usize = 2048;
    let mut ir = Ir::default();
    let x = ir.parameter("input", ElementType::F16, &[1, N]);
    let s = ir.constant("scale", ElementType::F16, &[1], &f16_bytes(&[0.5]));
    let m = ir.op("mul", "Multiply", NUMPY, &[&x, &s], ElementType::F16, &[1, N], None);
    let o = ir.constant("offset", ElementType::F16, &[1], &f16_bytes(&[0.25]));
    let y = ir.op("add", "Add", NUMPY, &[&m, &o], ElementType::F16, &[1, N], Some("output"));
    ir.result("output/sink", &y);
    let (xml, weights) = ir.finish("f16_scale");
    let reference = |inputs: &[&[u8]]| {
        let y: Vec<f32> = f16s(inputs[0]).iter().map(|x| x * 0.5 + 0.25).collect();
        vec![f16_bytes(&y)]
    };
    ReferenceModel {
        name: "f16_scale",
        xml,
        weights,
        inputs: vec![TensorDesc::new("input", ElementType::F16, &[1, N])],
        outputs: vec![TensorDesc::new("output", ElementType::F16, &[1, N])],
        atol: 1e-3,
        rtol: 1e-3,
        reference: Arc::new(reference),
    }
}

/// A u8-input model: `input` u8 \[1,4096\] (4 KiB) → Convert to f32 → `output` = x · 2 + 1,
/// f32 \[1,4096\] (16 KiB). Exact on every device (integers below 2¹¹).
pub fn u8_input() -> ReferenceModel {
    const N: usize = 4096;
    let mut ir = Ir::default();
    let x = ir.parameter("input", ElementType::U8, &[1, N]);
    let c = ir.op("convert", "Convert", r#"destination_type="f32""#, &[&x], ElementType::F32, &[1, N], None);
    let s = ir.constant("scale", ElementType::F32, &[1], &f32_bytes(&[2.0]));
    let m = ir.op("mul", "Multiply", NUMPY, &[&c, &s], ElementType::F32, &[1, N], None);
    let o = ir.constant("offset", ElementType::F32, &[1], &f32_bytes(&[1.0]));
    let y = ir.op("add", "Add", NUMPY, &[&m, &o], ElementType::F32, &[1, N], Some("output"));
    ir.result("output/sink", &y);
    let (xml, weights) = ir.finish("u8_input");
    let reference = |inputs: &[&[u8]]| {
        let y: Vec<f32> = inputs[0].iter().map(|&v| v as f32 * 2.0 + 1.0).collect();
        vec![f32_bytes(&y)]
    };
    ReferenceModel {
        name: "u8_input",
        xml,
        weights,
        inputs: vec![TensorDesc::new("input", ElementType::U8, &[1, N])],
        outputs: vec![TensorDesc::new("output", ElementType::F32, &[1, N])],
        atol: 0.0,
        rtol: 0.0,
        reference: Arc::new(reference),
    }
}

/// A large-input model: `input` f32 \[1,3,512,512\] (3 MiB) → `output` = input · 2 (3 MiB). Exact.
pub fn large_input() -> ReferenceModel {
    ReferenceModel { name: "large_input", ..scale(&[1, 3, 512, 512]) }
}

/// An elementwise model of any shape, built like [`large_input`]: `input` f32 `dims` → `output` =
/// input · 2. Its work grows with its size (one read and one write of every element): the
/// benchmarks' size sweep. Exact.
pub fn scale(dims: &[usize]) -> ReferenceModel {
    let mut ir = Ir::default();
    let x = ir.parameter("input", ElementType::F32, dims);
    let s = ir.constant("scale", ElementType::F32, &[1], &f32_bytes(&[2.0]));
    let y = ir.op("mul", "Multiply", NUMPY, &[&x, &s], ElementType::F32, dims, Some("output"));
    ir.result("output/sink", &y);
    let (xml, weights) = ir.finish("scale");
    let reference = |inputs: &[&[u8]]| vec![f32_bytes(&f32s(inputs[0]).iter().map(|x| x * 2.0).collect::<Vec<_>>())];
    ReferenceModel {
        name: "scale",
        xml,
        weights,
        inputs: vec![TensorDesc::new("input", ElementType::F32, dims)],
        outputs: vec![TensorDesc::new("output", ElementType::F32, dims)],
        atol: 0.0,
        rtol: 0.0,
        reference: Arc::new(reference),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tensor_is_page_multiple() {
        for m in all() {
            for d in m.inputs.iter().chain(&m.outputs) {
                assert_eq!(d.byte_size() % 4096, 0, "{} {}", m.name, d.name);
            }
            let ins = m.sample_inputs();
            let refs: Vec<&[u8]> = ins.iter().map(|v| v.as_slice()).collect();
            let outs = m.reference(&refs).unwrap();
            for (i, o) in outs.iter().enumerate() {
                assert_eq!(o.len(), m.outputs[i].byte_size());
                m.compare(i, o, o).unwrap();
            }
        }
    }

    #[test]
    fn ir_shape() {
        let m = multi_io();
        assert!(m.xml.contains(r#"names="product""#));
        assert!(m.xml.contains(r#"<edge from-layer="0" from-port="0" to-layer="2" to-port="0"/>"#));
        assert!(m.weights.is_empty());
        assert_eq!(convolution().weights.len(), 4 * 4 * 9 * 4);
    }
}
