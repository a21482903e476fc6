//! The NPU memory paths that need no SYCL, each run end to end on the model: the OS's shareable
//! handle of the iGPU's exportable Level Zero memory (a dma-buf fd on Linux, an NT handle on
//! Windows), CPU_VA of page-aligned process memory, and the plugin's own L0 host tensors. Write
//! the input, bind, infer, read the output, compare with the CPU plugin; on the virtual platform
//! the counters say whether the graph read the memory in place.

use std::sync::Arc;

use npu_sycl_bridge::level_zero::{DeviceType, Driver, L0Allocation, L0Context};
use npu_sycl_bridge::memory::PageAlignedBuffer;
use npu_sycl_bridge::npu::{NpuContext, NpuTensor};
use npu_sycl_bridge::openvino::{CompiledModel, TensorType};
use npu_sycl_bridge::{Error, ErrorKind};
use testkit::models::ReferenceModel;
use testkit::virtual_platform::VirtualPlatform;

use crate::{classify, Status};

/// One path tried.
pub struct PathRow {
    /// "dma-buf" / "NT handle", "CPU_VA", "L0 host tensor".
    pub path: &'static str,
    /// What memory it used.
    pub memory: &'static str,
    pub status: Status,
    /// `Some(true)` the graph read the memory in place (counters), `None` not known.
    pub zero_copy: Option<bool>,
    /// The reason (unsupported / failed) or the evidence (works).
    pub detail: String,
}

/// The shareable-handle path's name on this OS.
pub const SHARED_HANDLE: &str = if cfg!(windows) { "NT handle" } else { "dma-buf" };

/// The in-place counter of this OS's shareable handles.
const SHARED_ARGS: &str = if cfg!(windows) { "npu.graph_args.nt_handle" } else { "npu.graph_args.dma_buf" };

/// Where a path's tensors live, so the output can be read back the path's own way.
enum Memory {
    Gpu(L0Allocation),
    Tensor,
}

/// Makes the tensor of input (`false`) or output (`true`) `index` holding `bytes`, over a path's memory.
type MakeTensor<'a> = &'a dyn Fn(usize, bool, &[u8]) -> Result<(NpuTensor, Memory), Error>;

/// Every path, in order.
pub fn try_all(
    npu: &NpuContext,
    compiled: &CompiledModel,
    m: &ReferenceModel,
    cpu: &[Vec<u8>],
    vp: Option<&'static VirtualPlatform>,
) -> Vec<PathRow> {
    // `imported`: the NPU imports the memory (else it is the plugin's own allocation).
    let run = |path, memory, imported, make: MakeTensor<'_>| {
        let row = |status, zero_copy, detail| PathRow { path, memory, status, zero_copy, detail };
        match infer(compiled, m, cpu, vp, imported, make) {
            Ok((zero_copy, evidence)) => row(Status::Works, zero_copy, evidence),
            Err(e) => row(classify(&e), None, format!("{e:#}")),
        }
    };
    let gpu = gpu_context();
    vec![
        run(SHARED_HANDLE, "the iGPU's exportable device memory (Level Zero)", true, &|i, output, bytes| {
            let (ctx, device) = gpu.as_ref().map_err(|e| Error::new(e.kind().clone(), e.to_string()))?;
            let d = if output { &m.outputs[i] } else { &m.inputs[i] };
            let len = d.byte_size().max(1);
            let mut mem = ctx.alloc_device_exportable(*device, len, 4096)?;
            mem.write(0, bytes)?;
            let tensor_type = if output { TensorType::Output } else { TensorType::Input };
            #[cfg(unix)]
            let t = npu.import(mem.export_dma_buf()?, d.element_type, d.shape.clone(), tensor_type)?;
            #[cfg(windows)]
            let t = npu.import(
                npu_sycl_bridge::memory::NtHandleMemory::new(mem.export_nt_handle()?, len),
                d.element_type,
                d.shape.clone(),
                tensor_type,
            )?;
            Ok((t, Memory::Gpu(mem)))
        }),
        run("CPU_VA", "page-aligned process memory", true, &|i, output, bytes| {
            let d = if output { &m.outputs[i] } else { &m.inputs[i] };
            let tensor_type = if output { TensorType::Output } else { TensorType::Input };
            let t = npu.import(PageAlignedBuffer::from_slice(bytes)?, d.element_type, d.shape.clone(), tensor_type)?;
            Ok((t, Memory::Tensor))
        }),
        run("L0 host tensor", "the plugin's own memory", false, &|i, output, bytes| {
            let d = if output { &m.outputs[i] } else { &m.inputs[i] };
            let tensor_type = if output { TensorType::Output } else { TensorType::Input };
            let mut t = npu.l0_host_tensor(d.element_type, d.shape.clone(), tensor_type)?;
            t.host_bytes_mut()?.copy_from_slice(bytes);
            Ok((t, Memory::Tensor))
        }),
    ]
}

