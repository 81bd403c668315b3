//! `cordon serve`: stdio, TCP or Streamable HTTP, and who may connect (see
//! `auth`): an OAuth issuer's access tokens, named static tokens, or, on
//! loopback, the local user. HTTP off loopback without any of them refuses to
//! start unless `--insecure-no-auth` says so.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;

use super::Common;
use crate::audit::OnFailure;
use crate::auth::{Auth, AuthSettings, OauthSettings, Principal};
use crate::server::Server;

/// `cordon serve`'s own flags.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Serve over TCP on this address (e.g. 127.0.0.1:7070) instead of stdio;
    /// every connection must first send its credential alone on a line.
    #[arg(long, value_name = "ADDR", conflicts_with = "http")]
    pub tcp: Option<SocketAddr>,
    /// Serve Streamable HTTP at http://ADDR/mcp (e.g. 127.0.0.1:7071) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// A static token, named `default`: TCP clients send it first; HTTP clients send
    /// `Authorization: Bearer TOKEN` [TCP without any credential configured: a random
    /// one, printed on stderr].
    #[arg(long, env = "CORDON_TOKEN", value_name = "TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    #[command(flatten)]
    pub auth: AuthFlags,
    /// Serve `/metrics` (Prometheus), `/healthz` and `/readyz` on this address too, whatever
    /// the transport (e.g. 127.0.0.1:9464); the HTTP transport also serves them beside `/mcp`.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<SocketAddr>,
    /// Send OpenTelemetry traces to this collector over OTLP/HTTP (protobuf), to
    /// `/v1/traces` under it (e.g. http://127.0.0.1:4318) [default: the standard
    /// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT; none: no traces].
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
    /// Compile every tool before answering anything (a cold start then waits
    /// for all of them) [default: list the tools at once, compile them in
    /// the background, a call first compiling its own tool].
    #[arg(long)]
    pub compile_first: bool,
    #[command(flatten)]
    pub common: Common,
}

/// Where access tokens come from (`[auth]` in the configuration file).
#[derive(Args, Debug)]
pub struct AuthFlags {
    /// Accept OAuth 2.1 access tokens (JWTs) from this issuer, checked with its
    /// published keys (found through its metadata unless --auth-jwks says where).
    #[arg(long, value_name = "URL", requires = "auth_audience")]
    pub auth_issuer: Option<String>,
    /// This server's resource URI (e.g. https://files.example.com/mcp), which a
    /// token's audience must hold.
    #[arg(long, value_name = "URI", requires = "auth_issuer")]
    pub auth_audience: Option<String>,
    /// The issuer's key set (JWKS) address, when its metadata should not be looked up.
    #[arg(long, value_name = "URL", requires = "auth_issuer")]
    pub auth_jwks: Option<String>,
    /// Serve HTTP off loopback with no credential at all: anyone who reaches the
    /// address may use every root.
    #[arg(long, conflicts_with_all = ["auth_issuer", "token"])]
    pub insecure_no_auth: bool,
}

