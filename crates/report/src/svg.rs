//! Plotting primitives for the HTML reports: scales, 1-2-5 ticks, and a [`Plot`] that draws
//! lines, points, bands, strips, error bars and ellipses as inline SVG. Also the bounded
//! summaries the plots are drawn from ([`Decimated`] lines, [`Timeline`] states, CDFs from
//! counts, covariance [`Ellipse`]s). Nothing here knows what a run is: see `render.rs`.

use std::fmt::Write as _;

/// Lines, points and ellipses of the n-th series: colour-blind-friendlier than pure hues.
pub const COLORS: [&str; 8] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f"];

/// Text for HTML or SVG content and double-quoted attributes: `&`, `<`, `>` and `"` escaped
/// (apostrophes stay: no attribute here is single-quoted).
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

mod scale;
mod summary;

pub use scale::*;
pub use summary::*;

// ---------------------------------------------------------------------------------------------
// The plot

/// How a line is drawn.
#[derive(Clone, Copy, Debug)]
pub struct Stroke {
    pub width: f64,
    pub opacity: f64,
    pub dash: Option<&'static str>,
}

impl Stroke {
    pub const BOLD: Stroke = Stroke { width: 2.0, opacity: 1.0, dash: None };
    pub const NORMAL: Stroke = Stroke { width: 1.4, opacity: 1.0, dash: None };
    pub const FAINT: Stroke = Stroke { width: 0.9, opacity: 0.35, dash: None };
    pub const DASHED: Stroke = Stroke { width: 1.2, opacity: 0.8, dash: Some("5 4") };
}

/// Estimated width of `s` in pixels at `size` px (proportional sans-serif).
pub fn text_width(s: &str, size: f64) -> f64 {
    s.chars().count() as f64 * size * 0.56
}

/// `s` broken at spaces into lines of at most `width` characters (a longer word after its
/// punctuation, or anywhere).
pub fn wrap_words(s: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines: Vec<String> = Vec::new();
    for word in s.split_whitespace() {
        if let Some(l) = lines.last_mut() {
            if l.chars().count() + 1 + word.chars().count() <= width {
                l.push(' ');
                l.push_str(word);
                continue;
            }
        }
        // A word wider than a line (a mix, `tcp:bbr:1,tcp:cubic:1`) breaks after its
        // punctuation, and where a piece is still too wide, anywhere: labels must not overlap
        // their neighbours.
        let mut line = String::new();
        for piece in word_pieces(word, width) {
            if !line.is_empty() && line.chars().count() + piece.chars().count() > width {
                lines.push(std::mem::take(&mut line));
            }
            line.push_str(&piece);
        }
        lines.push(line);
    }
    lines
}

/// `word` cut after each `,`, `:`, `/` or `;`, and pieces wider than `width` cut at `width`.
fn word_pieces(word: &str, width: usize) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut piece = String::new();
    for c in word.chars() {
        piece.push(c);
        if matches!(c, ',' | ':' | '/' | ';') || piece.chars().count() == width {
            pieces.push(std::mem::take(&mut piece));
        }
    }
    if !piece.is_empty() {
        pieces.push(piece);
    }
    pieces
}

const FONT: f64 = 12.0;
const STRIP_H: f64 = 14.0;
/// Space between strip rows.
const STRIP_GAP: f64 = 3.0;

/// Height the strip rows under a plot take, margins included.
fn strips_height(rows: usize) -> f64 {
    if rows == 0 {
        0.0
    } else {
        rows as f64 * (STRIP_H + STRIP_GAP) + 3.0
    }
}

/// One plot: axes with ticks and labels, a clipped plot area, and optionally rows of
/// horizontal strips under it (timelines on the same x scale).
pub struct Plot {
    id: String,
    width: f64,
    height: f64,
    left: f64,
    top: f64,
    right: f64,
    bottom: f64,
    pub x: Scale,
    pub y: Scale,
    x_ticks: Vec<(f64, String)>,
    y_ticks: Vec<(f64, String)>,
    x_lines: Vec<Vec<String>>,
    x_label: String,
    y_label: String,
    /// One label per strip row, top to bottom.
    strip_labels: Vec<String>,
    body: String,
    strips: String,
}

impl Plot {
    /// A plot `width` × `height` px (the whole SVG, margins included), with a strip row under
    /// the plot area when `strip_label` is given.
    pub fn new(id: &str, width: f64, height: f64, x: Axis, y: Axis, strip_label: Option<&str>) -> Plot {
        Plot::with_left(id, width, height, x, y, strip_label, 0.0)
    }

    /// [`Plot::new`] with a left margin of at least `min_left` px, so that plots stacked
    /// one above the other share their x positions.
    pub fn with_left(id: &str, width: f64, height: f64, x: Axis, y: Axis, strip_label: Option<&str>, min_left: f64) -> Plot {
        Plot::with_strip_rows(id, width, height, x, y, strip_label.as_slice(), min_left)
    }

