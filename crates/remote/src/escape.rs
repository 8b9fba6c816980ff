//! What of a peer's text may reach serve's log as it is. Control characters (Cc) would start
//! lines of their own or drive a terminal; format characters (Cf: U+200B zero width space,
//! U+202E right-to-left override, U+2066 isolates…) and the line and paragraph separators
//! (Zl U+2028, Zp U+2029) hide or reorder what a reader sees, and some viewers break lines at
//! the separators. All of them are written as Rust escapes (`\u{202e}`).

/// The Unicode general categories Cf, Zl and Zp: Unicode 14's DerivedGeneralCategory.txt,
/// with U+13439..1343F (Cf since Unicode 15.0) added. Sorted, inclusive.
const FORMAT_AND_SEPARATORS: &[(u32, u32)] = &[
    (0xAD, 0xAD),
    (0x600, 0x605),
    (0x61C, 0x61C),
    (0x6DD, 0x6DD),
    (0x70F, 0x70F),
    (0x890, 0x891),
    (0x8E2, 0x8E2),
    (0x180E, 0x180E),
    (0x200B, 0x200F),
    (0x2028, 0x202E),
    (0x2060, 0x2064),
    (0x2066, 0x206F),
    (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
];

/// Whether `c` is a control, format or separator character (see the module's note).
pub fn hides_or_breaks(c: char) -> bool {
    if c.is_control() {
        return true;
    }
    let c = c as u32;
    let i = FORMAT_AND_SEPARATORS.partition_point(|&(_, hi)| hi < c);
    FORMAT_AND_SEPARATORS.get(i).is_some_and(|&(lo, _)| lo <= c)
}

/// `line` with every such character written as a Rust escape.
pub fn escape(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    for c in line.chars() {
        if hides_or_breaks(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// At most `max` characters of `text`, and `…` if there were more: a peer's words in a log
/// line, however many it sent.
pub fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_formats_and_separators_are_escaped_and_the_rest_kept() {
        let hostile = "a\nb\u{1b}[2J\u{2028}c\u{2029}d\u{202e}e\u{200b}f\u{feff}\u{e0041}\u{ad}";
        let escaped = escape(hostile);
        assert_eq!(escaped, "a\\nb\\u{1b}[2J\\u{2028}c\\u{2029}d\\u{202e}e\\u{200b}f\\u{feff}\\u{e0041}\\u{ad}");
        assert!(escaped.chars().all(|c| c.is_ascii() && !c.is_ascii_control()));
        for kept in ["µs", "1.2 × 10⁶", "é", "日本", "—", "…", "\u{2030}", "\u{2065}"] {
            assert_eq!(escape(kept), kept);
        }
    }

    /// The table is sorted and its ranges do not overlap (the binary search needs both).
    #[test]
    fn the_table_is_sorted() {
        for w in FORMAT_AND_SEPARATORS.windows(2) {
            assert!(w[0].0 <= w[0].1 && w[0].1 < w[1].0, "{w:x?}");
        }
    }

    #[test]
    fn truncation_counts_characters_not_bytes() {
        assert_eq!(truncate("abc", 3), "abc");
        assert_eq!(truncate("abcd", 3), "abc…");
        assert_eq!(truncate("ééééé", 2), "éé…");
        assert_eq!(truncate(&"x".repeat(1024), 80).chars().count(), 81);
    }
}
