//! The byte formats a graph arrives in and leaves as.
//!
//! **NGRAPH_LITE** (`ZE_GRAPH_FORMAT_NGRAPH_LITE`, what the NPU plugin's driver-compiler path sends to
//! `pfnCreate2`), packed little-endian without padding:
//! `u16 compilerMajor · u16 compilerMinor · u32 numberOfInputData (= 2) · u64 xmlSize · xml ·
//! u64 weightsSize · weights`.
//!
//! **NATIVE** (this driver's compiled-graph blob, returned by `pfnGetNativeBinary{,2}` and accepted by
//! `pfnCreate*` with `ZE_GRAPH_FORMAT_NATIVE`). The plugin hands an imported blob back page-padded
//! (8192 bytes for a 6003-byte blob), so the format is self-delimiting and ignores trailing bytes:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `"VL0NPUG\0"` |
//! | 8 | 4 | format version, `1` |
//! | 12 | 4 | header size, `56` |
//! | 16 | 8 | total length = header + xml + weights + build flags (trailing bytes after it are ignored) |
//! | 24 | 8 | xml length |
//! | 32 | 8 | weights length |
//! | 40 | 8 | build-flags length (the flags the graph was compiled with, UTF-8, no NUL) |
//! | 48 | 8 | FNV-1a 64 checksum of everything after the header up to the total length |
//! | 56 | … | xml · weights · build flags |
//!
//! All integers are little-endian. The blob holds the IR itself: importing recompiles it for OpenVINO's
//! CPU plugin with the same build flags, so the imported graph behaves exactly like the exported one.

use std::collections::HashMap;

/// The IR a graph is built from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IrInput {
    pub xml: Vec<u8>,
    pub weights: Vec<u8>,
    /// The compiler version the caller echoed (NGRAPH_LITE only).
    pub compiler_version: Option<(u16, u16)>,
}

fn read_u64(b: &[u8], at: usize) -> Option<u64> {
    b.get(at..at + 8).map(|s| u64::from_le_bytes(s.try_into().unwrap()))
}

/// Parses an NGRAPH_LITE buffer.
pub fn parse_ngraph_lite(b: &[u8]) -> Result<IrInput, String> {
    if b.len() < 16 {
        return Err(format!("NGRAPH_LITE buffer too short ({} bytes)", b.len()));
    }
    let major = u16::from_le_bytes([b[0], b[1]]);
    let minor = u16::from_le_bytes([b[2], b[3]]);
    let count = u32::from_le_bytes(b[4..8].try_into().unwrap());
    if count != 2 {
        return Err(format!(
            "NGRAPH_LITE buffer carries {count} data sections; this driver understands exactly 2 (xml, weights)"
        ));
    }
    let xml_len = read_u64(b, 8).ok_or("NGRAPH_LITE: truncated xml size")? as usize;
    let xml_end = 16usize
        .checked_add(xml_len)
        .filter(|&e| e <= b.len())
        .ok_or_else(|| format!("NGRAPH_LITE: xml size {xml_len} exceeds the buffer ({} bytes)", b.len()))?;
    let w_len = read_u64(b, xml_end).ok_or("NGRAPH_LITE: truncated weights size")? as usize;
    let w_start = xml_end + 8;
    let w_end = w_start
        .checked_add(w_len)
        .filter(|&e| e <= b.len())
        .ok_or_else(|| format!("NGRAPH_LITE: weights size {w_len} exceeds the buffer ({} bytes)", b.len()))?;
    // The XML may be NUL-terminated by some serializers; OpenVINO's reader wants the text only.
    let mut xml = b[16..xml_end].to_vec();
    while xml.last() == Some(&0) {
        xml.pop();
    }
    Ok(IrInput { xml, weights: b[w_start..w_end].to_vec(), compiler_version: Some((major, minor)) })
}

/// Magic of the native blob.
pub const NATIVE_MAGIC: [u8; 8] = *b"VL0NPUG\0";
const NATIVE_VERSION: u32 = 1;
const HEADER: usize = 56;

fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in *p {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// Builds a native blob.
pub fn write_native(xml: &[u8], weights: &[u8], flags: &str) -> Vec<u8> {
    let total = HEADER + xml.len() + weights.len() + flags.len();
    let mut v = Vec::with_capacity(total);
    v.extend_from_slice(&NATIVE_MAGIC);
    v.extend_from_slice(&NATIVE_VERSION.to_le_bytes());
    v.extend_from_slice(&(HEADER as u32).to_le_bytes());
    v.extend_from_slice(&(total as u64).to_le_bytes());
    v.extend_from_slice(&(xml.len() as u64).to_le_bytes());
    v.extend_from_slice(&(weights.len() as u64).to_le_bytes());
    v.extend_from_slice(&(flags.len() as u64).to_le_bytes());
    v.extend_from_slice(&fnv1a(&[xml, weights, flags.as_bytes()]).to_le_bytes());
    v.extend_from_slice(xml);
    v.extend_from_slice(weights);
    v.extend_from_slice(flags.as_bytes());
    v
}

/// Whether `b` starts like a native blob of this driver.
pub fn is_native(b: &[u8]) -> bool {
    b.len() >= 8 && b[..8] == NATIVE_MAGIC
}

/// Parses a native blob; bytes after its total length are ignored. Returns the IR and the build flags.
pub fn parse_native(b: &[u8]) -> Result<(IrInput, String), String> {
    if !is_native(b) {
        return Err("not a blob of this driver (bad magic): import only blobs exported by the virtual NPU".into());
    }
    if b.len() < HEADER {
        return Err(format!("native blob truncated: {} bytes, header needs {HEADER}", b.len()));
    }
    let version = u32::from_le_bytes(b[8..12].try_into().unwrap());
    let header = u32::from_le_bytes(b[12..16].try_into().unwrap()) as usize;
    if version != NATIVE_VERSION || header != HEADER {
        return Err(format!(
            "native blob version {version} (header {header}) is not supported; expected {NATIVE_VERSION}"
        ));
    }
    let total = read_u64(b, 16).unwrap() as usize;
    let xml_len = read_u64(b, 24).unwrap() as usize;
    let w_len = read_u64(b, 32).unwrap() as usize;
    let f_len = read_u64(b, 40).unwrap() as usize;
    let sum = read_u64(b, 48).unwrap();
    let expect = HEADER.checked_add(xml_len).and_then(|x| x.checked_add(w_len)).and_then(|x| x.checked_add(f_len));
    if expect != Some(total) {
        return Err("native blob header is inconsistent (section lengths do not add up)".into());
    }
    if total > b.len() {
        return Err(format!("native blob truncated: header says {total} bytes, {} present", b.len()));
    }
    let xml = &b[HEADER..HEADER + xml_len];
    let weights = &b[HEADER + xml_len..HEADER + xml_len + w_len];
    let flags = &b[HEADER + xml_len + w_len..total];
    if fnv1a(&[xml, weights, flags]) != sum {
        return Err("native blob checksum mismatch (corrupted blob)".into());
    }
    let flags = String::from_utf8(flags.to_vec()).map_err(|_| "native blob build flags are not UTF-8")?;
    Ok((IrInput { xml: xml.to_vec(), weights: weights.to_vec(), compiler_version: None }, flags))
}

/// The build flags the plugin sends with an NGRAPH_LITE graph, e.g.
/// `--inputs_precisions="0:FP32" --inputs_layouts="0:NC" --outputs_precisions="0:FP32"
/// --outputs_layouts="0:NC" --config NPU_PLATFORM="4000" LOG_LEVEL="LOG_NONE" …`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BuildFlags {
    /// Key (an index with `use_indices_for_io_metadata`, else a name) → precision string.
    pub inputs_precisions: Vec<(String, String)>,
    pub inputs_layouts: Vec<(String, String)>,
    pub outputs_precisions: Vec<(String, String)>,
    pub outputs_layouts: Vec<(String, String)>,
    /// The `--config` key/value pairs.
    pub config: HashMap<String, String>,
}

/// Splits `s` into tokens on whitespace outside double quotes; quotes are removed.
fn tokens(s: &str) -> Vec<String> {
    let mut v = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut any = false;
    for c in s.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any {
                    v.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        v.push(cur);
    }
    v
}

/// `"0:FP32 1:U8"` → `[("0","FP32"), ("1","U8")]`; the last `:` separates key and value, so names with
/// colons survive.
fn pairs(v: &str) -> Vec<(String, String)> {
    v.split_whitespace().filter_map(|p| p.rsplit_once(':').map(|(k, v)| (k.to_string(), v.to_string()))).collect()
}

