//! `webhooks create`'s look at where a URL goes (DECISIONS §20): a host
//! that is, or resolves to, an address of the home's network or this
//! machine (loopback, private, link-local, unspecified) is refused unless
//! the admin says `--private-network`. The senders look again at every
//! connection; this check tells the admin now rather than in the delivery
//! log.

use std::net::IpAddr;
use std::time::Duration;

use nurse_call_core::webhooks::{is_private_address, names_private_host};
use url::{Host, Url};

use crate::failure::Failure;
use crate::output::note;

/// How long the name may take to resolve before `create` goes on without
/// it (the senders check at every connection anyway).
const RESOLVE_WITHIN: Duration = Duration::from_secs(5);

/// `Err` (refused) when `url` (as `check_url` returned it) goes inside;
/// a name that does not resolve now is accepted with a note.
pub(crate) async fn refuse_inside(url: &str) -> Result<(), Failure> {
    let parsed = Url::parse(url).map_err(|e| Failure::refused(format!("--url {e}")))?;
    let host = parsed.host_str().unwrap_or_default().to_string();
    let inside = |what: String| {
        Failure::refused(format!(
            "--url {host} {what} of the home's network or this machine (loopback, \
             private, link-local or unspecified); give --private-network if the alarm \
             server is there"
        ))
    };
    if names_private_host(url) {
        return Err(inside("is an address".to_string()));
    }
    let Some(Host::Domain(name)) = parsed.host() else {
        return Ok(());
    };
    let port = parsed.port_or_known_default().unwrap_or(443);
    let resolved =
        tokio::time::timeout(RESOLVE_WITHIN, tokio::net::lookup_host((name, port))).await;
    match resolved {
        Ok(Ok(addresses)) => {
            let private: Vec<IpAddr> = addresses
                .map(|address| address.ip())
                .filter(|ip| is_private_address(*ip))
                .collect();
            if private.is_empty() {
                Ok(())
            } else {
                Err(inside(format!("resolves to {private:?}, addresses")))
            }
        }
        _ => {
            note(&format!(
                "note: {host} does not resolve now; every attempt refuses it while it \
                 resolves to an address of the home's network"
            ));
            Ok(())
        }
    }
}
