//! The webhooks' DNS resolver (DECISIONS §20): the system's answer without
//! the addresses of the home's network and this machine
//! ([`is_private_address`]). It runs at every connection, after the name
//! is resolved, so a name that pointed outside at `webhooks create` and
//! inside now (DNS rebinding) is refused all the same. An IP literal never
//! comes here (the connector takes it as it is): [`crate::webhook_sender`]
//! checks it before sending.

use std::error::Error;
use std::net::{IpAddr, SocketAddr};

use nurse_call_core::webhooks::is_private_address;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Resolves as the system does and drops every inside address; a name with
/// nothing else left fails the connection with [`OnlyPrivate`].
#[derive(Debug, Default, Clone, Copy)]
pub struct PublicOnly;

/// A name that resolved only to inside addresses: the connection is not
/// made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OnlyPrivate {
    /// The name as asked.
    pub host: String,
    /// What it resolved to.
    pub addresses: Vec<IpAddr>,
}

impl std::fmt::Display for OnlyPrivate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} resolves only to private, loopback or link-local addresses ({:?})",
            self.host, self.addresses
        )
    }
}

impl Error for OnlyPrivate {}

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_string();
        Box::pin(async move {
            let resolved = tokio::net::lookup_host((host.as_str(), 0)).await?;
            let (inside, outside): (Vec<SocketAddr>, Vec<SocketAddr>) =
                resolved.partition(|address| is_private_address(address.ip()));
            if outside.is_empty() && !inside.is_empty() {
                let addresses = inside.iter().map(SocketAddr::ip).collect();
                return Err(Box::new(OnlyPrivate { host, addresses }) as _);
            }
            Ok(Box::new(outside.into_iter()) as Addrs)
        })
    }
}

/// The [`OnlyPrivate`] behind a failed request, if that is why it failed.
pub fn refusal_of<'a>(error: &'a (dyn Error + 'static)) -> Option<&'a OnlyPrivate> {
    let mut cause = Some(error);
    while let Some(error) = cause {
        if let Some(refused) = error.downcast_ref::<OnlyPrivate>() {
            return Some(refused);
        }
        cause = error.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_name_of_this_machine_resolves_to_nothing() {
        let name: Name = "localhost".parse().expect("a name");
        let error = match PublicOnly.resolve(name).await {
            Ok(addresses) => panic!("resolved: {:?}", addresses.collect::<Vec<_>>()),
            Err(error) => error,
        };
        let refused = refusal_of(error.as_ref()).expect("refused as private");
        assert_eq!(refused.host, "localhost");
        assert!(refused.addresses.iter().all(|a| a.is_loopback()));
    }

    #[tokio::test]
    async fn a_request_to_it_fails_before_connecting_and_says_why() {
        // A listener that would answer: nothing may reach it.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bound");
        let port = listener.local_addr().expect("address").port();
        crate::tls::use_aws_lc();
        let client = reqwest::Client::builder()
            .dns_resolver(std::sync::Arc::new(PublicOnly))
            .no_proxy()
            .build()
            .expect("client");
        let error = client
            .get(format!("http://localhost:{port}/hook"))
            .send()
            .await
            .expect_err("refused");
        assert!(error.is_connect(), "{error:?}");
        assert!(refusal_of(&error).is_some(), "{error:?}");
        let accepted =
            tokio::time::timeout(std::time::Duration::from_millis(100), listener.accept());
        assert!(
            accepted.await.is_err(),
            "no connection reached the listener"
        );
    }
}