    /// [`Plot::with_left`] with one strip row under the plot per label (none for no labels).
    pub fn with_strip_rows(id: &str, width: f64, height: f64, x: Axis, y: Axis, strip_labels: &[&str], min_left: f64) -> Plot {
        // Up to a tick per 30 px of height (the plot area is most of it).
        let (y_lo, y_hi, y_ticks) = y.layout((height / 30.0) as usize);
        let y_tick_w = y_ticks.iter().map(|(_, s)| text_width(s, FONT - 1.0)).fold(0.0, f64::max);
        let strip_w = strip_labels.iter().map(|s| text_width(s, FONT - 1.0)).fold(0.0, f64::max);
        let left = (y_tick_w + 30.0).max(strip_w + 10.0).max(44.0).max(min_left);
        let right = 14.0;
        // As many x labels as fit side by side with room between them.
        let span = width - left - right;
        let (mut x_lo, mut x_hi, mut x_ticks) = x.layout(10);
        let widest = x_ticks.iter().map(|(_, s)| text_width(s, FONT - 1.0)).fold(0.0, f64::max);
        let room = (span / (widest + 18.0)).floor() as usize;
        if x.categories.is_empty() && x_ticks.len() > room {
            (x_lo, x_hi, x_ticks) = x.layout(room);
        }
        let top = 10.0;
        // Category labels are wrapped to the room each category has.
        let x_lines: Vec<Vec<String>> = if x.categories.is_empty() {
            Vec::new()
        } else {
            let per = (width - left - right) / x.categories.len().max(1) as f64;
            let chars = ((per - 6.0) / ((FONT - 1.0) * 0.56)).floor().max(6.0) as usize;
            x.categories
                .iter()
                .map(|c| {
                    let mut l: Vec<String> = c.lines().flat_map(|line| wrap_words(line, chars)).collect();
                    if l.len() > 4 {
                        l.truncate(4);
                        l[3].push('…');
                    }
                    l
                })
                .collect()
        };
        let label_rows = x_lines.iter().map(Vec::len).max().unwrap_or(1).max(1) as f64;
        let strip_h = strips_height(strip_labels.len());
        let bottom = strip_h + 8.0 + label_rows * (FONT + 1.0) + 20.0;
        let (px0, px1) = (left, width - right);
        let (py0, py1) = (height - bottom, top);
        let xs = if x.reversed { (px1, px0) } else { (px0, px1) };
        let ys = if y.reversed { (py1, py0) } else { (py0, py1) };
        Plot {
            id: id.to_string(),
            width,
            height,
            left,
            top,
            right,
            bottom,
            x: Scale { lo: x_lo, hi: x_hi, from_px: xs.0, to_px: xs.1, log: x.log },
            y: Scale { lo: y_lo, hi: y_hi, from_px: ys.0, to_px: ys.1, log: y.log },
            x_ticks,
            y_ticks,
            x_lines,
            x_label: x.label,
            y_label: y.label,
            strip_labels: strip_labels.iter().map(|s| s.to_string()).collect(),
            body: String::new(),
            strips: String::new(),
        }
    }

    fn plot_bottom(&self) -> f64 {
        self.height - self.bottom
    }

    /// The top edge of strip row `row`.
    fn strip_top(&self, row: usize) -> f64 {
        self.plot_bottom() + 5.0 + row as f64 * (STRIP_H + STRIP_GAP)
    }

    fn xy(&self, x: f64, y: f64) -> Option<(f64, f64)> {
        (self.x.placeable(x) && self.y.placeable(y)).then(|| (self.x.px(x), self.y.px(y)))
    }

    fn title(title: Option<&str>) -> String {
        title.map(|t| format!("<title>{}</title>", escape(t))).unwrap_or_default()
    }

    /// A polyline through `points` (data coordinates); points that cannot be placed break it.
    pub fn line(&mut self, points: &[(f64, f64)], color: &str, stroke: Stroke, title: Option<&str>) {
        let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
        for &(x, y) in points {
            match self.xy(x, y) {
                Some(p) => runs.last_mut().expect("never empty").push(p),
                None if runs.last().is_some_and(|r| !r.is_empty()) => runs.push(Vec::new()),
                None => {}
            }
        }
        let dash = stroke.dash.map(|d| format!(" stroke-dasharray=\"{d}\"")).unwrap_or_default();
        for run in runs.iter().filter(|r| r.len() >= 2) {
            let mut pts = String::with_capacity(run.len() * 12);
            for (i, (x, y)) in run.iter().enumerate() {
                let _ = write!(pts, "{}{x:.1},{y:.1}", if i > 0 { " " } else { "" });
            }
            let _ = write!(
                self.body,
                "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"{}\" stroke-opacity=\"{}\" stroke-linejoin=\"round\"{dash} points=\"{pts}\">{}</polyline>",
                stroke.width,
                stroke.opacity,
                Self::title(title)
            );
        }
    }

