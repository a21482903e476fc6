//! Frames per second of the double-buffered SYCL ⇄ NPU pipeline (`examples/pipeline`) against the
//! same work done strictly in sequence, as a ratio measured in one run: rounds of each, alternated,
//! medians compared. On the virtual platform the "NPU" is OpenVINO's CPU plugin on this machine's
//! cores, so SYCL work and inference compete for the same CPUs; on a laptop they run on separate
//! engines. Run: `cargo bench --features sycl --bench pipeline` (the bench build compiles the
//! virtual platform too: testkit depends on virtual-l0), or on real hardware.
#[path = "../examples/pipeline/stream.rs"]
mod stream;

use npu_sycl_bridge::openvino::{Core, Properties};
use npu_sycl_bridge::strategy::Auto;
use testkit::models;
use testkit::virtual_platform;

const FRAMES: usize = 48;
const ROUNDS: usize = 7;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    v[v.len() / 2]
}

fn main() -> npu_sycl_bridge::Result<()> {
    let selection = virtual_platform::select(false)?;
    let core = Core::new()?;
    let m = models::large_input();
    let model = core.read_model_from_memory(&m.xml, &m.weights)?;
    let compiled = core.compile_model(&model, "NPU", &Properties::new())?;
    let (din, dout) = (&m.inputs[0], &m.outputs[0]);
    let auto = Auto::for_model(&compiled)?;
    let mut s =
        stream::Stream::new(&compiled, &auto, (din.element_type, &din.shape), (dout.element_type, &dout.shape))?;
    let frames: Vec<Vec<u8>> = (0..2).map(|f| vec![f as u8 + 1; din.byte_size()]).collect();
    let refs: Vec<&[u8]> = (0..FRAMES).map(|f| frames[f % 2].as_slice()).collect();
    s.run(&refs[..4], true, |_, _| {})?;
    let (mut overlapped, mut sequential, mut in_flight) = (Vec::new(), Vec::new(), 0);
    for _ in 0..ROUNDS {
        let r = s.run(&refs, true, |_, _| {})?;
        in_flight = r.overlapped;
        overlapped.push(r.fps());
        sequential.push(s.run(&refs, false, |_, _| {})?.fps());
    }
    let (o, q) = (median(overlapped), median(sequential));
    println!(
        "pipeline ({}, {} frames of {} bytes, strategy {}): overlapped {o:.1} frames/s ({in_flight} SYCL writes while \
         the other inference was in flight), in sequence {q:.1} frames/s, ratio {:.2}x (medians of {ROUNDS} alternated rounds)",
        if selection.is_virtual() { "virtual platform" } else { "real NPU" },
        FRAMES,
        din.byte_size(),
        auto.kind(),
        o / q
    );
    Ok(())
}
