//! Whether a secret's text looks drawn at random, not typed: serve cannot measure entropy, but
//! it can refuse what a random hex or base64 string almost never shows. Each test below bounds
//! the chance that a uniformly random string of the same alphabet and length shows what the
//! text shows; below [`MAX_CHANCE`] (one in a million) the text is refused. A string of
//! `ccbench serve --new-secret` (64 hex digits) fails any of them with a chance below 2^-40;
//! the shortest accepted (32 hex digits, 22 base64 symbols) about once in 10^6.
//!
//! The audit's passphrases fail as follows: `correcthorsebatterystaple` is no whole number of
//! base64 bytes and only lowercase; `Password1Password1Password1`, `password-password-password`
//! and `01234567012345670123456701234567` repeat; the base64 of `passwordpasswordpassword`
//! decodes to text.

/// Refused when a random string would look so with a chance below this.
pub const MAX_CHANCE: f64 = 1e-6;

/// The text as symbols of its alphabet: hex digits (16) or base64 symbols (64, the standard and
/// the URL-safe alphabet, padding removed).
pub struct Symbols {
    pub values: Vec<u8>,
    pub alphabet: u32,
}

impl Symbols {
    pub fn of(text: &[u8]) -> Option<Symbols> {
        if text.iter().all(u8::is_ascii_hexdigit) {
            let values = text.iter().map(|&c| (c as char).to_digit(16).expect("a hex digit") as u8).collect();
            return Some(Symbols { values, alphabet: 16 });
        }
        let body = text.strip_suffix(b"==").or_else(|| text.strip_suffix(b"=")).unwrap_or(text);
        let values = body
            .iter()
            .map(|&c| match c {
                b'A'..=b'Z' => Some(c - b'A'),
                b'a'..=b'z' => Some(c - b'a' + 26),
                b'0'..=b'9' => Some(c - b'0' + 52),
                b'+' | b'-' => Some(62),
                b'/' | b'_' => Some(63),
                _ => None,
            })
            .collect::<Option<Vec<u8>>>()?;
        Some(Symbols { values, alphabet: 64 })
    }

    /// The bytes the symbols stand for, if they are a whole number of them (base64: a length
    /// of 1 mod 4 never is).
    pub fn bytes(&self) -> Option<Vec<u8>> {
        let bits = if self.alphabet == 16 { 4 } else { 6 };
        let total = self.values.len() * bits;
        let whole = if self.alphabet == 16 { total.is_multiple_of(8) } else { self.values.len() % 4 != 1 };
        if !whole {
            return None;
        }
        let (mut acc, mut held, mut out) = (0u32, 0, Vec::with_capacity(total / 8));
        for &v in &self.values {
            acc = (acc << bits) | u32::from(v);
            held += bits;
            if held >= 8 {
                held -= 8;
                out.push((acc >> held) as u8);
                acc &= (1 << held) - 1;
            }
        }
        Some(out)
    }
}

/// The shortest period of `s`: the least p with s[i] = s[i + p] for every i (KMP's failure
/// function).
fn period<T: PartialEq>(s: &[T]) -> usize {
    let n = s.len();
    let mut fail = vec![0usize; n + 1];
    let mut k = 0;
    for i in 1..n {
        while k > 0 && s[i] != s[k] {
            k = fail[k];
        }
        if s[i] == s[k] {
            k += 1;
        }
        fail[i + 1] = k;
    }
    n - fail[n]
}

/// The chance that `n` symbols drawn uniformly from `alphabet` take at most `distinct` values.
fn chance_of_at_most_distinct(n: usize, alphabet: u32, distinct: usize) -> f64 {
    let a = f64::from(alphabet);
    let width = (alphabet as usize).min(n) + 1;
    let mut p = vec![0.0f64; width];
    p[0] = 1.0;
    for _ in 0..n {
        for j in (0..width).rev() {
            let stay = p[j] * j as f64 / a;
            let grow = if j > 0 { p[j - 1] * (a - (j - 1) as f64) / a } else { 0.0 };
            p[j] = stay + grow;
        }
    }
    p.iter().take(distinct + 1).sum()
}

/// The classes a symbol falls in, and their sizes: hex digits and letters; base64 capitals,
/// small letters, digits and the two others.
fn class_of(v: u8, alphabet: u32) -> (usize, u32) {
    match (alphabet, v) {
        (16, 0..=9) => (0, 10),
        (16, _) => (1, 6),
        (_, 0..=25) => (0, 26),
        (_, 26..=51) => (1, 26),
        (_, 52..=61) => (2, 10),
        _ => (3, 2),
    }
}