/// A context of the iGPU's Level Zero driver and its GPU device.
fn gpu_context() -> Result<(Arc<L0Context>, npu_sycl_bridge::level_zero::L0Device), Error> {
    for driver in Driver::all()? {
        for device in driver.devices()? {
            if device.properties()?.device_type == DeviceType::Gpu {
                return Ok((Arc::new(L0Context::create(driver)?), device));
            }
        }
    }
    Err(Error::new(ErrorKind::InvalidArgument, "no Level Zero GPU device: the iGPU's driver is missing"))
}

fn infer(
    compiled: &CompiledModel,
    m: &ReferenceModel,
    cpu: &[Vec<u8>],
    vp: Option<&'static VirtualPlatform>,
    imported: bool,
    make: MakeTensor<'_>,
) -> Result<(Option<bool>, String), Error> {
    let inputs: Vec<_> = (0..m.inputs.len()).map(|i| make(i, false, &m.sample_input(i))).collect::<Result<_, _>>()?;
    let outputs: Vec<_> =
        m.outputs.iter().enumerate().map(|(i, d)| make(i, true, &vec![0; d.byte_size()])).collect::<Result<_, _>>()?;
    let mut request = compiled.create_infer_request()?;
    for (i, (t, _)) in inputs.iter().enumerate() {
        request.set_input_tensor(i, t)?;
    }
    for (i, (t, _)) in outputs.iter().enumerate() {
        request.set_output_tensor(i, t)?;
    }
    let counters = ["npu.bytes_copied", SHARED_ARGS, "npu.graph_args.sysmem"];
    let before = vp.map(|vp| counters.map(|n| vp.counter(n)));
    request.infer()?;
    let after = vp.map(|vp| counters.map(|n| vp.counter(n)));
    for (i, (t, mem)) in outputs.iter().enumerate() {
        let got = match mem {
            Memory::Gpu(a) => {
                let mut v = vec![0u8; m.outputs[i].byte_size()];
                a.read(0, &mut v)?;
                v
            }
            Memory::Tensor => t.host_bytes()?.to_vec(),
        };
        m.compare(i, &cpu[i], &got).map_err(|e| {
            Error::new(ErrorKind::InvalidArgument, format!("the NPU's output differs from the CPU plugin's: {e}"))
        })?;
    }
    let matches = "output == CPU plugin".to_string();
    Ok(match before.zip(after) {
        Some((b, a)) => {
            let (copied, shared, sysmem) = (a[0] - b[0], a[1] - b[1], a[2] - b[2]);
            let bound = (inputs.len() + outputs.len()) as u64;
            let in_place = copied == 0 && shared + sysmem == if imported { bound } else { 0 };
            (
                Some(in_place),
                format!(
                    "{matches}; during the inference: npu.bytes_copied +{copied}, {SHARED_ARGS} +{shared}, \
                     npu.graph_args.sysmem +{sysmem} of {bound} bound tensors{}",
                    if in_place { ": the graph read the memory in place" } else { "" }
                ),
            )
        }
        None => (None, format!("{matches} (no counters on real hardware)")),
    })
}
