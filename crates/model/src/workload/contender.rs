//! What a result's runs are keyed by ([`Cc`]): the algorithm as written, or a mix's label; kept
//! typed from the plan to result.json and back, so nothing downstream parses the name again.

use std::fmt;
use std::ops::Deref;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Algorithm;

/// A contender of a result: its name as written (`tcp:bbr`, `quic:bbr3`, or a mix's label such
/// as `bbr:1,cubic:1`), and the [`Algorithm`] it names when it names one. Serialised as the
/// name alone, so result.json and its schema are what they were when this was a string.
///
/// Equal and hashed by its name alone: it lends itself as a `str` ([`Borrow`]), and a map keyed
/// by contenders is looked up by name, which needs `Hash` and `Eq` to agree with `str`'s (a
/// derived `Hash` over the parsed algorithm too would miss; `Cc::mix("bbr")` is `Cc::new("bbr")`).
///
/// [`Borrow`]: std::borrow::Borrow
#[derive(Clone, Default)]
pub struct Cc {
    written: String,
    algorithm: Option<Algorithm>,
}

impl Cc {
    /// A contender named `written`: an algorithm when it parses as one, else a label.
    pub fn new(written: &str) -> Cc {
        Cc { written: written.to_string(), algorithm: written.parse().ok() }
    }

    /// A mix's label (`bbr:1,cubic:1`): no one algorithm.
    pub fn mix(label: &str) -> Cc {
        Cc { written: label.to_string(), algorithm: None }
    }

    /// The algorithm every flow of its runs ran; `None` for a mix (or a name that is none).
    pub fn algorithm(&self) -> Option<&Algorithm> {
        self.algorithm.as_ref()
    }

    pub fn as_str(&self) -> &str {
        &self.written
    }
}

impl From<&Algorithm> for Cc {
    fn from(a: &Algorithm) -> Cc {
        Cc { written: a.to_string(), algorithm: Some(a.clone()) }
    }
}

impl From<&Cc> for Cc {
    fn from(c: &Cc) -> Cc {
        c.clone()
    }
}

impl From<&str> for Cc {
    fn from(s: &str) -> Cc {
        Cc::new(s)
    }
}

impl From<String> for Cc {
    fn from(s: String) -> Cc {
        Cc::new(&s)
    }
}

/// Read as its name wherever a name is read (messages, map keys, comparisons).
impl Deref for Cc {
    type Target = str;
    fn deref(&self) -> &str {
        &self.written
    }
}

impl AsRef<str> for Cc {
    fn as_ref(&self) -> &str {
        &self.written
    }
}

impl std::borrow::Borrow<str> for Cc {
    fn borrow(&self) -> &str {
        &self.written
    }
}

impl fmt::Display for Cc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.written)
    }
}

impl fmt::Debug for Cc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.written, f)
    }
}

impl PartialEq for Cc {
    fn eq(&self, other: &Cc) -> bool {
        self.written == other.written
    }
}

impl Eq for Cc {}

impl std::hash::Hash for Cc {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        std::hash::Hash::hash(&self.written, h)
    }
}

impl PartialEq<str> for Cc {
    fn eq(&self, other: &str) -> bool {
        self.written == other
    }
}

impl PartialEq<&str> for Cc {
    fn eq(&self, other: &&str) -> bool {
        self.written == *other
    }
}

impl PartialEq<String> for Cc {
    fn eq(&self, other: &String) -> bool {
        &self.written == other
    }
}

impl PartialEq<Cc> for str {
    fn eq(&self, other: &Cc) -> bool {
        self == other.written
    }
}

impl PartialEq<Cc> for &str {
    fn eq(&self, other: &Cc) -> bool {
        *self == other.written
    }
}

impl PartialEq<Cc> for String {
    fn eq(&self, other: &Cc) -> bool {
        *self == other.written
    }
}

impl Serialize for Cc {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.written)
    }
}

impl<'de> Deserialize<'de> for Cc {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Cc, D::Error> {
        String::deserialize(d).map(Cc::from)
    }
}

/// A string, as it always was in result.json.
impl schemars::JsonSchema for Cc {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        String::schema_name()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        String::json_schema(g)
    }
    fn inline_schema() -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_contender_reads_and_writes_as_its_name() {
        for (s, alg) in [("tcp:bbr", Some("tcp:bbr")), ("quic:bbr3", Some("quic:bbr3")), ("bbr:1,cubic:1", None)] {
            let cc: Cc = serde_json::from_str(&format!("{s:?}")).unwrap();
            assert_eq!(cc.as_str(), s);
            assert_eq!(cc.algorithm().map(|a| a.to_string()).as_deref(), alg);
            assert_eq!(serde_json::to_string(&cc).unwrap(), format!("{s:?}"));
        }
        assert!(Cc::new("bbr") == "bbr" && "bbr" == Cc::new("bbr") && Cc::new("bbr") != "tcp:bbr");
    }

    /// A map keyed by contenders is found by name (the `Borrow<str>` contract), whichever way
    /// the key was made.
    #[test]
    fn a_contender_is_found_by_its_name_in_a_map() {
        let mut m = std::collections::HashMap::new();
        m.insert(Cc::mix("bbr"), 1);
        m.insert(Cc::new("quic:bbr3"), 2);
        assert_eq!(m.get("bbr"), Some(&1));
        assert_eq!(m.get(&Cc::new("bbr")), Some(&1));
        assert_eq!(m.get("quic:bbr3"), Some(&2));
        assert_eq!(Cc::mix("bbr"), Cc::new("bbr"));
    }
}
