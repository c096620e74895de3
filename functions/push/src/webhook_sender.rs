//! The webhooks' HTTP client (DECISIONS §16), shared by the local server's
//! dispatcher and the AWS `forward` function: one attempt within the 5 s of
//! the schedule, connected within 2 s (DECISIONS §20).

use std::sync::Arc;

use async_trait::async_trait;
use nurse_call_core::{
    Sender, host_of,
    webhooks::{ATTEMPT_TIMEOUT, CONNECT_TIMEOUT, Endpoint, Outcome, is_private_literal},
};

use crate::public_resolver::{PublicOnly, refusal_of};

/// Sends with reqwest: rustls with the system's root certificates (a
/// home's own CA, installed on the machine, is trusted as the admin
/// expects), no redirects (a redirect is an answer, not a delivery), the
/// schedule's timeout for the whole attempt. Two clients: one that reaches
/// only addresses outside the home's network ([`PublicOnly`], and no proxy,
/// which would resolve the name where the check cannot see it), for the
/// endpoints without `--private-network`; one that reaches any, for those
/// with it.
pub struct HttpSender {
    public_only: reqwest::Client,
    any_address: reqwest::Client,
}

impl HttpSender {
    /// The clients described above; `Err` with the reason when reqwest
    /// cannot build them.
    pub fn new() -> Result<Self, String> {
        crate::tls::use_aws_lc();
        let builder = || {
            reqwest::Client::builder()
                .timeout(ATTEMPT_TIMEOUT)
                .connect_timeout(CONNECT_TIMEOUT)
                .redirect(reqwest::redirect::Policy::none())
                .user_agent(concat!("nurse-call-webhooks/", env!("CARGO_PKG_VERSION")))
        };
        let public_only = builder()
            .dns_resolver(Arc::new(PublicOnly))
            .no_proxy()
            .build()
            .map_err(|e| format!("webhook client: {e}"))?;
        let any_address = builder()
            .build()
            .map_err(|e| format!("webhook client: {e}"))?;
        Ok(HttpSender {
            public_only,
            any_address,
        })
    }
}

/// The loud line of an attempt not made because of where it would go: the
/// endpoint and its host, never its path or query (a token may be there).
/// Only an endpoint created with `--private-network` may reach such an
/// address (DECISIONS §20). In AWS the forward function's metric filter
/// counts it (infra/lib/webhooks.ts).
fn refused(endpoint: &Endpoint, addresses: &str) -> Outcome {
    tracing::error!(
        endpoint = %endpoint.id,
        endpoint_name = %endpoint.name,
        host = %host_of(&endpoint.url),
        addresses,
        private_address_refused = true,
        "webhook not sent: its host is on the home's network or this machine"
    );
    Outcome::PrivateAddress
}

#[async_trait]
impl Sender for HttpSender {
    async fn send(
        &self,
        endpoint: &Endpoint,
        headers: Vec<(&'static str, String)>,
        body: String,
    ) -> Outcome {
        let client = if endpoint.private_network {
            &self.any_address
        } else if is_private_literal(&endpoint.url) {
            // An IP literal never reaches the resolver; a name (`localhost`
            // too) is the resolver's to judge, at every connection.
            return refused(endpoint, "(the URL's own)");
        } else {
            &self.public_only
        };
        let mut request = client
            .post(&endpoint.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json");
        for (name, value) in headers {
            request = request.header(name, value);
        }
        match request.body(body).send().await {
            Ok(response) => Outcome::Status(response.status().as_u16()),
            Err(error) if error.is_timeout() => Outcome::TimedOut,
            Err(error) => {
                if let Some(refusal) = refusal_of(&error) {
                    return refused(endpoint, &format!("{:?}", refusal.addresses));
                }
                // Without the URL: its path or query may carry a token.
                let error = error.without_url();
                tracing::debug!(endpoint = %endpoint.id, %error, "webhook attempt found no receiver");
                Outcome::NetworkError
            }
        }
    }
}
