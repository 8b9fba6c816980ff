//! `ccbench run --workload page`: its flags and its spec from them. Browser takes `--page` and
//! `--http` too.

use std::fmt;
use std::str::FromStr;

use crate::flags::{expected, Expected, FlagError, FlagSet, FromFlags, Kind, RunFlags};
use crate::{Algorithm, PageModel, PageProtocol, PageSpec};

/// page: the page loaded (`--page`), a built-in one by name or a JSON file, read when the
/// flag is parsed.
#[derive(Clone, Debug, PartialEq)]
pub struct Page {
    pub name: String,
    pub model: PageModel,
}

impl FromStr for Page {
    type Err = Expected;
    fn from_str(name: &str) -> Result<Self, Expected> {
        let builtin = PageModel::builtin_names().contains(&name);
        let model = if builtin { PageModel::builtin(name) } else { PageModel::from_file(name) }
            .map_err(|e| Expected(format!("one of {} or a page JSON file ({e})", PageModel::builtin_names().join(", "))))?;
        Ok(Page { name: name.to_string(), model })
    }
}

impl fmt::Display for Page {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// page: the HTTP version (`--http`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Http {
    /// HTTP/1.1: browser-like parallel connections.
    V1,
    /// HTTP/2: one multiplexed connection.
    V2,
}

impl FromStr for Http {
    type Err = Expected;
    fn from_str(s: &str) -> Result<Self, Expected> {
        match s {
            "1" | "1.1" => Ok(Http::V1),
            "2" => Ok(Http::V2),
            _ => expected("1 or 2"),
        }
    }
}

impl fmt::Display for Http {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Http::V1 => "1",
            Http::V2 => "2",
        })
    }
}

crate::deserialize_from_text!(Page, Http);

crate::count_flag!(
    /// page over HTTP/1.1: most parallel connections (`--max-connections`).
    MaxConnections, 1..=64
);

crate::workload_flags! {
    /// The flags of page; browser takes `--page` and `--http`.
    #[derive(clap::Args, serde::Deserialize, Debug, Clone, Default, PartialEq)]
    #[group(skip)]
    #[serde(deny_unknown_fields, default, rename_all = "kebab-case")]
    pub struct PageFlags {
        /// page: a built-in page (small, news, heavy) or a JSON file {"html_bytes": N, "objects": [sizes…]} [default: news].
        #[arg(long, allow_hyphen_values = true)]
        pub page: Option<Page>,
        /// page: HTTP version, 1 (browser-like parallel connections) or 2 (one multiplexed connection) [default: 1].
        #[arg(long, allow_hyphen_values = true)]
        pub http: Option<Http>,
        /// page: most parallel HTTP/1.1 connections [default: 6, like browsers].
        #[arg(long, allow_hyphen_values = true)]
        pub max_connections: Option<MaxConnections>,
    }
}

impl PageFlags {
    /// `--page`, news unless given.
    pub fn page_model(&self) -> Result<PageModel, FlagError> {
        match &self.page {
            Some(page) => Ok(page.model.clone()),
            None => "news".parse::<Page>().map(|p| p.model).map_err(|e| FlagError::new("--page", "news", e.0)),
        }
    }

    /// `--http`, 1 unless given.
    pub fn http(&self) -> Http {
        self.http.unwrap_or(Http::V1)
    }
}

impl FromFlags for PageSpec {
    type Flags = PageFlags;
    const KINDS: &'static [Kind] =
        &[Kind { name: "page", help: None, about: Some("a web page of many objects"), takes: &["--page", "--http", "--max-connections"] }];

    fn from_flags(_kind: &str, flags: &dyn FlagSet, run: &RunFlags) -> Result<Self, FlagError> {
        let own = flags.of::<PageSpec>();
        let page = own.page_model()?;
        let protocol = match (own.http(), own.max_connections) {
            (Http::V1, m) => PageProtocol::Http1 { max_connections: m.map_or(6, |m| m.0) },
            (Http::V2, None) => PageProtocol::Http2,
            (Http::V2, Some(m)) => return Err(FlagError::new("--max-connections", m, "--max-connections only with --http 1 (HTTP/2 uses one connection)")),
        };
        Ok(PageSpec { page, protocol, cc: Algorithm::default(), port: run.port, sample_interval_us: run.sample_interval_us(), timeout_s: run.timeout_s() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values() {
        let refused = |e: Expected| e.0;
        assert_eq!(refused("65".parse::<MaxConnections>().unwrap_err()), "a whole number from 1 to 64");
        assert_eq!("1.1".parse(), Ok(Http::V1));
        assert_eq!(refused("3".parse::<Http>().unwrap_err()), "1 or 2");
        assert_eq!("news".parse::<Page>().unwrap().model, PageModel::builtin("news").unwrap());
        assert!(refused("nope".parse::<Page>().unwrap_err()).starts_with("one of small, news, heavy or a page JSON file"));
    }
}
