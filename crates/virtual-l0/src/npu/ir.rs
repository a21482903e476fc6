//! Just enough of OpenVINO IR (v10/v11 XML) to name a graph's arguments the way the NPU plugin expects:
//! the Parameters (friendly name, tensor names), the Results (the producer node's name and the producer
//! port's tensor names), and the operations this driver refuses (stateful models).
//!
//! This is not a general XML parser: it walks the tags of the serializer's output, which is regular
//! (`<layer id name type version>`, `<output><port id precision names><dim>…`, `<edge …/>`), and ignores
//! everything inside nested `<body>` graphs (TensorIterator, Loop, If), whose layers are not I/O.

use std::collections::HashMap;

/// One output port of a layer.
#[derive(Debug, Clone, Default)]
pub struct Port {
    pub id: String,
    pub precision: String,
    pub names: Vec<String>,
    pub dims: Vec<String>,
}

/// One top-level layer.
#[derive(Debug, Clone, Default)]
pub struct Layer {
    pub id: String,
    pub name: String,
    pub type_: String,
    pub outputs: Vec<Port>,
    /// The layer's own `layout` runtime attribute (`[N,C,H,W]` → `NCHW`), when the model declares one.
    pub layout: Option<String>,
}

/// A model input as written in the IR.
#[derive(Debug, Clone)]
pub struct IrInput {
    /// The Parameter's friendly name.
    pub name: String,
    /// Tensor names of its output port.
    pub tensor_names: Vec<String>,
    /// The layout the model declares for it (rt_info `layout`), e.g. `NCHW`.
    pub layout: Option<String>,
}

/// A model output as written in the IR.
#[derive(Debug, Clone)]
pub struct IrOutput {
    /// The friendly name of the node that produces the Result's input.
    pub producer: String,
    /// Tensor names of the producer's port.
    pub tensor_names: Vec<String>,
    /// The Result layer's own name.
    pub result_name: String,
    /// The layout the model declares for it (rt_info `layout` of the Result), e.g. `NCHW`.
    pub layout: Option<String>,
}

/// What the driver needs from an IR.
#[derive(Debug, Clone, Default)]
pub struct IrSummary {
    pub inputs: Vec<IrInput>,
    pub outputs: Vec<IrOutput>,
    /// Operation types found anywhere (nested bodies included) that make the model stateful.
    pub stateful_ops: Vec<String>,
    /// The friendly name of every top-level layer, in IR order.
    pub layer_names: Vec<String>,
}

fn unescape(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let Some(j) = rest.find(';') else {
            out.push_str(rest);
            return out;
        };
        let ent = &rest[1..j];
        match ent {
            "amp" => out.push('&'),
            "lt" => out.push('<'),
            "gt" => out.push('>'),
            "quot" => out.push('"'),
            "apos" => out.push('\''),
            e if e.starts_with("#x") => {
                if let Some(c) = u32::from_str_radix(&e[2..], 16).ok().and_then(char::from_u32) {
                    out.push(c)
                }
            }
            e if e.starts_with('#') => {
                if let Some(c) = e[1..].parse::<u32>().ok().and_then(char::from_u32) {
                    out.push(c)
                }
            }
            other => {
                out.push('&');
                out.push_str(other);
                out.push(';');
            }
        }
        rest = &rest[j + 1..];
    }
    out.push_str(rest);
    out
}

/// The attributes of one tag body (`name="v" …`).
fn attributes(tag: &str) -> HashMap<String, String> {
    let mut m = HashMap::new();
    let b = tag.as_bytes();
    let mut i = 0;
    // skip the element name
    while i < b.len() && !b[i].is_ascii_whitespace() {
        i += 1;
    }
    loop {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        let ks = i;
        while i < b.len() && b[i] != b'=' && !b[i].is_ascii_whitespace() && b[i] != b'/' {
            i += 1;
        }
        if i >= b.len() || ks == i {
            break;
        }
        let key = &tag[ks..i];
        while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == b'=') {
            i += 1;
        }
        if i >= b.len() {
            break;
        }
        let q = b[i];
        if q != b'"' && q != b'\'' {
            break;
        }
        i += 1;
        let vs = i;
        while i < b.len() && b[i] != q {
            i += 1;
        }
        m.insert(key.to_string(), unescape(&tag[vs..i.min(b.len())]));
        i += 1;
    }
    m
}

