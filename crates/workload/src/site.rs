//! What the browser workload's server sends: the page model made into a document a real browser
//! renders and fetches in full.
//!
//! * The HTML (`/`) is exactly `html_bytes` long when the model allows it: a heading and a
//!   paragraph of text first (the element Largest Contentful Paint reports), then one
//!   `<img src="/o/N">` per object with the padding spread evenly between them, so the
//!   browser discovers objects as the document streams in, as on a real page. An empty icon
//!   (`data:,`) keeps Chromium from asking for `/favicon.ico`.
//! * Every object (`/o/N`) is a valid 1×1 PNG followed by filler up to its size. A body that
//!   is not an image makes Chromium cancel the download once decoding fails (measured: 3.9 of
//!   5 kB fetched), so the page would not be loaded in full; trailing bytes after a PNG's
//!   `IEND` are ignored by decoders, and the whole body is fetched. Objects smaller than the
//!   PNG are cut short (broken images, still fetched in full).
//! * `Cache-Control: no-store`: nothing may be reused, even within a load.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use hyper::{Method, StatusCode};

use crate::common::CHUNK;
use crate::PageModel;

/// A 1×1 transparent PNG (signature, IHDR, one IDAT, IEND): 68 bytes.
pub(crate) const PNG_1X1: [u8; 68] = [
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06,
    0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0b, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x60, 0x00, 0x02, 0x00, 0x00, 0x05, 0x00, 0x01,
    0x7a, 0x5e, 0xab, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// The largest HTML document served (the model's `html_bytes` is otherwise unbounded, and the
/// document is built in memory).
pub(crate) const MAX_HTML_BYTES: u64 = 64 << 20;

const HEAD: &str = "<!doctype html><html><head><meta charset=\"utf-8\"><title>ccbench page</title><link rel=\"icon\" href=\"data:,\"></head><body>\
<h1>ccbench test page</h1><p>";
const TEXT: &str = "This paragraph is the page's main text block, the element Largest Contentful Paint reports when no image is larger. ";
const TAIL: &str = "</body></html>";

/// The document for `page`; as long as `page.html_bytes` unless the markup alone is longer
/// (a model with a tiny HTML and many objects), in which case it is the markup alone.
pub(crate) fn html(page: &PageModel) -> Vec<u8> {
    let (head, tags) = markup(page);
    let markup = head.len() + tags.iter().map(String::len).sum::<usize>() + TAIL.len();
    let padding = (page.html_bytes as usize).saturating_sub(markup);
    let gaps = tags.len() + 1;
    let mut out = Vec::with_capacity(markup + padding);
    out.extend_from_slice(head.as_bytes());
    for g in 0..gaps {
        // Gap g gets its share of the padding, rounded so the shares add up exactly.
        let share = padding * (g + 1) / gaps - padding * g / gaps;
        pad(&mut out, share);
        if let Some(tag) = tags.get(g) {
            out.extend_from_slice(tag.as_bytes());
        }
    }
    out.extend_from_slice(TAIL.as_bytes());
    out
}

/// The document's fixed parts: everything before the first image, and one tag per object.
fn markup(page: &PageModel) -> (String, Vec<String>) {
    let mut head = String::from(HEAD);
    // About 700 characters of text: enough area to be the page's largest element.
    for _ in 0..6 {
        head.push_str(TEXT);
    }
    head.push_str("</p>");
    let tags = (0..page.objects.len()).map(|i| format!("<img src=\"/o/{i}\" width=\"1\" height=\"1\" alt=\"\">")).collect();
    (head, tags)
}

/// The length of [`html`]'s document, without building it (a remote client's record of what
/// serve sends).
pub(crate) fn html_len(page: &PageModel) -> u64 {
    let (head, tags) = markup(page);
    let markup = head.len() + tags.iter().map(String::len).sum::<usize>() + TAIL.len();
    (markup as u64).max(page.html_bytes)
}

/// What is sent for a request over serve's byte limit: 503, no body.
pub(crate) fn unavailable() -> hyper::Response<SiteBody> {
    let mut resp = hyper::Response::new(SiteBody::new(Bytes::new(), 0));
    *resp.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    resp.headers_mut().insert(hyper::header::CACHE_CONTROL, hyper::header::HeaderValue::from_static("no-store"));
    resp
}

/// `n` bytes of filler: a comment when there is room for one, else spaces.
fn pad(out: &mut Vec<u8>, n: usize) {
    if n >= 7 {
        out.extend_from_slice(b"<!--");
        out.resize(out.len() + n - 7, b'Z');
        out.extend_from_slice(b"-->");
    } else {
        out.resize(out.len() + n, b' ');
    }
}

/// A body of a fixed head followed by filler to `len` bytes in all, with an exact size hint.
pub(crate) struct SiteBody {
    head: Bytes,
    filler: u64,
}

impl SiteBody {
    pub(crate) fn new(head: Bytes, len: u64) -> Self {
        let head = if (head.len() as u64) > len { head.slice(..len as usize) } else { head };
        let filler = len - head.len() as u64;
        SiteBody { head, filler }
    }
}

static FILLER: [u8; CHUNK] = [b'Z'; CHUNK];

impl http_body::Body for SiteBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if !self.head.is_empty() {
            // In CHUNK pieces, like the filler (see `common::CHUNK`).
            let n = self.head.len().min(CHUNK);
            let piece = self.head.split_to(n);
            return Poll::Ready(Some(Ok(Frame::data(piece))));
        }
        if self.filler == 0 {
            return Poll::Ready(None);
        }
        let n = self.filler.min(CHUNK as u64) as usize;
        self.filler -= n as u64;
        Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(&FILLER[..n])))))
    }

    fn is_end_stream(&self) -> bool {
        self.head.is_empty() && self.filler == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.head.len() as u64 + self.filler)
    }
}

