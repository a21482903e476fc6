//! `npu-sycl-doctor` (being written).
fn main() -> anyhow::Result<()> {
    Ok(())
}
