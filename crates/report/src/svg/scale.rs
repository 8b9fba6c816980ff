//! Ticks and scales: 1-2-5 and logarithmic ticks, their labels, and an [`Axis`] mapping data
//! onto the plot.

/// The step of [`nice_ticks`] over `[lo, hi]`: the smallest of 1, 2, 5 × 10^k that needs at
/// most `max` ticks to cover the range.
pub(super) fn nice_step(lo: f64, hi: f64, max: usize) -> f64 {
    let span = hi - lo;
    let max = max.max(2) as i64;
    let mut decade = 10f64.powf((span / 10.0).log10().floor());
    loop {
        for m in [1.0, 2.0, 5.0] {
            let step = m * decade;
            if tick_range(lo, hi, step).map(|(a, b)| b - a < max).unwrap_or(false) {
                return step;
            }
        }
        decade *= 10.0;
    }
}

/// The first and last multiple of `step` that cover `[lo, hi]` (with a little tolerance for
/// rounding, so 0.3 / 0.1 counts as 3).
pub(super) fn tick_range(lo: f64, hi: f64, step: f64) -> Option<(i64, i64)> {
    let a = (lo / step + 1e-9).floor();
    let b = (hi / step - 1e-9).ceil();
    (a.is_finite() && b.is_finite() && a.abs() < 1e15 && b.abs() < 1e15).then_some((a as i64, b as i64))
}

/// `[lo, hi]` made fit for ticks: finite, ordered, and not empty.
pub(super) fn sane_range(lo: f64, hi: f64) -> (f64, f64) {
    if !lo.is_finite() || !hi.is_finite() {
        return (0.0, 1.0);
    }
    let (lo, hi) = if lo <= hi { (lo, hi) } else { (hi, lo) };
    if hi - lo > hi.abs().max(lo.abs()) * 1e-9 {
        (lo, hi)
    } else if lo == 0.0 {
        (0.0, 1.0)
    } else {
        let d = lo.abs() * 0.1;
        (lo - d, hi + d)
    }
}

/// Rounds `v` to the decimals that `step` shows, so ticks print as 0.3, not 0.30000000000000004.
pub(super) fn round_to_step(v: f64, step: f64) -> f64 {
    let dec = decimals(step);
    let f = 10f64.powi(dec as i32);
    let r = (v * f).round() / f;
    if r == 0.0 {
        0.0
    } else {
        r
    }
}

/// Decimals needed to print multiples of `step` exactly (0 for steps ≥ 1).
pub(super) fn decimals(step: f64) -> usize {
    if !(step.is_finite() && step > 0.0) {
        return 0;
    }
    (-step.log10() - 1e-9).ceil().clamp(0.0, 9.0) as usize
}

/// Axis ticks in steps of 1, 2 or 5 × 10^k that cover `[lo, hi]` (the first tick ≤ lo, the
/// last ≥ hi) with 4 to 10 ticks. Degenerate ranges are widened; non-finite ones become 0–1.
pub fn nice_ticks(lo: f64, hi: f64) -> Vec<f64> {
    nice_ticks_at_most(lo, hi, 10)
}

/// [`nice_ticks`] with at most `max` ticks (for an axis too short for 10 labels). The step
/// is the smallest 1-2-5 step that needs no more, so there are at least `(max - 2) / 2.5 + 1`.
pub fn nice_ticks_at_most(lo: f64, hi: f64, max: usize) -> Vec<f64> {
    let (lo, hi) = sane_range(lo, hi);
    let step = nice_step(lo, hi, max);
    let (a, b) = tick_range(lo, hi, step).unwrap_or((0, 1));
    (a..=b).map(|k| round_to_step(k as f64 * step, step)).collect()
}

/// Ticks of a log axis over `[lo, hi]` (both > 0): 1, 2, 5 × 10^k when that makes at most 10
/// ticks, else powers of ten (every n-th one when even those are too many). The first tick
/// is ≤ lo and the last ≥ hi.
pub fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let (lo, hi) = if lo > 0.0 && hi > lo && hi.is_finite() { (lo, hi) } else { (1.0, 10.0) };
    let k0 = (lo.log10() + 1e-9).floor() as i32;
    let k1 = (hi.log10() - 1e-9).ceil() as i32;
    let with = |mantissas: &[f64]| -> Vec<f64> {
        let all: Vec<f64> = (k0..=k1).flat_map(|k| mantissas.iter().map(move |m| m * 10f64.powi(k))).collect();
        let first = all.iter().rposition(|&v| v <= lo * (1.0 + 1e-9)).unwrap_or(0);
        let last = all.iter().position(|&v| v >= hi * (1.0 - 1e-9)).unwrap_or(all.len() - 1);
        all[first..=last].to_vec()
    };
    let fine = with(&[1.0, 2.0, 5.0]);
    if fine.len() <= 10 {
        return fine;
    }
    let every = ((k1 - k0) as usize).div_ceil(9).max(1) as i32;
    let mut k = k0;
    let mut out = Vec::new();
    loop {
        out.push(10f64.powi(k));
        if k >= k1 {
            break;
        }
        k += every;
    }
    out
}

/// A tick's label: as many decimals as the step between ticks needs.
pub fn fmt_tick(v: f64, step: f64) -> String {
    let dec = decimals(step);
    format!("{v:.dec$}")
}

/// The largest 1, 2 or 5 × 10^k not above `v` (> 0): a round bin width.
pub fn nice_floor(v: f64) -> f64 {
    if !(v.is_finite() && v > 0.0) {
        return 1.0;
    }
    let decade = 10f64.powf((v.log10() + 1e-9).floor());
    [5.0, 2.0, 1.0].into_iter().map(|m| m * decade).find(|x| *x <= v * (1.0 + 1e-9)).unwrap_or(decade)
}

