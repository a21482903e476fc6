//! The forum snippet, ported step by step (being written).
fn main() -> anyhow::Result<()> {
    Ok(())
}
