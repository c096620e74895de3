//! How the local server takes connections, so that slow or silent clients
//! cannot hold it (docs/security.md, "Slow clients"): an accept loop over
//! hyper's HTTP/1 server with its header read timeout, at most
//! [`Limits::max_connections`] connections at a time, and a graceful stop.
//!
//! `axum::serve` sets no timer on hyper, so hyper's header read timeout
//! never runs there: a connection that sends nothing stays open for ever.
//! This loop is `axum::serve` with the timer and the bound added.
//!
//! - **Header read timeout** (hyper's `header_read_timeout`): a request head
//!   not complete within [`Limits::header_timeout`] closes the connection.
//!   hyper starts that clock whenever the connection waits for a request
//!   head: on a new connection and again after every answer, so it is also
//!   the idle keep-alive limit. Upgraded connections (the displays' live
//!   WebSocket) have left hyper and are not cut by it; they have their own
//!   ping and send timeout (src/live.rs).
//! - **Body read timeout**: in `main.rs`'s `handle`, around reading the body.
//! - **Connection bound**: a semaphore with one permit per connection, taken
//!   before `accept`. When all are taken the loop stops accepting: new
//!   connections wait in the kernel's listen queue and are served as soon
//!   as one ends (silent ones end within the header timeout), while the
//!   connections already open keep being served ([`LISTEN_QUEUE`] of them
//!   wait there; beyond, the kernel drops their handshake and the clients
//!   try again). A connection gives its
//!   permit back when hyper is done with it: at its close, or when it is
//!   upgraded to a live socket (authenticated, so not an anonymous client's
//!   to hold).

use std::future::Future;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::ConnectInfo;
use axum::{Extension, Router};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::{Semaphore, watch};

/// Connections the kernel keeps waiting to be accepted (Linux caps it at
/// `net.core.somaxconn`, 4096 on current kernels). tokio's `bind` asks for
/// 128, too few to hold the clients that arrive while the bound is reached.
pub(crate) const LISTEN_QUEUE: u32 = 1024;

/// Listens on `addr` with a queue of [`LISTEN_QUEUE`], otherwise as tokio's
/// `TcpListener::bind` does (address reuse, so that a restart gets its port
/// back at once).
pub(crate) fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    #[cfg(not(windows))]
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_QUEUE)
}

/// The limits on connections and on reading requests.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// A request head (request line and headers) must arrive within this;
    /// also the longest a kept-alive connection may wait for its next request.
    pub header_timeout: Duration,
    /// A request body must arrive whole within this after its head.
    pub body_timeout: Duration,
    /// Connections served at once; more wait to be accepted.
    pub max_connections: usize,
}

impl Limits {
    /// Defaults, why these numbers: docs/security.md, "Slow clients".
    pub(crate) const DEFAULT_HEADER_TIMEOUT_SECONDS: &str = "10";
    pub(crate) const DEFAULT_BODY_TIMEOUT_SECONDS: &str = "20";
    pub(crate) const DEFAULT_MAX_CONNECTIONS: &str = "1024";

    /// File descriptors kept free of connections for the store's files, the
    /// live sockets, logs and the runtime.
    const RESERVED_FILES: u64 = 64;

    /// The bound the process can keep: at most the open-files limit (raised
    /// to its hard limit first) less [`Self::RESERVED_FILES`], so that
    /// `accept` never fails for want of a file descriptor. Logs when it has
    /// to lower the configured bound.
    pub(crate) fn fit_to_open_files_limit(mut self) -> Self {
        let Some(open_files) = raise_open_files_limit() else {
            return self;
        };
        let usable = usize::try_from(open_files.saturating_sub(Self::RESERVED_FILES).max(1))
            .unwrap_or(usize::MAX);
        if usable < self.max_connections {
            tracing::warn!(
                max_connections = self.max_connections,
                open_files_limit = open_files,
                lowered_to = usable,
                "the open-files limit allows fewer connections than configured; \
                 raise `ulimit -n` (LimitNOFILE= in a systemd unit)"
            );
            self.max_connections = usable;
        }
        self
    }
}

/// Parses a whole number of seconds from 1 (a timeout of 0 would refuse
/// every request).
pub(crate) fn parse_seconds(text: &str) -> Result<Duration, String> {
    match text.trim().parse::<u64>() {
        Ok(seconds) if seconds >= 1 => Ok(Duration::from_secs(seconds)),
        _ => Err(format!("`{text}` is not a whole number of seconds from 1")),
    }
}

