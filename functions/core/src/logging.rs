//! Structured JSON logs, one object per line, filtered by `RUST_LOG` (default
//! `info`). Secrets are never logged: handlers log consumer ids only, and
//! `Consumer`'s `Debug` redacts its secrets.
//!
//! Nothing is logged below `DEBUG`, whatever `RUST_LOG` asks for: at `TRACE`
//! the libraries dump whole payloads (the AWS SDK every DynamoDB request and
//! response, consumer items with their secrets included; the Lambda runtime
//! every raw API Gateway event, with the hash and the sandbox cookie). The
//! service's own code logs nothing at `TRACE`.

use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// The most verbose level any log line may have.
pub const MOST_VERBOSE: LevelFilter = LevelFilter::DEBUG;

/// Installs the JSON subscriber for the process; a second call does nothing.
pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let json = tracing_subscriber::fmt::layer()
        .json()
        .flatten_event(true)
        .with_current_span(false)
        .with_span_list(false)
        .with_target(true)
        .with_ansi(false);
    let _ = tracing_subscriber::registry()
        .with(MOST_VERBOSE)
        .with(filter)
        .with(json)
        .try_init();
}
