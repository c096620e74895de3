//! Where a push subscription may point (DECISIONS §10 `PUSH_SERVICES`,
//! §20): the push services of the browsers, nothing else. A subscription's
//! endpoint is a URL the server POSTs to on every alert; without this list
//! any staff member could make the server send to hosts of the home's own
//! network, and learn from the subscription's deletion on 404/410 what
//! answered there.
//!
//! An entry is a host (`fcm.googleapis.com`, `localhost`, `127.0.0.1`,
//! `[::1]`) or `*.` and a domain (`*.push.apple.com`): any subdomain of
//! it, matched on label boundaries, never the domain itself
//! (`web.push.apple.com` and `a.b.push.apple.com`, not `push.apple.com`,
//! `evilpush.apple.com` or `push.apple.com.evil.net`). Hosts are compared
//! as `url` parses them (lowercase, IDNA), a domain's trailing dot kept:
//! `fcm.googleapis.com.` is another host and refused. An IP address may be
//! listed only when it is a loopback address, and `http` is taken only to a
//! listed loopback host (`localhost` or a loopback address: the tests' push
//! service); everything else must be `https`. Ports are free.

use std::fmt;

use url::{Host, Url};

/// `PUSH_SERVICES` when unset: the push services of Chrome/Android (FCM),
/// Safari, Firefox and Edge.
pub const DEFAULT_PUSH_SERVICES: &str =
    "fcm.googleapis.com,*.push.apple.com,*.push.services.mozilla.com,*.notify.windows.com";

/// The 422's message for an endpoint of no listed push service (§20).
pub(crate) const NOT_A_PUSH_SERVICE: &str = "endpoint muss zu einem Push-Dienst gehören.";

/// The parsed `PUSH_SERVICES` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushServices {
    entries: Vec<Entry>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    /// This host exactly.
    Host(Host<String>),
    /// Any subdomain of this domain (written `*.domain`).
    Subdomains(String),
}

impl PushServices {
    /// Whether a subscription may point at `endpoint`: a URL that both `url`
    /// and `http::Uri` (what the push sender's request is made of) take, with
    /// the same host, `https` to a listed host or `http` to a listed
    /// loopback host, no user name or password.
    pub fn allows(&self, endpoint: &str) -> bool {
        let Ok(url) = Url::parse(endpoint) else {
            return false;
        };
        let Ok(uri) = endpoint.parse::<http::Uri>() else {
            return false;
        };
        // Two parsers that disagree on the host are a way around the list.
        let same_host = matches!((uri.host(), url.host_str()),
            (Some(a), Some(b)) if a.eq_ignore_ascii_case(b));
        let Some(host) = url.host() else {
            return false;
        };
        let listed = self.entries.iter().any(|entry| entry.matches(&host));
        let scheme = match url.scheme() {
            "https" => true,
            "http" => is_loopback(&host),
            _ => false,
        };
        same_host && listed && scheme && url.username().is_empty() && url.password().is_none()
    }
}

impl Entry {
    fn matches(&self, host: &Host<&str>) -> bool {
        match (self, host) {
            (Entry::Host(listed), host) => *listed == host.to_owned(),
            (Entry::Subdomains(domain), Host::Domain(host)) => host
                .strip_suffix(domain.as_str())
                .and_then(|rest| rest.strip_suffix('.'))
                .is_some_and(|sub| !sub.is_empty()),
            (Entry::Subdomains(_), _) => false,
        }
    }
}

fn is_loopback<S: AsRef<str>>(host: &Host<S>) -> bool {
    match host {
        Host::Domain(name) => name.as_ref() == "localhost",
        Host::Ipv4(ip) => ip.is_loopback(),
        Host::Ipv6(ip) => ip.is_loopback(),
    }
}

impl Default for PushServices {
    fn default() -> Self {
        parse_push_services(DEFAULT_PUSH_SERVICES).expect("the default list is valid")
    }
}

impl fmt::Display for PushServices {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, entry) in self.entries.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            match entry {
                Entry::Host(host) => write!(f, "{host}")?,
                Entry::Subdomains(domain) => write!(f, "*.{domain}")?,
            }
        }
        Ok(())
    }
}

