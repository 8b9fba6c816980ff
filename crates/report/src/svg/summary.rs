//! Bounded summaries of the data the plots are drawn from: [`Decimated`] lines, [`Timeline`]
//! states, CDFs from counts, covariance [`Ellipse`]s.

/// Most points a plotted line keeps: beyond it, every other point is dropped (and the stride
/// doubled), so reading an hour of samples costs the same memory as reading a minute.
pub const MAX_POINTS: usize = 2000;

/// Keeps fewer than `cap` points of a stream of points, evenly spaced in arrival order.
#[derive(Clone, Debug)]
pub struct Decimated {
    pub(super) points: Vec<(f64, f64)>,
    pub(super) stride: usize,
    pub(super) seen: usize,
    pub(super) cap: usize,
}

impl Default for Decimated {
    fn default() -> Self {
        Decimated::with_cap(MAX_POINTS)
    }
}

impl Decimated {
    /// At most `cap` (≤ [`MAX_POINTS`], ≥ 4) points.
    pub fn with_cap(cap: usize) -> Self {
        Decimated { points: Vec::new(), stride: 1, seen: 0, cap: cap.clamp(4, MAX_POINTS) }
    }

    pub fn push(&mut self, p: (f64, f64)) {
        if self.seen.is_multiple_of(self.stride) {
            self.points.push(p);
            if self.points.len() >= self.cap {
                let mut i = 0;
                self.points.retain(|_| {
                    i += 1;
                    i % 2 == 1
                });
                self.stride *= 2;
            }
        }
        self.seen += 1;
    }

    pub fn points(&self) -> &[(f64, f64)] {
        &self.points
    }

    pub fn into_points(self) -> Vec<(f64, f64)> {
        self.points
    }
}

/// Which of `N` states held over time, in at most [`MAX_POINTS`] bins: each bin keeps how long
/// each state held in it, and bins are merged in pairs (their width doubled) when the time
/// outgrows them. A sample's state holds from its instant until the next sample's.
#[derive(Clone, Debug)]
pub struct Timeline<const N: usize> {
    pub(super) bin_us: u64,
    pub(super) bins: Vec<[u64; N]>,
    pub(super) last: Option<(u64, Option<usize>)>,
}

impl<const N: usize> Default for Timeline<N> {
    fn default() -> Self {
        Timeline { bin_us: 1000, bins: Vec::new(), last: None }
    }
}

impl<const N: usize> Timeline<N> {
    /// A sample at `t_us` in `state` (`None`: no known state).
    pub fn push(&mut self, t_us: u64, state: Option<usize>) {
        if let Some((t0, Some(s))) = self.last {
            if t_us > t0 && s < N {
                self.add(t0, t_us, s);
            }
        }
        if self.last.is_none_or(|(t0, _)| t_us >= t0) {
            self.last = Some((t_us, state));
        }
    }

    pub(super) fn add(&mut self, t0: u64, t1: u64, s: usize) {
        while (t1 - 1) / self.bin_us >= MAX_POINTS as u64 {
            self.bins = self.bins.chunks(2).map(|c| std::array::from_fn(|k| c.iter().map(|b| b[k]).sum())).collect();
            self.bin_us *= 2;
        }
        let last = ((t1 - 1) / self.bin_us) as usize;
        if self.bins.len() <= last {
            self.bins.resize(last + 1, [0; N]);
        }
        for i in (t0 / self.bin_us) as usize..=last {
            let (b0, b1) = (i as u64 * self.bin_us, (i as u64 + 1) * self.bin_us);
            self.bins[i][s] += t1.min(b1) - t0.max(b0);
        }
    }

    /// `(from_s, to_s, state)` of each stretch in which one state held most of every bin.
    pub fn bands(&self) -> Vec<(f64, f64, usize)> {
        let mut out: Vec<(f64, f64, usize)> = Vec::new();
        for (i, bin) in self.bins.iter().enumerate() {
            let (best, held) = bin.iter().enumerate().max_by_key(|(_, v)| **v).map(|(s, v)| (s, *v)).unwrap_or((0, 0));
            if held * 2 < self.bin_us {
                continue;
            }
            let (a, b) = (i as f64 * self.bin_us as f64 / 1e6, (i + 1) as f64 * self.bin_us as f64 / 1e6);
            match out.last_mut() {
                Some(last) if last.2 == best && (last.1 - a).abs() < 1e-9 => last.1 = b,
                _ => out.push((a, b, best)),
            }
        }
        out
    }
}

