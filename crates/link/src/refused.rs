//! The error of every parser of the link's values. Its own module because the parsers live
//! beside the types they parse (AQMs, ECN) as well as in [`crate::text`].

use std::fmt;

/// What would have been accepted, when a value was refused ("a rate such as 10mbit, …").
pub type Allowed = String;

/// A refused value of one of the link's types: what is allowed, as [`Allowed`] says it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused(pub Allowed);

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

impl From<Allowed> for Refused {
    fn from(a: Allowed) -> Self {
        Refused(a)
    }
}
