//! Sending one admitted request: the name resolved by the host, every
//! address checked against the grant, a connection to a checked address (so
//! DNS cannot be asked twice and answer differently), TLS for `https` with the
//! platform's roots and the name as asked, HTTP/1.1, and both bodies counted
//! against the call's limits. Everything ends by the call's deadline.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use http_body_util::BodyExt;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody};

use super::body::{Counted, Direction};
use super::{Admitted, Done, Refusal};
use crate::policy::net::{Host, Scheme};

/// Sends `request` as `admitted` allows, and writes what came of it in the
/// call's ledger.
pub(super) async fn send(
    admitted: Admitted,
    request: http::Request<WasiBody>,
    options: Option<RequestOptions>,
) -> Result<(http::Response<WasiBody>, Done), Error> {
    let entry = Arc::clone(&admitted.entry);
    let sent = exchange(admitted, request, options).await;
    if let Err(e) = &sent {
        let mut entry = entry.lock().expect("exchange lock");
        match e {
            Failure::Refused(refusal) => entry.refused = Some(refusal.clone()),
            Failure::Error(e) => entry.failed = Some(e.to_string()),
        }
    }
    sent.map_err(|failure| match failure {
        Failure::Refused(refusal) => {
            tracing::warn!("the host refused {refusal}");
            refusal.error()
        }
        Failure::Error(e) => e,
    })
}

/// Why a request that passed its grant check did not get a response.
enum Failure {
    Refused(Refusal),
    Error(Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure::Error(e)
    }
}

async fn exchange(
    admitted: Admitted,
    mut request: http::Request<WasiBody>,
    options: Option<RequestOptions>,
) -> Result<(http::Response<WasiBody>, Done), Failure> {
    let deadline = tokio::time::Instant::from_std(admitted.deadline);
    let within = |limit: Option<Duration>| match limit {
        Some(limit) => deadline.min(tokio::time::Instant::now() + limit),
        None => deadline,
    };
    let connect_by = within(options.and_then(|o| o.connect_timeout));
    let addresses = resolve(&admitted, connect_by).await?;
    let stream = connect(&addresses, connect_by).await?;
    admitted.entry.lock().expect("exchange lock").address = stream.peer_addr().ok();
    let io: Box<dyn Stream> = match admitted.destination.scheme {
        Scheme::Http => Box::new(stream),
        Scheme::Https => Box::new(tls(&admitted.destination.host, stream, connect_by).await?),
    };
    let handshake = hyper::client::conn::http1::Builder::new().handshake(TokioIo::new(io));
    let (mut sender, connection) = match tokio::time::timeout_at(connect_by, handshake).await {
        Ok(handshake) => handshake.map_err(Error::from)?,
        Err(_) => return Err(Error::ConnectionTimeout.into()),
    };
    // The request line takes the path only: the authority went into `Host`.
    let path = request.uri().path_and_query().map_or("/", |p| p.as_str()).to_string();
    *request.uri_mut() = path.parse().map_err(|_| Error::HttpRequestUriInvalid)?;
    let counted_out = Counted::new(&admitted, Direction::Out, deadline);
    let request = request.map(|body| counted_out.wrap(body));
    let first_byte_by = within(options.and_then(|o| o.first_byte_timeout));
    let mut connection = Box::pin(connection);
    let mut closed = false;
    let answer = sender.send_request(request);
    tokio::pin!(answer);
    // The connection is driven while the response is awaited (a server that
    // closes as it answers ends it first: the response is still to be had),
    // then handed back to be driven while the body is read.
    let response = loop {
        tokio::select! {
            answer = &mut answer => break answer.map_err(Error::from)?,
            done = &mut connection, if !closed => {
                done.map_err(Error::from)?;
                closed = true;
            }
            _ = tokio::time::sleep_until(first_byte_by) => return Err(Error::HttpResponseTimeout.into()),
        }
    };
    admitted.entry.lock().expect("exchange lock").status = Some(response.status().as_u16());
    let counted_in = Counted::new(&admitted, Direction::In, deadline);
    let response = response.map(|incoming| counted_in.wrap(incoming.map_err(Error::from).boxed_unsync()));
    let done: Done = Box::new(async move {
        match closed {
            true => Ok(()),
            false => connection.await.map_err(Error::from),
        }
    });
    Ok((response, done))
}

/// The addresses the destination leads to that its grant lets a tool reach:
/// the literal itself, or what the host's resolver says for the name.
async fn resolve(admitted: &Admitted, by: tokio::time::Instant) -> Result<Vec<SocketAddr>, Failure> {
    let port = admitted.destination.port;
    let found: Vec<SocketAddr> = match &admitted.destination.host {
        Host::Ip(ip) => vec![SocketAddr::new(*ip, port)],
        Host::Name(name) => match tokio::time::timeout_at(by, tokio::net::lookup_host((name.as_str(), port))).await {
            Err(_) => return Err(Error::DnsTimeout.into()),
            Ok(Err(e)) => {
                let rcode = Some(e.to_string());
                return Err(Error::DnsError { rcode, info_code: None }.into());
            }
            Ok(Ok(found)) => found.collect(),
        },
    };
    let permitted: Vec<SocketAddr> =
        found.iter().copied().filter(|a| admitted.destination.permits(&admitted.grant, a.ip())).collect();
    if permitted.is_empty() {
        let addresses = found.iter().map(|a| a.ip().to_string()).collect();
        return Err(Failure::Refused(Refusal::Address { destination: admitted.destination.to_string(), addresses }));
    }
    Ok(permitted)
}

/// A connection to the first of `addresses` that answers.
async fn connect(addresses: &[SocketAddr], by: tokio::time::Instant) -> Result<TcpStream, Failure> {
    let mut last = None;
    for address in addresses {
        match tokio::time::timeout_at(by, TcpStream::connect(address)).await {
            Err(_) => return Err(Error::ConnectionTimeout.into()),
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(e)) => last = Some(e),
        }
    }
    let e = last.expect("at least one address");
    Err(match e.kind() {
        std::io::ErrorKind::ConnectionRefused => Error::ConnectionRefused,
        _ => Error::Connect(e),
    }
    .into())
}

/// What hyper reads and writes: a TCP stream, or TLS over one.
trait Stream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static> Stream for T {}

/// TLS over `stream`, the server checked against the platform's roots for
/// the host as the tool asked for it.
async fn tls(
    host: &Host,
    stream: TcpStream,
    by: tokio::time::Instant,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, Failure> {
    let name = match host {
        Host::Name(name) => ServerName::try_from(name.clone()).map_err(|_| Error::HttpRequestUriInvalid)?,
        Host::Ip(ip) => ServerName::IpAddress((*ip).into()),
    };
    let connector = tokio_rustls::TlsConnector::from(client_config()?);
    match tokio::time::timeout_at(by, connector.connect(name, stream)).await {
        Err(_) => Err(Error::ConnectionTimeout.into()),
        Ok(Err(e)) => Err(Error::Tls(e).into()),
        Ok(Ok(tls)) => Ok(tls),
    }
}

/// One TLS client configuration for every tool's requests: rustls on the
/// ring provider, the platform's trust roots.
fn client_config() -> Result<Arc<rustls::ClientConfig>, Error> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    let config = CONFIG.get_or_init(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
        use rustls_platform_verifier::ConfigVerifierExt;
        rustls::ClientConfig::with_platform_verifier().map(Arc::new).map_err(|e| e.to_string())
    });
    config.clone().map_err(|e| Error::InternalError(Some(format!("TLS is not available: {e}"))))
}
