//! A small SVG chart writer: line charts (log or linear axes) and grouped bar charts, enough for
//! the benchmark report's plots. No dependency; the output is plain SVG 1.1 text.

use std::fmt::Write as _;

const W: f64 = 920.0;
const H: f64 = 440.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 300.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 60.0;
const COLORS: [&str; 8] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f"];

/// One line of a line chart.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// An axis: linear or log10, with its range.
#[derive(Clone, Copy)]
struct Axis {
    lo: f64,
    hi: f64,
    log: bool,
}

impl Axis {
    fn fit(values: impl Iterator<Item = f64>, log: bool, include: Option<f64>) -> Axis {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values.chain(include).filter(|v| v.is_finite() && (!log || *v > 0.0)) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if !lo.is_finite() {
            (lo, hi) = (0.5, 2.0);
        }
        if log {
            let (l, h) = (lo.log10(), hi.log10());
            let pad = ((h - l) * 0.05).max(0.02);
            Axis { lo: 10f64.powf(l - pad), hi: 10f64.powf(h + pad), log }
        } else {
            let lo = if lo > 0.0 { 0.0 } else { lo };
            let pad = ((hi - lo) * 0.08).max(1e-9);
            Axis { lo, hi: hi + pad, log }
        }
    }

    /// Position of `v` in [0, 1].
    fn frac(&self, v: f64) -> f64 {
        if self.log {
            (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }

    /// Tick values: 1-2-5 steps.
    fn ticks(&self) -> Vec<f64> {
        let mut out = Vec::new();
        if self.log {
            let mut decade = 10f64.powf(self.lo.log10().floor());
            while decade <= self.hi {
                for m in [1.0, 2.0, 5.0] {
                    let v = decade * m;
                    if v >= self.lo && v <= self.hi {
                        out.push(v);
                    }
                }
                decade *= 10.0;
            }
        } else {
            let span = self.hi - self.lo;
            let raw = span / 6.0;
            let mag = 10f64.powf(raw.log10().floor());
            let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|s| span / s <= 8.0).unwrap_or(mag * 10.0);
            let mut v = (self.lo / step).ceil() * step;
            while v <= self.hi + 1e-12 {
                out.push(v);
                v += step;
            }
        }
        out
    }
}

fn fmt_tick(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        let s = format!("{v:.1}");
        s.trim_end_matches(".0").to_string()
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').to_string()
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

fn header(title: &str, x_label: &str, y_label: &str) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">
<rect width="{W}" height="{H}" fill="white"/>
<text x="{}" y="22" font-size="15" text-anchor="middle">{}</text>
<text x="{}" y="{}" text-anchor="middle">{}</text>
<text transform="translate(18,{}) rotate(-90)" text-anchor="middle">{}</text>
"#,
        (LEFT + W - RIGHT) / 2.0,
        esc(title),
        (LEFT + W - RIGHT) / 2.0,
        H - 15.0,
        esc(x_label),
        (TOP + H - BOTTOM) / 2.0,
        esc(y_label)
    );
    s
}

fn plot_x(f: f64) -> f64 {
    LEFT + f * (W - LEFT - RIGHT)
}

fn plot_y(f: f64) -> f64 {
    H - BOTTOM - f * (H - TOP - BOTTOM)
}

fn y_grid(s: &mut String, y: &Axis, reference: Option<f64>) {
    for t in y.ticks() {
        let py = plot_y(y.frac(t));
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" x2="{}" y1="{py:.1}" y2="{py:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            W - RIGHT,
            LEFT - 6.0,
            py + 4.0,
            fmt_tick(t)
        );
    }
    if let Some(r) = reference {
        if r >= y.lo && r <= y.hi {
            let py = plot_y(y.frac(r));
            let _ = writeln!(
                s,
                r##"<line x1="{LEFT}" x2="{}" y1="{py:.1}" y2="{py:.1}" stroke="#000" stroke-dasharray="5,4"/>"##,
                W - RIGHT
            );
        }
    }
    let _ = writeln!(
        s,
        r##"<rect x="{LEFT}" y="{TOP}" width="{}" height="{}" fill="none" stroke="#444"/>"##,
        W - LEFT - RIGHT,
        H - TOP - BOTTOM
    );
}

