//! The webhooks' HTTP client (DECISIONS §16), shared by the local server's
//! dispatcher and the AWS `forward` function: one attempt within the 5 s of
//! the schedule.

use async_trait::async_trait;
use nurse_call_core::{
    Sender,
    webhooks::{ATTEMPT_TIMEOUT, Outcome},
};

/// Sends with reqwest: rustls with the system's root certificates (a
/// home's own CA, installed on the machine, is trusted as the admin
/// expects), no redirects (a redirect is an answer, not a delivery), the
/// schedule's timeout for the whole attempt.
pub struct HttpSender {
    client: reqwest::Client,
}

impl HttpSender {
    /// The client described above; `Err` with the reason when reqwest cannot
    /// build it.
    pub fn new() -> Result<Self, String> {
        crate::tls::use_aws_lc();
        let client = reqwest::Client::builder()
            .timeout(ATTEMPT_TIMEOUT)
            .connect_timeout(ATTEMPT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("nurse-call-webhooks/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("webhook client: {e}"))?;
        Ok(HttpSender { client })
    }
}

#[async_trait]
impl Sender for HttpSender {
    async fn send(&self, url: &str, headers: Vec<(&'static str, String)>, body: String) -> Outcome {
        let mut request = self
            .client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json");
        for (name, value) in headers {
            request = request.header(name, value);
        }
        match request.body(body).send().await {
            Ok(response) => Outcome::Status(response.status().as_u16()),
            Err(error) if error.is_timeout() => Outcome::TimedOut,
            Err(error) => {
                // The URL is the admin's (no credentials: `check_url`).
                tracing::debug!(%error, "webhook attempt found no receiver");
                Outcome::NetworkError
            }
        }
    }
}
