//! The local server: every endpoint of the service, the displays' live feed
//! and the pages on one port, on the embedded store, sandbox mode unless told otherwise.
//!
//! ```text
//! cargo run -p local-server            # http://127.0.0.1:3000
//! ```

mod connections;
mod live;
mod rates;
mod seed;
mod silence;
mod timers;
mod webhooks;

use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::body::HttpBody;
use axum::extract::{ConnectInfo, Request, State};
use axum::response::Response;
use axum::routing::any;
use clap::Parser;

use connections::Limits;
use rates::Rates;

use nurse_call_core::{
    AppState, Backend, CallRetention, DEFAULT_PUSH_SERVICES, Dispatcher, MAX_BODY_BYTES, Mode,
    PushServices, Settings, StaffSettings, Thresholds, WebhookStore, clock, live::LiveHub, logging,
    parse_duty_hours, parse_live_url, parse_low_battery_percent, parse_push_services,
    parse_receipt_seconds, parse_stale_after_hours, parse_time_zone, parse_vapid_subject,
    sealing::NoKey, serve, unreadable_body,
};
use nurse_call_wiring::{StoreChoice, local_state};

/// Serves the nurse-call API, the sandbox endpoints and the test page locally.
#[derive(Debug, Parser)]
#[command(version, about, long_about = None)]
struct Args {
    /// Address to listen on; port 0 picks a free port (logged at start).
    #[arg(long, env = "LISTEN_ADDR", default_value = "127.0.0.1:3000")]
    listen: SocketAddr,

    /// `sandbox` (the test server) or `production`.
    #[arg(long, env = "SERVICE_MODE", default_value = "sandbox")]
    mode: Mode,

    /// IANA time zone of the installation; times on the wire are local to it.
    #[arg(long, env = "SERVICE_TIME_ZONE", default_value = Settings::DEFAULT_TIME_ZONE)]
    time_zone: String,