/// Runs `cordon serve` until its transport ends.
pub fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let ServeArgs { tcp, http, token, auth, metrics, compile_first, common, .. } = args;
    if tcp.is_some() && http.is_some() {
        anyhow::bail!("the configuration names both [serve] tcp and http; choose one");
    }
    let config = common.config()?;
    if config.roots.is_empty() {
        anyhow::bail!("no roots: give at least one directory with --root DIR (or DIR:ro)");
    }
    let oauth = match auth.auth_issuer {
        Some(issuer) => {
            let file = common.oauth.clone();
            Some(OauthSettings {
                issuer,
                audience: auth.auth_audience.unwrap_or_default(),
                jwks: auth.auth_jwks,
                groups_claim: file.as_ref().map_or_else(|| "groups".into(), |f| f.groups_claim.clone()),
                scopes: file.map(|f| f.scopes).unwrap_or_default(),
            })
        }
        None => common.oauth.clone(),
    };
    let mut settings = AuthSettings { oauth, tokens: common.tokens.clone(), token };
    let endpoint = match (tcp, http) {
        (None, None) => None,
        (Some(addr), _) => {
            if !settings.configured() {
                let token = random_token();
                eprintln!("cordon: TCP token (send it alone on the first line): {token}");
                settings.token = Some(token);
            }
            Some((addr, Auth::new(&settings, Principal::Local)?))
        }
        (None, Some(addr)) => Some((addr, http_auth(addr, &settings, auth.insecure_no_auth)?)),
    };
    let server = Server::start(&config)?;
    let serving = match (tcp, http) {
        (Some(addr), _) => format!("tcp {addr}"),
        (None, Some(addr)) => format!("http {addr}"),
        (None, None) => "stdio".to_string(),
    };
    if let Err(e) = server.record_start(&serving, &config)
        && config.audit.on_failure == OnFailure::Closed
    {
        anyhow::bail!("{e}; no call may run unrecorded (audit-on-failure = closed)");
    }
    server.watch_installed();
    match compile_first {
        true => server.compile_all()?,
        false => server.compile_in_background(),
    }
    // One session over stdio: its reading, answering and writing share one
    // thread (a call's work runs on the blocking pool either way), which
    // saves the hand-offs between the runtime's workers on every request.
    let runtime = match endpoint {
        None => tokio::runtime::Builder::new_current_thread().enable_all().build()?,
        Some(_) => tokio::runtime::Builder::new_multi_thread().enable_all().build()?,
    };
    if let Some(addr) = metrics {
        let listener = runtime.block_on(tokio::net::TcpListener::bind(addr))?;
        runtime.spawn(crate::transport::ops::serve(Arc::clone(&server), listener));
    }
    let stopping = Arc::clone(&server);
    let serving: Pin<Box<dyn Future<Output = std::io::Result<()>>>> = match (endpoint, tcp) {
        (None, _) => Box::pin(async move {
            crate::transport::stdio::serve(server).await;
            Ok(())
        }),
        (Some((addr, auth)), None) => {
            let options = crate::transport::http::HttpOptions { addr, auth: Arc::new(auth) };
            Box::pin(crate::transport::http::serve(server, options))
        }
        (Some((addr, auth)), Some(_)) => {
            if !addr.ip().is_loopback() {
                tracing::warn!(
                    "serving TCP on a non-loopback address ({addr}) in plain text: a token on the wire can be read"
                );
            }
            Box::pin(crate::transport::tcp::serve(server, addr, Arc::new(auth)))
        }
    };
    let served = runtime.block_on(async {
        tokio::select! {
            served = serving => served,
            signal = asked_to_stop() => {
                tracing::info!("{signal}: stopping");
                Ok(())
            }
        }
    });
    stopping.stopped();
    // Calls still running (a stop asked by a signal) are not waited for.
    runtime.shutdown_background();
    served?;
    Ok(ExitCode::SUCCESS)
}

/// Waits for SIGTERM or SIGINT, and names it; never, when neither can be
/// listened for.
async fn asked_to_stop() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) else {
        tracing::warn!("SIGTERM and SIGINT cannot be listened for: they end the server without its stop record");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    }
}

/// Who may use HTTP on `addr`: the configured credentials; with none, the
/// local user on loopback, anyone off loopback only with `insecure`.
fn http_auth(addr: SocketAddr, settings: &AuthSettings, insecure: bool) -> anyhow::Result<Auth> {
    if settings.configured() {
        return Ok(Auth::new(settings, Principal::Local)?);
    }
    match (addr.ip().is_loopback(), insecure) {
        (true, _) => Ok(Auth::none(Principal::Local)),
        (false, true) => {
            tracing::warn!(
                "serving HTTP on {addr} with no authentication (--insecure-no-auth): anyone who reaches it may use every root"
            );
            Ok(Auth::none(Principal::Anonymous))
        }
        (false, false) => anyhow::bail!(
            "refusing to serve HTTP on {addr}, which is not a loopback address, without authentication: give \
             --auth-issuer URL --auth-audience URI (OAuth access tokens), --token TOKEN (CORDON_TOKEN) or \
             [[tokens]] in the configuration file, or --insecure-no-auth to let anyone who reaches it in"
        ),
    }
}

/// 32 random hex digits, straight from the OS's random source: a secret, so
/// not borrowed from anything else that makes random numbers (a stream id
/// travels readable in every cursor).
fn random_token() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the OS random source works");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_generated_token_is_32_hex_digits_drawn_afresh() {
        let (a, b) = (super::random_token(), super::random_token());
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)), "{a}");
        assert_ne!(a, b);
        // Its halves are not consecutive numbers, as two draws of a counter
        // (stream ids, readable in cursors, were one for a while) would be.
        let (high, low) = (u64::from_str_radix(&a[..16], 16).unwrap(), u64::from_str_radix(&a[16..], 16).unwrap());
        assert_ne!(high.wrapping_add(1), low);
    }
}