/// Parses the connection bound, a whole number from 1.
pub(crate) fn parse_max_connections(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        // The semaphore's own ceiling is far above any sensible bound.
        Ok(count) if (1..=1_000_000).contains(&count) => Ok(count),
        _ => Err(format!(
            "`{text}` is not a whole number of connections from 1 to 1000000"
        )),
    }
}

/// Raises the soft limit of open files to the hard limit (many systems
/// start processes with 1024, fewer than the default bound needs) and
/// answers the limit now in force; `None` where it cannot be read.
fn raise_open_files_limit() -> Option<u64> {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => Some(limit),
        Err(error) => {
            tracing::warn!(%error, "the open-files limit could not be read or raised");
            None
        }
    }
}

/// Serves `app` on `listener` until `shutdown` completes, then stops
/// accepting, lets every connection finish what it is doing (idle ones close
/// at once) and returns when all have closed.
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let (stop_tx, stop_rx) = watch::channel(());
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    let mut shutdown = pin!(shutdown);
    let mut last_full_warning: Option<Instant> = None;
    loop {
        let slot = match Arc::clone(&slots).try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                warn_full(&mut last_full_warning, limits.max_connections);
                tokio::select! {
                    slot = Arc::clone(&slots).acquire_owned() => {
                        slot.expect("the semaphore is never closed")
                    }
                    () = &mut shutdown => break,
                }
            }
        };
        let (stream, peer) = tokio::select! {
            accepted = accept(&listener) => accepted,
            () = &mut shutdown => break,
        };
        // The client's address, for the rates of requests nobody
        // authenticates (src/rates.rs).
        let service = app.clone().layer(Extension(ConnectInfo(peer)));
        let connection = builder
            .serve_connection(TokioIo::new(stream), TowerToHyperService::new(service))
            .with_upgrades();
        let mut stop = stop_rx.clone();
        tokio::spawn(async move {
            let mut connection = pin!(connection);
            let result = tokio::select! {
                result = connection.as_mut() => result,
                _ = stop.changed() => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            // A timed-out head, a reset or a client gone mid-request: the
            // client's doing, so debug, not a warning per attacker socket.
            if let Err(error) = result {
                tracing::debug!(%peer, %error, "connection ended with an error");
            }
            drop(slot);
        });
    }
    drop(listener);
    let _ = stop_tx.send(());
    // Every connection holds a permit until it is done: all back, all done.
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    let _ = slots.acquire_many(all).await;
}

/// At most one warning a minute, so that an attack does not flood the log.
fn warn_full(last: &mut Option<Instant>, max_connections: usize) {
    if last.is_none_or(|at| at.elapsed() >= Duration::from_secs(60)) {
        tracing::warn!(
            max_connections,
            "connection limit reached; new connections wait until one closes"
        );
        *last = Some(Instant::now());
    }
}

/// The next connection. A connection that failed before it was accepted is
/// skipped; any other error (out of file descriptors) is logged and retried
/// after a second instead of spinning, as `axum::serve` does.
async fn accept(listener: &TcpListener) -> (TcpStream, SocketAddr) {
    loop {
        match listener.accept().await {
            Ok(accepted) => return accepted,
            Err(error) if is_connection_error(&error) => {}
            Err(error) => {
                tracing::error!(%error, "accepting a connection failed");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

fn is_connection_error(error: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        error.kind(),
        ErrorKind::ConnectionRefused | ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_parse() {
        assert_eq!(
            parse_seconds(Limits::DEFAULT_HEADER_TIMEOUT_SECONDS),
            Ok(Duration::from_secs(10))
        );
        assert_eq!(
            parse_seconds(Limits::DEFAULT_BODY_TIMEOUT_SECONDS),
            Ok(Duration::from_secs(20))
        );
        assert_eq!(
            parse_max_connections(Limits::DEFAULT_MAX_CONNECTIONS),
            Ok(1024)
        );
    }

    #[test]
    fn zero_fractions_and_words_are_refused() {
        for text in ["0", "1.5", "-3", "zehn", ""] {
            assert!(parse_seconds(text).is_err(), "{text}");
        }
        for text in ["0", "1000001", "viele"] {
            assert!(parse_max_connections(text).is_err(), "{text}");
        }
    }
}