/// `PUSH_SERVICES`: comma-separated hosts and `*.domain` patterns, at
/// least one; an IP address only when it is a loopback address.
pub fn parse_push_services(text: &str) -> Result<PushServices, String> {
    let invalid = |entry: &str, why: &str| {
        format!(
            "invalid PUSH_SERVICES entry {entry:?}: {why}; expected comma-separated hosts or \
             *.domain patterns such as fcm.googleapis.com,*.push.apple.com"
        )
    };
    let mut entries = Vec::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (wildcard, name) = match entry.strip_prefix("*.") {
            Some(domain) => (true, domain),
            None => (false, entry),
        };
        if name.ends_with('.') || name.contains(['*', '/', ':', '@']) && !name.starts_with('[') {
            return Err(invalid(entry, "a host only, without scheme, port or path"));
        }
        let host = Host::parse(name).map_err(|_| invalid(entry, "not a host"))?;
        entries.push(match host {
            Host::Domain(domain) if wildcard => Entry::Subdomains(domain),
            Host::Domain(_) => Entry::Host(host),
            _ if wildcard => return Err(invalid(entry, "*. only before a domain")),
            _ if is_loopback(&host) => Entry::Host(host),
            _ => {
                return Err(invalid(
                    entry,
                    "an IP address only when it is a loopback address",
                ));
            }
        });
    }
    if entries.is_empty() {
        return Err(invalid(text, "no host"));
    }
    Ok(PushServices { entries })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn services(text: &str) -> PushServices {
        parse_push_services(text).unwrap()
    }

    #[test]
    fn the_browsers_push_services_are_taken_by_default() {
        let default = PushServices::default();
        assert_eq!(default.to_string(), DEFAULT_PUSH_SERVICES);
        for endpoint in [
            "https://fcm.googleapis.com/fcm/send/abc:def",
            "https://FCM.googleapis.com/fcm/send/abc",
            "https://fcm.googleapis.com:443/fcm/send/abc",
            "https://web.push.apple.com/QGuQyavXutnMH",
            "https://a.b.push.apple.com/x",
            "https://updates.push.services.mozilla.com/wpush/v2/gAAA",
            "https://wns2-db5p.notify.windows.com/w/?token=BQYAAAD",
        ] {
            assert!(default.allows(endpoint), "{endpoint}");
        }
    }

    #[test]
    fn look_alikes_ip_addresses_plain_http_and_broken_urls_are_refused() {
        let default = PushServices::default();
        for endpoint in [
            "https://push.apple.com/x",
            "https://push.apple.com.evil.net/x",
            "https://evilpush.apple.com/x",
            "https://evilfcm.googleapis.com/x",
            "https://fcm.googleapis.com./x",
            "https://web.push.apple.com./x",
            "https://fcm.googleapis.com.evil.net/x",
            "https://user@fcm.googleapis.com/x",
            "https://10.0.0.1/x",
            "https://192.168.1.1/x",
            "https://[::1]/x",
            "http://fcm.googleapis.com/x",
            "http://127.0.0.1:9/x",
            "http://localhost:9/x",
            "ftp://fcm.googleapis.com/x",
            "https://fcm.googleapis.com/x\r\ny",
            "https://fcm.googleapis.com/x\0",
            "https://fcm.googleapis.com\\@evil.net/x",
            "no url",
        ] {
            assert!(!default.allows(endpoint), "{endpoint:?}");
        }
    }

    #[test]
    fn a_listed_loopback_host_takes_plain_http_and_any_port() {
        let tests = services(" localhost , 127.0.0.1,[::1], *.push.apple.com");
        for endpoint in [
            "http://localhost:8090/notify/1",
            "http://127.0.0.1:37943/x",
            "https://127.0.0.1/x",
            "http://[::1]:8090/notify/1",
            "https://web.push.apple.com:8443/x",
        ] {
            assert!(tests.allows(endpoint), "{endpoint}");
        }
        for endpoint in ["http://127.0.0.2/x", "http://web.push.apple.com/x"] {
            assert!(!tests.allows(endpoint), "{endpoint}");
        }
        assert!(!services("localhost").allows("http://127.0.0.1:9/x"));
    }

    #[test]
    fn a_list_with_anything_but_hosts_is_refused_naming_the_entry() {
        for bad in [
            "",
            " , ",
            "10.0.0.1",
            "*.127.0.0.1",
            "https://fcm.googleapis.com",
            "fcm.googleapis.com:443",
            "fcm.googleapis.com/x",
            "fcm.googleapis.com.",
            "*",
            "*.",
            "a.*.example",
            "bad host",
        ] {
            let error = parse_push_services(bad).unwrap_err();
            assert!(
                error.starts_with("invalid PUSH_SERVICES entry"),
                "{bad}: {error}"
            );
        }
        assert_eq!(
            services("FCM.googleapis.com, *.Push.Apple.com").to_string(),
            "fcm.googleapis.com,*.push.apple.com"
        );
    }
}