/// The site: its document, and the object sizes.
pub(crate) struct Site {
    pub html: Bytes,
    pub objects: Vec<u64>,
}

impl Site {
    pub(crate) fn new(page: &PageModel) -> Site {
        Site { html: Bytes::from(html(page)), objects: page.objects.clone() }
    }

    /// The response to `GET path`, and the body bytes it carries.
    pub(crate) fn respond(&self, method: &Method, path: &str) -> (hyper::Response<SiteBody>, u64) {
        let (status, content_type, body) = if method != Method::GET {
            (StatusCode::METHOD_NOT_ALLOWED, "text/plain", SiteBody::new(Bytes::new(), 0))
        } else if path == "/" {
            (StatusCode::OK, "text/html; charset=utf-8", SiteBody::new(self.html.clone(), self.html.len() as u64))
        } else {
            match path.strip_prefix("/o/").and_then(|n| n.parse::<usize>().ok()).and_then(|n| self.objects.get(n)) {
                Some(&len) => (StatusCode::OK, "image/png", SiteBody::new(Bytes::from_static(&PNG_1X1), len)),
                None => (StatusCode::NOT_FOUND, "text/plain", SiteBody::new(Bytes::new(), 0)),
            }
        };
        let len = http_body::Body::size_hint(&body).exact().unwrap_or(0);
        let mut resp = hyper::Response::new(body);
        *resp.status_mut() = status;
        let headers = resp.headers_mut();
        headers.insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static(content_type));
        headers.insert(hyper::header::CACHE_CONTROL, hyper::header::HeaderValue::from_static("no-store"));
        (resp, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    fn collect(body: SiteBody) -> Vec<u8> {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(body.collect()).unwrap().to_bytes().to_vec()
    }

    #[test]
    fn html_has_the_model_size_and_references_every_object_once() {
        for name in PageModel::builtin_names() {
            let page = PageModel::builtin(name).unwrap();
            let doc = String::from_utf8(html(&page)).unwrap();
            assert_eq!(doc.len() as u64, page.html_bytes, "{name}");
            assert_eq!(html_len(&page), page.html_bytes, "{name}");
            for i in 0..page.objects.len() {
                assert_eq!(doc.matches(&format!("src=\"/o/{i}\"")).count(), 1, "{name} /o/{i}");
            }
            assert_eq!(doc.matches("<img").count(), page.objects.len());
            assert!(doc.starts_with("<!doctype html>") && doc.ends_with("</body></html>"));
            // Comments never nest or leak text into the page.
            assert_eq!(doc.matches("<!--").count(), doc.matches("-->").count());
        }
    }

    #[test]
    fn tiny_html_is_the_markup_alone_and_small_gaps_are_spaces() {
        let page = PageModel { html_bytes: 1, objects: vec![10, 20] };
        let doc = html(&page);
        assert!(doc.len() > 1 && !String::from_utf8_lossy(&doc).contains("<!--"));
        let markup = doc.len() as u64;
        assert_eq!(html_len(&page), markup);
        for extra in 0..12 {
            let page = PageModel { html_bytes: markup + extra, objects: vec![10, 20] };
            assert_eq!(html(&page).len() as u64, markup + extra);
            assert_eq!(html_len(&page), markup + extra);
        }
    }

    #[test]
    fn objects_are_png_then_filler_of_the_exact_size() {
        let site = Site::new(&PageModel { html_bytes: 2000, objects: vec![5000, 68, 10] });
        let (resp, len) = site.respond(&Method::GET, "/o/0");
        assert_eq!((resp.status(), len), (StatusCode::OK, 5000));
        assert_eq!(resp.headers()[hyper::header::CONTENT_TYPE], "image/png");
        let bytes = collect(resp.into_body());
        assert_eq!(bytes.len(), 5000);
        assert_eq!(&bytes[..68], &PNG_1X1);
        assert!(bytes[68..].iter().all(|&b| b == b'Z'));
        assert_eq!(collect(site.respond(&Method::GET, "/o/1").0.into_body()), PNG_1X1);
        assert_eq!(collect(site.respond(&Method::GET, "/o/2").0.into_body()), PNG_1X1[..10]);
        let (resp, len) = site.respond(&Method::GET, "/");
        assert_eq!((resp.status(), len), (StatusCode::OK, 2000));
        assert_eq!(collect(resp.into_body()).len(), 2000);
        assert_eq!(site.respond(&Method::GET, "/o/3").0.status(), StatusCode::NOT_FOUND);
        assert_eq!(site.respond(&Method::GET, "/favicon.ico").0.status(), StatusCode::NOT_FOUND);
        assert_eq!(site.respond(&Method::POST, "/").0.status(), StatusCode::METHOD_NOT_ALLOWED);
    }
}
