//! The guide (`docs/guide.md`, the crate's rustdoc front page) is the one strategy table: it has one
//! row per `StrategyKind`, in `StrategyKind::ALL`'s order, and the README points at it.
#![cfg(feature = "sycl")]

use npu_sycl_bridge::StrategyKind;

const GUIDE: &str = include_str!("../docs/guide.md");

#[test]
fn the_guides_strategy_rows_are_strategy_kind_all() {
    let rows: Vec<&str> = GUIDE
        .lines()
        .filter_map(|l| l.strip_prefix("| [`StrategyKind::"))
        .map(|rest| rest.split('`').next().unwrap_or_default())
        .collect();
    let all: Vec<String> = StrategyKind::ALL.iter().map(|k| format!("{k:?}")).collect();
    assert_eq!(rows, all, "docs/guide.md's strategy table, row by row, against StrategyKind::ALL");
}

#[test]
fn the_readme_links_the_guide_instead_of_a_table_of_its_own() {
    let readme = include_str!("../README.md");
    assert!(readme.contains("docs/guide.md#sharing-strategies"), "the README links the guide's table");
    let tables = readme.lines().filter(|l| l.starts_with("| strategy |")).count();
    assert_eq!(tables, 0, "the README has no strategy table of its own");
}