    /// Days a closed call is kept after its close (the care home's decision);
    /// a whole number from 1. Open calls are never deleted.
    #[arg(long, env = "CALL_RETENTION_DAYS", default_value_t = CallRetention::default())]
    call_retention_days: CallRetention,
    /// An element whose battery is below this percentage needs attention
    /// (DECISIONS §12).
    #[arg(long, env = "LOW_BATTERY_PERCENT", default_value = "20",
          value_parser = parse_low_battery_percent)]
    low_battery_percent: f64,

    /// An element that sent nothing for longer than this many hours needs
    /// attention (DECISIONS §12).
    #[arg(long, env = "STALE_AFTER_HOURS", default_value = "24",
          value_parser = parse_stale_after_hours)]
    stale_after_hours: chrono::Duration,

    /// Folder of the embedded store's SQLite file.
    #[arg(long, env = "DATA_DIR", default_value = "data")]
    data_dir: PathBuf,

    /// JSON file with consumers and elements to register at start (see README).
    #[arg(long, env = "SEED_FILE")]
    seed: Option<PathBuf>,

    /// Use DynamoDB at this URL (moto, DynamoDB Local, AWS) instead of the
    /// embedded store. Missing tables are created; table names come from
    /// TABLE_PREFIX or CALL_TYPES_TABLE / CONSUMERS_TABLE / DATA_TABLE.
    #[arg(long, env = "DYNAMODB_ENDPOINT")]
    dynamodb_endpoint: Option<String>,

    /// Where the display page (`/display`) opens its live socket, a ws:// or
    /// wss:// URL; unset: this server's own `/api/v1/display/live`.
    #[arg(long, env = "DISPLAY_LIVE_URL", value_parser = parse_live_url)]
    live_url: Option<String>,

    /// A staff member's duty ends by itself this many hours after the
    /// sign-on (DECISIONS §14); fractions allowed.
    #[arg(long, env = "DUTY_HOURS", default_value = StaffSettings::DEFAULT_DUTY_HOURS,
          value_parser = parse_duty_hours)]
    duty_hours: chrono::Duration,

    /// The `sub` of Web Push's VAPID claims, a mailto: or https:// URL
    /// (DECISIONS §15).
    #[arg(long, env = "VAPID_SUBJECT", default_value = StaffSettings::DEFAULT_VAPID_SUBJECT,
          value_parser = parse_vapid_subject)]
    vapid_subject: String,

    /// Seconds an alert may go without a receipt before its person is not
    /// reached and the next level may start (DECISIONS §18).
    #[arg(long, env = "RECEIPT_SECONDS", default_value = StaffSettings::DEFAULT_RECEIPT_SECONDS,
          value_parser = parse_receipt_seconds)]
    receipt_seconds: i64,

    /// Hosts a phone's push subscription may point at, comma-separated;
    /// `*.example.org` for its subdomains; `http` only to a listed
    /// loopback host (DECISIONS §20).
    #[arg(long, env = "PUSH_SERVICES", default_value = DEFAULT_PUSH_SERVICES,
          value_parser = parse_push_services)]
    push_services: PushServices,

    /// Who steps the alarms and delivers their pushes and webhook events
    /// (DECISIONS §14–§16): `in-process`, this server (its timers, the
    /// looks after each write, its push sender and webhook dispatcher);
    /// `none`, other processes on the same DynamoDB tables: the AWS path's
    /// `alarm` and `deliver` functions, woken by the table's stream and
    /// their queues (the end-to-end test on moto runs the server so,
    /// DECISIONS §17).
    #[arg(long, env = "ALARM_STEPS", default_value = "in-process",
          value_parser = ["in-process", "none"])]
    alarm_steps: String,

    /// Seconds a request's head (request line and headers) may take to
    /// arrive; also the longest a kept-alive connection waits for its next
    /// request (docs/security.md, "Slow clients").
    #[arg(long, env = "HEADER_TIMEOUT_SECONDS", default_value = Limits::DEFAULT_HEADER_TIMEOUT_SECONDS,
          value_parser = connections::parse_seconds)]
    header_timeout_seconds: Duration,

    /// Seconds a request's body may take to arrive whole after its head.
    #[arg(long, env = "BODY_TIMEOUT_SECONDS", default_value = Limits::DEFAULT_BODY_TIMEOUT_SECONDS,
          value_parser = connections::parse_seconds)]
    body_timeout_seconds: Duration,

    /// Requests a second that no secret or token authenticates (pages,
    /// sandbox consumers, failed signatures) one client address may make
    /// (DECISIONS §20; src/rates.rs); more get 429.
    #[arg(long, env = "RATE_PER_SECOND", default_value = Rates::DEFAULT_PER_SECOND,
          value_parser = rates::parse_rate)]
    rate_per_second: NonZeroU32,

    /// How many of those requests one address may make at once before the
    /// rate applies.
    #[arg(long, env = "RATE_BURST", default_value = Rates::DEFAULT_BURST,
          value_parser = rates::parse_rate)]
    rate_burst: NonZeroU32,

    /// Connections served at once (live sockets not counted); more wait to
    /// be accepted until one closes.
    #[arg(long, env = "MAX_CONNECTIONS", default_value = Limits::DEFAULT_MAX_CONNECTIONS,
          value_parser = connections::parse_max_connections)]
    max_connections: usize,
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    logging::init();
    match run(Args::parse()).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(message) => {
            tracing::error!(error = %message, "local server stopped");
            eprintln!("error: {message}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), String> {
    let settings = Settings {
        mode: args.mode,
        time_zone: parse_time_zone(&args.time_zone)?,
        call_retention: args.call_retention_days,
        supervision: Thresholds {
            low_battery_percent: args.low_battery_percent,
            stale_after: args.stale_after_hours,
        },
        live_url: args.live_url.clone(),
        staff: StaffSettings {
            duty: args.duty_hours,
            vapid_subject: args.vapid_subject.clone(),
            receipt_seconds: args.receipt_seconds,
            push_services: args.push_services.clone(),
        },
    };
    let choice = StoreChoice::local(args.data_dir.clone(), args.dynamodb_endpoint.clone())?;
    let store = choice.open_prepared(settings.call_retention).await?;
    if let Some(path) = &args.seed {
        seed::apply(store.as_ref(), path).await?;
    }
    tokio::spawn(purge_expired(Arc::clone(&store), settings.call_retention));
    // Every committed change goes to the connected displays (DECISIONS §11).
    // The outbox's events to the endpoints an admin registered (DECISIONS
    // §16), including whatever was left undelivered when the server stopped;
    // the displays hear from it which endpoints fail.
    let webhook_store: Arc<dyn WebhookStore> = store.clone();
    let dispatcher = Dispatcher::new(
        Arc::clone(&webhook_store),
        Arc::new(webhooks::HttpSender::new()?),
        // The local server keeps secrets plain (DECISIONS §17: sealed
        // only with a production stack's key).
        Arc::new(NoKey),
        settings.time_zone,
        webhooks::CONCURRENCY,
        settings.supervision,
    );
    let shared_store = store.clone();
    let mut state = local_state(store, settings.clone())
        .with_live(LiveHub::new())
        .with_forwarding(dispatcher.forwarding());
    if args.alarm_steps == "none" {
        // As the Lambda functions: the stream's alarm function steps them
        // and the deliver function pushes.
        tracing::warn!(
            "alarms are stepped and pushed by other processes (ALARM_STEPS=none): none here"
        );
        // And the forward function stores which endpoints fail: the
        // displays read it from the store, as in AWS.
        state = state
            .without_alarm_looks()
            .with_stored_forwarding(shared_store.clone());
    } else {
        // The alarm's alerts and cancels to the phones' browsers (DECISIONS
        // §15); the VAPID key pair is made now on a first start. Not with
        // ALARM_STEPS=none: the push sender makes it, there the deliver
        // function (sealed with the installation's key where it has one).
        let pusher = nurse_call_push::Pusher::new(shared_store, Arc::new(NoKey), &settings.staff)?;
        if let Err(error) = pusher.prepare().await {
            tracing::error!(%error, "web push: no VAPID key pair yet; tried again with the first push");
        }
        state = state.with_pushes(Arc::new(pusher));
        // Alarms whose level or re-alert is due, including whatever fell
        // due while the server was down (DECISIONS §14).
        tokio::spawn(timers::run(state.clone()));
        // Central systems silent for 2 × their heartbeat + 10 s (DECISIONS
        // §19), including those that fell silent while the server was down.
        tokio::spawn(silence::run(state.clone()));
    }
    if args.alarm_steps == "none" {
        tracing::warn!("webhook events are delivered by another process (ALARM_STEPS=none)");
    } else {
        // An alarm server's 2xx to a `call.alert` is its handsets' receipt
        // unless it confirms delivery itself (DECISIONS §16, §18): applied
        // as a phone's, seen live by displays and staff pages.
        dispatcher.take_receipts_with(state.clone());
        webhooks::start(dispatcher, webhook_store)
            .map_err(|e| format!("cannot start the webhook deliveries: {e}"))?;
    }

    let limits = Limits {
        header_timeout: args.header_timeout_seconds,
        body_timeout: args.body_timeout_seconds,
        max_connections: args.max_connections,
    }
    .fit_to_open_files_limit();
    let body_timeout = limits.body_timeout;
    let rates = Rates::new(args.rate_per_second, args.rate_burst);
    tokio::spawn(Arc::clone(&rates).forget_idle());
    let limited = Arc::clone(&rates);
    let app = Router::new()
        .route(live::PATH, any(live::connect))
        .fallback(
            move |State(state): State<AppState>,
                  ConnectInfo(peer): ConnectInfo<SocketAddr>,
                  request: Request| {
                let rates = Arc::clone(&limited);
                rates::within(rates, peer.ip(), request, move |request| {
                    handle(state, request, body_timeout)
                })
            },
        )
        .with_state(state);
    let listener = connections::listen(args.listen)
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    tracing::info!(
        addr = %addr,
        url = %format!("http://{addr}/"),
        mode = %settings.mode,
        time_zone = %settings.time_zone,
        call_retention_days = settings.call_retention.as_days(),
        store = %choice.describe(),
        header_timeout_seconds = limits.header_timeout.as_secs(),
        body_timeout_seconds = limits.body_timeout.as_secs(),
        max_connections = limits.max_connections,
        rate_per_second = rates.per_second.get(),
        rate_burst = rates.burst.get(),
        "listening"
    );
    connections::serve(listener, app, limits, shutdown_signal()).await;
    tracing::info!("shut down");
    Ok(())
}

/// Every request goes to the shared router; the body is read up to one byte
/// over the limit so that an oversized body is answered with 413, not read whole.
/// A body that ends before its announced length (the client gave up), or is
/// not whole within `body_timeout` (a slow client), is a 400, or a 413 when
/// its `Content-Length` announced more than the limit; either way hyper then
/// closes the connection, since the rest of the body was not read.
///
/// A body announced over the limit is still read up to the limit before the
/// 413: answering at once and closing while the client is still sending
/// makes the kernel reset the connection, and the client then sees a broken
/// pipe instead of the 413 (tests/tests/errors.rs).
async fn handle(state: AppState, request: Request, body_timeout: Duration) -> Response {
    let (parts, body) = request.into_parts();
    let announced_too_large = body.size_hint().lower() > MAX_BODY_BYTES as u64;
    let read = match tokio::time::timeout(body_timeout, axum::body::to_bytes(body, MAX_BODY_BYTES))
        .await
    {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(error)) if exceeds_limit(&error) => Err(Unread::TooLarge),
        Ok(Err(error)) => {
            tracing::debug!(%error, "body not read to its end");
            Err(unread_or_too_large(announced_too_large))
        }
        Err(_) => {
            tracing::debug!(
                body_timeout_seconds = body_timeout.as_secs(),
                "body not whole within the body timeout"
            );
            Err(unread_or_too_large(announced_too_large))
        }
    };
    let response = match read {
        Ok(bytes) => serve(&state, http::Request::from_parts(parts, bytes)).await,
        Err(unread) => {
            let request = http::Request::from_parts(parts, bytes::Bytes::new());
            unreadable_body(&request, unread == Unread::TooLarge)
        }
    };
    response.map(Body::from)
}

