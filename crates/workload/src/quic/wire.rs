//! The framing of `objects` (and `page`) over QUIC: one request per bidirectional stream, many streams in
//! flight on one connection, as an HTTP/3 client multiplexes its requests.
//!
//! * Request: one line, `GET PATH\r\n` — the request of hq-interop, the HTTP/0.9-over-QUIC
//!   mapping the QUIC interop runner transfers files with (`/obj/N` for an object, `/` and
//!   `/o/N` for a page and its objects) — or `PUT PATH LEN\r\n` followed by `LEN` body bytes.
//!   The client then finishes its side of the stream. A path is `/` then printable ASCII
//!   without spaces; what it names is the server's business.
//! * Response: to a GET, the object's bytes, then the end of the stream (the client checks the
//!   count); to a PUT, once the server read the whole body, one line: `OK\r\n`, or
//!   `ERROR reason\r\n`.
//! * A request that does not parse, or names nothing the server has, has its stream reset with
//!   [`BAD_REQUEST`].
//!
//! Why not HTTP/3 (the `h3` crate): h3 talks to a QUIC stack through its `h3::quic` traits,
//! and the only maintained implementation of them for quinn, `h3-quinn`, is written against
//! quinn's own types. noq is a fork with its own types (and its own `Connection`, streams and
//! errors), so h3 would need an adapter of our own of roughly h3-quinn's size, for a crate its
//! authors call experimental. HTTP/3's frames and QPACK headers add a few dozen bytes per
//! request; they do not change what the congestion controller sees (one connection, concurrent
//! streams, the same bytes each way), which is what the workload measures.

/// Longest line either end accepts, CRLF included: a line is a few dozen bytes, so anything
/// longer is garbage and is refused before it is buffered.
pub(crate) const MAX_LINE: usize = 128;

/// The application error code a malformed request's stream is reset with.
pub(crate) const BAD_REQUEST: u32 = 0x10c;

/// What a client asks for on one stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Request {
    /// Download what `path` names.
    Get { path: String },
    /// Upload to `path`: `len` body bytes follow the line.
    Put { path: String, len: u64 },
}

impl Request {
    /// The request line, CRLF included.
    pub(crate) fn line(&self) -> String {
        match self {
            Request::Get { path } => format!("GET {path}\r\n"),
            Request::Put { path, len } => format!("PUT {path} {len}\r\n"),
        }
    }

    /// Parses a request line without its CRLF.
    pub(crate) fn parse(line: &[u8]) -> Result<Request, String> {
        let text = std::str::from_utf8(line).map_err(|_| "a request line that is not UTF-8".to_string())?;
        let path = |p: &str| {
            let ok = p.starts_with('/') && p.bytes().all(|b| b.is_ascii_graphic());
            ok.then(|| p.to_string()).ok_or_else(|| format!("no path in {text:?}"))
        };
        match text.split(' ').collect::<Vec<_>>()[..] {
            ["GET", p] => Ok(Request::Get { path: path(p)? }),
            ["PUT", p, len] => Ok(Request::Put { path: path(p)?, len: number(len).ok_or_else(|| format!("no body length in {text:?}"))? }),
            _ => Err(format!("not GET PATH or PUT PATH LEN: {text:?}")),
        }
    }
}

/// The index `N` of a path `PREFIX` + `N` (`/obj/7` with prefix `/obj/`), written as
/// [`Request::line`] writes numbers.
pub(crate) fn index_in(path: &str, prefix: &str) -> Option<u32> {
    path.strip_prefix(prefix).and_then(number)
}

/// A decimal number as [`Request::line`] writes it: digits only, no sign, no leading zero.
fn number<T: std::str::FromStr>(s: &str) -> Option<T> {
    let canonical = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'));
    canonical.then(|| s.parse().ok()).flatten()
}

/// The server's answer to a PUT.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    /// The whole body arrived.
    Ok,
    /// It did not, and why.
    Error(String),
}

impl Status {
    /// The status line, CRLF included; a reason is cut to fit [`MAX_LINE`] and anything but
    /// printable ASCII in it becomes `?`.
    pub(crate) fn line(&self) -> String {
        match self {
            Status::Ok => "OK\r\n".to_string(),
            Status::Error(reason) => {
                let clean: String =
                    reason.chars().map(|c| if c.is_ascii_graphic() || c == ' ' { c } else { '?' }).take(MAX_LINE - "ERROR \r\n".len()).collect();
                format!("ERROR {clean}\r\n")
            }
        }
    }

    /// Parses a status line without its CRLF.
    pub(crate) fn parse(line: &[u8]) -> Result<Status, String> {
        match line {
            b"OK" => Ok(Status::Ok),
            _ => match line.strip_prefix(b"ERROR ") {
                Some(reason) if reason.iter().all(|&b| b.is_ascii_graphic() || b == b' ') => Ok(Status::Error(String::from_utf8_lossy(reason).into_owned())),
                _ => Err(format!("not a status line: {:?}", String::from_utf8_lossy(line))),
            },
        }
    }
}

/// What feeding a chunk to a [`LineReader`] gave.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Fed {
    /// No line end yet: the whole chunk was taken.
    More,
    /// A whole line (without its CRLF); the chunk's bytes from `rest` on follow it.
    Line { line: Vec<u8>, rest: usize },
}

/// Gathers one CRLF-terminated line from a stream's chunks, however they are cut, holding at
/// most [`MAX_LINE`] bytes.
#[derive(Default)]
pub(crate) struct LineReader {
    buf: Vec<u8>,
}

