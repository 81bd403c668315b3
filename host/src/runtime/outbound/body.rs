//! Request and response bodies counted against the call's byte limits and
//! ended at its deadline: a body that would pass a limit fails with wasi:http's
//! body-size error, one still moving at the deadline with a timeout.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use wasmtime_wasi_http::{Error, WasiBody};

use super::{Admitted, Exchange, Ledger};

/// Bytes a call's requests sent and received, together.
#[derive(Debug, Default)]
pub(super) struct Totals {
    out: AtomicU64,
    received: AtomicU64,
}

/// Which way a body goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Direction {
    /// The request's body, to the server.
    Out,
    /// The response's body, to the tool.
    In,
}

/// What counts one body: the call's ledger and limit, the request's entry.
pub(super) struct Counted {
    ledger: Arc<Ledger>,
    entry: Arc<Mutex<Exchange>>,
    direction: Direction,
    limit: u64,
    deadline: tokio::time::Instant,
}

impl Counted {
    pub fn new(admitted: &Admitted, direction: Direction, deadline: tokio::time::Instant) -> Counted {
        let limit = match direction {
            Direction::Out => admitted.limits.bytes_out,
            Direction::In => admitted.limits.bytes_in,
        };
        Counted { ledger: Arc::clone(&admitted.ledger), entry: Arc::clone(&admitted.entry), direction, limit, deadline }
    }

    /// `body`, counted.
    pub fn wrap(self, body: WasiBody) -> WasiBody {
        let sleep = Box::pin(tokio::time::sleep_until(self.deadline));
        CountingBody { inner: body, counted: self, sleep, failed: false }.boxed_unsync()
    }

    /// Counts `n` more bytes; the error when they pass the limit.
    fn count(&self, n: u64) -> Result<(), Error> {
        let totals = &self.ledger.totals;
        let (total, over) = match self.direction {
            Direction::Out => (&totals.out, Error::HttpRequestBodySize(Some(self.limit))),
            Direction::In => (&totals.received, Error::HttpResponseBodySize(Some(self.limit))),
        };
        let now = total.fetch_add(n, Ordering::Relaxed) + n;
        let mut entry = self.entry.lock().expect("exchange lock");
        match self.direction {
            Direction::Out => entry.bytes_out += n,
            Direction::In => entry.bytes_in += n,
        }
        if now > self.limit {
            entry.failed = Some(over.to_string());
            return Err(over);
        }
        Ok(())
    }

    fn timed_out(&self) -> Error {
        let error = match self.direction {
            Direction::Out => Error::ConnectionWriteTimeout,
            Direction::In => Error::ConnectionReadTimeout,
        };
        self.entry.lock().expect("exchange lock").failed = Some(format!("{error} (the call's deadline)"));
        error
    }
}

struct CountingBody {
    inner: WasiBody,
    counted: Counted,
    sleep: Pin<Box<tokio::time::Sleep>>,
    /// Set once it has failed: it ends there.
    failed: bool,
}

impl Body for CountingBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        if self.failed {
            return Poll::Ready(None);
        }
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                let n = frame.data_ref().map_or(0, |d| d.len() as u64);
                if let Err(e) = self.counted.count(n) {
                    self.failed = true;
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Pending => match self.sleep.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    self.failed = true;
                    Poll::Ready(Some(Err(self.counted.timed_out())))
                }
                Poll::Pending => Poll::Pending,
            },
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.failed || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
