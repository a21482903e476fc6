//! The public-API snapshot (`docs/public-api.txt`): every public item of the library, the inherent
//! methods, fields and variants of each, and the crate root's re-exports, one per line, sorted. It is
//! read from the docs the gates build (rustdoc's all-items page and each item's page), so it needs no
//! nightly toolchain. `cargo xtask test` fails when the surface differs from the committed file, so
//! it only changes on purpose; `cargo xtask api --bless` writes it anew after a deliberate change.

use std::collections::BTreeSet;
use std::path::Path;

/// The committed snapshot, relative to the workspace root.
const SNAPSHOT: &str = "docs/public-api.txt";

/// Item members rustdoc anchors with these prefixes on an item's page.
const MEMBERS: [&str; 6] = ["method", "tymethod", "variant", "structfield", "associatedconstant", "associatedtype"];

/// Compares the library's public API (from its built docs) with the snapshot, or rewrites the
/// snapshot when `bless`.
pub fn check(docs: &Path, bless: bool) -> Result<(), String> {
    let now = surface(docs)?.into_iter().collect::<Vec<_>>().join("\n") + "\n";
    let path = crate::root().join(SNAPSHOT);
    if bless {
        std::fs::write(&path, &now).map_err(|e| format!("writing {}: {e}", path.display()))?;
        eprintln!("xtask api: wrote {} ({} lines)", path.display(), now.lines().count());
        return Ok(());
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed == now {
        return Ok(());
    }
    let (was, is): (BTreeSet<&str>, BTreeSet<&str>) = (committed.lines().collect(), now.lines().collect());
    let added: Vec<&&str> = is.difference(&was).collect();
    let removed: Vec<&&str> = was.difference(&is).collect();
    Err(format!(
        "the public API differs from {SNAPSHOT}:\n{}{}\nif the change is meant, run `cargo xtask api --bless` and commit the file",
        added.iter().map(|l| format!("  + {l}\n")).collect::<String>(),
        removed.iter().map(|l| format!("  - {l}\n")).collect::<String>(),
    ))
}

/// Every line of the surface: `<kind> <path>` for items and members, `use <re-export>` for the root.
fn surface(docs: &Path) -> Result<BTreeSet<String>, String> {
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("reading {}: {e}", p.display()));
    let mut lines = BTreeSet::new();
    let all = read(&docs.join("all.html"))?;
    for (href, name) in links(&all) {
        let Some((kind, _)) = href.rsplit('/').next().and_then(|file| file.split_once('.')) else { continue };
        lines.insert(format!("{kind} {name}"));
        let page = read(&docs.join(href))?;
        // Only the item's own members: trait, auto-trait and blanket implementations follow.
        let own =
            ["id=\"trait-implementations\"", "id=\"synthetic-implementations\"", "id=\"blanket-implementations\""]
                .iter()
                .filter_map(|m| page.find(m))
                .min()
                .map_or(page.as_str(), |end| &page[..end]);
        for member in MEMBERS {
            let anchor = format!("id=\"{member}.");
            for (at, _) in own.match_indices(&anchor) {
                let rest = &own[at + anchor.len()..];
                let ident: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if !ident.is_empty() {
                    lines.insert(format!("{member} {name}::{ident}"));
                }
            }
        }
    }
    let index = read(&docs.join("index.html"))?;
    for (at, _) in index.match_indices("<code>pub use ") {
        let Some(end) = index[at..].find("</code>") else { continue };
        lines.insert(format!("use {}", strip_tags(&index[at + "<code>pub use ".len()..at + end])));
    }
    if lines.is_empty() {
        return Err(format!("no public items found in {}", docs.display()));
    }
    Ok(lines)
}

/// The `(href, text)` of each `<a href="...">text</a>` in the all-items list.
fn links(html: &str) -> Vec<(&str, &str)> {
    let list = html.find("class=\"all-items\"").map_or(html, |at| &html[at..]);
    let mut out = Vec::new();
    for (at, _) in list.match_indices("<a href=\"") {
        let rest = &list[at + "<a href=\"".len()..];
        let Some(q) = rest.find('"') else { continue };
        let Some(open) = rest[q..].find('>') else { continue };
        let text = &rest[q + open + 1..];
        let Some(close) = text.find("</a>") else { continue };
        out.push((&rest[..q], &text[..close]));
    }
    out
}

/// `html` without its tags, with entities for `<`, `>` and `&` decoded.
fn strip_tags(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
}