    /// A circle of radius `r` px at (x, y); hollow when not `filled`.
    pub fn point(&mut self, x: f64, y: f64, r: f64, color: &str, filled: bool, title: Option<&str>) {
        let Some((px, py)) = self.xy(x, y) else { return };
        let fill = if filled { format!("fill=\"{color}\" fill-opacity=\"0.8\"") } else { "fill=\"#fff\"".into() };
        let _ =
            write!(self.body, "<circle cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"{r}\" {fill} stroke=\"{color}\" stroke-width=\"1.2\">{}</circle>", Self::title(title));
    }

    /// A straight segment between two data points.
    pub fn segment(&mut self, (x0, y0): (f64, f64), (x1, y1): (f64, f64), color: &str, stroke: Stroke) {
        let (Some((a, b)), Some((c, d))) = (self.xy(x0, y0), self.xy(x1, y1)) else { return };
        let dash = stroke.dash.map(|d| format!(" stroke-dasharray=\"{d}\"")).unwrap_or_default();
        let _ = write!(
            self.body,
            "<line x1=\"{a:.1}\" y1=\"{b:.1}\" x2=\"{c:.1}\" y2=\"{d:.1}\" stroke=\"{color}\" stroke-width=\"{}\" stroke-opacity=\"{}\"{dash}/>",
            stroke.width, stroke.opacity
        );
    }

    /// A horizontal rule across the plot at `y`, with an optional label at its right end.
    pub fn hrule(&mut self, y: f64, color: &str, stroke: Stroke, label: Option<&str>) {
        if !self.y.placeable(y) {
            return;
        }
        let py = self.y.px(y);
        let dash = stroke.dash.map(|d| format!(" stroke-dasharray=\"{d}\"")).unwrap_or_default();
        let _ = write!(
            self.body,
            "<line x1=\"{:.1}\" y1=\"{py:.1}\" x2=\"{:.1}\" y2=\"{py:.1}\" stroke=\"{color}\" stroke-width=\"{}\"{dash}/>",
            self.left,
            self.width - self.right,
            stroke.width
        );
        if let Some(l) = label {
            let _ = write!(
                self.body,
                "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\" fill=\"{color}\">{}</text>",
                self.width - self.right - 3.0,
                py - 3.0,
                escape(l)
            );
        }
    }

    /// A vertical rule down the plot at `x`, with an optional label at its top.
    pub fn vrule(&mut self, x: f64, color: &str, stroke: Stroke, label: Option<&str>) {
        if !self.x.placeable(x) {
            return;
        }
        let px = self.x.px(x);
        let dash = stroke.dash.map(|d| format!(" stroke-dasharray=\"{d}\"")).unwrap_or_default();
        let _ = write!(
            self.body,
            "<line x1=\"{px:.1}\" y1=\"{:.1}\" x2=\"{px:.1}\" y2=\"{:.1}\" stroke=\"{color}\" stroke-width=\"{}\"{dash}/>",
            self.top,
            self.plot_bottom(),
            stroke.width
        );
        if let Some(l) = label {
            let _ = write!(self.body, "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"{color}\">{}</text>", px + 3.0, self.top + 10.0, escape(l));
        }
    }

    /// A band across the plot's full height from `x0` to `x1`.
    pub fn vband(&mut self, x0: f64, x1: f64, color: &str, opacity: f64, title: Option<&str>) {
        if !(self.x.placeable(x0) && self.x.placeable(x1)) {
            return;
        }
        let (a, b) = (self.x.px(x0), self.x.px(x1));
        let _ = write!(
            self.body,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{color}\" fill-opacity=\"{opacity}\">{}</rect>",
            a.min(b),
            self.top,
            (a - b).abs().max(0.5),
            self.plot_bottom() - self.top,
            Self::title(title)
        );
    }

    /// A band in the (first) strip row under the plot, from `x0` to `x1` (data x).
    pub fn strip(&mut self, x0: f64, x1: f64, color: &str, title: Option<&str>) {
        self.strip_in(0, x0, x1, color, title);
    }