/// A body not read to its end: too large when it was announced so.
fn unread_or_too_large(announced_too_large: bool) -> Unread {
    if announced_too_large {
        Unread::TooLarge
    } else {
        Unread::Broken
    }
}

/// Why a body was not read.
#[derive(Debug, PartialEq, Eq)]
enum Unread {
    /// Over [`MAX_BODY_BYTES`], announced or sent.
    TooLarge,
    /// Cut off, or not whole in time.
    Broken,
}

/// Whether reading the body stopped at the size limit (http-body-util's
/// `LengthLimitError`, somewhere in the error's chain), not at a broken body.
fn exceeds_limit(error: &axum::Error) -> bool {
    let mut cause: Option<&dyn std::error::Error> = Some(error);
    while let Some(current) = cause {
        if current.to_string() == "length limit exceeded" {
            return true;
        }
        cause = current.source();
    }
    false
}

/// Every hour (and at start): sandbox consumers and their data expire after
/// 30 days (DECISIONS §8); closed calls past the installation's retention are
/// deleted. DynamoDB does both by TTL, and these calls return 0 there.
async fn purge_expired(store: Arc<dyn Backend>, call_retention: CallRetention) {
    let mut every_hour = tokio::time::interval(Duration::from_secs(3600));
    loop {
        every_hour.tick().await;
        let now = clock::now();
        match store.purge_expired(now).await {
            Ok(0) => {}
            Ok(purged) => tracing::info!(purged, "expired sandbox consumers removed"),
            Err(error) => tracing::warn!(%error, "purging expired sandbox consumers failed"),
        }
        match store
            .purge_closed_calls(call_retention.closed_before(now))
            .await
        {
            Ok(0) => {}
            Ok(purged) => tracing::info!(
                purged,
                call_retention_days = call_retention.as_days(),
                "closed calls past retention removed"
            ),
            Err(error) => tracing::warn!(%error, "purging closed calls past retention failed"),
        }
    }
}

/// Ctrl-C, or SIGTERM on Unix: stop accepting, finish what is in flight.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
    tracing::info!("shutting down");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The other side, a body that breaks off, is tested over a socket in
    /// the black-box suite (tests/tests/hostile.rs).
    #[tokio::test]
    async fn a_body_over_the_limit_is_recognised() {
        let oversized = Body::from(vec![b' '; MAX_BODY_BYTES + 1]);
        let error = axum::body::to_bytes(oversized, MAX_BODY_BYTES)
            .await
            .expect_err("over the limit");
        assert!(exceeds_limit(&error), "{error}");
    }
}