/// The empirical CDF of values given as `(value, count)` in ascending order, as the vertices
/// of its staircase: from `(v0, 0)`, up at each value to its cumulative fraction and across
/// to the next value. With more than `max_steps` distinct values, steps closer than
/// `1 / max_steps` in fraction are merged (the curve stays within that of the exact one).
pub fn cdf_steps(counts: impl IntoIterator<Item = (f64, u64)>, max_steps: usize) -> Vec<(f64, f64)> {
    let counts: Vec<(f64, u64)> = counts.into_iter().filter(|(v, c)| v.is_finite() && *c > 0).collect();
    let total: u64 = counts.iter().map(|(_, c)| c).sum();
    if total == 0 {
        return Vec::new();
    }
    let min_gap = 1.0 / max_steps.max(1) as f64;
    let mut out = vec![(counts[0].0, 0.0)];
    let mut cum = 0u64;
    let mut shown = 0.0;
    for (i, &(v, c)) in counts.iter().enumerate() {
        cum += c;
        let f = cum as f64 / total as f64;
        if f - shown >= min_gap || i + 1 == counts.len() {
            out.push((v, shown));
            out.push((v, f));
            shown = f;
        }
    }
    out.dedup();
    out
}

/// `v` rounded to three significant digits: counting values so rounded keeps a distribution
/// to within 0.5 % in memory bounded by the decades it spans (900 values each).
pub fn round_sig3(v: f64) -> u32 {
    if !(v.is_finite() && v > 0.0) {
        return 0;
    }
    let scale = 10f64.powi((v.log10().floor() as i32 - 2).max(0));
    ((v / scale).round() * scale).min(f64::from(u32::MAX)) as u32
}

/// The 1-σ ellipse of a bivariate sample: centre, semi-axes (the square roots of the
/// covariance matrix's eigenvalues) and the angle of the first semi-axis from the x axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ellipse {
    pub cx: f64,
    pub cy: f64,
    pub rx: f64,
    pub ry: f64,
    /// Radians, counter-clockwise from +x in data coordinates.
    pub angle: f64,
}

impl Ellipse {
    /// From the centre and the covariance matrix `[[sxx, sxy], [sxy, syy]]`.
    pub fn from_covariance(cx: f64, cy: f64, sxx: f64, sxy: f64, syy: f64) -> Option<Ellipse> {
        if ![cx, cy, sxx, sxy, syy].iter().all(|v| v.is_finite()) || sxx < 0.0 || syy < 0.0 {
            return None;
        }
        let mid = (sxx + syy) / 2.0;
        let d = (((sxx - syy) / 2.0).powi(2) + sxy * sxy).sqrt();
        let (l1, l2) = (mid + d, (mid - d).max(0.0));
        let angle = if sxy == 0.0 && sxx >= syy { 0.0 } else { 0.5 * (2.0 * sxy).atan2(sxx - syy) };
        Some(Ellipse { cx, cy, rx: l1.sqrt(), ry: l2.sqrt(), angle })
    }

    /// From points, with the sample covariance (divisor n − 1); `None` for fewer than 2.
    pub fn of_points(points: &[(f64, f64)]) -> Option<Ellipse> {
        let pts: Vec<(f64, f64)> = points.iter().copied().filter(|(x, y)| x.is_finite() && y.is_finite()).collect();
        if pts.len() < 2 {
            return None;
        }
        let n = pts.len() as f64;
        let (mx, my) = (pts.iter().map(|p| p.0).sum::<f64>() / n, pts.iter().map(|p| p.1).sum::<f64>() / n);
        let (mut sxx, mut sxy, mut syy) = (0.0, 0.0, 0.0);
        for (x, y) in &pts {
            sxx += (x - mx) * (x - mx);
            sxy += (x - mx) * (y - my);
            syy += (y - my) * (y - my);
        }
        Ellipse::from_covariance(mx, my, sxx / (n - 1.0), sxy / (n - 1.0), syy / (n - 1.0))
    }

    /// `n + 1` points around the ellipse (the last is the first again).
    pub fn outline(&self, n: usize) -> Vec<(f64, f64)> {
        let (s, c) = self.angle.sin_cos();
        (0..=n)
            .map(|k| {
                let t = 2.0 * std::f64::consts::PI * k as f64 / n as f64;
                let (u, v) = (self.rx * t.cos(), self.ry * t.sin());
                (self.cx + u * c - v * s, self.cy + u * s + v * c)
            })
            .collect()
    }
}