/// `Err(what the text shows)` if it does not look random; see the module's note.
pub fn judge(text: &[u8]) -> Result<(), String> {
    let symbols = Symbols::of(text).ok_or("is not hex or base64 text")?;
    let (v, n, a) = (&symbols.values, symbols.values.len(), symbols.alphabet);
    let bytes = symbols.bytes().ok_or("is not the base64 of a whole number of bytes")?;
    let p = period(v);
    if p <= n / 2 {
        return Err(format!("repeats every {p} symbols"));
    }
    // Steps by a pattern: 0123…, 00112233…, aceg…
    let steps: Vec<u8> = v.windows(2).map(|w| ((u32::from(w[1]) + a - u32::from(w[0])) % a) as u8).collect();
    if steps.len() >= 2 && period(&steps) <= steps.len() / 2 {
        return Err("steps through its symbols in a pattern".into());
    }
    let mut seen = [false; 64];
    v.iter().for_each(|&s| seen[s as usize] = true);
    let distinct = seen.iter().filter(|&&s| s).count();
    if chance_of_at_most_distinct(n, a, distinct) < MAX_CHANCE {
        return Err(format!("uses only {distinct} different symbols"));
    }
    let (mut used, mut size) = ([false; 4], 0u32);
    for &s in v {
        let (c, k) = class_of(s, a);
        if !used[c] {
            used[c] = true;
            size += k;
        }
    }
    // Any of the (at most 15) unions of classes could have been the one seen.
    let classes = if a == 16 { 3.0 } else { 15.0 };
    if size < a && classes * (f64::from(size) / f64::from(a)).powi(n as i32) < MAX_CHANCE {
        let which = if a == 16 {
            if used[0] {
                "only digits"
            } else {
                "only letters"
            }
        } else {
            "too few kinds of symbol (a random one mixes capitals, small letters and digits)"
        };
        return Err(format!("uses {which}"));
    }
    // Printable ASCII: 95 of 256 byte values.
    if bytes.len() >= 8 && bytes.iter().all(|b| (0x20..0x7f).contains(b)) && (95.0f64 / 256.0).powi(bytes.len() as i32) < MAX_CHANCE {
        return Err("is the encoding of text, not of random bytes".into());
    }
    if bytes.len() >= 2 && period(&bytes) <= bytes.len() / 2 {
        return Err(format!("encodes bytes that repeat every {} bytes", period(&bytes)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngCore, SeedableRng};

    fn b64(raw: &[u8]) -> String {
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in raw.chunks(3) {
            let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
            let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
            for i in 0..=chunk.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            }
        }
        while !out.len().is_multiple_of(4) {
            out.push('=');
        }
        out
    }

    /// Issue 27 §4: each passphrase the audit got past the form check is refused.
    #[test]
    fn the_audits_weak_secrets_are_refused() {
        let weak = [
            "correcthorsebatterystaple".to_string(),
            "Password1Password1Password1".into(),
            "password-password-password".into(),
            "01234567012345670123456701234567".into(),
            b64(b"passwordpasswordpassword"),
            // The repository's own fuzz secret until issue 27.
            "0123456789abcdef0123456789abcdef".into(),
            "00112233445566778899aabbccddeeff".into(),
            "12345678901234567890123456789012".into(),
            "83649201746352910283746501928374".into(),
            b64(b"this is my secret, keep it safe"),
        ];
        assert_eq!(b64(b"passwordpasswordpassword"), "cGFzc3dvcmRwYXNzd29yZHBhc3N3b3Jk");
        for w in weak {
            let why = judge(w.as_bytes()).expect_err(&w);
            eprintln!("{w}: {why}");
        }
    }

    /// Random secrets of every accepted form pass: 100 000 of the shortest each (hex and
    /// base64 of 16 bytes, so about 0.1 expected to fail at one in a million), and the
    /// generator's 64 hex digits.
    #[test]
    fn random_secrets_pass() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(27);
        let mut refused = 0;
        for _ in 0..100_000 {
            let mut raw = [0u8; 16];
            rng.fill_bytes(&mut raw);
            for text in [crate::proto::hex(&raw), b64(&raw), b64(&raw).trim_end_matches('=').to_string()] {
                if let Err(e) = judge(text.as_bytes()) {
                    eprintln!("{text}: {e}");
                    refused += 1;
                }
            }
        }
        assert!(refused <= 3, "{refused} of 300 000 random secrets refused");
        for _ in 0..1000 {
            let mut raw = [0u8; 32];
            rng.fill_bytes(&mut raw);
            assert_eq!(judge(crate::proto::hex(&raw).as_bytes()), Ok(()));
            assert_eq!(judge(b64(&raw).as_bytes()), Ok(()));
        }
    }

    #[test]
    fn periods_and_distinct_chances() {
        assert_eq!(period(b"abcabcab"), 3);
        assert_eq!(period(b"abcd"), 4);
        assert_eq!(period(b"aaaa"), 1);
        assert!((chance_of_at_most_distinct(2, 16, 1) - 1.0 / 16.0).abs() < 1e-12);
        assert!((chance_of_at_most_distinct(5, 16, 16) - 1.0).abs() < 1e-9);
    }
}
