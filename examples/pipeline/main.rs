//! A pipeline as users run one: a stream of frames written by SYCL into memory the NPU reads,
//! inference on the NPU, results read back by SYCL, double-buffered over two infer requests so
//! that SYCL work on one frame overlaps NPU work on another. Nothing is copied between SYCL and the
//! NPU (the strategy `Auto` picks is zero-copy), and every output is checked against OpenVINO's CPU
//! plugin. The same frames are then run strictly in sequence, for comparison
//! (`benches/pipeline.rs` measures the ratio properly).
//!
//! `cargo run --features sycl --example pipeline [-- --virtual]`.
mod stream;

use anyhow::{ensure, Context as _};
use npu_sycl_bridge::openvino::{Core, Properties};
use npu_sycl_bridge::strategy::Auto;
use testkit::models;
use testkit::virtual_platform::{self, Selection};

const FRAMES: usize = 24;

fn main() -> anyhow::Result<()> {
    let selection = virtual_platform::select(std::env::args().any(|a| a == "--virtual"))?;
    let vp = selection.virtual_platform();
    if let Selection::Virtual { reason, .. } = &selection {
        println!("PLATFORM: VIRTUAL ({reason}): counters are real, timings are not a laptop's");
    }
    let counter = |name: &str| vp.map_or(0, |p| p.counter(name));

    let core = Core::new()?;
    let m = models::large_input();
    let model = core.read_model_from_memory(&m.xml, &m.weights)?;
    let compiled = core.compile_model(&model, "NPU", &Properties::new())?;
    let cpu = core.compile_model(&model, "CPU", &testkit::reference::cpu_properties())?;
    let (din, dout) = (&m.inputs[0], &m.outputs[0]);

    let auto = Auto::for_model(&compiled)?;
    println!("strategy: {} (zero-copy: {})", auto.kind(), if auto.is_zero_copy() { "yes" } else { "no" });
    ensure!(auto.is_zero_copy(), "Auto chose a strategy that copies: {}", auto.decision());
    let mut stream =
        stream::Stream::new(&compiled, &auto, (din.element_type, &din.shape), (dout.element_type, &dout.shape))?;

    // The frames: a moving pattern, as a camera would give.
    let elements = din.shape.element_count();
    let frames: Vec<Vec<u8>> = (0..FRAMES)
        .map(|f| (0..elements).flat_map(|i| (((i + 7 * f) % 97) as f32 / 8.0 - 6.0).to_le_bytes()).collect())
        .collect();
    let frame_refs: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
    let expected = testkit::reference::cpu_outputs(&cpu, &m, &frames);

    let mut mismatch = None;
    let mut check = |f: usize, got: &[u8]| {
        if mismatch.is_none() {
            if let Err(e) = m.compare(0, &expected[f], got) {
                mismatch = Some(format!("frame {f}: {e}"));
            }
        }
    };
    // Warm-up: the first inferences of each request record its command list.
    stream.run(&frame_refs[..2], true, |_, _| {})?;
    let before = (counter("npu.bytes_copied"), counter("npu.graph_args.dma_buf"), counter("npu.inferences"));
    let overlapped = stream.run(&frame_refs, true, &mut check).context("the overlapped pipeline")?;
    let after = (counter("npu.bytes_copied"), counter("npu.graph_args.dma_buf"), counter("npu.inferences"));
    let sequential = stream.run(&frame_refs, false, &mut check).context("the same frames in sequence")?;
    if let Some(m) = mismatch {
        anyhow::bail!("the NPU's output differs from the CPU plugin's: {m}");
    }
    println!("{FRAMES} frames of {} bytes; every output equals the CPU plugin's", din.byte_size());
    println!(
        "overlapped: SYCL wrote {} of {FRAMES} frames while the other request's inference was in flight; {:.1} frames/s",
        overlapped.overlapped,
        overlapped.fps()
    );
    println!("in sequence: {:.1} frames/s (ratio {:.2}x)", sequential.fps(), overlapped.fps() / sequential.fps());
    if vp.is_some() {
        println!(
            "counters during the overlapped run: npu.bytes_copied +{}, npu.graph_args.dma_buf +{}, npu.inferences +{}",
            after.0 - before.0,
            after.1 - before.1,
            after.2 - before.2
        );
        ensure!(after.0 == before.0, "the NPU copied nothing");
        ensure!(after.2 - before.2 == FRAMES as u64, "one inference per frame");
    }
    ensure!(overlapped.overlapped + 1 >= FRAMES, "SYCL work overlapped NPU work on every frame but the first");
    println!(
        "RESULT: {FRAMES} frames through SYCL and the NPU with no copy between them; SYCL and NPU work overlapped"
    );
    Ok(())
}
