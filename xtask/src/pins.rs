//! Reads `provision/pins.toml`, the one place where native dependency versions are pinned.
//! The file is a flat subset of TOML (sections, `key = "value"`, `key = ["a", "b"]`), parsed here
//! without dependencies so that the first `cargo xtask` on a fresh machine builds quickly.

use std::collections::BTreeMap;

/// `section -> key -> values` (a scalar value is a one-element list).
pub struct Pins {
    sections: BTreeMap<String, BTreeMap<String, Vec<String>>>,
}

impl Pins {
    pub fn load() -> Result<Pins, String> {
        let path = crate::root().join("provision/pins.toml");
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut sections: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
        let mut current = String::new();
        for (n, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                current = name.trim().to_string();
                continue;
            }
            let (key, value) =
                line.split_once('=').ok_or_else(|| format!("{}:{}: expected `key = value`", path.display(), n + 1))?;
            let value = value.trim();
            let values = if let Some(list) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
                list.split(',').map(unquote).filter(|s| !s.is_empty()).collect()
            } else {
                vec![unquote(value)]
            };
            sections.entry(current.clone()).or_default().insert(key.trim().to_string(), values);
        }
        Ok(Pins { sections })
    }

    pub fn section(&self, name: &str) -> Result<&BTreeMap<String, Vec<String>>, String> {
        self.sections.get(name).ok_or_else(|| format!("provision/pins.toml has no [{name}] section"))
    }

    pub fn value(&self, section: &str, key: &str) -> Result<&str, String> {
        self.section(section)?
            .get(key)
            .and_then(|v| v.first())
            .map(String::as_str)
            .ok_or_else(|| format!("provision/pins.toml: [{section}] has no `{key}`"))
    }
}

fn unquote(s: &str) -> String {
    s.trim().trim_matches('"').to_string()
}
