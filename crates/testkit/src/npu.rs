//! The NPU tests' shared setup on the virtual platform: its counters, one Core per test process, a
//! reference model compiled for the NPU and the CPU plugin, and the comparison of NPU outputs with
//! the CPU plugin's (and of those with the Rust reference).

use std::sync::OnceLock;

use npu_sycl_bridge::level_zero::{DeviceType, Driver, L0Device};
use npu_sycl_bridge::memory::PageAlignedBuffer;
use npu_sycl_bridge::npu::{NpuContext, NpuTensor};
use npu_sycl_bridge::openvino::{CompiledModel, Core, ElementType, InferRequest, Tensor, TensorType};
use npu_sycl_bridge::{ErrorKind, Path, Reason};

use crate::models::ReferenceModel;
use crate::reference::{cpu_properties, npu_properties};
use crate::virtual_platform::{self, VirtualPlatform};

/// The virtual platform, activated on first use.
pub fn vp() -> &'static VirtualPlatform {
    virtual_platform::activate().expect("activate the virtual platform")
}

/// A virtual platform counter.
pub fn counter(name: &str) -> u64 {
    vp().counter(name)
}

/// The number of open file descriptors of this process.
pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// One Core per test process, so that every test sees one plugin instance (the NPU plugin has one
/// L0 context per process, shared by all Cores).
pub fn core() -> &'static Core {
    static CORE: OnceLock<Core> = OnceLock::new();
    CORE.get_or_init(|| {
        vp();
        Core::new().unwrap()
    })
}

/// The first Level Zero device of type `kind` (the virtual GPU or NPU), with its driver.
pub fn l0_device(kind: DeviceType) -> (Driver, L0Device) {
    vp();
    for driver in Driver::all().unwrap() {
        for device in driver.devices().unwrap() {
            if device.properties().unwrap().device_type == kind {
                return (driver, device);
            }
        }
    }
    panic!("no {kind:?} device on the virtual platform");
}

/// Whether the NPU imports user memory (CPU_VA): NPU 40xx+ with the kernel's userptr ioctl. Where
/// it does not (Meteor/Arrow Lake, `VL0_NPU_USERPTR=0`) this checks that generation's answer instead
/// (CPU_VA refused with a typed error that names what works) and says so on stderr, so that a test
/// about CPU_VA that returns early never passes silently.
pub fn imports_user_memory(npu: &NpuContext) -> bool {
    let caps = npu.capabilities();
    if caps.sysmem_import {
        return true;
    }
    let e = npu.import(PageAlignedBuffer::new(4096).unwrap(), ElementType::U8, [4096], TensorType::Input).unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::Unsupported { path: Path::CpuVa, reason: Reason::NoSystemMemoryImport }, "{e}");
    let works = if cfg!(windows) { "NT handle" } else { "dma-buf" };
    assert!(format!("{e:#}").contains("STANDARD_ALLOCATION") && format!("{e:#}").contains(works), "{e}");
    let laptop = caps.generation.map_or("an unknown NPU".to_string(), |g| format!("{g} ({})", g.npu_family()));
    eprintln!("{laptop} imports no user memory: checked that CPU_VA is refused instead ({e})");
    false
}

/// An input tensor holding `bytes` (f32) in memory the NPU uses in place: CPU_VA of a page-aligned
/// buffer where the NPU imports user memory, an L0 host tensor (the plugin's memory) elsewhere.
pub fn in_place_input(npu: &NpuContext, bytes: &[u8], shape: [usize; 2]) -> NpuTensor {
    if npu.capabilities().sysmem_import {
        let buf = PageAlignedBuffer::from_slice(bytes).unwrap();
        return npu.import(buf, ElementType::F32, shape, TensorType::Input).unwrap();
    }
    let mut t = npu.l0_host_tensor(ElementType::F32, shape, TensorType::Input).unwrap();
    t.host_bytes_mut().unwrap().copy_from_slice(bytes);
    t
}

/// A different input: the sample input scaled by -1 (every value stays a multiple of 1/16).
pub fn other_input(m: &ReferenceModel, i: usize) -> Vec<u8> {
    m.sample_input(i).chunks_exact(4).flat_map(|c| (-f32::from_le_bytes(c.try_into().unwrap())).to_le_bytes()).collect()
}

