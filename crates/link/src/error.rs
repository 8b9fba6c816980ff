use std::fmt;

/// A configuration the link refuses to run ([`crate::DirectionConfig::validate`]).
#[derive(Clone, Debug, PartialEq)]
pub enum LinkConfigError {
    /// `Rate::BitsPerSec(0)`: nothing could ever leave the link.
    ZeroRate,
    /// A probability that is NaN or outside `[0, 1]`.
    InvalidProbability { field: &'static str, value: f64 },
    /// A trace that was deserialized without its timestamps.
    TraceNotLoaded { name: String },
    /// A policer with a zero rate would admit nothing after its first burst.
    PolicerZeroRate,
    /// CoDel's interval must be positive (it divides the control law).
    CodelZeroInterval,
    /// Another AQM parameter out of range, said in full.
    Aqm(String),
}

impl fmt::Display for LinkConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinkConfigError::ZeroRate => write!(f, "link rate must be greater than zero"),
            LinkConfigError::InvalidProbability { field, value } => {
                write!(f, "{field} must be a probability in [0, 1], got {value}")
            }
            LinkConfigError::TraceNotLoaded { name } => {
                write!(f, "trace {name:?} has no timestamps loaded; parse it again")
            }
            LinkConfigError::PolicerZeroRate => write!(f, "policer rate must be greater than zero"),
            LinkConfigError::CodelZeroInterval => {
                write!(f, "CoDel interval must be greater than zero")
            }
            LinkConfigError::Aqm(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for LinkConfigError {}
