//! The suite against a service it did not start: with `BLACKBOX_BASE_URL`
//! set (scripts/test-lambda-watch sets it to the Lambda functions under
//! `cargo lambda watch`), [`Server::sandbox`](crate::Server::sandbox) talks to
//! that URL instead of starting a `local-server`.
//!
//! One service serves every test of the run, so a test keeps to its own
//! sandbox consumers (each `new_consumer` is a new scope). What only a server
//! the test starts itself can give (production mode with a seed, another time
//! zone or environment, its logs, its process, its data folder, the admin
//! command on its store) panics here with the name of the skip list: a test
//! that needs it and is not listed there fails instead of passing without
//! having checked anything.

use std::time::Duration;

use crate::{Mode, Options};

/// The variable that points the suite at an external service.
pub const BASE_URL_VAR: &str = "BLACKBOX_BASE_URL";

/// The tests that need what an external service cannot give, with the reason
/// (scripts/test-lambda-watch passes them to `--skip`).
pub const SKIP_LIST: &str = "tests/lambda-watch-skips.txt";

/// The external service's URL (`http://HOST:PORT`, no trailing slash), or
/// `None` when the tests start their own servers.
pub fn base_url() -> Option<String> {
    std::env::var(BASE_URL_VAR)
        .ok()
        .map(|url| url.trim().trim_end_matches('/').to_string())
        .filter(|url| !url.is_empty())
}

/// Panics: `what` exists only for a server the test started itself.
pub fn unavailable(what: &str) -> ! {
    panic!(
        "{what}: only a local server started by the test has it, and this run talks to \
         the external service at {} ({BASE_URL_VAR}); a test that needs it belongs in \
         {SKIP_LIST}, with the reason",
        base_url().unwrap_or_default()
    )
}

/// Checks that `options` ask for nothing but the service as it runs: sandbox
/// mode, its own store, its own settings.
pub fn check_options(options: &Options) {
    if options.mode == Mode::Production || options.seed.is_some() {
        unavailable("a production server with a seed file");
    }
    if let Some(zone) = &options.time_zone {
        unavailable(&format!("a server in time zone {zone}"));
    }
    if options.data_dir.is_some() {
        unavailable("a server on a data folder of the test");
    }
    if let Some((name, _)) = options.env.first() {
        unavailable(&format!("a server started with {name} in its environment"));
    }
    if options.dynamodb_endpoint.is_some() {
        unavailable("a server on a DynamoDB endpoint of the test");
    }
    if options.listen.is_some() {
        unavailable("a server listening on an address of the test");
    }
}

/// How long a request to the external service may go unanswered before it
/// counts as lost and is sent once more.
pub const LOST_AFTER: Duration = Duration::from_secs(12);

/// Sends `request` to the external service; one left without an answer for
/// [`LOST_AFTER`] is sent once more, saying so. `cargo lambda watch` 1.9.2
/// loses a request or its answer now and then under load (seen twice in
/// about 130 suite runs beside a compile: once the function's answer after
/// 5.7 s never came back, once no function got the request), which API
/// Gateway does not. Sending again is what a central system does with a
/// request left unanswered, and the service's writes are made for it (a
/// reopen, a close, an element update, an accept: the same again changes
/// nothing); the local server's passes never send twice.
pub async fn send_once_more_if_lost(request: reqwest::RequestBuilder) -> reqwest::Response {
    let again = request.try_clone();
    match (request.timeout(LOST_AFTER).send().await, again) {
        (Err(error), Some(again)) if error.is_timeout() => {
            eprintln!(
                "no answer within {LOST_AFTER:?} from the external service ({error}): \
                 sent once more (cargo lambda watch loses one now and then)"
            );
            again.send().await.expect("request reaches the server")
        }
        (sent, _) => sent.expect("request reaches the server"),
    }
}