/// Parses the build flags; unknown options are ignored.
pub fn parse_build_flags(s: &str) -> BuildFlags {
    let mut f = BuildFlags::default();
    let toks = tokens(s);
    let mut i = 0;
    let mut in_config = false;
    while i < toks.len() {
        let t = &toks[i];
        if let Some(opt) = t.strip_prefix("--") {
            in_config = false;
            let (name, value) = match opt.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (opt.to_string(), None),
            };
            match (name.as_str(), value) {
                ("config", _) => in_config = true,
                ("inputs_precisions", Some(v)) => f.inputs_precisions = pairs(&v),
                ("inputs_layouts", Some(v)) => f.inputs_layouts = pairs(&v),
                ("outputs_precisions", Some(v)) => f.outputs_precisions = pairs(&v),
                ("outputs_layouts", Some(v)) => f.outputs_layouts = pairs(&v),
                _ => {}
            }
        } else if in_config {
            if let Some((k, v)) = t.split_once('=') {
                f.config.insert(k.to_string(), v.to_string());
            }
        }
        i += 1;
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lite(xml: &[u8], w: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&7u16.to_le_bytes());
        b.extend_from_slice(&25u16.to_le_bytes());
        b.extend_from_slice(&2u32.to_le_bytes());
        b.extend_from_slice(&(xml.len() as u64).to_le_bytes());
        b.extend_from_slice(xml);
        b.extend_from_slice(&(w.len() as u64).to_le_bytes());
        b.extend_from_slice(w);
        b
    }

    #[test]
    fn ngraph_lite_round_trip_and_errors() {
        let b = lite(b"<net/>", &[1, 2, 3]);
        let ir = parse_ngraph_lite(&b).unwrap();
        assert_eq!(ir.xml, b"<net/>");
        assert_eq!(ir.weights, vec![1, 2, 3]);
        assert_eq!(ir.compiler_version, Some((7, 25)));
        assert!(parse_ngraph_lite(&b[..b.len() - 1]).is_err());
        let mut bad = b.clone();
        bad[4] = 3;
        assert!(parse_ngraph_lite(&bad).unwrap_err().contains("exactly 2"));
    }

    #[test]
    fn native_tolerates_page_padding_and_detects_damage() {
        let mut n = write_native(b"<net/>", &[9; 10], "--config A=\"1\"");
        let len = n.len();
        n.resize(8192, 0);
        let (ir, flags) = parse_native(&n).unwrap();
        assert_eq!(ir.xml, b"<net/>");
        assert_eq!(ir.weights, vec![9; 10]);
        assert_eq!(flags, "--config A=\"1\"");
        n[60] ^= 1;
        assert!(parse_native(&n).unwrap_err().contains("checksum"));
        assert!(parse_native(&n[..len - 1]).is_err());
        assert!(parse_native(b"garbage-garbage-garbage").is_err());
    }

    #[test]
    fn build_flags() {
        let f = parse_build_flags(
            "--inputs_precisions=\"0:FP32 1:U8\" --inputs_layouts=\"0:NC 1:NCHW\" --outputs_precisions=\"0:FP16\" \
             --outputs_layouts=\"0:NC\" --config NPU_MAX_TILES=\"6\" NPU_PLATFORM=\"4000\" LOG_LEVEL=\"LOG_NONE\"",
        );
        assert_eq!(f.inputs_precisions, vec![("0".into(), "FP32".into()), ("1".into(), "U8".into())]);
        assert_eq!(f.inputs_layouts[1], ("1".into(), "NCHW".into()));
        assert_eq!(f.outputs_precisions, vec![("0".into(), "FP16".into())]);
        assert_eq!(f.config.get("NPU_PLATFORM").map(String::as_str), Some("4000"));
        assert_eq!(f.config.get("LOG_LEVEL").map(String::as_str), Some("LOG_NONE"));
    }

    mod fuzz {
        use super::super::*;
        use super::lite;
        use proptest::prelude::*;

        proptest! {
            // What any caller (the plugin, or a blob from disk) may hand the driver: never a panic.
            #[test]
            fn arbitrary_bytes_are_refused_or_parsed_never_a_panic(b in proptest::collection::vec(any::<u8>(), 0..512)) {
                let _ = parse_ngraph_lite(&b);
                let _ = parse_native(&b);
                let _ = parse_build_flags(&String::from_utf8_lossy(&b));
            }

            #[test]
            fn ngraph_lite_round_trips_and_truncation_is_refused(
                xml in proptest::collection::vec(any::<u8>(), 0..256),
                w in proptest::collection::vec(any::<u8>(), 0..256),
                cut in 1usize..64,
            ) {
                let b = lite(&xml, &w);
                let ir = parse_ngraph_lite(&b).unwrap();
                // The XML's trailing NULs (some serializers write them) are not part of the text.
                let text = &xml[..xml.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1)];
                prop_assert_eq!(&ir.xml[..], text);
                prop_assert_eq!(&ir.weights, &w);
                prop_assert!(parse_ngraph_lite(&b[..b.len().saturating_sub(cut)]).is_err());
            }

            #[test]
            fn native_blobs_round_trip_and_any_damage_is_detected(
                xml in proptest::collection::vec(any::<u8>(), 1..256),
                w in proptest::collection::vec(any::<u8>(), 0..256),
                flags in "[ -~]{0,64}",
                at in any::<prop::sample::Index>(),
                flip in 1u8..=255,
            ) {
                let n = write_native(&xml, &w, &flags);
                let (ir, f) = parse_native(&n).unwrap();
                prop_assert_eq!((&ir.xml, &ir.weights, &f), (&xml, &w, &flags));
                let mut damaged = n.clone();
                let i = at.index(n.len());
                damaged[i] ^= flip;
                prop_assert!(parse_native(&damaged).map(|(d, f2)| (d.xml, d.weights, f2)) != Ok((xml, w, flags)));
            }
        }
    }
}
