//! One call: the request sent (and the redirects followed), then the body
//! paged. The sending is behind [`Transport`]: wasi:http in the component, a
//! fake in the unit tests.

use cordon_sdk::{Budget, Chunk, Error, ErrorCode, Payload, Span, Stream, Summary, progress};
use serde_json::json;
use url::Url;

use crate::args::Args;
use crate::body::{self, Body, Pager, Piece};
use crate::redirect;

/// A response as the tool needs it: its status, the headers it reads, and
/// the body still to be read.
pub struct Response<B> {
    /// The HTTP status.
    pub status: u16,
    /// The first `location` header, if any.
    pub location: Option<String>,
    /// The first `content-type` header, if any.
    pub content_type: Option<String>,
    /// The `content-length` header, if any and a number.
    pub content_length: Option<u64>,
    /// The body, not read yet.
    pub body: B,
}

/// What sends a GET request.
pub trait Transport {
    /// The body of the responses it returns.
    type Body: Body;

    /// Sends a GET for `url` with `headers` (lowercase names) and waits for
    /// the response's head. A failure is the tool's error, naming the URL.
    fn get(&mut self, url: &Url, headers: &[(String, String)]) -> Result<Response<Self::Body>, Error>;
}

/// A resume position: the body bytes delivered so far, and the status of the
/// response they came from, written `<offset>:<status>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// The body bytes delivered before this position.
    pub offset: u64,
    /// The status of the response paged.
    pub status: u16,
}

impl Position {
    /// The text a chunk carries as its `resume`.
    pub fn encode(self) -> String {
        format!("{}:{}", self.offset, self.status)
    }

    /// Parses what `encode` wrote; anything else is an invalid argument.
    pub fn decode(text: &str) -> Result<Position, Error> {
        let bad = || Error::new(ErrorCode::InvalidArgument, format!("malformed resume position `{text}`"));
        let (offset, status) = text.split_once(':').ok_or_else(bad)?;
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(offset) || !digits(status) {
            return Err(bad());
        }
        Ok(Position { offset: offset.parse().map_err(|_| bad())?, status: status.parse().map_err(|_| bad())? })
    }
}

/// The response at the end of the redirects.
pub struct Followed<B> {
    /// The URL of the response.
    pub url: Url,
    /// The response, its body not read yet.
    pub response: Response<B>,
    /// The URLs redirected to, in order.
    pub redirects: Vec<String>,
}

/// The response `args` ask for: the request sent, and each redirect
/// (301, 302, 303, 307, 308 with a `Location`) followed by a new request, at
/// most `args.max_redirects` of them.
pub fn follow<T: Transport>(transport: &mut T, args: &Args) -> Result<Followed<T::Body>, Error> {
    let mut url = args.url.clone();
    let mut redirects = Vec::new();
    let mut left_origin = false;
    loop {
        let headers = redirect::headers_for(&args.headers, &args.url, &url, &mut left_origin);
        let response = transport.get(&url, &headers)?;
        let location = match &response.location {
            Some(location) if redirect::is_redirect(response.status) => location.clone(),
            _ => return Ok(Followed { url, response, redirects }),
        };
        drop(response);
        if redirects.len() as u32 >= args.max_redirects {
            return Err(Error::new(
                ErrorCode::Io,
                format!(
                    "too many redirects: {url} redirected again after {} followed (`max_redirects` is {}, at \
                     most 10)",
                    redirects.len(),
                    args.max_redirects
                ),
            ));
        }
        let next = redirect::resolve(&url, &location)
            .map_err(|why| Error::new(ErrorCode::Io, format!("{url} redirected {why}")))?;
        redirects.push(next.to_string());
        url = next;
    }
}

/// A call's stream: the final response's body, paged.
pub struct Fetch<B> {
    /// The URL of the response paged.
    url: Url,
    /// Its status.
    status: u16,
    /// Its content type, as sent.
    content_type: Option<String>,
    /// Its declared length.
    content_length: Option<u64>,
    /// The URLs redirected to, in order.
    redirects: Vec<String>,
    /// The body.
    pager: Pager<B>,
}

impl<B: Body> Fetch<B> {
    /// Sends the request (following redirects) and starts paging the body,
    /// from the start or at `resume`: then the response must have the status
    /// the position was made with (else `stale`), and the bytes before the
    /// position are read and dropped.
    pub fn open<T: Transport<Body = B>>(
        transport: &mut T,
        args: &Args,
        resume: Option<Position>,
    ) -> Result<Self, Error> {
        let Followed { url, response, redirects } = follow(transport, args)?;
        if let Some(position) = resume
            && position.status != response.status
        {
            return Err(Error::new(
                ErrorCode::Stale,
                format!(
                    "{url} answered {} where the page before had {}: the response changed since; start the call again",
                    response.status, position.status
                ),
            ));
        }
        let mode = body::classify(response.content_type.as_deref());
        let offset = resume.map_or(0, |p| p.offset);
        let pager = Pager::start(response.body, mode, offset)
            .map_err(|e| Error::new(e.code, format!("{url}: {}", e.message)))?;
        Ok(Fetch {
            url,
            status: response.status,
            content_type: response.content_type,
            content_length: response.content_length,
            redirects,
            pager,
        })
    }

    /// Whether the body is paged as text.
    pub fn is_text(&self) -> bool {
        self.pager.is_text()
    }
}

impl<B: Body> Stream for Fetch<B> {
    fn next(&mut self, budget: Budget) -> Result<Option<Chunk>, Error> {
        let start = self.pager.offset();
        let Some((piece, continued)) = self.pager.next(budget.bytes as usize, budget.items as usize)? else {
            return Ok(None);
        };
        let end = self.pager.offset();
        let shown = self.content_length.map(progress::format_bytes);
        let message = match shown {
            Some(total) => format!("{} of {total} received", progress::format_bytes(end)),
            None => format!("{} received", progress::format_bytes(end)),
        };
        progress::report(end, self.content_length.map(|total| total.max(end)), Some(&message));
        Ok(Some(Chunk {
            payload: match piece {
                Piece::Text(text) => Payload::Text(text),
                Piece::Bytes(bytes) => Payload::Bytes(bytes),
            },
            span: Some(Span { start_byte: start, end_byte: end, lines: None }),
            continued,
            resume: Position { offset: end, status: self.status }.encode(),
        }))
    }

    /// `{url, status, content_type, content_length, redirects}`.
    fn info(&self) -> serde_json::Value {
        json!({
            "url": self.url.as_str(),
            "status": self.status,
            "content_type": self.content_type,
            "content_length": self.content_length,
            "redirects": self.redirects,
        })
    }

    /// The declared length when the response gave one (exact), else the
    /// bytes received so far.
    fn summary(&self) -> Summary {
        let (totals, exact) = match self.content_length {
            Some(length) => (json!({ "bytes": length }), true),
            None => (json!({ "bytes_so_far": self.pager.offset() }), false),
        };
        Summary {
            totals,
            exact,
            suggestions: vec![
                "Ask the server for less: a narrower query, a page or range parameter of its API.".into(),
            ],
        }
    }
}