    /// A band in strip row `row` (0 is the top one) under the plot, from `x0` to `x1`.
    pub fn strip_in(&mut self, row: usize, x0: f64, x1: f64, color: &str, title: Option<&str>) {
        if !(self.x.placeable(x0) && self.x.placeable(x1)) {
            return;
        }
        let lo = self.x.lo.min(self.x.hi);
        let hi = self.x.lo.max(self.x.hi);
        let (a, b) = (self.x.px(x0.clamp(lo, hi)), self.x.px(x1.clamp(lo, hi)));
        let _ = write!(
            self.strips,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.2}\" height=\"{STRIP_H}\" fill=\"{color}\">{}</rect>",
            a.min(b),
            self.strip_top(row),
            (a - b).abs().max(0.5),
            Self::title(title)
        );
    }

    /// A vertical error bar from `y0` to `y1` at `x`, with caps `cap` px wide.
    pub fn error_bar_y(&mut self, x: f64, y0: f64, y1: f64, color: &str, cap: f64, title: Option<&str>) {
        let (Some((px, a)), Some((_, b))) = (self.xy(x, y0), self.xy(x, y1)) else { return };
        let _ = write!(
            self.body,
            "<path d=\"M{px:.1},{a:.1}V{b:.1}M{:.1},{a:.1}h{cap}M{:.1},{b:.1}h{cap}\" stroke=\"{color}\" stroke-width=\"1.6\" fill=\"none\">{}</path>",
            px - cap / 2.0,
            px - cap / 2.0,
            Self::title(title)
        );
    }

    /// A vertical interval at `x` from `y0` to `y1`, with caps. A bound that is not finite
    /// runs to the plot's edge and ends in an arrow (unbounded).
    pub fn interval_y(&mut self, x: f64, y0: f64, y1: f64, color: &str, title: Option<&str>) {
        if !self.x.placeable(x) {
            return;
        }
        let px = self.x.px(x);
        let (edge_lo, edge_hi) = (self.y.px(self.y.lo), self.y.px(self.y.hi));
        // +∞ runs to the top, anything else that cannot be placed (−∞, ≤ 0 on a log axis) to the bottom.
        let end = |v: f64| -> (f64, bool) {
            if self.y.placeable(v) {
                (self.y.px(v), false)
            } else if v == f64::INFINITY {
                (edge_hi, true)
            } else {
                (edge_lo, true)
            }
        };
        let (a, open_a) = end(y0);
        let (b, open_b) = end(y1);
        let mut d = format!("M{px:.1},{a:.1}V{b:.1}");
        for (y, open, other) in [(a, open_a, b), (b, open_b, a)] {
            if open {
                // An arrowhead pointing away from the other end.
                let back = if other > y { 8.0 } else { -8.0 };
                let _ = write!(d, "M{:.1},{:.1}L{px:.1},{y:.1}L{:.1},{:.1}", px - 5.0, y + back, px + 5.0, y + back);
            } else {
                let _ = write!(d, "M{:.1},{y:.1}h12", px - 6.0);
            }
        }
        let _ = write!(self.body, "<path d=\"{d}\" stroke=\"{color}\" stroke-width=\"2\" fill=\"none\">{}</path>", Self::title(title));
    }

    /// The outline of `e` (data coordinates), filled faintly.
    pub fn ellipse(&mut self, e: &Ellipse, color: &str, title: Option<&str>) {
        let pts: Vec<(f64, f64)> = e.outline(72).into_iter().filter_map(|(x, y)| self.xy(x, y)).collect();
        if pts.len() < 3 {
            return;
        }
        let mut d = String::new();
        for (i, (x, y)) in pts.iter().enumerate() {
            let _ = write!(d, "{}{x:.1},{y:.1}", if i == 0 { "M" } else { "L" });
        }
        d.push('Z');
        let _ =
            write!(self.body, "<path d=\"{d}\" fill=\"{color}\" fill-opacity=\"0.12\" stroke=\"{color}\" stroke-width=\"1.5\">{}</path>", Self::title(title));
        if let Some((cx, cy)) = self.xy(e.cx, e.cy) {
            let _ = write!(self.body, "<path d=\"M{:.1},{cy:.1}h10M{cx:.1},{:.1}v10\" stroke=\"{color}\" stroke-width=\"1.5\"/>", cx - 5.0, cy - 5.0);
        }
    }

    /// Text at a data position.
    pub fn text(&mut self, x: f64, y: f64, s: &str, anchor: &str, color: &str) {
        let Some((px, py)) = self.xy(x, y) else { return };
        let _ = write!(self.body, "<text x=\"{px:.1}\" y=\"{py:.1}\" font-size=\"11\" text-anchor=\"{anchor}\" fill=\"{color}\">{}</text>", escape(s));
    }

    /// The finished `<svg>` element; it scales to the width of its container.
    pub fn finish(self) -> String {
        let (w, h) = (self.width, self.height);
        let (l, t, r, b) = (self.left, self.top, self.width - self.right, self.plot_bottom());
        let mut out = format!(
            "<svg class=\"plot\" viewBox=\"0 0 {w} {h}\" preserveAspectRatio=\"xMinYMin meet\" role=\"img\" aria-label=\"{}\" xmlns=\"http://www.w3.org/2000/svg\">",
            escape(&format!("{} against {}", self.y_label, self.x_label))
        );
        // The clip leaves room for a marker on the edge of the plot area to show whole.
        let _ = write!(
            out,
            "<defs><clipPath id=\"clip-{}\"><rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\"/></clipPath></defs>",
            self.id,
            l - 8.0,
            t - 8.0,
            r - l + 16.0,
            b - t + 16.0
        );
        // Grid and ticks.
        let _ = write!(out, "<g font-size=\"{}\" fill=\"#333\">", FONT - 1.0);
        for (v, label) in &self.y_ticks {
            let py = self.y.px(*v);
            let _ = write!(out, "<line x1=\"{l}\" y1=\"{py:.1}\" x2=\"{r:.1}\" y2=\"{py:.1}\" stroke=\"#e4e4e4\"/>");
            let _ = write!(out, "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>", l - 5.0, py + 4.0, escape(label));
        }
        let label_y = b + strips_height(self.strip_labels.len()) + FONT + 3.0;
        for (i, (v, label)) in self.x_ticks.iter().enumerate() {
            let px = self.x.px(*v);
            let _ = write!(out, "<line x1=\"{px:.1}\" y1=\"{t}\" x2=\"{px:.1}\" y2=\"{b:.1}\" stroke=\"#eeeeee\"/>");
            let _ = write!(out, "<line x1=\"{px:.1}\" y1=\"{b:.1}\" x2=\"{px:.1}\" y2=\"{:.1}\" stroke=\"#888\"/>", b + 4.0);
            match self.x_lines.get(i) {
                Some(lines) => {
                    let _ = write!(out, "<text x=\"{px:.1}\" y=\"{label_y:.1}\" text-anchor=\"middle\"><title>{}</title>", escape(label));
                    for (k, line) in lines.iter().enumerate() {
                        let _ = write!(out, "<tspan x=\"{px:.1}\" dy=\"{}\">{}</tspan>", if k == 0 { 0.0 } else { FONT + 1.0 }, escape(line));
                    }
                    out.push_str("</text>");
                }
                None => {
                    let _ = write!(out, "<text x=\"{px:.1}\" y=\"{label_y:.1}\" text-anchor=\"middle\">{}</text>", escape(label));
                }
            }
        }
        out.push_str("</g>");
        let _ = write!(out, "<path d=\"M{l},{t}V{b:.1}H{r:.1}\" stroke=\"#666\" fill=\"none\"/>");
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"{FONT}\" text-anchor=\"middle\" fill=\"#222\">{}</text>",
            (l + r) / 2.0,
            h - 5.0,
            escape(&self.x_label)
        );
        let _ = write!(
            out,
            "<text transform=\"translate(13 {:.1}) rotate(-90)\" font-size=\"{FONT}\" text-anchor=\"middle\" fill=\"#222\">{}</text>",
            (t + b) / 2.0,
            escape(&self.y_label)
        );
        let _ = write!(out, "<g clip-path=\"url(#clip-{})\">{}</g>", self.id, self.body);
        for (row, label) in self.strip_labels.iter().enumerate() {
            let y = self.strip_top(row);
            let _ = write!(out, "<rect x=\"{l}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{STRIP_H}\" fill=\"#f4f4f4\"/>", r - l);
            let _ = write!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"{}\" text-anchor=\"end\" fill=\"#333\">{}</text>",
                l - 5.0,
                y + STRIP_H - 3.0,
                FONT - 1.0,
                escape(label)
            );
        }
        out.push_str(&self.strips);
        out.push_str("</svg>");
        out
    }
}

