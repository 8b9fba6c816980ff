//! `ccbench run --workload objects`: its flags and its spec from them.

use std::fmt;
use std::str::FromStr;

use crate::flags::{expected, Expected, FlagError, FlagSet, FromFlags, Kind, RunFlags};
use crate::{Algorithm, BulkSpec, ObjectMethod, ObjectsSpec};

crate::count_flag!(
    /// objects: requests per run (`--requests`).
    Requests, 1..=100_000
);
crate::count_flag!(
    /// objects: concurrent persistent connections (`--concurrency`).
    Concurrency, 1..=256
);

/// objects: which way the objects go (`--method`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Method(pub ObjectMethod);

impl FromStr for Method {
    type Err = Expected;
    fn from_str(s: &str) -> Result<Self, Expected> {
        match s {
            "put" | "PUT" => Ok(Method(ObjectMethod::Put)),
            "get" | "GET" => Ok(Method(ObjectMethod::Get)),
            _ => expected("put or get"),
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            ObjectMethod::Put => "put",
            ObjectMethod::Get => "get",
        })
    }
}

crate::deserialize_from_text!(Method);

crate::workload_flags! {
    /// The flags of objects (and `--size`, file's: each object's size).
    #[derive(clap::Args, serde::Deserialize, Debug, Clone, Default, PartialEq)]
    #[group(skip)]
    #[serde(deny_unknown_fields, default, rename_all = "kebab-case")]
    pub struct ObjectsFlags {
        /// objects: number of requests per run [default: 200].
        #[arg(long, allow_hyphen_values = true)]
        pub requests: Option<Requests>,
        /// objects: concurrent persistent connections [default: 16].
        #[arg(long, allow_hyphen_values = true)]
        pub concurrency: Option<Concurrency>,
        /// objects: put (upload; the client sends) or get (download) [default: put].
        #[arg(long, allow_hyphen_values = true)]
        pub method: Option<Method>,
    }
}

impl FromFlags for ObjectsSpec {
    type Flags = ObjectsFlags;
    const KINDS: &'static [Kind] = &[Kind {
        name: "objects",
        help: None,
        about: Some("HTTP PUT/GET load"),
        takes: &["--size", "--requests", "--concurrency", "--method", "--quic-receiver-cc"],
    }];

    fn from_flags(_kind: &str, flags: &dyn FlagSet, run: &RunFlags) -> Result<Self, FlagError> {
        let own = flags.of::<ObjectsSpec>();
        Ok(ObjectsSpec {
            requests: own.requests.map_or(200, |r| r.0),
            object_bytes: flags.of::<BulkSpec>().size.map_or(1 << 20, |s| s.0),
            concurrency: own.concurrency.map_or(16, |c| c.0),
            method: own.method.map_or(ObjectMethod::Put, |m| m.0),
            cc: Algorithm::default(),
            port: run.port,
            sample_interval_us: run.sample_interval_us(),
            timeout_s: run.timeout_s(),
            quic_receiver_cc: run.quic_receiver_cc.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values() {
        let refused = |e: Expected| e.0;
        assert_eq!("16".parse(), Ok(Concurrency(16)));
        assert_eq!(refused("0".parse::<Concurrency>().unwrap_err()), "a whole number from 1 to 256");
        assert_eq!(refused("many".parse::<Requests>().unwrap_err()), "a whole number from 1 to 100000");
        assert_eq!("GET".parse(), Ok(Method(ObjectMethod::Get)));
        assert_eq!(refused("post".parse::<Method>().unwrap_err()), "put or get");
    }
}
