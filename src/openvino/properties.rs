//! Properties passed to OpenVINO (`ov_property_t` arrays) and the parameter strings it returns.

use std::collections::BTreeMap;
use std::ffi::CString;

use openvino_sys as sys;

use super::cstring;
use crate::error::Result;

/// String-valued properties for [`Core::compile_model`](super::Core::compile_model), in order.
///
/// ```
/// use npu_sycl_bridge::openvino::Properties;
/// let p = Properties::new().set("INFERENCE_PRECISION_HINT", "f32").set("PERFORMANCE_HINT", "LATENCY");
/// assert_eq!(p.len(), 2);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Properties {
    pairs: Vec<(String, String)>,
}

impl Properties {
    /// No properties.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) `key` = `value`.
    pub fn set(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        let (key, value) = (key.into(), value.into());
        match self.pairs.iter_mut().find(|(k, _)| *k == key) {
            Some(p) => p.1 = value,
            None => self.pairs.push((key, value)),
        }
        self
    }

    /// The number of properties.
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The pairs, in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// C strings for the pairs; `ov_property_t`s made by [`as_sys`] point into them.
    pub(crate) fn to_c(&self) -> Result<Vec<(CString, CString)>> {
        self.pairs.iter().map(|(k, v)| Ok((cstring("property key", k)?, cstring("property value", v)?))).collect()
    }
}

/// `ov_property_t`s pointing into `c` (which must outlive every use of the result).
pub(crate) fn as_sys(c: &[(CString, CString)]) -> Vec<sys::ov_property_t> {
    c.iter().map(|(k, v)| sys::ov_property_t { key: k.as_ptr(), value: v.as_ptr().cast() }).collect()
}

/// Parses a parameter string returned by `ov_remote_context_get_params` /
/// `ov_remote_tensor_get_params`.
///
/// OpenVINO 2026.4 prints `{KEY:VALUE,KEY:VALUE}` (an `ov::AnyMap` written as a string). Older
/// documentation shows `KEY VALUE KEY VALUE` (space separated) and `KEY:VALUE;KEY:VALUE;`; those are
/// accepted too.
///
/// ```
/// use npu_sycl_bridge::openvino::parse_params;
/// let p = parse_params("{MEM_HANDLE:0x7f00,MEM_TYPE:CPU_VA,TENSOR_TYPE:BINDED}");
/// assert_eq!(p["MEM_TYPE"], "CPU_VA");
/// assert_eq!(p["MEM_HANDLE"], "0x7f00");
/// ```
pub fn parse_params(s: &str) -> BTreeMap<String, String> {
    let t = s.trim();
    let t = t.strip_prefix('{').and_then(|t| t.strip_suffix('}')).unwrap_or(t);
    let mut out = BTreeMap::new();
    if t.contains(':') {
        for item in t.split([',', ';']) {
            if let Some((k, v)) = item.split_once(':') {
                let k = k.trim();
                if !k.is_empty() {
                    out.insert(k.to_string(), v.trim().to_string());
                }
            }
        }
    } else {
        let words: Vec<&str> = t.split_whitespace().collect();
        for kv in words.chunks(2) {
            if let [k, v] = kv {
                out.insert(k.to_string(), v.to_string());
            }
        }
    }
    out
}

/// Parses a pointer printed by OpenVINO (`0x55aaf77cc2a0`, MSVC's `0000000000364B40` on Windows, or decimal).
pub(crate) fn parse_pointer(v: &str) -> Option<usize> {
    parse_pointer_as(v, cfg!(windows))
}

/// [`parse_pointer`] for a C++ runtime that prints `void*` as MSVC's does (`msvc`): every hex
/// digit of the pointer, zero-padded, without `0x` ("0000000000364B40"); libstdc++ prints "0x364b40".
fn parse_pointer_as(v: &str, msvc: bool) -> Option<usize> {
    let v = v.trim();
    if let Some(hex) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        return usize::from_str_radix(hex, 16).ok();
    }
    if msvc && v.len() == 2 * std::mem::size_of::<usize>() && v.bytes().all(|b| b.is_ascii_hexdigit()) {
        return usize::from_str_radix(v, 16).ok();
    }
    v.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_formats() {
        let p = parse_params("{L0_CONTEXT:0x55aaf77cc2a0}");
        assert_eq!(parse_pointer(&p["L0_CONTEXT"]), Some(0x55aa_f77c_c2a0));
        let p = parse_params("CONTEXT_TYPE OCL OCL_CONTEXT 0x5583b2ec7b40");
        assert_eq!(p["OCL_CONTEXT"], "0x5583b2ec7b40");
        let p = parse_params("MEM_HANDLE:0x1;OCL_CONTEXT:0x2;SHARED_MEM_TYPE:OCL_BUFFER;");
        assert_eq!(p.len(), 3);
        assert!(parse_params("{}").is_empty());
        assert_eq!(parse_pointer_as("4096", false), Some(4096));
        assert_eq!(parse_pointer_as("4096", true), Some(4096));
        // MSVC's operator<<(const void*): all 16 digits, no prefix, digits-only ones too.
        assert_eq!(parse_pointer_as("0000000000364B40", true), Some(0x36_4b40));
        assert_eq!(parse_pointer_as("0000000000364140", true), Some(0x36_4140));
        assert_eq!(parse_pointer_as("0000000000364B40", false), None);
    }

    #[test]
    fn properties_replace() {
        let p = Properties::new().set("A", "1").set("A", "2");
        assert_eq!(p.iter().collect::<Vec<_>>(), vec![("A", "2")]);
    }

    mod fuzz {
        use super::super::*;
        use proptest::prelude::*;

        proptest! {
            // OpenVINO prints parameters; whatever it prints must never make the parsers panic.
            #[test]
            fn arbitrary_strings_never_panic(s in any::<String>()) {
                let _ = parse_params(&s);
                let _ = parse_pointer(&s);
            }

            #[test]
            fn printed_parameters_parse_back(
                params in proptest::collection::btree_map("[A-Z_]{1,16}", "[A-Za-z0-9_x]{1,20}", 0..8),
                braces in any::<bool>(),
            ) {
                let body = params.iter().map(|(k, v)| format!("{k}:{v}")).collect::<Vec<_>>().join(",");
                let printed = if braces { format!("{{{body}}}") } else { body };
                let parsed = parse_params(&printed);
                if params.is_empty() {
                    prop_assert!(parsed.is_empty());
                } else {
                    prop_assert_eq!(parsed, params);
                }
            }

            #[test]
            fn pointers_parse_back(p in any::<usize>()) {
                for msvc in [false, true] {
                    prop_assert_eq!(parse_pointer_as(&format!("{p:#x}"), msvc), Some(p));
                }
                prop_assert_eq!(parse_pointer_as(&format!("{p:016X}"), true), Some(p));
                prop_assert_eq!(parse_pointer_as(&p.to_string(), false), Some(p));
                // Under MSVC a 16-character string is its pointer format, never a decimal.
                if p.to_string().len() != 16 {
                    prop_assert_eq!(parse_pointer_as(&p.to_string(), true), Some(p));
                }
            }
        }
    }
}