fn legend(s: &mut String, names: &[String]) {
    for (i, n) in names.iter().enumerate() {
        let y = TOP + 10.0 + i as f64 * 20.0;
        let x = W - RIGHT + 12.0;
        let _ = writeln!(
            s,
            r#"<rect x="{x}" y="{}" width="14" height="4" fill="{}"/><text x="{}" y="{}">{}</text>"#,
            y - 2.0,
            COLORS[i % COLORS.len()],
            x + 20.0,
            y + 4.0,
            esc(n)
        );
    }
}

/// A line chart. `x_ticks` are (value, label) pairs; `reference` draws a dashed horizontal line
/// (1.0 for ratios).
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    x_ticks: &[(f64, String)],
    series: &[Series],
    log_y: bool,
    reference: Option<f64>,
) -> String {
    let x = Axis::fit(series.iter().flat_map(|s| s.points.iter().map(|p| p.0)), true, None);
    let y = Axis::fit(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)), log_y, reference);
    let mut s = header(title, x_label, y_label);
    y_grid(&mut s, &y, reference);
    for (v, label) in x_ticks {
        let px = plot_x(x.frac(*v));
        let _ = writeln!(
            s,
            r##"<line x1="{px:.1}" x2="{px:.1}" y1="{TOP}" y2="{}" stroke="#eee"/><text x="{px:.1}" y="{}" text-anchor="middle">{}</text>"##,
            H - BOTTOM,
            H - BOTTOM + 16.0,
            esc(label)
        );
    }
    for (i, ser) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let pts: Vec<String> = ser
            .points
            .iter()
            .filter(|p| p.1.is_finite() && (!log_y || p.1 > 0.0))
            .map(|p| format!("{:.1},{:.1}", plot_x(x.frac(p.0)), plot_y(y.frac(p.1))))
            .collect();
        let _ = writeln!(s, r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#, pts.join(" "));
        for p in &pts {
            let (px, py) = p.split_once(',').expect("x,y");
            let _ = writeln!(s, r#"<circle cx="{px}" cy="{py}" r="3" fill="{color}"/>"#);
        }
    }
    legend(&mut s, &series.iter().map(|s| s.name.clone()).collect::<Vec<_>>());
    s.push_str("</svg>\n");
    s
}

/// A grouped bar chart: one group per label, one bar per series in each group (NaN: no bar).
pub fn bar_chart(
    title: &str,
    y_label: &str,
    groups: &[String],
    series: &[(String, Vec<f64>)],
    reference: Option<f64>,
) -> String {
    let y = Axis::fit(series.iter().flat_map(|s| s.1.iter().copied()), false, reference);
    let mut s = header(title, "", y_label);
    y_grid(&mut s, &y, reference);
    let gw = (W - LEFT - RIGHT) / groups.len().max(1) as f64;
    let bw = gw * 0.8 / series.len().max(1) as f64;
    for (g, label) in groups.iter().enumerate() {
        let gx = LEFT + g as f64 * gw;
        // Long labels on two lines, split at the space nearest the middle.
        let lines: Vec<&str> =
            match label.char_indices().filter(|c| c.1 == ' ').min_by_key(|c| c.0.abs_diff(label.len() / 2)) {
                Some((i, _)) if label.len() > 12 => vec![&label[..i], &label[i + 1..]],
                _ => vec![label.as_str()],
            };
        for (k, line) in lines.iter().enumerate() {
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
                gx + gw / 2.0,
                H - BOTTOM + 16.0 + 14.0 * k as f64,
                esc(line)
            );
        }
        for (i, (_, values)) in series.iter().enumerate() {
            let v = values.get(g).copied().unwrap_or(f64::NAN);
            if !v.is_finite() {
                continue;
            }
            let (x0, y0, y1) = (gx + gw * 0.1 + i as f64 * bw, plot_y(y.frac(v)), plot_y(y.frac(y.lo.max(0.0))));
            let _ = writeln!(
                s,
                r#"<rect x="{x0:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}"/><text x="{:.1}" y="{:.1}" font-size="10" text-anchor="middle">{:.2}</text>"#,
                y0.min(y1),
                bw * 0.92,
                (y1 - y0).abs(),
                COLORS[i % COLORS.len()],
                x0 + bw * 0.46,
                y0.min(y1) - 3.0,
                v
            );
        }
    }
    legend(&mut s, &series.iter().map(|s| s.0.clone()).collect::<Vec<_>>());
    s.push_str("</svg>\n");
    s
}