impl LineReader {
    pub(crate) fn feed(&mut self, chunk: &[u8]) -> Result<Fed, String> {
        for (i, &b) in chunk.iter().enumerate() {
            if self.buf.len() == MAX_LINE {
                return Err(format!("no line end in the first {MAX_LINE} bytes"));
            }
            self.buf.push(b);
            if b == b'\n' {
                if !self.buf.ends_with(b"\r\n") {
                    return Err("a line feed without a carriage return".into());
                }
                let mut line = std::mem::take(&mut self.buf);
                line.truncate(line.len() - 2);
                return Ok(Fed::Line { line, rest: i + 1 });
            }
        }
        Ok(Fed::More)
    }
}

/// The fuzz entry (`fuzz/fuzz_targets/quic_objects.rs`): `data[0]` picks how the rest is cut
/// into chunks. Nothing may panic; a line is the same however the input is cut; whatever
/// parses writes back as the same line.
pub(crate) fn fuzz(data: &[u8]) {
    let Some((&cut, input)) = data.split_first() else { return };
    let step = usize::from(cut % 16) + 1;
    let whole = LineReader::default().feed(input);
    let mut reader = LineReader::default();
    let mut offset = 0;
    let mut chunked = Ok(Fed::More);
    for chunk in input.chunks(step) {
        chunked = reader.feed(chunk);
        match &mut chunked {
            Ok(Fed::More) => offset += chunk.len(),
            Ok(Fed::Line { rest, .. }) => {
                *rest += offset;
                break;
            }
            Err(_) => break,
        }
    }
    match (&whole, &chunked) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "the same line however the input is cut"),
        (Err(_), Err(_)) => {}
        _ => panic!("cut and uncut input disagree: {whole:?} vs {chunked:?}"),
    }
    if let Ok(Fed::Line { line, rest }) = whole {
        assert!(line.len() + 2 <= MAX_LINE && rest == line.len() + 2);
        if let Ok(req) = Request::parse(&line) {
            assert_eq!(req.line().as_bytes(), &input[..rest], "a request writes back as it was read");
        }
        if let Ok(status) = Status::parse(&line) {
            assert_eq!(status.line().as_bytes(), &input[..rest], "a status writes back as it was read");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_statuses_round_trip() {
        let get = |p: &str| Request::Get { path: p.into() };
        let put = |p: &str, len| Request::Put { path: p.into(), len };
        for r in [get("/obj/0"), get("/obj/4294967295"), get("/"), get("/o/85"), put("/obj/7", 1 << 20), put("/obj/3", 0)] {
            let line = r.line();
            assert!(line.len() <= MAX_LINE);
            assert_eq!(Request::parse(line.trim_end_matches("\r\n").as_bytes()), Ok(r), "{line:?}");
        }
        assert_eq!((index_in("/obj/12", "/obj/"), index_in("/o/3", "/o/")), (Some(12), Some(3)));
        for (path, prefix) in
            [("/obj/", "/obj/"), ("/obj/x", "/obj/"), ("/obj/01", "/obj/"), ("/obj/+1", "/obj/"), ("/obj/4294967296", "/obj/"), ("/o/1", "/obj/")]
        {
            assert_eq!(index_in(path, prefix), None, "{path}");
        }
        for s in [Status::Ok, Status::Error("PUT body of 3 bytes, expected 5".into())] {
            assert_eq!(Status::parse(s.line().trim_end_matches("\r\n").as_bytes()), Ok(s));
        }
        // A reason is made to fit and to stay on its line.
        let long = Status::Error(format!("{}\r\nOK", "x".repeat(500))).line();
        assert!(long.len() == MAX_LINE && long.ends_with("\r\n") && long.matches("\r\n").count() == 1, "{long:?}");
    }

    #[test]
    fn malformed_requests_are_refused() {
        for bad in [
            "",
            "GET",
            "GET obj/1",
            "GET /obj/1 ",
            "GET /\u{e9}",
            "GET  /obj/1",
            "get /obj/1",
            "PUT /obj/1",
            "PUT /obj/1 -5",
            "PUT /obj/1 05",
            "PUT /obj/1 5 6",
            "POST /obj/1",
        ] {
            assert!(Request::parse(bad.as_bytes()).is_err(), "{bad:?}");
        }
        assert!(Status::parse(b"ok").is_err() && Status::parse(b"ERROR bad\x01").is_err());
    }

    #[test]
    fn a_line_is_found_however_the_stream_is_cut() {
        let stream = b"PUT /obj/12 5\r\nhello";
        for step in 1..stream.len() {
            let mut reader = LineReader::default();
            let mut taken = 0;
            let found = stream.chunks(step).find_map(|c| match reader.feed(c).unwrap() {
                Fed::More => {
                    taken += c.len();
                    None
                }
                Fed::Line { line, rest } => Some((line, taken + rest)),
            });
            assert_eq!(found, Some((b"PUT /obj/12 5".to_vec(), 15)), "chunks of {step}");
        }
        assert!(LineReader::default().feed(&[b'a'; MAX_LINE + 1]).is_err());
        assert!(LineReader::default().feed(b"GET /obj/1\n").is_err());
    }

    #[test]
    fn fuzz_entry_takes_garbage() {
        fuzz(b"");
        fuzz(b"\x03GET /obj/5\r\n");
        fuzz(b"\x00PUT /obj/5 10\r\nbody");
        fuzz(b"\x07OK\r\n");
        fuzz(b"\x01\r\n\r\n");
    }
}