/// Splits the serializer's `names` attribute: names joined with `,`, a literal comma escaped as `\,`.
fn split_names(s: &str) -> Vec<String> {
    let mut v = Vec::new();
    let mut cur = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&',') => {
                cur.push(',');
                chars.next();
            }
            ',' => {
                if !cur.is_empty() {
                    v.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        v.push(cur);
    }
    v
}

/// `[N,C,H,W]` → `NCHW`; `[?,...]`-style or empty layouts → `None`.
fn layout_letters(s: &str) -> Option<String> {
    let inner = s.trim().trim_start_matches('[').trim_end_matches(']');
    let parts: Vec<&str> = inner.split(',').map(str::trim).collect();
    if parts.is_empty() || parts.iter().any(|p| p.len() != 1 || !p.chars().all(|c| c.is_ascii_alphabetic())) {
        return None;
    }
    Some(parts.concat().to_ascii_uppercase())
}

/// Reads the IR. Errors describe what is malformed.
pub fn summarize(xml: &str) -> Result<IrSummary, String> {
    let mut layers: Vec<Layer> = Vec::new();
    let mut edges: Vec<(String, String, String, String)> = Vec::new();
    let mut stateful = Vec::new();

    let mut body_depth = 0usize;
    let mut cur_layer: Option<Layer> = None;
    let mut in_output = false;
    let mut cur_port: Option<Port> = None;
    let mut in_dim = false;
    let mut port_depth = 0usize;

    let mut rest = xml;
    while let Some(lt) = rest.find('<') {
        let text = &rest[..lt];
        if in_dim {
            if let Some(p) = cur_port.as_mut() {
                p.dims.push(text.trim().to_string());
            }
        }
        rest = &rest[lt..];
        if rest.starts_with("<!--") {
            let end = rest.find("-->").ok_or("unterminated XML comment")?;
            rest = &rest[end + 3..];
            continue;
        }
        if rest.starts_with("<![CDATA[") {
            let end = rest.find("]]>").ok_or("unterminated CDATA")?;
            rest = &rest[end + 3..];
            continue;
        }
        let gt = rest.find('>').ok_or("unterminated XML tag")?;
        let tag = &rest[1..gt];
        rest = &rest[gt + 1..];
        if tag.starts_with('?') || tag.starts_with('!') {
            continue;
        }
        let closing = tag.starts_with('/');
        let self_closing = tag.ends_with('/');
        let tag = tag.trim_start_matches('/').trim_end_matches('/');
        let name = tag.split(|c: char| c.is_ascii_whitespace()).next().unwrap_or("");
        match (name, closing) {
            ("body", false) if !self_closing => body_depth += 1,
            ("body", true) => body_depth = body_depth.saturating_sub(1),
            ("layer", false) => {
                let a = attributes(tag);
                let type_ = a.get("type").cloned().unwrap_or_default();
                if matches!(type_.as_str(), "ReadValue" | "Assign") {
                    stateful.push(type_.clone());
                }
                if body_depth == 0 {
                    let l = Layer {
                        id: a.get("id").cloned().unwrap_or_default(),
                        name: a.get("name").cloned().unwrap_or_default(),
                        type_,
                        outputs: Vec::new(),
                        layout: None,
                    };
                    if self_closing {
                        layers.push(l);
                    } else {
                        cur_layer = Some(l);
                    }
                }
            }
            ("layer", true) if body_depth == 0 => {
                if let Some(l) = cur_layer.take() {
                    layers.push(l);
                }
            }
            ("output", false) if body_depth == 0 && cur_layer.is_some() && !self_closing => in_output = true,
            ("output", true) if body_depth == 0 => in_output = false,
            ("port", false) if !self_closing && body_depth == 0 && !in_output => port_depth += 1,
            ("port", true) if body_depth == 0 && !in_output => port_depth = port_depth.saturating_sub(1),
            ("attribute", false) if body_depth == 0 && port_depth == 0 && cur_port.is_none() => {
                let a = attributes(tag);
                if a.get("name").map(String::as_str) == Some("layout") {
                    if let (Some(l), Some(v)) = (cur_layer.as_mut(), a.get("layout")) {
                        l.layout = layout_letters(v);
                    }
                }
            }
            ("port", false) if body_depth == 0 && in_output => {
                let a = attributes(tag);
                let p = Port {
                    id: a.get("id").cloned().unwrap_or_default(),
                    precision: a.get("precision").cloned().unwrap_or_default(),
                    names: a.get("names").map(|s| split_names(s)).unwrap_or_default(),
                    dims: Vec::new(),
                };
                if self_closing {
                    if let Some(l) = cur_layer.as_mut() {
                        l.outputs.push(p);
                    }
                } else {
                    cur_port = Some(p);
                }
            }
            ("port", true) if body_depth == 0 && in_output => {
                if let (Some(p), Some(l)) = (cur_port.take(), cur_layer.as_mut()) {
                    l.outputs.push(p);
                }
            }
            ("dim", false) if cur_port.is_some() && !self_closing => in_dim = true,
            ("dim", true) => in_dim = false,
            ("edge", false) if body_depth == 0 => {
                let a = attributes(tag);
                let g = |k: &str| a.get(k).cloned().unwrap_or_default();
                edges.push((g("from-layer"), g("from-port"), g("to-layer"), g("to-port")));
            }
            _ => {}
        }
    }

    if layers.is_empty() {
        return Err("the IR XML has no <layer> elements".into());
    }
    let by_id: HashMap<&str, &Layer> = layers.iter().map(|l| (l.id.as_str(), l)).collect();
    let mut summary = IrSummary {
        stateful_ops: stateful,
        layer_names: layers.iter().map(|l| l.name.clone()).collect(),
        ..Default::default()
    };
    for l in &layers {
        match l.type_.as_str() {
            "Parameter" => summary.inputs.push(IrInput {
                name: l.name.clone(),
                tensor_names: l.outputs.first().map(|p| p.names.clone()).unwrap_or_default(),
                layout: l.layout.clone(),
            }),
            "Result" => {
                let edge = edges.iter().find(|e| e.2 == l.id);
                let (producer, names) = match edge.and_then(|e| by_id.get(e.0.as_str()).map(|p| (p, &e.1))) {
                    Some((p, port)) => {
                        let names =
                            p.outputs.iter().find(|o| &o.id == port).map(|o| o.names.clone()).unwrap_or_default();
                        (p.name.clone(), names)
                    }
                    None => (l.name.clone(), Vec::new()),
                };
                summary.outputs.push(IrOutput {
                    producer,
                    tensor_names: names,
                    result_name: l.name.clone(),
                    layout: l.layout.clone(),
                });
            }
            _ => {}
        }
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    const XML: &str = r#"<?xml version="1.0"?>
<net name="m" version="11">
  <layers>
    <layer id="0" name="in&amp;put" type="Parameter" version="opset1">
      <data shape="1,4" element_type="f32" />
      <output>
        <port id="0" precision="FP32" names="x,x\,alias">
          <dim>1</dim>
          <dim>4</dim>
        </port>
      </output>
    </layer>
    <layer id="1" name="relu" type="Relu" version="opset1">
      <input><port id="0"><dim>1</dim><dim>4</dim></port></input>
      <output><port id="1" precision="FP32" names="y"><dim>1</dim><dim>4</dim></port></output>
    </layer>
    <layer id="2" name="y/sink_port_0" type="Result" version="opset1">
      <input><port id="0"><dim>1</dim><dim>4</dim></port></input>
    </layer>
  </layers>
  <edges>
    <edge from-layer="0" from-port="0" to-layer="1" to-port="0" />
    <edge from-layer="1" from-port="1" to-layer="2" to-port="0" />
  </edges>
</net>"#;

    #[test]
    fn names_of_inputs_and_outputs() {
        let s = summarize(XML).unwrap();
        assert_eq!(s.inputs.len(), 1);
        assert_eq!(s.inputs[0].name, "in&put");
        assert_eq!(s.inputs[0].tensor_names, vec!["x".to_string(), "x,alias".to_string()]);
        assert_eq!(s.outputs.len(), 1);
        assert_eq!(s.outputs[0].producer, "relu");
        assert_eq!(s.outputs[0].tensor_names, vec!["y".to_string()]);
        assert!(s.stateful_ops.is_empty());
    }

    #[test]
    fn declared_layouts() {
        let x = XML.replace(
            "<data shape=\"1,4\" element_type=\"f32\" />",
            "<data shape=\"1,4\" element_type=\"f32\" /><rt_info><attribute name=\"layout\" version=\"0\" layout=\"[N,C]\" /></rt_info>",
        );
        let s = summarize(&x).unwrap();
        assert_eq!(s.inputs[0].layout.as_deref(), Some("NC"));
        assert_eq!(s.outputs[0].layout, None);
        assert_eq!(layout_letters("[?,...]"), None);
    }

    #[test]
    fn stateful_ops_are_found() {
        let x = XML.replace("type=\"Relu\"", "type=\"ReadValue\"");
        assert_eq!(summarize(&x).unwrap().stateful_ops, vec!["ReadValue".to_string()]);
    }
}