/// A reference model compiled for the NPU and (in f32) for the CPU plugin, and the NPU context.
pub struct NpuAndCpu {
    /// The model.
    pub m: ReferenceModel,
    /// The model compiled for the NPU.
    pub npu_model: CompiledModel,
    /// The model compiled for the CPU plugin, in f32.
    pub cpu_model: CompiledModel,
    /// The NPU plugin's context (of `npu_model`).
    pub npu: NpuContext,
}

impl NpuAndCpu {
    /// Compiles `m` with `core` for the NPU and the CPU.
    pub fn new(core: &Core, m: ReferenceModel) -> NpuAndCpu {
        vp();
        let model = core.read_model_from_memory(&m.xml, &m.weights).unwrap();
        let npu_model =
            core.compile_model(&model, "NPU", &npu_properties()).unwrap_or_else(|e| panic!("NPU compile: {e}"));
        let cpu_model = core.compile_model(&model, "CPU", &cpu_properties()).unwrap();
        let npu = NpuContext::from_compiled_model(&npu_model).unwrap();
        NpuAndCpu { m, npu_model, cpu_model, npu }
    }

    /// The CPU plugin's outputs for `inputs` (plain tensors).
    pub fn cpu(&self, inputs: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let mut r = self.cpu_model.create_infer_request().unwrap();
        for (i, bytes) in inputs.iter().enumerate() {
            let d = &self.m.inputs[i];
            r.set_input_tensor(i, &Tensor::from_bytes(d.element_type, d.shape.clone(), bytes).unwrap()).unwrap();
        }
        r.infer().unwrap();
        (0..self.m.outputs.len()).map(|i| r.output_tensor(i).unwrap().bytes().unwrap().to_vec()).collect()
    }

    /// Asserts that the NPU's `outputs` for `inputs` equal the CPU plugin's (within the model's
    /// tolerance), and that the CPU plugin agrees with the Rust reference.
    pub fn assert_matches_cpu(&self, inputs: &[Vec<u8>], outputs: &[Vec<u8>]) {
        self.check_matches_cpu(None, inputs, outputs);
    }

    /// [`assert_matches_cpu`](Self::assert_matches_cpu), with `what` (the path under test) in the
    /// messages.
    pub fn assert_matches_cpu_in(&self, what: &str, inputs: &[Vec<u8>], outputs: &[Vec<u8>]) {
        self.check_matches_cpu(Some(what), inputs, outputs);
    }

    fn check_matches_cpu(&self, what: Option<&str>, inputs: &[Vec<u8>], outputs: &[Vec<u8>]) {
        let want = self.cpu(inputs);
        let prefix = what.map(|w| format!("{w}: ")).unwrap_or_default();
        assert_eq!(want.len(), outputs.len(), "{prefix}one NPU output per model output");
        for (i, (w, g)) in want.iter().zip(outputs).enumerate() {
            if let Err(e) = self.m.compare(i, w, g) {
                panic!("{prefix}{}: NPU output {i} differs from the CPU plugin's: {e}", self.m.name);
            }
        }
        // And the CPU plugin agrees with the Rust reference.
        let refs: Vec<&[u8]> = inputs.iter().map(|v| v.as_slice()).collect();
        let reference = self.m.reference(&refs).unwrap();
        for (i, (r, w)) in reference.iter().zip(&want).enumerate() {
            self.m.compare(i, r, w).unwrap();
        }
    }

    /// A new NPU inference request.
    pub fn request(&self) -> InferRequest {
        self.npu_model.create_infer_request().unwrap()
    }
}

/// The fuzz tests' model of a tensor's byte size, written apart from the crate's own rule: the bytes
/// an import must find, or the error kind that refuses the tensor first.
pub fn expected_import_bytes(et: ElementType, dims: &[usize]) -> Result<usize, ErrorKind> {
    if et.bits() == 0 {
        return Err(ErrorKind::ElementType);
    }
    let elements = dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d)).ok_or(ErrorKind::Shape)?;
    if elements == 0 {
        return Err(ErrorKind::Shape);
    }
    // OpenVINO packs u3 and u6 in groups of three bytes (8 and 4 elements), other sub-byte types
    // bit by bit (measured with OpenVINO 2026.4: one u3 element takes 3 bytes).
    match et {
        ElementType::U3 => elements.div_ceil(8).checked_mul(3),
        ElementType::U6 => elements.div_ceil(4).checked_mul(3),
        _ => elements.checked_mul(et.bits()).map(|b| b.div_ceil(8)),
    }
    .ok_or(ErrorKind::Shape)
}
