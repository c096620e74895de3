//! Which addresses a webhook reaches only with `--private-network`
//! (DECISIONS §20): the home's own network and this machine. Checked on the
//! URL at `webhooks create` and, after DNS resolution, at every connection
//! (the senders' resolver), so that a name rebound to an inside address
//! after the check cannot pass.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::{Host, Url};

/// Whether `address` is loopback, private (RFC 1918; RFC 4193's
/// `fc00::/7`), link-local (`169.254/16`, `fe80::/10`: the cloud's
/// metadata service among them), unspecified or "this network"
/// (`0.0.0.0/8`, `::`), or shared address space (`100.64/10`, RFC 6598:
/// a carrier's NAT, and the overlay networks that reach a home's devices).
/// An IPv6 address that carries an IPv4 one (`::ffff:10.0.0.1`, and NAT64's
/// `64:ff9b::/96`) is judged by the IPv4 address it reaches.
pub fn is_private_address(address: IpAddr) -> bool {
    match address {
        IpAddr::V4(v4) => is_private_v4(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => is_private_v4(v4),
            None => {
                v6.is_loopback()
                    || v6.is_unspecified()
                    || v6.is_unique_local()
                    || v6.is_unicast_link_local()
            }
        },
    }
}

fn is_private_v4(v4: Ipv4Addr) -> bool {
    let [first, second, ..] = v4.octets();
    v4.is_loopback()
        || v4.is_private()
        || v4.is_link_local()
        || first == 0
        || (first == 100 && (64..128).contains(&second))
}

/// The IPv4 address an IPv6 one stands for: IPv4-mapped (`::ffff:a.b.c.d`)
/// or NAT64's well-known prefix (`64:ff9b::a.b.c.d`, RFC 6052).
fn embedded_v4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    let [a, b, c, d, e, f, ..] = v6.segments();
    let [.., w, x, y, z] = v6.octets();
    ([a, b, c, d, e, f] == [0x64, 0xff9b, 0, 0, 0, 0]).then(|| Ipv4Addr::new(w, x, y, z))
}

/// Whether `url`'s host is an IP literal of [`is_private_address`]: what
/// the senders check before sending, as no resolver sees a literal.
/// `false` for a name, and for what is not a URL.
pub fn is_private_literal(url: &str) -> bool {
    match Url::parse(url).ok().as_ref().and_then(Url::host) {
        Some(Host::Ipv4(v4)) => is_private_address(IpAddr::V4(v4)),
        Some(Host::Ipv6(v6)) => is_private_address(IpAddr::V6(v6)),
        _ => false,
    }
}

/// Whether `url`'s host is an inside address by itself, before any DNS: a
/// literal of [`is_private_literal`], or `localhost` and its subdomains
/// (RFC 6761: always this machine), which `webhooks create` so refuses
/// without asking a resolver. `false` for any other name.
pub fn names_private_host(url: &str) -> bool {
    is_private_literal(url)
        || match Url::parse(url).ok().as_ref().and_then(Url::host) {
            Some(Host::Domain(name)) => {
                let name = name.trim_end_matches('.').to_ascii_lowercase();
                name == "localhost" || name.ends_with(".localhost")
            }
            _ => false,
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn private(address: &str) -> bool {
        is_private_address(address.parse().expect(address))
    }

    #[test]
    fn the_home_network_and_this_machine_are_private() {
        for inside in [
            "127.0.0.1",
            "127.8.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.10",
            "169.254.169.254",
            "0.0.0.0",
            "0.1.2.3",
            "100.64.0.1",
            "100.127.255.255",
            "::1",
            "::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fd00:ec2::254",
            "::ffff:10.0.0.1",
            "::ffff:127.0.0.1",
            "64:ff9b::192.168.0.1",
        ] {
            assert!(private(inside), "{inside}");
        }
        for outside in [
            "8.8.8.8",
            "172.32.0.1",
            "172.15.255.255",
            "192.169.0.1",
            "100.63.255.255",
            "100.128.0.1",
            "11.0.0.1",
            "2001:db8::1",
            "2a00:1450:4001:81b::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::8.8.8.8",
        ] {
            assert!(!private(outside), "{outside}");
        }
    }

    #[test]
    fn a_url_names_a_private_host_by_its_literal_or_as_localhost() {
        for inside in [
            "https://10.1.2.3/hook",
            "http://127.0.0.1:9000/hook",
            "https://[::1]/",
            "https://[::ffff:192.168.0.1]/",
            "https://0x7f.1/",
            "http://localhost:9000/",
            "https://LOCALHOST./",
            "https://alarm.localhost/",
        ] {
            assert!(names_private_host(inside), "{inside}");
            assert_eq!(
                is_private_literal(inside),
                !inside.to_ascii_lowercase().contains("localhost"),
                "{inside}: a name is left to the resolver"
            );
        }
        for outside in [
            "https://alarm.example/hook",
            "https://8.8.8.8/",
            "https://localhost.example/",
            "not a url",
        ] {
            assert!(!names_private_host(outside), "{outside}");
            assert!(!is_private_literal(outside), "{outside}");
        }
    }
}
