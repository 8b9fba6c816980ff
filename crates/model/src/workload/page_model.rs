//! The page a load fetches: its HTML's size and its objects' sizes, built in (`small`, `news`,
//! `heavy`, generated from a fixed seed) or read from a JSON file; plain data that the TCP
//! and QUIC ends, the browser's site and `--page` all read.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// What a page consists of: the HTML document's size and the size of every object (image,
/// script, stylesheet, font) it references, in request order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PageModel {
    pub html_bytes: u64,
    pub objects: Vec<u64>,
}

#[derive(Debug, thiserror::Error)]
pub enum PageModelError {
    #[error("unknown built-in page {name:?}; the built-in pages are: {known}")]
    UnknownBuiltin { name: String, known: String },
    #[error("reading the page model {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("the page model {path} is not JSON of the form {{\"html_bytes\": N, \"objects\": [N, ...]}}: {source}")]
    Parse { path: PathBuf, source: serde_json::Error },
    #[error("the page model {path} is not usable: {message}")]
    Invalid { path: PathBuf, message: String },
}

/// One entry of the built-in catalogue.
struct Builtin {
    name: &'static str,
    html_bytes: u64,
    objects: usize,
    /// Sum of the object sizes (the HTML not included).
    objects_bytes: u64,
    seed: u64,
}

/// Sizes follow typical page-weight surveys in shape (a few large images carry much of the
/// weight, many small icons and scripts carry the request count) but are generated, not taken
/// from any site.
const BUILTINS: &[Builtin] = &[
    // A small site: ~0.5 MB in 20 objects.
    Builtin { name: "small", html_bytes: 24_000, objects: 20, objects_bytes: 476_000, seed: 0x5EED_0001 },
    // A news front page: 86 objects, 0.96 MB with the HTML.
    Builtin { name: "news", html_bytes: 68_000, objects: 86, objects_bytes: 892_000, seed: 0x5EED_0002 },
    // A heavy page: 167 objects, 3.7 MB with the HTML.
    Builtin { name: "heavy", html_bytes: 130_000, objects: 167, objects_bytes: 3_570_000, seed: 0x5EED_0003 },
];

/// Kinds of object, in the order a page requests them: per mille of the objects, and the size
/// range before scaling to the page's total.
const KINDS: &[(&str, u32, u64, u64)] = &[
    ("stylesheet", 70, 2_000, 60_000),
    ("script", 260, 1_000, 120_000),
    ("font", 40, 15_000, 50_000),
    ("image", 220, 8_000, 120_000),
    ("large image", 80, 60_000, 450_000),
    ("icon", 330, 200, 6_000),
];

/// splitmix64: tiny, and the same sequence on every platform and compiler version.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

impl PageModel {
    /// Names accepted by [`PageModel::builtin`].
    pub fn builtin_names() -> Vec<&'static str> {
        BUILTINS.iter().map(|b| b.name).collect()
    }

    /// A page from the built-in catalogue: "small" (20 objects, ~0.5 MB), "news" (86 objects,
    /// 0.96 MB) or "heavy" (167 objects, 3.7 MB). Deterministic: generated from a fixed seed
    /// with integer arithmetic only.
    pub fn builtin(name: &str) -> Result<PageModel, PageModelError> {
        let b = BUILTINS
            .iter()
            .find(|b| b.name == name)
            .ok_or_else(|| PageModelError::UnknownBuiltin { name: name.into(), known: Self::builtin_names().join(", ") })?;
        Ok(generate(b))
    }

    /// Reads a page from a JSON file: `{"html_bytes": N, "objects": [N, ...]}`.
    pub fn from_file(path: impl AsRef<Path>) -> Result<PageModel, PageModelError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| PageModelError::Read { path: path.into(), source })?;
        let model: PageModel = serde_json::from_str(&text).map_err(|source| PageModelError::Parse { path: path.into(), source })?;
        model.validate().map_err(|message| PageModelError::Invalid { path: path.into(), message })?;
        Ok(model)
    }

    /// Checks what a load needs: an HTML document, and a bounded number of objects.
    pub fn validate(&self) -> Result<(), String> {
        if self.html_bytes == 0 {
            return Err("html_bytes must be at least 1 (the page is fetched from its HTML)".into());
        }
        if self.objects.len() > 10_000 {
            return Err(format!("{} objects; at most 10000 are supported", self.objects.len()));
        }
        if self.checked_total_bytes().is_none() {
            return Err("the page's sizes add up to more than 2^64 bytes".into());
        }
        Ok(())
    }

    /// HTML plus all objects; `None` when that overflows (sizes come from files and from the
    /// network: a sum that wraps would pass any limit).
    pub fn checked_total_bytes(&self) -> Option<u64> {
        self.objects.iter().try_fold(self.html_bytes, |sum, &o| sum.checked_add(o))
    }

    /// HTML plus all objects, `u64::MAX` when that overflows (over any limit).
    pub fn total_bytes(&self) -> u64 {
        self.checked_total_bytes().unwrap_or(u64::MAX)
    }
}

