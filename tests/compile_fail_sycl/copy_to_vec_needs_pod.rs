// Typed reads need `Pod`: not every bit pattern is a valid `bool` (or a reference).
use npu_sycl_bridge::sycl::{Queue, UsmBuffer};

fn read(buf: &UsmBuffer, queue: &Queue) {
    let _: Vec<bool> = buf.copy_to_vec(queue).unwrap();
}

fn main() {}
