//! Structured JSON logs, one object per line, filtered by `RUST_LOG` (default
//! `info`). Secrets are never logged: handlers log consumer ids only, and
//! `Consumer`'s `Debug` redacts its secrets.

use tracing_subscriber::EnvFilter;

/// Installs the JSON subscriber for the process; a second call does nothing.
pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .json()
        .flatten_event(true)
        .with_current_span(false)
        .with_span_list(false)
        .with_target(true)
        .with_ansi(false)
        .with_env_filter(filter)
        .try_init();
}
