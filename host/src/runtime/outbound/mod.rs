//! Outbound HTTP: a tool that imports `wasi:http/outgoing-handler` sends its
//! requests through the host, which sends them only where the tool's network
//! grants say ([`crate::policy::net`]). The host resolves a name itself,
//! refuses internal addresses unless a grant names them literally, and
//! connects to the address it checked (no second resolution). Each request of
//! a call counts against the call's request and byte limits and ends by its
//! deadline; each is written down in the call's [`Ledger`], which the server
//! turns into audit records and into the sentence a refused tool's error gets.
//! Redirects are the tool's to follow: each is a new request, checked again.

mod body;
mod send;

use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use crate::policy::NetGrants;
use crate::policy::net::Destination;

/// What one call may move over the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetLimits {
    /// Requests a call (one page) may send.
    pub requests: u32,
    /// Request body bytes a call may send, over all its requests.
    pub bytes_out: u64,
    /// Response body bytes a call may receive, over all its requests.
    pub bytes_in: u64,
}

/// A call's network: its tool's grants and the ledger of what it sent. One
/// per request (a page): a parked stream is armed with each page's own.
#[derive(Debug, Clone, Default)]
pub struct NetAccess {
    pub grants: NetGrants,
    pub ledger: Arc<Ledger>,
}

impl NetAccess {
    /// A request's network, with a fresh ledger.
    pub fn new(grants: NetGrants) -> NetAccess {
        NetAccess { grants, ledger: Arc::default() }
    }
}

/// What a call's requests came to, in the order they were sent.
#[derive(Debug, Default)]
pub struct Ledger {
    sent: AtomicU32,
    /// Bytes sent and received over all of the call's requests.
    totals: body::Totals,
    exchanges: Mutex<Vec<Arc<Mutex<Exchange>>>>,
}

/// One request, as its audit record keeps it: never a header or a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    pub method: String,
    /// The scheme, host and port, as the tool asked (none: not an HTTP URL).
    pub destination: Option<Destination>,
    /// The address the host connected to.
    pub address: Option<SocketAddr>,
    /// The response's status, once it came.
    pub status: Option<u16>,
    pub bytes_out: u64,
    pub bytes_in: u64,
    /// Why the host refused to send it.
    pub refused: Option<Refusal>,
    /// Why it failed after it was sent (wasi:http's error, as text).
    pub failed: Option<String>,
}

/// Why the host did not send a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The URL is not an absolute `http`/`https` URL with a host.
    NotHttp,
    /// No grant admits the destination's scheme, host and port.
    NoGrant { destination: String, grants: String },
    /// The name leads only to addresses no grant names literally (loopback,
    /// private, link-local, metadata, …).
    Address { destination: String, addresses: Vec<String> },
    /// The call has sent its most requests.
    Requests { limit: u32 },
}

impl Refusal {
    /// A short code, for the audit record.
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::NotHttp => "not_http",
            Refusal::NoGrant { .. } => "no_grant",
            Refusal::Address { .. } => "internal_address",
            Refusal::Requests { .. } => "max_requests",
        }
    }

    /// What the guest is told (wasi:http's error code).
    fn error(&self) -> Error {
        match self {
            Refusal::NotHttp => Error::HttpRequestUriInvalid,
            Refusal::NoGrant { .. } => Error::HttpRequestDenied,
            Refusal::Address { .. } => Error::DestinationIpProhibited,
            Refusal::Requests { .. } => Error::ConnectionLimitReached,
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::NotHttp => f.write_str("a request to something that is not an http or https URL with a host"),
            Refusal::NoGrant { destination, grants } => write!(
                f,
                "a request to {destination}: the tool has no grant for it (its network grants: {grants}); \
                 install it with `--grant net:{destination}` to let it send there"
            ),
            Refusal::Address { destination, addresses } => write!(
                f,
                "a request to {destination}: it resolves to {} (loopback, private, link-local or \
                 otherwise internal), which only a grant naming the address itself admits",
                addresses.join(", ")
            ),
            Refusal::Requests { limit } => {
                write!(f, "a request past the call's limit of {limit} (`max_requests`)")
            }
        }
    }
}

impl Ledger {
    /// Each request so far, as it stands now.
    pub fn exchanges(&self) -> Vec<Exchange> {
        let exchanges = self.exchanges.lock().expect("ledger lock");
        exchanges.iter().map(|e| e.lock().expect("exchange lock").clone()).collect()
    }

    /// The requests the host refused.
    pub fn refusals(&self) -> Vec<Refusal> {
        self.exchanges().into_iter().filter_map(|e| e.refused).collect()
    }

    fn add(&self, exchange: Exchange) -> Arc<Mutex<Exchange>> {
        let entry = Arc::new(Mutex::new(exchange));
        self.exchanges.lock().expect("ledger lock").push(Arc::clone(&entry));
        entry
    }
}

/// The hooks a call's `wasi:http` runs through: its network, limits and
/// deadline (a parked stream's are re-armed for each page).
pub struct Outbound {
    pub access: NetAccess,
    pub limits: NetLimits,
    pub deadline: Instant,
}

/// The pieces of one request that passed the grant check, for `send`.
struct Admitted {
    destination: Destination,
    /// The grant that admitted it: it says which addresses may be connected to.
    grant: crate::policy::NetGrant,
    entry: Arc<Mutex<Exchange>>,
    ledger: Arc<Ledger>,
    limits: NetLimits,
    deadline: Instant,
}

type Sent = Box<dyn Future<Output = Result<(http::Response<WasiBody>, Done), Error>> + Send>;
type Done = Box<dyn Future<Output = Result<(), Error>> + Send>;

impl Outbound {
    /// Checks a request against the grants and the request limit, writes it
    /// in the ledger, and says what to send, or (the refused exchange) why not.
    fn admit(&self, request: &http::Request<WasiBody>) -> Result<Admitted, Box<Exchange>> {
        let uri = request.uri();
        let ledger = &self.access.ledger;
        let mut exchange = Exchange {
            method: request.method().to_string(),
            destination: None,
            address: None,
            status: None,
            bytes_out: 0,
            bytes_in: 0,
            refused: None,
            failed: None,
        };
        let destination = uri
            .scheme_str()
            .zip(uri.authority())
            .and_then(|(scheme, authority)| Destination::of(scheme, authority.as_str()));
        let refuse = |mut exchange: Exchange, refusal| {
            exchange.refused = Some(refusal);
            Err(Box::new(exchange))
        };
        let Some(destination) = destination else { return refuse(exchange, Refusal::NotHttp) };
        exchange.destination = Some(destination.clone());
        let Some(grant) = self.access.grants.admitting(&destination).cloned() else {
            let grants = self.access.grants.describe();
            return refuse(exchange, Refusal::NoGrant { destination: destination.to_string(), grants });
        };
        if ledger.sent.fetch_add(1, Ordering::Relaxed) >= self.limits.requests {
            return refuse(exchange, Refusal::Requests { limit: self.limits.requests });
        }
        let entry = ledger.add(exchange);
        Ok(Admitted {
            destination,
            grant,
            entry,
            ledger: Arc::clone(ledger),
            limits: self.limits,
            deadline: self.deadline,
        })
    }
}

impl WasiHttpHooks for Outbound {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> Sent {
        match self.admit(&request) {
            Ok(admitted) => Box::new(send::send(admitted, request, options)),
            Err(exchange) => {
                let refusal = exchange.refused.as_ref().expect("a refused exchange says why");
                tracing::warn!("the host refused {refusal}");
                let error = refusal.error();
                self.access.ledger.add(*exchange);
                Box::new(async move { Err(error) })
            }
        }
    }
}
