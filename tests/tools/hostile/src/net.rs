//! The network behaviours' requests, through wasi:http's `outgoing-handler`:
//! what `info` gets, or the failure the call returns.

use serde_json::{Value, json};
use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    ErrorCode as HttpError, Fields, FutureIncomingResponse, IncomingBody, IncomingResponse, Method, OutgoingBody,
    OutgoingRequest, Scheme, http_error_code,
};
use wasip2::io::poll;
use wasip2::io::streams::{OutputStream, StreamError};

use crate::codes::Failure;
use crate::{Args, Behaviour, FETCH_LOOP_MAX, Target, UPLOAD_PIECE};

/// A stream error of `what` as a failure: wasi:http's code if it carries
/// one, else the code its text names, else io.
fn stream_failure(what: &str, error: StreamError) -> Failure {
    match error {
        StreamError::LastOperationFailed(e) => match http_error_code(&e) {
            Some(code) => Failure::http(what, &code),
            None => Failure::from_text(what, &e.to_debug_string()),
        },
        StreamError::Closed => Failure::other(what, "the stream closed".into()),
    }
}

/// Runs the network behaviour of `args`: the object whose keys go into
/// `info`, or why it failed (`fetch-loop` fails never: its failure is in
/// `info`).
pub fn run(args: &Args) -> Result<Value, Failure> {
    let url = args.url.as_deref().unwrap_or_default();
    let target = Target::parse(url).map_err(|why| Failure::other("the request", why))?;
    match args.behaviour {
        Behaviour::Fetch => {
            let (status, bytes) = get(&target, url)?;
            Ok(json!({ "fetched": { "status": status, "bytes": bytes } }))
        }
        Behaviour::Download => {
            let (status, bytes) = get(&target, url)?;
            Ok(json!({ "downloaded": { "status": status, "bytes": bytes } }))
        }
        Behaviour::FetchLoop => {
            let mut requests = 0u64;
            let stopped_by = loop {
                if requests == FETCH_LOOP_MAX {
                    break Value::Null;
                }
                match get(&target, url) {
                    Ok(_) => requests += 1,
                    Err(failure) => break failure.debug.into(),
                }
            };
            Ok(json!({ "requests": requests, "stopped_by": stopped_by }))
        }
        Behaviour::Upload => {
            let status = post(&target, url, args.bytes.unwrap_or(0))?;
            Ok(json!({ "uploaded": { "status": status } }))
        }
        _ => Ok(json!({})),
    }
}

/// A request with `method` to `target`, no headers.
fn request(target: &Target, method: Method, what: &str) -> Result<OutgoingRequest, Failure> {
    let request = OutgoingRequest::new(Fields::new());
    let scheme = if target.https { Scheme::Https } else { Scheme::Http };
    request
        .set_method(&method)
        .and(request.set_scheme(Some(&scheme)))
        .and(request.set_authority(Some(&target.authority)))
        .and(request.set_path_with_query(Some(&target.path_with_query)))
        .map_err(|()| Failure::other(what, "wasi:http refused the URL's parts".into()))?;
    Ok(request)
}

/// One GET of `target`, its body read whole: the status and the body's bytes.
fn get(target: &Target, url: &str) -> Result<(u16, u64), Failure> {
    let what = format!("GET {url}");
    let future = outgoing_handler::handle(request(target, Method::Get, &what)?, None)
        .map_err(|code| Failure::http(&what, &code))?;
    let response = wait(&future).map_err(|code| Failure::http(&what, &code))?;
    let bytes = drain(&response, &what)?;
    Ok((response.status(), bytes))
}

/// Waits for a response's head.
fn wait(future: &FutureIncomingResponse) -> Result<IncomingResponse, HttpError> {
    loop {
        match future.get() {
            Some(Ok(result)) => return result,
            Some(Err(())) => return Err(HttpError::InternalError(Some("the response was already taken".into()))),
            None => future.subscribe().block(),
        }
    }
}