/// What a legend entry looks like.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Key {
    Line,
    FaintLine,
    Dashed,
    Dot,
    Swatch,
}

/// A legend as HTML (it wraps with the page instead of covering the plot).
pub fn legend(items: &[(String, String, Key)]) -> String {
    let mut out = String::from("<div class=\"legend\">");
    for (label, color, key) in items {
        let mark = match key {
            Key::Line => format!("<svg width=\"22\" height=\"10\"><line x1=\"1\" y1=\"5\" x2=\"21\" y2=\"5\" stroke=\"{color}\" stroke-width=\"2.5\"/></svg>"),
            Key::FaintLine => {
                format!("<svg width=\"22\" height=\"10\"><line x1=\"1\" y1=\"5\" x2=\"21\" y2=\"5\" stroke=\"{color}\" stroke-width=\"1\" stroke-opacity=\"0.5\"/></svg>")
            }
            Key::Dashed => {
                format!("<svg width=\"22\" height=\"10\"><line x1=\"1\" y1=\"5\" x2=\"21\" y2=\"5\" stroke=\"{color}\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\"/></svg>")
            }
            Key::Dot => format!("<svg width=\"12\" height=\"10\"><circle cx=\"6\" cy=\"5\" r=\"4\" fill=\"{color}\"/></svg>"),
            Key::Swatch => format!("<svg width=\"16\" height=\"10\"><rect width=\"16\" height=\"10\" fill=\"{color}\"/></svg>"),
        };
        let _ = write!(out, "<span>{mark} {}</span>", escape(label));
    }
    out.push_str("</div>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn is_125(step: f64) -> bool {
        let m = step / 10f64.powf(step.log10().floor());
        [1.0, 2.0, 5.0, 10.0].iter().any(|x| (m - x).abs() < 1e-6)
    }

    #[test]
    fn nice_ticks_are_1_2_5_steps_that_cover_the_range_with_4_to_10_ticks() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut cases: Vec<(f64, f64)> =
            vec![(0.0, 1.0), (0.0, 47.3), (0.0, 63.8), (20.39, 44.5), (-3.0, 7.0), (0.0, 0.3), (1e-6, 3e-6), (0.0, 1e9), (99.0, 101.0)];
        for _ in 0..5000 {
            let scale = 10f64.powi(rng.gen_range(-6..9));
            let a = rng.gen_range(-1.0..1.0) * scale;
            let b = a + rng.gen_range(1e-3..10.0) * scale;
            cases.push((a, b));
        }
        for (lo, hi) in cases {
            let t = nice_ticks(lo, hi);
            assert!((4..=10).contains(&t.len()), "{lo}..{hi}: {t:?}");
            let step = t[1] - t[0];
            let tol = step * 1e-6;
            assert!(t[0] <= lo + tol && *t.last().unwrap() >= hi - tol, "{lo}..{hi} not covered by {t:?}");
            assert!(is_125(step), "{lo}..{hi}: step {step}");
            assert!(t.windows(2).all(|w| ((w[1] - w[0]) - step).abs() <= tol), "{lo}..{hi}: uneven {t:?}");
        }
        assert_eq!(nice_ticks(0.0, 47.3), vec![0.0, 10.0, 20.0, 30.0, 40.0, 50.0]);
        assert_eq!(nice_ticks(0.0, 0.3), vec![0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3]);
        assert_eq!(nice_ticks(20.39, 44.5), vec![20.0, 25.0, 30.0, 35.0, 40.0, 45.0]);
        // A short axis asks for fewer: still 1-2-5 steps that cover the range.
        for max in 3..=10 {
            for (lo, hi) in [(14.45, 14.85), (0.0, 3.05), (-2.0, 7.3), (0.001, 0.0173)] {
                let t = nice_ticks_at_most(lo, hi, max);
                let step = t[1] - t[0];
                assert!(t.len() <= max && t.len() >= 2 && is_125(step), "{lo}..{hi} at most {max}: {t:?}");
                assert!(t[0] <= lo + step * 1e-6 && *t.last().unwrap() >= hi - step * 1e-6, "{lo}..{hi} at most {max}: {t:?}");
            }
        }
        // Degenerate and broken ranges still give an axis.
        assert_eq!(nice_ticks(0.0, 0.0), vec![0.0, 0.2, 0.4, 0.6, 0.8, 1.0]);
        assert!(nice_ticks(5.0, 5.0).len() >= 4);
        assert_eq!(nice_ticks(f64::NAN, 1.0), nice_ticks(0.0, 1.0));
        assert_eq!(fmt_tick(0.15, 0.05), "0.15");
        assert_eq!(fmt_tick(40.0, 10.0), "40");
        assert_eq!(fmt_tick(2.5, 0.5), "2.5");
        assert_eq!(fmt_tick(5.0, 1.0), "5");
        assert_eq!(fmt_tick(0.002, 0.002), "0.002");
        assert_eq!(fmt_tick(1e6, 2e5), "1000000");
    }

    #[test]
    fn nice_floor_rounds_down_to_1_2_5() {
        assert_eq!((nice_floor(0.05), nice_floor(0.0075), nice_floor(3.0), nice_floor(1000.0), nice_floor(999.0)), (0.05, 0.005, 2.0, 1000.0, 500.0));
    }

    #[test]
    fn log_ticks_cover_the_range_in_1_2_5_or_decades() {
        assert_eq!(log_ticks(3.0, 40.0), vec![2.0, 5.0, 10.0, 20.0, 50.0]);
        assert_eq!(log_ticks(1.0, 100.0), vec![1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]);
        let wide = log_ticks(0.002, 5e4);
        assert!(wide.len() <= 10 && wide[0] <= 0.002 && *wide.last().unwrap() >= 5e4, "{wide:?}");
        let vast = log_ticks(1e-9, 1e12);
        assert!(vast.len() <= 11 && vast[0] <= 1e-9 && *vast.last().unwrap() >= 1e12, "{vast:?}");
    }

    #[test]
    fn scales_map_and_reverse() {
        let s = Scale { lo: 0.0, hi: 10.0, from_px: 100.0, to_px: 0.0, log: false };
        assert_eq!((s.px(0.0), s.px(10.0), s.px(5.0)), (100.0, 0.0, 50.0));
        let l = Scale { lo: 1.0, hi: 100.0, from_px: 0.0, to_px: 200.0, log: true };
        assert!((l.px(10.0) - 100.0).abs() < 1e-9);
        assert!(!l.placeable(0.0) && l.placeable(0.5));
    }

    #[test]
    fn escaping_leaves_no_markup() {
        assert_eq!(escape("<a href=\"x\">&'</a>"), "&lt;a href=&quot;x&quot;&gt;&amp;'&lt;/a&gt;");
        assert_eq!(escape("bbr:1,cubic:1 — ok"), "bbr:1,cubic:1 — ok");
        let mut p = Plot::new("t", 400.0, 200.0, Axis::new("<x>").fit([0.0, 1.0]), Axis::new("y & z").fit([0.0, 1.0]), Some("<s>"));
        p.line(&[(0.0, 0.0), (1.0, 1.0)], "#000", Stroke::BOLD, Some("run <1>"));
        let svg = p.finish();
        assert!(!svg.contains("<x>") && !svg.contains("<s>") && !svg.contains("<1>") && svg.contains("y &amp; z"), "{svg}");
    }

    #[test]
    fn a_plot_places_data_inside_its_area_and_reverses_on_request() {
        let x = Axis::new("t (s)").fit([0.0, 10.0]);
        let y = Axis::new("v (ms)").zero().fit([5.0]);
        let mut p = Plot::new("p", 400.0, 200.0, x.clone(), y.clone(), None);
        let (l, r) = (p.x.px(0.0), p.x.px(10.0));
        let (b, t) = (p.y.px(0.0), p.y.px(5.0));
        assert!(l < r && t < b && l >= 40.0 && r <= 400.0 && t >= 0.0 && b <= 200.0, "{l} {r} {t} {b}");
        p.line(&[(0.0, 0.0), (10.0, 5.0)], "#000", Stroke::NORMAL, None);
        assert!(p.finish().contains(&format!("points=\"{l:.1},{b:.1} {r:.1},{t:.1}\"")));
        let rev = Plot::new("q", 400.0, 200.0, x.reversed(), y, None);
        assert!(rev.x.px(0.0) > rev.x.px(10.0), "a reversed axis runs right to left");
    }

    #[test]
    fn an_unbounded_interval_runs_to_the_edge_with_an_arrow() {
        let x = Axis::new("c").categories(vec!["a ÷ b".into()]);
        let mut p = Plot::new("ci", 300.0, 200.0, x, Axis::new("ratio").fit([0.5, 2.0]), None);
        let top = p.y.px(p.y.hi);
        p.interval_y(0.0, 0.8, f64::INFINITY, "#000", Some("unbounded above"));
        let svg = p.finish();
        let d = svg.split("<path d=\"").nth(2).and_then(|s| s.split('"').next()).unwrap();
        // From 0.8 up to the plot's top edge, then an arrowhead there (two strokes to the tip).
        assert!(d.contains(&format!("V{top:.1}")) && d.matches('L').count() == 2, "{d}");
        assert!(svg.contains("<title>unbounded above</title>"));
    }

    #[test]
    fn decimation_keeps_memory_bounded_and_points_evenly_spaced() {
        for cap in [4, 500, MAX_POINTS, 10 * MAX_POINTS] {
            let mut d = Decimated::with_cap(cap);
            let mut most = 0;
            for i in 0..1_000_000 {
                d.push((f64::from(i), 0.0));
                most = most.max(d.points().len());
            }
            let cap = cap.min(MAX_POINTS);
            assert!(most < cap && d.points().len() >= cap / 4, "cap {cap}: at most {most}, at the end {}", d.points().len());
            let gaps: Vec<f64> = d.points().windows(2).map(|w| w[1].0 - w[0].0).collect();
            assert!(gaps.iter().all(|g| *g == gaps[0]), "even spacing");
            assert_eq!(d.points()[0].0, 0.0);
        }
        let mut few = Decimated::default();
        (0..10).for_each(|i| few.push((f64::from(i), 1.0)));
        assert_eq!(few.points().len(), 10, "short series are kept whole");
    }

    #[test]
    fn the_cdf_of_counts_is_a_staircase_of_cumulative_fractions() {
        let steps = cdf_steps([(10.0, 1), (20.0, 2), (40.0, 1)], 1000);
        assert_eq!(steps, vec![(10.0, 0.0), (10.0, 0.25), (20.0, 0.25), (20.0, 0.75), (40.0, 0.75), (40.0, 1.0)]);
        assert!(cdf_steps([], 10).is_empty());
        assert!(cdf_steps([(1.0, 0)], 10).is_empty());
        // Many distinct values: at most ~max_steps steps, still ending at 1 and monotone.
        let many = cdf_steps((0..100_000).map(|i| (f64::from(i), 1)), 200);
        assert!(many.len() <= 2 * 201 + 1, "{}", many.len());
        assert_eq!(*many.last().unwrap(), (99_999.0, 1.0));
        assert!(many.windows(2).all(|w| w[1].0 >= w[0].0 && w[1].1 >= w[0].1));
        // Thinned, the curve is never more than 1/max_steps below the exact one.
        for w in many.windows(2).filter(|w| w[0].1 == w[1].1) {
            let exact_before_next = w[1].0 / 100_000.0; // values < w[1].0 make this fraction
            assert!(exact_before_next - w[0].1 <= 1.0 / 200.0 + 1e-9, "{w:?}");
        }
    }

    #[test]
    fn rounding_to_three_digits_bounds_the_distinct_values() {
        assert_eq!((round_sig3(20394.0), round_sig3(999.4), round_sig3(7.0), round_sig3(123_456.0)), (20400, 999, 7, 123_000));
        let distinct: std::collections::BTreeSet<u32> = (1..2_000_000).map(|v| round_sig3(f64::from(v))).collect();
        assert!(distinct.len() < 4 * 1000, "{}", distinct.len());
    }

    #[test]
    fn ellipse_from_covariance_matches_a_hand_computation() {
        // [[2, 1], [1, 2]]: eigenvalues 3 and 1, the first along the diagonal.
        let e = Ellipse::from_covariance(0.0, 0.0, 2.0, 1.0, 2.0).unwrap();
        assert!((e.rx - 3f64.sqrt()).abs() < 1e-12 && (e.ry - 1.0).abs() < 1e-12, "{e:?}");
        assert!((e.angle - std::f64::consts::FRAC_PI_4).abs() < 1e-12, "{e:?}");
        // Axis-aligned: [[4, 0], [0, 1]] → semi-axes 2 and 1, no rotation.
        let e = Ellipse::from_covariance(5.0, 6.0, 4.0, 0.0, 1.0).unwrap();
        assert_eq!((e.cx, e.cy, e.rx, e.ry, e.angle), (5.0, 6.0, 2.0, 1.0, 0.0));
        // Points (1, 2), (3, 4), (2, 6): mean (2, 4); sxx = 1, sxy = 1, syy = 4 (divisor 2).
        // Eigenvalues 2.5 ± √3.25 = 4.30278, 0.69722; the first axis along (1, 3.30278), at
        // atan(3.30278) = 73.155°.
        let e = Ellipse::of_points(&[(1.0, 2.0), (3.0, 4.0), (2.0, 6.0)]).unwrap();
        assert_eq!((e.cx, e.cy), (2.0, 4.0));
        assert!((e.rx - 4.302_775_6f64.sqrt()).abs() < 1e-6 && (e.ry - 0.697_224_4f64.sqrt()).abs() < 1e-6, "{e:?}");
        assert!((e.angle.to_degrees() - 73.155).abs() < 1e-3, "{}", e.angle.to_degrees());
        // Every outline point is at Mahalanobis distance 1 from the centre.
        let (sxx, sxy, syy) = (1.0, 1.0, 4.0);
        let det: f64 = sxx * syy - sxy * sxy;
        for (x, y) in e.outline(36) {
            let (dx, dy) = (x - 2.0, y - 4.0);
            let m = (syy * dx * dx - 2.0 * sxy * dx * dy + sxx * dy * dy) / det;
            assert!((m - 1.0).abs() < 1e-9, "{m}");
        }
        assert!(Ellipse::of_points(&[(1.0, 1.0)]).is_none());
        assert!(Ellipse::from_covariance(0.0, 0.0, -1.0, 0.0, 1.0).is_none());
    }

    #[test]
    fn a_timeline_keeps_the_state_that_held_and_stays_bounded() {
        // STARTUP for 100 ms, DRAIN for 20 ms, then PROBE_BW; samples every 10 ms.
        let mut t: Timeline<4> = Timeline::default();
        for i in 0..=300u64 {
            let state = match i {
                0..=9 => Some(0),
                10..=11 => Some(1),
                _ => Some(2),
            };
            t.push(i * 10_000, state);
        }
        let bands = t.bands();
        assert_eq!(bands.len(), 3, "{bands:?}");
        assert_eq!(bands.iter().map(|b| b.2).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert!((bands[0].0 - 0.0).abs() < 1e-9 && (bands[0].1 - 0.1).abs() < 0.003, "{bands:?}");
        assert!((bands[1].1 - 0.12).abs() < 0.003 && (bands[2].1 - 3.0).abs() < 0.003, "{bands:?}");
        // An unknown stretch leaves a gap.
        let mut g: Timeline<4> = Timeline::default();
        for i in 0..100u64 {
            g.push(i * 10_000, if (40..60).contains(&i) { None } else { Some(2) });
        }
        assert_eq!(g.bands().len(), 2, "{:?}", g.bands());
        // An hour of 10 ms samples: bins stay bounded.
        let mut h: Timeline<4> = Timeline::default();
        for i in 0..360_000u64 {
            h.push(i * 10_000, Some(((i / 1000) % 2) as usize * 3));
        }
        assert!(h.bins.len() <= MAX_POINTS);
        assert!(h.bands().len() >= 300, "{}", h.bands().len());
    }

    #[test]
    fn wrapping_breaks_at_spaces() {
        assert_eq!(wrap_words("bbr and cubic sharing", 10), vec!["bbr and", "cubic", "sharing"]);
        assert_eq!(wrap_words("averyveryverylongword x", 5), vec!["avery", "veryv", "erylo", "ngwor", "d x"]);
        // A mix breaks after its punctuation, and no line is wider than asked.
        let mix = wrap_words("0.5bdp: quic:bbr3:1,quic:cubic:1", 10);
        assert_eq!(mix, vec!["0.5bdp:", "quic:bbr3:", "1,quic:", "cubic:1"]);
        assert!(mix.iter().all(|l| l.chars().count() <= 10));
    }
}