/// A value for a tooltip or a table: three significant digits, no exponent.
pub fn fmt_sig(v: f64) -> String {
    if !v.is_finite() {
        return "∞".into();
    }
    if v == 0.0 {
        return "0".into();
    }
    let dec = (2 - v.abs().log10().floor() as i32).clamp(0, 6) as usize;
    format!("{v:.dec$}")
}

/// Maps a data interval to a pixel interval, linearly or logarithmically. A pixel interval
/// that runs backwards reverses the axis.
#[derive(Clone, Copy, Debug)]
pub struct Scale {
    pub lo: f64,
    pub hi: f64,
    pub from_px: f64,
    pub to_px: f64,
    pub log: bool,
}

impl Scale {
    pub fn px(&self, v: f64) -> f64 {
        let t = if self.log { (v.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln()) } else { (v - self.lo) / (self.hi - self.lo) };
        self.from_px + t * (self.to_px - self.from_px)
    }

    /// Whether `v` can be placed at all (a log axis has no place for v ≤ 0).
    pub fn placeable(&self, v: f64) -> bool {
        v.is_finite() && (!self.log || v > 0.0)
    }
}

/// What an axis shows: its label (with the unit), and the data it must cover.
#[derive(Clone, Debug)]
pub struct Axis {
    pub(super) label: String,
    pub(super) lo: f64,
    pub(super) hi: f64,
    pub(super) zero: bool,
    pub(super) log: bool,
    pub(super) reversed: bool,
    pub(super) fixed: Option<(f64, f64)>,
    pub(super) pad: f64,
    pub(super) categories: Vec<String>,
}

impl Axis {
    pub fn new(label: impl Into<String>) -> Self {
        Axis {
            label: label.into(),
            lo: f64::INFINITY,
            hi: f64::NEG_INFINITY,
            zero: false,
            log: false,
            reversed: false,
            fixed: None,
            pad: 0.0,
            categories: Vec::new(),
        }
    }

    /// Extends the axis to cover `values` (non-finite ones are ignored).
    pub fn fit(mut self, values: impl IntoIterator<Item = f64>) -> Self {
        for v in values.into_iter().filter(|v| v.is_finite()) {
            self.lo = self.lo.min(v);
            self.hi = self.hi.max(v);
        }
        self
    }

    /// The axis starts at (or includes) zero.
    pub fn zero(mut self) -> Self {
        self.zero = true;
        self
    }

    /// A logarithmic axis when the data are positive and span more than 10×.
    pub fn log_if_wide(mut self) -> Self {
        self.log = self.lo > 0.0 && self.hi / self.lo > 10.0;
        self
    }

    /// Room beyond the data on both sides, as a fraction of its span (points off the edges).
    pub fn pad(mut self, fraction: f64) -> Self {
        self.pad = fraction;
        self
    }

    /// Larger values to the left (or bottom).
    pub fn reversed(mut self) -> Self {
        self.reversed = true;
        self
    }

    /// Exactly `[lo, hi]`, ticks within it.
    pub fn range(mut self, lo: f64, hi: f64) -> Self {
        self.fixed = Some((lo, hi));
        self
    }

    /// A categorical axis: category i sits at i, labelled with its name.
    pub fn categories(mut self, names: Vec<String>) -> Self {
        self.categories = names;
        self
    }

    pub fn is_log(&self) -> bool {
        self.log
    }

    /// The domain and the labelled ticks.
    /// `max_ticks`: the most labels the axis has room for (at most 10 are used).
    pub(super) fn layout(&self, max_ticks: usize) -> (f64, f64, Vec<(f64, String)>) {
        let max_ticks = max_ticks.clamp(3, 10);
        if !self.categories.is_empty() {
            let n = self.categories.len();
            return (-0.5, n as f64 - 0.5, self.categories.iter().enumerate().map(|(i, c)| (i as f64, c.clone())).collect());
        }
        if let Some((lo, hi)) = self.fixed {
            let ticks = nice_ticks_at_most(lo, hi, max_ticks);
            let step = ticks.get(1).zip(ticks.first()).map(|(b, a)| b - a).unwrap_or(1.0);
            let inside = ticks.into_iter().filter(|t| *t >= lo - step * 1e-6 && *t <= hi + step * 1e-6).map(|t| (t, fmt_tick(t, step))).collect();
            return (lo, hi, inside);
        }
        let (mut lo, mut hi) = (self.lo, self.hi);
        if !lo.is_finite() {
            (lo, hi) = (0.0, 1.0);
        }
        if self.pad > 0.0 && hi > lo {
            if self.log {
                let k = (hi / lo).powf(self.pad);
                (lo, hi) = (lo / k, hi * k);
            } else {
                let d = (hi - lo) * self.pad;
                (lo, hi) = (if lo >= 0.0 { (lo - d).max(0.0) } else { lo - d }, hi + d);
            }
        }
        if self.log {
            let ticks = log_ticks(lo, hi);
            let labelled = ticks.iter().map(|&t| (t, fmt_tick(t, t))).collect();
            return (ticks[0], ticks[ticks.len() - 1], labelled);
        }
        if self.zero {
            lo = lo.min(0.0);
            hi = hi.max(0.0);
        }
        let ticks = nice_ticks_at_most(lo, hi, max_ticks);
        let step = ticks[1] - ticks[0];
        let labelled = ticks.iter().map(|&t| (t, fmt_tick(t, step))).collect();
        (ticks[0], ticks[ticks.len() - 1], labelled)
    }
}