/// Reads a response's body to its end and returns its length; a failure
/// reading it (or reported by its trailers) is the failure.
fn drain(response: &IncomingResponse, what: &str) -> Result<u64, Failure> {
    let taken = |()| Failure::other(what, "the response body was already taken".into());
    let body = response.consume().map_err(taken)?;
    let stream = body.stream().map_err(taken)?;
    let mut total = 0u64;
    loop {
        match stream.blocking_read(UPLOAD_PIECE) {
            Ok(bytes) => total += bytes.len() as u64,
            Err(StreamError::Closed) => break,
            Err(error) => return Err(stream_failure(what, error)),
        }
    }
    drop(stream);
    let trailers = IncomingBody::finish(body);
    loop {
        match trailers.get() {
            Some(Ok(Err(code))) => return Err(Failure::http(what, &code)),
            Some(_) => return Ok(total),
            None => trailers.subscribe().block(),
        }
    }
}

/// One POST of `size` bytes to `target`, then its response read whole: the
/// status. The body is written while the request is under way, and the
/// request's own failure is preferred to the body stream's.
fn post(target: &Target, url: &str, size: u64) -> Result<u16, Failure> {
    let what = format!("POST {url}");
    let request = request(target, Method::Post, &what)?;
    let body = request.body().map_err(|()| Failure::other(&what, "the request body was already taken".into()))?;
    let future = outgoing_handler::handle(request, None).map_err(|code| Failure::http(&what, &code))?;
    let response = match write_body(&body, &future, size, &what) {
        Ok(Written::All) => {
            OutgoingBody::finish(body, None).map_err(|code| Failure::http(&what, &code))?;
            wait(&future).map_err(|code| Failure::http(&what, &code))?
        }
        Ok(Written::Answered(response)) => {
            drop(body);
            response
        }
        Err(WriteFailure::Request(failure)) => return Err(failure),
        Err(WriteFailure::Stream(failure)) => {
            // The body is abandoned; if the request failed, that says why.
            drop(body);
            return Err(match wait(&future) {
                Err(code) => Failure::http(&what, &code),
                Ok(_) => failure,
            });
        }
    };
    drain(&response, &what)?;
    Ok(response.status())
}

/// How writing a request body ended well.
enum Written {
    /// Every byte was written and flushed.
    All,
    /// The response came before the body was all written.
    Answered(IncomingResponse),
}

/// How writing a request body failed.
enum WriteFailure {
    /// The request failed (its future said so).
    Request(Failure),
    /// The body stream failed.
    Stream(Failure),
}

/// Writes `size` bytes to the request body in pieces, each at most what
/// `check-write` allows, waiting (on the stream or the response) when it
/// allows none, then flushes.
fn write_body(
    body: &OutgoingBody,
    future: &FutureIncomingResponse,
    size: u64,
    what: &str,
) -> Result<Written, WriteFailure> {
    let stream = body
        .write()
        .map_err(|()| WriteFailure::Stream(Failure::other(what, "the body stream was already taken".into())))?;
    let piece = vec![b'u'; UPLOAD_PIECE as usize];
    let mut left = size;
    let mut flushed = false;
    loop {
        let allowed = stream.check_write().map_err(|e| WriteFailure::Stream(stream_failure(what, e)))?;
        if allowed == 0 {
            if let Some(answered) = wait_writable(&stream, future, what)? {
                return Ok(Written::Answered(answered));
            }
            continue;
        }
        if left == 0 {
            if flushed {
                return Ok(Written::All);
            }
            stream.flush().map_err(|e| WriteFailure::Stream(stream_failure(what, e)))?;
            flushed = true;
            continue;
        }
        let len = allowed.min(left).min(UPLOAD_PIECE);
        stream.write(&piece[..len as usize]).map_err(|e| WriteFailure::Stream(stream_failure(what, e)))?;
        left -= len;
    }
}

/// Waits until the body stream can take more or the response is ready; the
/// response if it came, its failure if it failed.
fn wait_writable(
    stream: &OutputStream,
    future: &FutureIncomingResponse,
    what: &str,
) -> Result<Option<IncomingResponse>, WriteFailure> {
    let (writable, answered) = (stream.subscribe(), future.subscribe());
    let ready = poll::poll(&[&writable, &answered]);
    if !ready.contains(&1) {
        return Ok(None);
    }
    match future.get() {
        Some(Ok(Ok(response))) => Ok(Some(response)),
        Some(Ok(Err(code))) => Err(WriteFailure::Request(Failure::http(what, &code))),
        Some(Err(())) | None => Ok(None),
    }
}