fn generate(b: &Builtin) -> PageModel {
    let mut rng = SplitMix(b.seed);
    // How many of each kind: rounded shares, the remainder to the last kind (icons).
    let mut counts: Vec<usize> = KINDS.iter().map(|k| (b.objects * k.1 as usize + 500) / 1000).collect();
    let assigned: usize = counts[..KINDS.len() - 1].iter().sum();
    counts[KINDS.len() - 1] = b.objects.saturating_sub(assigned);
    let mut raw = Vec::with_capacity(b.objects);
    for (kind, count) in KINDS.iter().zip(&counts) {
        for _ in 0..*count {
            // lo + (hi - lo) * u², u uniform in [0, 1): skewed toward the small end.
            let u = rng.next() >> 48; // 16 bits
            raw.push(kind.2 + (kind.3 - kind.2) * u * u / (1 << 32));
        }
    }
    raw.truncate(b.objects);
    // Scale to the page's total, then put the rounding difference on the largest object.
    let sum: u64 = raw.iter().sum::<u64>().max(1);
    let mut objects: Vec<u64> = raw.iter().map(|&s| ((s as u128 * b.objects_bytes as u128 / sum as u128) as u64).max(100)).collect();
    let scaled: u64 = objects.iter().sum();
    if let Some(i) = (0..objects.len()).max_by_key(|&i| objects[i]) {
        objects[i] = (objects[i] as i128 + b.objects_bytes as i128 - scaled as i128).max(100) as u64;
    }
    PageModel { html_bytes: b.html_bytes, objects }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_catalogue_matches_its_description() {
        let small = PageModel::builtin("small").unwrap();
        assert_eq!(small.objects.len(), 20);
        assert_eq!(small.total_bytes(), 500_000);
        let wraps = PageModel { html_bytes: 10, objects: vec![u64::MAX, 1] };
        assert_eq!(wraps.total_bytes(), u64::MAX, "saturates, never wraps to a small total");
        assert!(wraps.validate().unwrap_err().contains("more than 2^64"));
        let news = PageModel::builtin("news").unwrap();
        assert_eq!(news.objects.len(), 86);
        assert_eq!(news.total_bytes(), 960_000);
        let heavy = PageModel::builtin("heavy").unwrap();
        assert_eq!(heavy.objects.len(), 167);
        assert_eq!(heavy.total_bytes(), 3_700_000);
        for page in [&small, &news, &heavy] {
            let mut sizes = page.objects.clone();
            sizes.sort_unstable();
            let median = sizes[sizes.len() / 2];
            let largest = *sizes.last().unwrap();
            // A few large images and many small objects: heavy-tailed.
            assert!(largest > 5 * median, "largest {largest}, median {median}");
            assert!(sizes[0] >= 100);
            let top5: u64 = sizes.iter().rev().take(5).sum();
            assert!(top5 * 4 > page.total_bytes() - page.html_bytes, "the largest objects should carry a good share");
        }
    }

    #[test]
    fn builtin_is_deterministic_and_names_are_checked() {
        assert_eq!(PageModel::builtin("heavy").unwrap(), PageModel::builtin("heavy").unwrap());
        assert_ne!(PageModel::builtin("news").unwrap().objects[..20], PageModel::builtin("heavy").unwrap().objects[..20]);
        let e = PageModel::builtin("nope").unwrap_err().to_string();
        assert!(e.contains("small") && e.contains("news") && e.contains("heavy"), "{e}");
    }

    #[test]
    fn from_file_reads_and_reports() {
        let dir = std::env::temp_dir().join(format!("ccbench-page-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.json");
        std::fs::write(&good, r#"{"html_bytes": 1000, "objects": [10, 20, 30]}"#).unwrap();
        assert_eq!(PageModel::from_file(&good).unwrap(), PageModel { html_bytes: 1000, objects: vec![10, 20, 30] });

        let missing = PageModel::from_file(dir.join("missing.json")).unwrap_err();
        assert!(matches!(missing, PageModelError::Read { .. }), "{missing}");

        let typo = dir.join("typo.json");
        std::fs::write(&typo, r#"{"html_bytes": 1000, "object": [10]}"#).unwrap();
        let e = PageModel::from_file(&typo).unwrap_err();
        assert!(matches!(e, PageModelError::Parse { .. }) && e.to_string().contains("object"), "{e}");

        let negative = dir.join("negative.json");
        std::fs::write(&negative, r#"{"html_bytes": 1000, "objects": [-5]}"#).unwrap();
        assert!(matches!(PageModel::from_file(&negative).unwrap_err(), PageModelError::Parse { .. }));

        let empty_html = dir.join("empty.json");
        std::fs::write(&empty_html, r#"{"html_bytes": 0, "objects": []}"#).unwrap();
        let e = PageModel::from_file(&empty_html).unwrap_err();
        assert!(matches!(e, PageModelError::Invalid { .. }) && e.to_string().contains("html_bytes"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
