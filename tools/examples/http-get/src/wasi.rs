//! The [`Transport`] of the component: requests through wasi:http's
//! `outgoing-handler`, which the host checks against the tool's grants.

use cordon_sdk::{Error, ErrorCode};
use url::Url;
use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    ErrorCode as HttpError, Fields, FutureIncomingResponse, IncomingBody, IncomingResponse, Method, OutgoingRequest,
    Scheme,
};
use wasip2::io::streams::{InputStream, StreamError};

use crate::body::Body;
use crate::errors::{from_http, from_stream};
use crate::fetch::{Response, Transport};

/// Requests through wasi:http.
pub struct WasiHttp;

/// A response body being read. Fields drop in order: the stream before the
/// body it belongs to, the body before the response.
pub struct WasiBody {
    /// The body's stream; `None` once it has ended.
    stream: Option<InputStream>,
    /// The body; taken when the stream ends, to read the trailers' verdict.
    body: Option<IncomingBody>,
    /// The response the body came from.
    _response: IncomingResponse,
    /// The URL requested, for errors.
    url: String,
}

impl Transport for WasiHttp {
    type Body = WasiBody;

    fn get(&mut self, url: &Url, headers: &[(String, String)]) -> Result<Response<WasiBody>, Error> {
        let shown = url.as_str();
        let entries: Vec<(String, Vec<u8>)> =
            headers.iter().map(|(name, value)| (name.clone(), value.as_bytes().to_vec())).collect();
        let fields = Fields::from_list(&entries).map_err(|e| {
            Error::new(ErrorCode::InvalidArgument, format!("the request headers for {shown} were refused: {e:?}"))
        })?;
        let request = OutgoingRequest::new(fields);
        let scheme = if url.scheme() == "https" { Scheme::Https } else { Scheme::Http };
        let host = url.host_str().unwrap_or_default();
        let authority = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_string(),
        };
        let path = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_string(),
        };
        let set = request
            .set_method(&Method::Get)
            .and(request.set_scheme(Some(&scheme)))
            .and(request.set_authority(Some(&authority)))
            .and(request.set_path_with_query(Some(&path)));
        if set.is_err() {
            return Err(Error::new(ErrorCode::InvalidArgument, format!("{shown} cannot be put in a request")));
        }
        let future = outgoing_handler::handle(request, None).map_err(|code| from_http(&code, shown))?;
        let response = wait(&future).map_err(|code| from_http(&code, shown))?;
        let status = response.status();
        let head = response.headers();
        let first = |name: &str| {
            head.get(name).into_iter().next().map(|value| String::from_utf8_lossy(&value).trim().to_string())
        };
        let (location, content_type) = (first("location"), first("content-type"));
        let content_length = first("content-length").and_then(|value| value.parse().ok());
        drop(head);
        let internal = |what: &str| Error::new(ErrorCode::Internal, format!("the response from {shown}: {what}"));
        let body = response.consume().map_err(|()| internal("its body was already taken"))?;
        let stream = body.stream().map_err(|()| internal("its body's stream was already taken"))?;
        let body = WasiBody { stream: Some(stream), body: Some(body), _response: response, url: shown.to_string() };
        Ok(Response { status, location, content_type, content_length, body })
    }
}

/// Waits for the response's head.
fn wait(future: &FutureIncomingResponse) -> Result<IncomingResponse, HttpError> {
    loop {
        match future.get() {
            Some(Ok(result)) => return result,
            Some(Err(())) => return Err(HttpError::InternalError(Some("the response was already taken".into()))),
            None => future.subscribe().block(),
        }
    }
}

impl Body for WasiBody {
    fn read(&mut self, max: usize) -> Result<Option<Vec<u8>>, Error> {
        let Some(stream) = &self.stream else { return Ok(None) };
        loop {
            match stream.blocking_read(max as u64) {
                Ok(bytes) if bytes.is_empty() => continue,
                Ok(bytes) => return Ok(Some(bytes)),
                Err(StreamError::Closed) => {
                    self.stream = None;
                    self.trailers()?;
                    return Ok(None);
                }
                Err(StreamError::LastOperationFailed(e)) => {
                    self.stream = None;
                    let code = wasip2::http::types::http_error_code(&e);
                    return Err(from_stream(code, &e.to_debug_string(), &self.url));
                }
            }
        }
    }
}

impl WasiBody {
    /// After the stream ended: the body finished, and the error its trailers
    /// report (a body cut short by a limit or a broken connection), if any.
    fn trailers(&mut self) -> Result<(), Error> {
        let Some(body) = self.body.take() else { return Ok(()) };
        let trailers = IncomingBody::finish(body);
        loop {
            match trailers.get() {
                Some(Ok(Err(code))) => return Err(from_http(&code, &self.url)),
                Some(_) => return Ok(()),
                None => trailers.subscribe().block(),
            }
        }
    }
}
