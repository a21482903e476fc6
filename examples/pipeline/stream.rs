//! A stream of frames through two infer requests, SYCL on one side and the NPU on the other:
//! what `examples/pipeline` runs and `benches/pipeline.rs` times.
use std::time::{Duration, Instant};

use npu_sycl_bridge::openvino::{CompiledModel, ElementType, InferRequest, Shape, TensorType};
use npu_sycl_bridge::strategy::{SharedTensor, Strategy};
use npu_sycl_bridge::Result;

/// Two requests, each bound once to its own shared input and output tensor (double buffering).
pub struct Stream {
    requests: [InferRequest; 2],
    inputs: [SharedTensor; 2],
    outputs: [SharedTensor; 2],
}

/// What a run did.
#[derive(Debug, Clone, Copy)]
pub struct Report {
    /// Frames processed.
    pub frames: usize,
    /// Frames whose SYCL write was made while the other request's inference was in flight
    /// (started and not yet waited for).
    pub overlapped: usize,
    /// Wall time of the whole stream.
    pub elapsed: Duration,
}

impl Report {
    /// Frames per second.
    pub fn fps(&self) -> f64 {
        self.frames as f64 / self.elapsed.as_secs_f64()
    }
}

impl Stream {
    /// Tensors of `strategy` for a model with one input and one output of these types and shapes,
    /// bound once to two requests of `compiled`.
    pub fn new(
        compiled: &CompiledModel,
        strategy: &Strategy,
        input: (ElementType, &Shape),
        output: (ElementType, &Shape),
    ) -> Result<Stream> {
        let tensor = |(et, shape): (ElementType, &Shape), tt| strategy.tensor(et, shape.clone(), tt);
        let inputs = [tensor(input, TensorType::Input)?, tensor(input, TensorType::Input)?];
        let outputs = [tensor(output, TensorType::Output)?, tensor(output, TensorType::Output)?];
        let mut requests = [compiled.create_infer_request()?, compiled.create_infer_request()?];
        for (k, r) in requests.iter_mut().enumerate() {
            r.set_input_tensor(0, &inputs[k])?;
            r.set_output_tensor(0, &outputs[k])?;
        }
        Ok(Stream { requests, inputs, outputs })
    }

    /// Runs `frames` through the NPU. Overlapped: while the NPU infers frame `f` on one request,
    /// SYCL reads the result of frame `f - 1` and writes frame `f + 1` into the other request's
    /// tensors. In sequence: write, infer, read, one frame after the other. `result(f, bytes)` gets
    /// every frame's output, in order.
    pub fn run(&mut self, frames: &[&[u8]], overlapped: bool, mut result: impl FnMut(usize, &[u8])) -> Result<Report> {
        let start = Instant::now();
        let mut overlapping = 0;
        let mut out = Vec::new();
        if !overlapped {
            for (f, frame) in frames.iter().enumerate() {
                self.inputs[0].write(0, frame)?;
                self.requests[0].infer()?;
                out = self.outputs[0].read_to_vec()?;
                result(f, &out);
            }
        } else {
            for (f, frame) in frames.iter().enumerate() {
                let k = f % 2;
                // This request's previous frame (f - 2) is done before its tensors are reused.
                self.requests[k].wait()?;
                if f >= 2 {
                    out = self.outputs[k].read_to_vec()?;
                    result(f - 2, &out);
                }
                let other_busy = self.requests[1 - k].is_running();
                self.inputs[k].write_async(0, frame)?.then_start(&mut self.requests[k])?;
                if other_busy && self.requests[1 - k].is_running() {
                    overlapping += 1;
                }
            }
            // Drain: the last two frames, in order.
            for f in frames.len().saturating_sub(2)..frames.len() {
                let k = f % 2;
                self.requests[k].wait()?;
                out = self.outputs[k].read_to_vec()?;
                result(f, &out);
            }
        }
        drop(out);
        Ok(Report { frames: frames.len(), overlapped: overlapping, elapsed: start.elapsed() })
    }
}
